//! wait_for_job: one call instead of a polling loop.

use std::time::Duration;

use ptyjobs_engine::{WaitSpec, compile_pattern};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::service::RequestContext;
use rmcp::{Json, RoleServer, tool, tool_router};

use super::seconds;
use crate::error::ToolError;
use crate::params::*;
use crate::server::Server;

#[tool_router(router = wait_tools, vis = "pub(crate)")]
impl Server {
    /// Wait server-side until the first of: the job exits; a new line matches `pattern`; output
    /// is quiet for `idle_ms`; the job itself listens on `port` (port_taken if another program
    /// holds it) or, with `listening: true`, on any port (answers ports and urls); `url`
    /// answers; with `input: true`, it waits for input (input_wanted); `timeout_secs` passes
    /// (at most 50 s a call: a capped wait says so, call again). Returns the reason, the
    /// matching line, the status and last lines. E.g. `{"job_id": "dev", "listening": true}`,
    /// `{"job_id": ..., "pattern": "Tests: \\d+ passed"}`, `{"job_id": ...}` (until it exits).
    /// Without polling: `npx -y ptyjobs wait <id> --port N` in the background.
    #[tool(annotations(read_only_hint = true, open_world_hint = false))]
    async fn wait_for_job(
        &self,
        Parameters(p): Parameters<WaitParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<Json<WaitResult>, ToolError> {
        let id = self.job_id(&p.job).await?;
        if p.port == Some(0) {
            return Err(ToolError::invalid("port must be between 1 and 65535"));
        }
        if p.idle_ms == Some(0) {
            return Err(ToolError::invalid("idle_ms must be at least 1"));
        }
        let spec = WaitSpec {
            pattern: p.pattern.as_deref().map(compile_pattern).transpose()?,
            from_start: p.from_start.unwrap_or(false),
            idle: p.idle_ms.map(Duration::from_millis),
            port: p.port,
            listening: p.listening,
            url: p.url,
            expect_status: p.expect_status,
            input: p.input,
            timeout: seconds(p.timeout_secs)?,
        };
        let wait = self.jobs().wait_for(id, &spec, super::progress(&context));
        // Dropping the engine's future (when the client cancels) ends the wait at once.
        tokio::select! {
            outcome = wait => Ok(Json(outcome?.into())),
            () = context.ct.cancelled() => {
                tracing::info!(job = %id, "wait_for_job cancelled by the client");
                Err(ToolError::invalid("the wait was cancelled"))
            }
        }
    }
}
