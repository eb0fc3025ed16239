//! restart_job: end a job's whole tree and start it again, as a new job.

use rmcp::handler::server::wrapper::Parameters;
use rmcp::service::RequestContext;
use rmcp::{Json, RoleServer, tool, tool_router};

use ptyjobs_engine::WaitSpec;

use super::until_exit;
use crate::error::ToolError;
use crate::params::*;
use crate::server::Server;

#[tool_router(router = restart_tools, vis = "pub(crate)")]
impl Server {
    /// Stop a job's whole process tree, wait until its ports are free, and start it again as
    /// a new job: same command, cwd, env, name (or a new `command`/`env`). A finished job
    /// starts again. Answers like execute_command, plus `replaces`; with `port`, `listening` or
    /// `url`, once the new job is ready (`outcome`, as wait_for_job's, capped at 50 s).
    #[tool(annotations(destructive_hint = true, open_world_hint = true))]
    async fn restart_job(
        &self,
        Parameters(p): Parameters<RestartParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<Json<ExecuteResult>, ToolError> {
        let id = self.job_id(&p.job).await?;
        let job = self.jobs().restart(id, p.command, p.env).await?;
        self.resource_list_changed(&context.peer);
        let id = job.id;
        let ready = p.port.is_some() || p.listening || p.url.is_some();
        let wait = if ready {
            Some(WaitSpec {
                port: p.port,
                listening: p.listening,
                url: p.url,
                ..WaitSpec::default()
            })
        } else {
            (p.wait == Some(true)).then(until_exit)
        };
        self.answer_start(id, ExecuteResult::from(job), wait, &context)
            .await
    }
}
