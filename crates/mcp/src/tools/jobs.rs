//! execute_command, get_job_status, list_jobs, kill_job, remove_job.

use std::path::PathBuf;
use std::time::Duration;

use ptyjobs_engine::{JobId, JobSpec, KillOutcome, Signal, Started, WaitSpec};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::service::RequestContext;
use rmcp::{Json, Peer, RoleServer, tool, tool_router};

use super::seconds;
use crate::budget;
use crate::error::ToolError;
use crate::params::*;
use crate::server::Server;

#[tool_router(router = job_tools, vis = "pub(crate)")]
impl Server {
    /// Start a shell command as a background job under its own terminal; answers at once
    /// with its job_id. For servers and watchers pass `name` and `"ensure": true` (a running
    /// copy is reused, not duplicated), e.g. `{"command": "npm run dev", "name": "dev",
    /// "ensure": true}`, then wait_for_job `{"job_id": "dev", "listening": true}`; restart_job
    /// restarts it. For builds and tests, `"wait": true` answers once the job has ended.
    /// `{"service": "web"}` ensures a service the project defines (list_jobs `{"services":
    /// true}`). To be woken instead of polling, run `npx -y ptyjobs wait <id>` in the
    /// background. The job's environment adds TERM=xterm-256color, COLORTERM=truecolor,
    /// PAGER=cat, GIT_PAGER=cat and an EDITOR, VISUAL and GIT_EDITOR that fail at once (pass
    /// messages on the command line: `git commit -m "..."`); `env` overrides them.
    #[tool(annotations(destructive_hint = true, open_world_hint = true))]
    async fn execute_command(
        &self,
        Parameters(p): Parameters<ExecuteParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<Json<ExecuteResult>, ToolError> {
        if p.service.is_some() {
            return Ok(Json(self.start_service(p, &context).await?));
        }
        let wait = p.wait == Some(true);
        let started = self.start_job(p, &context.peer)?;
        let id = started.info.id;
        let mut result = ExecuteResult::from(started.info);
        if started.reused {
            result.reused = true;
            result.tail = Some(
                self.jobs()
                    .tail_async(id, REUSED_TAIL_LINES, budget::REUSED_TAIL_BYTES)
                    .await?
                    .output,
            );
        }
        self.answer_start(id, result, wait.then(super::until_exit), &context)
            .await
    }

    /// Get a job's status (running, completed, failed or killed), exit code, signal and timing.
    #[tool(annotations(read_only_hint = true, open_world_hint = false))]
    async fn get_job_status(
        &self,
        Parameters(p): Parameters<JobIdParams>,
    ) -> Result<Json<StatusResult>, ToolError> {
        let id = self.job_id(&p).await?;
        Ok(Json(self.jobs().status_async(id).await?.into()))
    }

    /// List jobs with their status, name, command, start time and exit code, newest first.
    /// `{"status": "running"}` lists only running jobs. One answer holds at most 64 KiB of
    /// jobs: pass its `next_cursor` as `cursor` for the next ones.
    #[tool(annotations(read_only_hint = true, open_world_hint = false))]
    async fn list_jobs(
        &self,
        Parameters(p): Parameters<ListParams>,
    ) -> Result<Json<ListResult>, ToolError> {
        if p.services == Some(true) {
            return Ok(Json(self.list_services(p).await?));
        }
        let jobs: Vec<_> = self
            .jobs()
            .list_async()
            .await?
            .into_iter()
            .filter(|j| p.status.is_none_or(|s| Status::from(j.status) == s))
            .collect();
        let start = match &p.cursor {
            None => 0,
            Some(c) => c.parse::<usize>().map_err(|_| {
                ToolError::invalid(format!(
                    "cursor {c:?} is not one list_jobs gave: pass an answer's next_cursor, \
                     or leave cursor out to start from the newest job"
                ))
            })?,
        };
        let total = jobs.len();
        let page = budget::page(
            jobs.into_iter().skip(start).map(JobSummary::from),
            budget::requested(p.max_bytes),
        );
        let end = start.saturating_add(page.len()).min(total);
        Ok(Json(ListResult {
            omitted_jobs: (total - page.len()) as u64,
            total_jobs: total as u64,
            next_cursor: (end < total).then(|| end.to_string()),
            jobs: page,
            services: None,
            omitted_services: None,
        }))
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
        // Like the Python server: an id that names no job, malformed or not, is `not_found`
        // (a name live in several directories is an error that lists them; so is a `cwd`
        // with no job of the name: the caller meant a directory, and it is not the job's).
        let cwd = p.job.cwd.as_deref().map(PathBuf::from);
        let id = match self.jobs().resolve_job_async(&p.job.job_id, cwd).await {
            Ok(id) => id,
            Err(ptyjobs_engine::Error::UnknownName { cwd: None, .. }) => {
                return Ok(Json(KillOutcome::NotFound.into()));
            }
            Err(e) => return Err(e.into()),
        };
        let signal = match p.signal {
            None => Signal::TERM,
            Some(SignalArg::Name(name)) => name.parse::<Signal>()?,
            Some(SignalArg::Number(n)) => n.to_string().parse::<Signal>()?,
        };
        // Capped by the engine (EngineConfig::max_kill_grace), the one cap.
        let grace = p.grace_ms.map(Duration::from_millis);
        Ok(Json(self.jobs().kill(id, signal, grace).await?.into()))
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
        let id = self.job_id(&p).await?;
        self.jobs().remove_async(id).await?;
        self.resource_list_changed(&peer);
        Ok(Json(RemoveResult {
            job_id: id.to_string(),
            removed: true,
        }))
    }
}

/// A kept job's lifetime from `keep_ttl_secs`: a day by default, `0` none.
fn keep_ttl(secs: Option<u64>) -> Option<Duration> {
    match secs.unwrap_or(86_400) {
        0 => None,
        s => Some(Duration::from_secs(s)),
    }
}

/// Lines of a reused job's output an ensure answers with.
const REUSED_TAIL_LINES: usize = 10;

impl Server {
    /// The answer of a start (execute_command, restart_job): at once, or once `wait` ends (the
    /// job's end, or a restart's readiness), capped like wait_for_job for a client without
    /// tasks.
    pub(crate) async fn answer_start(
        &self,
        id: JobId,
        started: ExecuteResult,
        wait: Option<WaitSpec>,
        context: &RequestContext<RoleServer>,
    ) -> Result<Json<ExecuteResult>, ToolError> {
        let Some(spec) = wait else {
            return Ok(Json(started));
        };
        // A client without tasks (those with tasks never get here, see server.rs): wait in
        // the call, capped like wait_for_job.
        let progress = super::progress(context);
        let wait = self.jobs().wait_for(id, &spec, progress);
        tokio::select! {
            outcome = wait => Ok(Json(started.with_outcome(outcome?.into()))),
            () = context.ct.cancelled() => Err(ToolError::invalid("the wait was cancelled; the job runs on")),
        }
    }

    /// Starts the job execute_command describes (its `wait` aside) and tells the client the
    /// resource list changed: the one start path of the tool and of its task form.
    pub(crate) fn start_job(
        &self,
        p: ExecuteParams,
        peer: &Peer<RoleServer>,
    ) -> Result<Started, ToolError> {
        let command = match (p.command, &p.service) {
            (Some(c), None) => c,
            (Some(_), Some(_)) => {
                return Err(ToolError::invalid(
                    "give command or service, not both: a service's command is in its file",
                ));
            }
            (None, Some(_)) => {
                return Err(ToolError::invalid(
                    "a service runs until stopped: leave out wait (its port is waited for)",
                ));
            }
            (None, None) => {
                return Err(ToolError::invalid(
                    "give command (a shell command line), or service (a service of the \
                     project: see list_jobs {\"services\": true})",
                ));
            }
        };
        let spec = JobSpec {
            command,
            cwd: p.cwd.map(PathBuf::from),
            env: p.env.unwrap_or_default(),
            cols: p.cols,
            rows: p.rows,
            name: p.name,
            timeout: seconds(p.timeout_secs)?,
            ensure: p.ensure == Some(true),
            auto_port: p.auto_port,
            keep: p.keep == Some(true),
            keep_ttl: keep_ttl(p.keep_ttl_secs),
            profile: p.profile,
            ..JobSpec::default()
        };
        let job = if spec.keep {
            // A kept job is started by the keeper (which may have to be started first): a
            // blocking call, kept off the other tasks of this worker.
            tokio::task::block_in_place(|| self.jobs().ensure(spec))?
        } else {
            self.jobs().ensure(spec)?
        };
        // The resource list changed (this job appeared, maybe an old one was forgotten).
        if !job.reused {
            self.resource_list_changed(peer);
        }
        Ok(job)
    }
}
