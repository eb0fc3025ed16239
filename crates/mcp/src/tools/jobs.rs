//! execute_command, get_job_status, list_jobs, kill_job, remove_job.

use std::path::PathBuf;
use std::time::Duration;

use ptyjobs_engine::{JobId, JobSpec, KillOutcome, Signal};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::{Json, Peer, RoleServer, tool, tool_router};

use super::{job_id, seconds};
use crate::error::ToolError;
use crate::params::*;
use crate::server::Server;

#[tool_router(router = job_tools, vis = "pub(crate)")]
impl Server {
    /// Start a shell command as a background job under its own terminal and return its job_id
    /// at once. Use for builds, tests, servers, watchers: anything long-running or interactive.
    /// Then wait_for_job, e.g. `{"command": "npm run dev", "name": "dev"}` followed by
    /// wait_for_job `{"job_id": ..., "port": 3000}`.
    #[tool(annotations(destructive_hint = true, open_world_hint = true))]
    async fn execute_command(
        &self,
        Parameters(p): Parameters<ExecuteParams>,
        peer: Peer<RoleServer>,
    ) -> Result<Json<ExecuteResult>, ToolError> {
        let spec = JobSpec {
            command: p.command,
            cwd: p.cwd.map(PathBuf::from),
            env: p.env.unwrap_or_default(),
            cols: p.cols,
            rows: p.rows,
            name: p.name,
            timeout: seconds(p.timeout_secs)?,
        };
        let job = self.jobs.execute(spec)?;
        // The resource list changed (this job appeared, maybe an old one was forgotten).
        tokio::spawn(async move { peer.notify_resource_list_changed().await });
        Ok(Json(job.into()))
    }

    /// Get a job's status (running, completed, failed or killed), exit code, signal and timing.
    #[tool(annotations(read_only_hint = true, open_world_hint = false))]
    async fn get_job_status(
        &self,
        Parameters(p): Parameters<JobIdParams>,
    ) -> Result<Json<StatusResult>, ToolError> {
        let id = job_id(&p.job_id)?;
        Ok(Json(
            self.jobs.off_runtime(move |m| m.status(id)).await?.into(),
        ))
    }

    /// List jobs with their status, name, command, start time and exit code, newest first.
    /// `{"status": "running"}` lists only running jobs.
    #[tool(annotations(read_only_hint = true, open_world_hint = false))]
    async fn list_jobs(&self, Parameters(p): Parameters<ListParams>) -> Json<ListResult> {
        Json(ListResult {
            jobs: (self.jobs.off_runtime(|m| Ok(m.list())).await)
                .unwrap_or_default()
                .into_iter()
                .filter(|j| p.status.is_none_or(|s| Status::from(j.status) == s))
                .map(Into::into)
                .collect(),
        })
    }

    /// Stop a job and every process it started: `signal` (default TERM) to all of them, then
    /// KILL after `grace_ms`. Answers killed, already_terminated, or not_found for an unknown id.
    #[tool(annotations(
        destructive_hint = true,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn kill_job(
        &self,
        Parameters(p): Parameters<KillParams>,
    ) -> Result<Json<KillResult>, ToolError> {
        // Like the Python server: an id that names no job, malformed or not, is `not_found`.
        let Ok(id) = p.job_id.parse::<JobId>() else {
            return Ok(Json(KillOutcome::NotFound.into()));
        };
        let signal = match p.signal {
            None => Signal::TERM,
            Some(SignalArg::Name(name)) => name.parse::<Signal>()?,
            Some(SignalArg::Number(n)) => n.to_string().parse::<Signal>()?,
        };
        // Capped by the engine (EngineConfig::max_kill_grace), the one cap.
        let grace = p.grace_ms.map(Duration::from_millis);
        Ok(Json(self.jobs.kill(id, signal, grace).await?.into()))
    }

    /// Forget a finished job: its record and its saved output are deleted for good. Running
    /// jobs must be killed first.
    #[tool(annotations(
        destructive_hint = true,
        idempotent_hint = false,
        open_world_hint = false
    ))]
    async fn remove_job(
        &self,
        Parameters(p): Parameters<JobIdParams>,
        peer: Peer<RoleServer>,
    ) -> Result<Json<RemoveResult>, ToolError> {
        let id = job_id(&p.job_id)?;
        self.jobs.off_runtime(move |m| m.remove(id)).await?;
        tokio::spawn(async move { peer.notify_resource_list_changed().await });
        Ok(Json(RemoveResult {
            job_id: id.to_string(),
            removed: true,
        }))
    }
}
