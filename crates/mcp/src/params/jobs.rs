//! Tool inputs and outputs. Their doc comments become the JSON schemas' descriptions: this file
//! is the documentation the model reads, so every word here is for the model.
//!
//! Names follow the Python "MCP Background Job Server" (`job_id`, `status`, `output`, ...) so its
//! prompts keep working; every field beyond those is optional on input and extra on output.

use std::collections::BTreeMap;

use chrono::{DateTime, SecondsFormat, Utc};

use crate::budget::{self, OUTPUT_BUDGET};
use ptyjobs_engine::{Interaction, JobInfo, JobStatus, KillOutcome, OutputSlice};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Lines `get_job_output` returns when no `limit` is given: enough for most logs, small enough
/// that one call cannot flood the model's context with the whole multi-MiB transcript.
pub const DEFAULT_OUTPUT_LIMIT: usize = 1000;
/// `tail_job_output` default.
pub const DEFAULT_TAIL_LINES: usize = 50;
/// `tail_job_output` upper bound.
pub const MAX_TAIL_LINES: usize = 1000;
/// `interact_with_job` default wait.
pub const DEFAULT_WAIT_MS: u64 = 5000;
/// `interact_with_job` upper bound on `wait_ms`: a call never holds the model longer.
pub const MAX_WAIT_MS: u64 = 60_000;
/// `kill_job` upper bound on `grace_ms`.
pub const MAX_GRACE_MS: u64 = 60_000;

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

/// Input of a tool that names one job.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct JobIdParams {
    /// The job's UUID, as returned by execute_command (see list_jobs for all known jobs).
    pub job_id: String,
}

/// Input of execute_command.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ExecuteParams {
    /// Shell command line, run as `/bin/sh -c <command>` under its own terminal: pipes, `&&`,
    /// redirections, quotes and globs work. Runs in the background; this call returns at once.
    pub command: String,
    /// Working directory (must exist). Default: the server's working directory.
    #[serde(default)]
    pub cwd: Option<String>,
    /// Extra environment variables for the job, e.g. `{"NODE_ENV": "test"}`.
    #[serde(default)]
    pub env: Option<BTreeMap<String, String>>,
    /// Terminal width in columns, 1-1000. Default 120.
    #[serde(default)]
    #[schemars(range(min = 1, max = 1000))]
    pub cols: Option<u16>,
    /// Terminal height in rows, 1-1000. Default 40.
    #[serde(default)]
    #[schemars(range(min = 1, max = 1000))]
    pub rows: Option<u16>,
    /// Kill the job (TERM, then KILL after a grace period) if it runs longer than this many
    /// seconds. Default: no limit.
    #[serde(default)]
    pub timeout_secs: Option<f64>,
    /// A short label shown in list_jobs.
    #[serde(default)]
    pub name: Option<String>,
}

/// Result of execute_command.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ExecuteResult {
    /// The job's UUID: pass it to the other tools.
    pub job_id: String,
    /// Process id of the job's shell.
    pub pid: u32,
    /// `running` right after the start (a very short command may already be done).
    pub status: Status,
}

impl From<JobInfo> for ExecuteResult {
    fn from(j: JobInfo) -> Self {
        Self {
            job_id: j.id.to_string(),
            pid: j.pid,
            status: j.status.into(),
        }
    }
}

/// Result of get_job_status.
#[derive(Debug, Serialize, JsonSchema)]
pub struct StatusResult {
    /// The job's UUID.
    pub job_id: String,
    /// running, completed, failed or killed.
    pub status: Status,
    /// Exit code once the job exited normally (127 = command not found), else null.
    pub exit_code: Option<i32>,
    /// Signal that ended the job (e.g. `SIGTERM`), else null.
    pub signal: Option<String>,
    /// Process id of the job's shell.
    pub pid: u32,
    /// The command line as given.
    pub command: String,
    /// When the job started (RFC 3339).
    pub started: String,
    /// When the job ended (RFC 3339), null while running.
    pub finished: Option<String>,
    /// Run time in milliseconds, so far if still running.
    pub duration_ms: u64,
    /// The label given at start, if any.
    pub name: Option<String>,
    /// Why the job failed or was killed, in a few words.
    pub reason: Option<String>,
    /// Working directory of the job.
    pub cwd: String,
}

impl From<JobInfo> for StatusResult {
    fn from(j: JobInfo) -> Self {
        Self {
            job_id: j.id.to_string(),
            status: j.status.into(),
            exit_code: j.exit_code,
            signal: j.signal,
            pid: j.pid,
            command: j.command,
            started: rfc3339(j.started),
            finished: j.finished.map(rfc3339),
            duration_ms: j.duration_ms,
            name: j.name,
            reason: j.reason,
            cwd: j.cwd.display().to_string(),
        }
    }
}

/// Input of get_job_output.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct OutputParams {
    /// The job's UUID.
    pub job_id: String,
    /// Absolute line number to start from (0 = the job's first line). Pass the previous
    /// call's `next_offset` to read only new lines. Default: the oldest line still held.
    #[serde(default)]
    pub offset: Option<u64>,
    /// Most lines to return, at least 1. Default 1000. An answer also stops at about 64 KiB
    /// of text; page with `next_offset`, or use tail_job_output for the end.
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub limit: Option<i64>,
}

/// Result of get_job_output: clean text as a person would have seen it scroll by (no colours
/// or escape codes, progress bars at their final state, wrapped lines joined).
#[derive(Debug, Serialize, JsonSchema)]
pub struct OutputResult {
    /// The lines, joined with newlines.
    pub output: String,
    /// Absolute number of the first line returned.
    pub first_line: u64,
    /// How many lines were returned.
    pub line_count: u64,
    /// Pass as `offset` next time to continue after these lines.
    pub next_offset: u64,
    /// Lines the job has printed so far.
    pub total_lines: u64,
    /// Oldest lines no longer held (the per-job memory cap evicts them).
    pub dropped_lines: u64,
    /// True when lines of the requested range were evicted, or `limit` or the 64 KiB
    /// per-answer size budget cut it short: continue from `next_offset`.
    pub truncated: bool,
    /// The job's status at the time of the read.
    pub status: Status,
}

impl From<OutputSlice> for OutputResult {
    fn from(s: OutputSlice) -> Self {
        if let Some((kept, lines)) = budget::head(&s.output, OUTPUT_BUDGET) {
            return Self {
                output: kept.to_owned(),
                line_count: lines,
                next_offset: s.first_line + lines,
                truncated: true,
                ..Self::from(OutputSlice {
                    output: String::new(),
                    ..s
                })
            };
        }
        Self {
            output: s.output,
            first_line: s.first_line,
            line_count: s.line_count,
            next_offset: s.next_offset,
            total_lines: s.total_lines,
            dropped_lines: s.dropped_lines,
            truncated: s.truncated,
            status: s.status.into(),
        }
    }
}

/// Input of tail_job_output.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct TailParams {
    /// The job's UUID.
    pub job_id: String,
    /// How many of the last lines to return, 1-1000. Default 50.
    #[serde(default)]
    #[schemars(range(min = 1, max = 1000))]
    pub lines: Option<i64>,
}

/// Result of tail_job_output.
#[derive(Debug, Serialize, JsonSchema)]
pub struct TailResult {
    /// The last lines, clean text, joined with newlines. Includes an unfinished last line such
    /// as a prompt waiting for input.
    pub output: String,
    /// Lines the job has printed so far.
    pub total_lines: u64,
    /// The job's status at the time of the read.
    pub status: Status,
    /// Absolute number of the first line returned.
    pub first_line: u64,
    /// Pass as get_job_output's `offset` to read what comes after.
    pub next_offset: u64,
    /// True when fewer lines than asked are returned because of the 64 KiB per-answer size
    /// budget (read earlier lines with get_job_output).
    pub truncated: bool,
}

impl From<OutputSlice> for TailResult {
    fn from(s: OutputSlice) -> Self {
        let (output, first_line, truncated) = match budget::tail(&s.output, OUTPUT_BUDGET) {
            Some((kept, cut)) => (kept.to_owned(), s.first_line + cut, true),
            None => (s.output, s.first_line, false),
        };
        Self {
            output,
            total_lines: s.total_lines,
            status: s.status.into(),
            first_line,
            next_offset: s.next_offset,
            truncated,
        }
    }
}

/// Input of interact_with_job.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct InteractParams {
    /// The job's UUID.
    pub job_id: String,
    /// Text to type into the job's terminal. A newline (Enter) is appended unless the text
    /// already ends with one or `raw` is true. Control keys work with `raw`, e.g. `"\u0003"` for
    /// Ctrl-C, `"\u0004"` for Ctrl-D.
    pub input: String,
    /// Send `input` exactly as given, without appending a newline. Default false.
    #[serde(default)]
    pub raw: Option<bool>,
    /// Longest time to wait for the response, in ms (max 60000). Default 5000. The call returns
    /// earlier, as soon as the job's output goes quiet after its response, or the job exits.
    #[serde(default)]
    pub wait_ms: Option<u64>,
}

/// Result of interact_with_job.
#[derive(Debug, Serialize, JsonSchema)]
pub struct InteractResult {
    /// What the terminal showed from the prompt's line on: the echoed input and the job's
    /// response (clean text).
    pub output: String,
    /// Bytes of input the job's terminal accepted.
    pub bytes_written: usize,
    /// The job's status after the response.
    pub status: Status,
    /// Absolute line number where `output` starts.
    pub first_line: u64,
    /// Pass as get_job_output's `offset` to read what comes after.
    pub next_offset: u64,
    /// True when the response was longer than the 64 KiB per-answer size budget and only its
    /// last lines are returned (read the rest with get_job_output from `first_line` back).
    pub truncated: bool,
}

impl From<Interaction> for InteractResult {
    fn from(i: Interaction) -> Self {
        let (output, first_line, truncated) = match budget::tail(&i.output, OUTPUT_BUDGET) {
            Some((kept, cut)) => (kept.to_owned(), i.first_line + cut, true),
            None => (i.output, i.first_line, false),
        };
        Self {
            output,
            bytes_written: i.bytes_written,
            status: i.status.into(),
            first_line,
            next_offset: i.next_offset,
            truncated,
        }
    }
}

/// One job in list_jobs.
#[derive(Debug, Serialize, JsonSchema)]
pub struct JobSummary {
    /// The job's UUID.
    pub job_id: String,
    /// running, completed, failed or killed.
    pub status: Status,
    /// The command line as given.
    pub command: String,
    /// When the job started (RFC 3339).
    pub started: String,
    /// Exit code once the job exited normally, else null.
    pub exit_code: Option<i32>,
    /// The label given at start, if any.
    pub name: Option<String>,
    /// Process id of the job's shell.
    pub pid: u32,
}

impl From<JobInfo> for JobSummary {
    fn from(j: JobInfo) -> Self {
        Self {
            job_id: j.id.to_string(),
            status: j.status.into(),
            command: j.command,
            started: rfc3339(j.started),
            exit_code: j.exit_code,
            name: j.name,
            pid: j.pid,
        }
    }
}

/// Result of list_jobs.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ListResult {
    /// Every known job, newest first. Finished jobs stay listed until the oldest are evicted.
    pub jobs: Vec<JobSummary>,
}

/// A signal, by name or number.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum SignalArg {
    /// A name such as `TERM`, `SIGINT`, `HUP`, `KILL`.
    Name(String),
    /// A number such as 15 or 9.
    Number(i32),
}

/// Input of kill_job.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct KillParams {
    /// The job's UUID.
    pub job_id: String,
    /// Signal sent first to every process of the job: TERM (default), INT, HUP, KILL, ...
    #[serde(default)]
    pub signal: Option<SignalArg>,
    /// Milliseconds to wait for the job to exit before SIGKILL (max 60000). Default 3000.
    #[serde(default)]
    pub grace_ms: Option<u64>,
}

/// What kill_job did.
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum KillStatus {
    /// The job was running; now no process of it remains.
    Killed,
    /// The job had already ended; nothing was sent.
    AlreadyTerminated,
    /// No job with this id (see list_jobs).
    NotFound,
}

/// Result of kill_job.
#[derive(Debug, Serialize, JsonSchema)]
pub struct KillResult {
    /// killed, already_terminated or not_found.
    pub status: KillStatus,
}

impl From<KillOutcome> for KillResult {
    fn from(k: KillOutcome) -> Self {
        let status = match k {
            KillOutcome::Killed => KillStatus::Killed,
            KillOutcome::AlreadyTerminated => KillStatus::AlreadyTerminated,
            KillOutcome::NotFound => KillStatus::NotFound,
        };
        Self { status }
    }
}
