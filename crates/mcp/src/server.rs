//! The seven tools: each converts its parameters, calls the engine once, converts the result.
//! Checks that are about the MCP surface (defaults, caps, the newline rule) live here; checks
//! about jobs and terminals live in the engine.

use std::path::PathBuf;
use std::time::Duration;

use ptyjobs_engine::{JobId, JobManager, JobSpec, KillOutcome, Signal};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{Implementation, ServerCapabilities, ServerConfig};
use rmcp::{Json, ServerHandler, tool, tool_handler, tool_router};

use crate::error::ToolError;
use crate::params::*;

/// What the model is told about the server as a whole.
const INSTRUCTIONS: &str = "\
ptyjobs runs shell commands as background jobs, each under its own pseudo-terminal, and \
returns their output as clean text (no colour codes; progress bars at their final state).
Workflow: execute_command starts a job and returns its job_id at once. Poll get_job_status, \
read new output with get_job_output (pass the previous next_offset as offset) or the last \
lines with tail_job_output. For programs that ask questions (prompts, REPLs), answer with \
interact_with_job, which returns the job's response. list_jobs shows every job, newest first; \
kill_job stops a job and all its child processes. Jobs are killed when the server exits.";

/// The MCP server: the tools over one shared [`JobManager`].
#[derive(Clone)]
pub struct Server {
    jobs: JobManager,
}

impl Server {
    /// A server answering with `jobs`.
    pub fn new(jobs: JobManager) -> Self {
        Self { jobs }
    }
}

/// Parses a model-supplied job id: a malformed one is a fixable error naming list_jobs.
fn job_id(s: &str) -> Result<JobId, ToolError> {
    Ok(s.parse::<JobId>()?)
}

fn timeout(secs: Option<f64>) -> Result<Option<Duration>, ToolError> {
    match secs {
        None => Ok(None),
        Some(s) if s.is_finite() && s > 0.0 && s <= 1e9 => Ok(Some(Duration::from_secs_f64(s))),
        Some(s) => Err(ToolError::invalid(format!(
            "timeout_secs must be a positive number of seconds, got {s}"
        ))),
    }
}

#[tool_router]
impl Server {
    /// Start a shell command as a background job under its own terminal and return its job_id
    /// at once. Use for builds, tests, servers, watchers: anything long-running or interactive.
    #[tool(annotations(destructive_hint = true, open_world_hint = true))]
    async fn execute_command(
        &self,
        Parameters(p): Parameters<ExecuteParams>,
    ) -> Result<Json<ExecuteResult>, ToolError> {
        let spec = JobSpec {
            command: p.command,
            cwd: p.cwd.map(PathBuf::from),
            env: p.env.unwrap_or_default(),
            cols: p.cols,
            rows: p.rows,
            name: p.name,
            timeout: timeout(p.timeout_secs)?,
        };
        Ok(Json(self.jobs.execute(spec)?.into()))
    }

    /// Get a job's status (running, completed, failed or killed), exit code, signal and timing.
    #[tool(annotations(read_only_hint = true, open_world_hint = false))]
    async fn get_job_status(
        &self,
        Parameters(p): Parameters<JobIdParams>,
    ) -> Result<Json<StatusResult>, ToolError> {
        Ok(Json(self.jobs.status(job_id(&p.job_id)?)?.into()))
    }

    /// Read a job's output as clean text, by absolute line numbers. Without `offset` it starts
    /// at the oldest line held; returns at most `limit` lines (default 1000). Pass the result's
    /// `next_offset` as `offset` to read only what is new.
    #[tool(annotations(read_only_hint = true, open_world_hint = false))]
    async fn get_job_output(
        &self,
        Parameters(p): Parameters<OutputParams>,
    ) -> Result<Json<OutputResult>, ToolError> {
        let id = job_id(&p.job_id)?;
        let limit = match p.limit {
            None => DEFAULT_OUTPUT_LIMIT,
            Some(n) if n >= 1 => usize::try_from(n).unwrap_or(usize::MAX),
            Some(n) => {
                return Err(ToolError::invalid(format!(
                    "limit must be at least 1, got {n}"
                )));
            }
        };
        Ok(Json(self.jobs.output(id, p.offset, Some(limit))?.into()))
    }

    /// Get the last `lines` lines (1-1000, default 50) of a job's output as clean text,
    /// including a prompt still waiting for input.
    #[tool(annotations(read_only_hint = true, open_world_hint = false))]
    async fn tail_job_output(
        &self,
        Parameters(p): Parameters<TailParams>,
    ) -> Result<Json<TailResult>, ToolError> {
        let id = job_id(&p.job_id)?;
        let lines = p.lines.unwrap_or(DEFAULT_TAIL_LINES as i64);
        let Some(lines) = usize::try_from(lines)
            .ok()
            .filter(|n| (1..=MAX_TAIL_LINES).contains(n))
        else {
            return Err(ToolError::invalid(format!(
                "lines must be between 1 and {MAX_TAIL_LINES}, got {lines}"
            )));
        };
        Ok(Json(self.jobs.tail(id, lines)?.into()))
    }

    /// Type input into a running job (answer a prompt, send a REPL command) and return what the
    /// job printed in response. A newline is appended unless `raw` is true. Returns as soon as
    /// the response is complete (output went quiet or the job exited), at most after `wait_ms`.
    #[tool(annotations(destructive_hint = true, open_world_hint = true))]
    async fn interact_with_job(
        &self,
        Parameters(p): Parameters<InteractParams>,
    ) -> Result<Json<InteractResult>, ToolError> {
        let id = job_id(&p.job_id)?;
        let mut input = p.input;
        if !p.raw.unwrap_or(false) && !input.ends_with('\n') {
            input.push('\n');
        }
        let wait = Duration::from_millis(p.wait_ms.unwrap_or(DEFAULT_WAIT_MS).min(MAX_WAIT_MS));
        Ok(Json(
            self.jobs.interact(id, input.as_bytes(), wait).await?.into(),
        ))
    }

    /// List every job with its status, command, start time and exit code, newest first.
    #[tool(annotations(read_only_hint = true, open_world_hint = false))]
    async fn list_jobs(&self) -> Json<ListResult> {
        Json(ListResult {
            jobs: self.jobs.list().into_iter().map(Into::into).collect(),
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
        let grace = p
            .grace_ms
            .map(|ms| Duration::from_millis(ms.min(MAX_GRACE_MS)));
        Ok(Json(self.jobs.kill(id, signal, grace).await.into()))
    }
}

#[tool_handler]
impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("ptyjobs", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }
}
