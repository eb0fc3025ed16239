//! The MCP server: the tools (in `tools/`, each a few lines: params → engine → result) and the
//! job resources (in `resources.rs`) over one shared [`JobManager`].

use std::sync::Arc;

use ptyjobs_engine::JobManager;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::{
    Implementation, ListResourceTemplatesResult, ListResourcesResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities, ServerConfig,
    SubscribeRequestParams, UnsubscribeRequestParams,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, tool_handler};

use crate::resources::{self, Subscriptions};
use crate::schema::make_portable;

/// What the model is told about the server as a whole.
const INSTRUCTIONS: &str = "\
ptyjobs runs shell commands as background jobs, each under its own pseudo-terminal, and \
returns their output as clean text (no colour codes; progress bars at their final state).
Workflow: execute_command starts a job and returns its job_id at once. Then wait_for_job \
blocks until something happens — the job exits, a line matches `pattern`, output goes quiet \
for `idle_ms`, or a `port` accepts connections — and returns the reason and the last lines: \
prefer it to polling. A capped wait (50 s at most per call) says so: call it again.
Read output with get_job_output (pass the previous next_offset as offset to get only new \
lines; max_bytes bounds the answer), the last lines with tail_job_output, or matching lines \
with search_job_output. For programs that ask questions (prompts, REPLs, watchers), answer \
with interact_with_job (`input` text and/or named `keys` like Enter, Up, q, C-c), which \
returns the job's response. get_job_screen shows what a full-screen program (TUI, editor, \
watcher) draws right now; resize_job changes the terminal size. list_jobs shows every job, \
newest first (filter by status); kill_job stops a job and all its child processes. Each \
job's output and screen are also resources (ptyjobs://jobs/{job_id}/output and /screen). \
Jobs are killed when the server exits.";

/// The MCP server: the tools over one shared [`JobManager`].
#[derive(Clone)]
pub struct Server {
    pub(crate) jobs: JobManager,
    /// The editor given with `--editor`, set as each job's GIT_EDITOR, EDITOR and VISUAL.
    pub(crate) editor: Option<Arc<str>>,
    subscriptions: Arc<Subscriptions>,
    tool_router: ToolRouter<Self>,
}

impl Server {
    /// A server answering with `jobs`.
    pub fn new(jobs: JobManager) -> Self {
        Self {
            jobs,
            editor: None,
            subscriptions: Arc::default(),
            tool_router: portable(
                Self::job_tools()
                    + Self::output_tools()
                    + Self::terminal_tools()
                    + Self::wait_tools(),
            ),
        }
    }
}

impl Server {
    /// Jobs get `editor` as their GIT_EDITOR, EDITOR and VISUAL (unless their `env` says
    /// otherwise).
    pub fn with_editor(mut self, editor: Option<String>) -> Self {
        self.editor = editor.map(Into::into);
        self
    }
}

/// `router` with every tool's input and output schema in the portable form (see
/// [`crate::schema`]).
fn portable(mut router: ToolRouter<Server>) -> ToolRouter<Server> {
    for route in router.map.values_mut() {
        make_portable(Arc::make_mut(&mut route.attr.input_schema));
        if let Some(out) = route.attr.output_schema.as_mut() {
            make_portable(Arc::make_mut(out));
        }
    }
    router
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .enable_resources_subscribe()
                .enable_resources_list_changed()
                .build(),
        )
        .with_server_info(Implementation::new("ptyjobs", env!("CARGO_PKG_VERSION")))
        .with_instructions(INSTRUCTIONS)
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(resources::list(&self.jobs))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(resources::templates())
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        resources::read(&self.jobs, &request.uri).map(Into::into)
    }

    #[allow(deprecated)] // resources/subscribe is what clients on 2025 protocols use.
    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.subscriptions
            .subscribe(&self.jobs, request.uri, context.peer)
    }

    #[allow(deprecated)]
    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.subscriptions.unsubscribe(&request.uri);
        Ok(())
    }
}
