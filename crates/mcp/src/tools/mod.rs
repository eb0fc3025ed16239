//! The tools, grouped by theme; each group is one `#[tool_router]` and the server adds them up.
//! Each tool converts its parameters, calls the engine, converts the result. Checks about the
//! MCP surface (defaults, caps, the newline rule) live here; checks about jobs and terminals
//! live in the engine.

mod jobs;
mod output;
mod restart;
mod services;
mod terminal;
mod wait;

use std::time::Duration;

use ptyjobs_engine::{JobId, WaitProgress, WaitSpec};
use rmcp::RoleServer;
use rmcp::model::ProgressNotificationParam;
use rmcp::service::RequestContext;
use tokio::sync::mpsc;

use crate::error::ToolError;

impl crate::server::Server {
    /// The job a model-supplied `job_id` stands for: a job id, or a job's name (the live job
    /// with it — in `cwd` when given, relative to the server's working directory — else the
    /// newest ended one). An unknown one is a fixable error naming list_jobs; a name live in
    /// several directories lists them.
    async fn job_id(&self, job: &crate::params::JobIdParams) -> Result<JobId, ToolError> {
        let cwd = job.cwd.as_deref().map(std::path::PathBuf::from);
        Ok(self.jobs().resolve_job_async(&job.job_id, cwd).await?)
    }
}

/// A model-supplied number of seconds.
/// A wait until the job ends: longer than any cap, so a capped wait says so (then call
/// wait_for_job).
fn until_exit() -> WaitSpec {
    WaitSpec {
        timeout: Some(Duration::from_secs(365 * 86_400)),
        ..WaitSpec::default()
    }
}

fn seconds(secs: Option<f64>) -> Result<Option<Duration>, ToolError> {
    match secs {
        None => Ok(None),
        Some(s) if s.is_finite() && s > 0.0 && s <= 1e9 => Ok(Some(Duration::from_secs_f64(s))),
        Some(s) => Err(ToolError::invalid(format!(
            "timeout_secs must be a positive number of seconds, got {s}"
        ))),
    }
}

/// A count parameter within `1..=max` (or `0..=max` when `min` is 0), defaulting to `default`.
fn count(
    name: &str,
    value: Option<i64>,
    default: usize,
    min: usize,
    max: usize,
) -> Result<usize, ToolError> {
    let Some(v) = value else { return Ok(default) };
    usize::try_from(v)
        .ok()
        .filter(|n| (min..=max).contains(n))
        .ok_or_else(|| {
            ToolError::invalid(if max == usize::MAX {
                format!("{name} must be at least {min}, got {v}")
            } else {
                format!("{name} must be between {min} and {max}, got {v}")
            })
        })
}

/// A callback for the engine's wait progress that sends MCP progress notifications when the
/// request carries a progress token (clients reset their request timeout on each), and does
/// nothing otherwise. The engine's callback is synchronous: notifications go out through a
/// channel and a task that ends with the wait.
fn progress(context: &RequestContext<RoleServer>) -> impl Fn(WaitProgress) + Send + Sync + 'static {
    let (tx, mut rx) = mpsc::unbounded_channel::<WaitProgress>();
    if let Some(token) = context.meta.get_progress_token() {
        let peer = context.peer.clone();
        tokio::spawn(async move {
            while let Some(p) = rx.recv().await {
                let (elapsed, total) = (p.elapsed.as_secs_f64(), p.total.as_secs_f64());
                let note = ProgressNotificationParam::new(token.clone(), elapsed)
                    .with_total(total)
                    .with_message(format!(
                        "waited {elapsed:.0} s of {total:.0} s; the job has printed {} bytes",
                        p.bytes
                    ));
                if peer.notify_progress(note).await.is_err() {
                    return;
                }
            }
        });
    }
    move |p| {
        let _ = tx.send(p);
    }
}
