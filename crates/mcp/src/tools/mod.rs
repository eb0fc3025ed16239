//! The tools, grouped by theme; each group is one `#[tool_router]` and the server adds them up.
//! Each tool converts its parameters, calls the engine, converts the result. Checks about the
//! MCP surface (defaults, caps, the newline rule) live here; checks about jobs and terminals
//! live in the engine.

mod jobs;
mod output;
mod terminal;
mod wait;

use std::time::Duration;

use ptyjobs_engine::JobId;

use crate::error::ToolError;

/// Parses a model-supplied job id: a malformed one is a fixable error naming list_jobs.
fn job_id(s: &str) -> Result<JobId, ToolError> {
    Ok(s.parse::<JobId>()?)
}

/// A model-supplied number of seconds.
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
