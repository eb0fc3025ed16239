//! Tool inputs and outputs. Their doc comments become the JSON schemas' descriptions: these
//! files are the documentation the model reads, so every word here is for the model.
//!
//! Names follow the Python "MCP Background Job Server" (`job_id`, `status`, `output`, ...) so its
//! prompts keep working; every field beyond those is optional on input and extra on output.

mod jobs;
mod output;
mod ports;
mod restart;
mod services;
mod terminal;
mod wait;

pub use jobs::*;
pub use output::*;
pub use ports::*;
pub use restart::*;
pub use services::*;
pub use terminal::*;
pub use wait::*;

use chrono::{DateTime, SecondsFormat, Utc};
use ptyjobs_engine::JobStatus;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A job's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Still running (or its last output is still being collected).
    Running,
    /// Exited with code 0.
    Completed,
    /// Exited non-zero, died of a signal ptyjobs did not send, or could not start.
    Failed,
    /// Ended by kill_job, by its timeout_secs, or by server shutdown.
    Killed,
}

impl From<JobStatus> for Status {
    fn from(s: JobStatus) -> Self {
        match s {
            JobStatus::Running => Self::Running,
            JobStatus::Completed => Self::Completed,
            JobStatus::Failed => Self::Failed,
            JobStatus::Killed => Self::Killed,
        }
    }
}

/// RFC 3339 UTC timestamp with milliseconds, e.g. `2025-01-31T12:00:00.123Z`.
fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// Input of a tool that names one job, and the job reference flattened into every other
/// tool's input that names one: `cwd` picks among the live jobs of a name in several
/// directories (relative to the server's working directory, as restart_job's).
#[derive(Debug, Deserialize, JsonSchema)]
pub struct JobIdParams {
    /// The job's UUID or name.
    pub job_id: String,
    /// Its dir, for a name live in several.
    #[serde(default)]
    pub cwd: Option<String>,
}
