//! The MCP server: the tools (in `tools/`, each a few lines: params → engine → result) and the
//! job resources (in `resources.rs`) over one shared [`JobManager`].

use std::sync::{Arc, OnceLock};

use ptyjobs_engine::JobManager;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::{IntoCallToolResult, ToolCallContext};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, GetTaskParams, GetTaskResult,
    Implementation, ListResourceTemplatesResult, ListResourcesResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities, ServerConfig,
    SubscribeRequestParams, SubscriptionFilter, UnsubscribeRequestParams,
};
use rmcp::service::{RequestContext, SubscriptionContext};
use rmcp::{ErrorData, Peer, RoleServer, ServerHandler, tool_handler};
use tokio::sync::broadcast;

use crate::resources::{self, Subscriptions};
use crate::schema::make_portable;
use crate::tasks;

/// What the model is told about the server as a whole.
const INSTRUCTIONS: &str = "\
ptyjobs runs shell commands as background jobs, each under its own pseudo-terminal, and \
returns their output as clean text (no colour codes; progress bars at their final state).
Workflow: execute_command starts a job and returns its job_id at once. Then wait_for_job \
blocks until something happens — the job exits, a line matches `pattern`, output goes quiet \
for `idle_ms`, or a `port` accepts connections — and returns the reason and the last lines: \
prefer it to polling. A capped wait (50 s at most per call) says so: call it again. For a \
build or a test run, execute_command with `\"wait\": true` answers once the job has ended. \
For a server or watcher pass `name` and `\"ensure\": true`: a running copy is reused, never \
duplicated; restart_job restarts it; every tool takes the name as job_id (and `cwd`, the job's \
directory, when the name is live in several).
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
    /// Set once the state directory is opened, beside the handshake ([`Self::set_jobs`]):
    /// `initialize` needs no job. See [`Self::jobs`].
    jobs: Arc<OnceLock<JobManager>>,
    subscriptions: Arc<Subscriptions>,
    /// Jobs ended by `tasks/cancel`.
    cancelled: Arc<tasks::Cancelled>,
    /// Fires when the resource list changes, for `subscriptions/listen` streams.
    list_changed: broadcast::Sender<()>,
}

/// The tools with their schemas, one set per process. Generating every tool's schemas costs
/// about a millisecond of CPU and ~200 page faults, and `initialize` needs none of them: built
/// on a blocking thread once the handshake is answered ([`prepare_tools`]), so that on a
/// 2-core machine they do not compete with the start itself; the first call that needs them
/// waits for that if it must (or builds them, if it comes first).
static TOOLS: OnceLock<ToolRouter<Server>> = OnceLock::new();

/// Starts building the tools' schemas on the runtime's blocking pool (see [`TOOLS`]); call
/// inside the runtime. A call that needs them first builds them itself.
pub fn prepare_tools() {
    tokio::task::spawn_blocking(|| {
        TOOLS.get_or_init(Server::tools_with_schemas);
    });
}

impl Server {
    /// A server whose jobs are given later by [`Self::set_jobs`].
    pub fn new() -> Self {
        Self {
            jobs: Arc::default(),
            subscriptions: Arc::default(),
            cancelled: Arc::default(),
            list_changed: broadcast::channel(16).0,
        }
    }

    fn tools_with_schemas() -> ToolRouter<Self> {
        portable(
            Self::job_tools()
                + Self::output_tools()
                + Self::terminal_tools()
                + Self::wait_tools()
                + Self::restart_tools(),
        )
    }

    /// Gives the server its job manager (once; a second manager is ignored).
    pub fn set_jobs(&self, jobs: JobManager) {
        let _ = self.jobs.set(jobs);
    }

    /// The job manager. A request that arrives before [`Self::set_jobs`] (a fraction of a
    /// millisecond after start, while the state directory is opened) waits for it here, so
    /// every tool call sees the store.
    pub(crate) fn jobs(&self) -> &JobManager {
        self.jobs.wait()
    }

    /// The job manager, if it is made yet.
    pub fn jobs_if_ready(&self) -> Option<&JobManager> {
        self.jobs.get()
    }

    /// The tools (see [`TOOLS`]).
    fn tools(&self) -> &'static ToolRouter<Self> {
        TOOLS.get_or_init(Self::tools_with_schemas)
    }
}

impl Server {
    /// Tells the client that the resource list changed: on the session (clients on 2025
    /// revisions) and on every `subscriptions/listen` stream that asked for it.
    pub(crate) fn resource_list_changed(&self, peer: &Peer<RoleServer>) {
        let _ = self.list_changed.send(());
        let peer = peer.clone();
        tokio::spawn(async move { peer.notify_resource_list_changed().await });
    }

    /// execute_command with `wait` for a client with tasks: start the job as the tool would
    /// (same start path, same errors), then answer with the task that is the job. Arguments
    /// the tool's schema refuses go through the tool itself, which answers the same refusal.
    async fn execute_as_task(
        &self,
        mut request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if let Some(args) = request.arguments.as_mut() {
            args.remove("wait");
        }
        let args = serde_json::Value::Object(request.arguments.clone().unwrap_or_default());
        let Ok(params) = serde_json::from_value::<crate::params::ExecuteParams>(args) else {
            return self
                .tools()
                .call(ToolCallContext::new(self, request, context))
                .await;
        };
        match self.start_job(params, &context.peer) {
            Ok(started) => Ok(CallToolResponse::Task(tasks::created(&started.info))),
            Err(e) => e.into_call_tool_result(),
        }
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

#[tool_handler(router = self.tools())]
impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .enable_resources_subscribe()
                .enable_resources_list_changed()
                .enable_tasks()
                .build(),
        )
        .with_server_info(Implementation::new("ptyjobs", env!("CARGO_PKG_VERSION")))
        .with_instructions(INSTRUCTIONS)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let wants_wait = request
            .arguments
            .as_ref()
            .and_then(|a| a.get("wait"))
            .is_some_and(|w| w == true);
        if request.name == "execute_command" && wants_wait && tasks::client_supports(&context) {
            return self.execute_as_task(request, context).await;
        }
        self.tools()
            .call(ToolCallContext::new(self, request, context))
            .await
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let (jobs, cancelled) = (self.jobs().clone(), self.cancelled.clone());
        off_runtime(move || tasks::get(&jobs, &cancelled, &request.task_id)).await
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let (jobs, cancelled) = (self.jobs().clone(), self.cancelled.clone());
        off_runtime(move || tasks::cancel(&jobs, &cancelled, &request.task_id)).await
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        let mut accepted = requested.supported_by(&self.get_info().capabilities);
        if let Some(uris) = accepted.resource_subscriptions.as_mut() {
            uris.retain(|uri| resources::exists(self.jobs(), uri));
        }
        Some(accepted)
    }

    /// A `subscriptions/listen` stream (protocol 2026-07-28): updates of the accepted job
    /// resources and resource-list changes, until the client cancels the stream.
    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let mut notifiers = Vec::new();
        for uri in context.accepted().resource_subscriptions.iter().flatten() {
            notifiers.push(resources::listen_to(
                self.jobs(),
                uri,
                context.sink().clone(),
            )?);
        }
        if context.accepted().resources_list_changed == Some(true) {
            let (mut rx, sink) = (self.list_changed.subscribe(), context.sink().clone());
            notifiers.push(tokio::spawn(async move {
                loop {
                    match rx.recv().await {
                        Ok(()) | Err(broadcast::error::RecvError::Lagged(_)) => {
                            if sink.notify_resource_list_changed().await.is_err() {
                                return;
                            }
                        }
                        Err(broadcast::error::RecvError::Closed) => return,
                    }
                }
            }));
        }
        // A change between the acknowledgement and the registration above would be lost: one
        // notification of each kind now says "read again" (a spurious one is harmless), and
        // tells the client that every later change will be notified.
        for uri in context.accepted().resource_subscriptions.iter().flatten() {
            let _ = context.sink().notify_resource_updated(uri.clone()).await;
        }
        if context.accepted().resources_list_changed == Some(true) {
            let _ = context.sink().notify_resource_list_changed().await;
        }
        context.cancelled().await;
        for n in notifiers {
            n.abort();
        }
        Ok(())
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let cursor = request.as_ref().and_then(|r| r.cursor.as_deref());
        let (jobs, cursor) = (self.jobs().clone(), cursor.map(str::to_owned));
        off_runtime(move || resources::list(&jobs, cursor.as_deref())).await
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
        let jobs = self.jobs().clone();
        off_runtime(move || resources::read(&jobs, &request.uri))
            .await
            .map(Into::into)
    }

    #[allow(deprecated)] // resources/subscribe is what clients on 2025 protocols use.
    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.subscriptions
            .subscribe(self.jobs(), request.uri, context.peer)
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

/// Runs a read that may touch the state directory (a stored job's record, log or screen) on
/// the blocking pool, so a slow disk never holds up the async workers and the other calls.
async fn off_runtime<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, ErrorData> + Send + 'static,
) -> Result<T, ErrorData> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ErrorData::internal_error(format!("read task failed: {e}"), None))?
}
