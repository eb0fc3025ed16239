//! The plain objects that cross the boundary, and their conversions from the engine's types.
//!
//! Numbers: line numbers, counts and durations are JS numbers (exact up to 2^53). Dates are ISO
//! 8601 strings in UTC with milliseconds (`2025-01-02T03:04:05.678Z`): `new Date(info.started)`
//! parses them.

use std::collections::HashMap;
use std::time::Duration;

use chrono::{DateTime, SecondsFormat, Utc};
use napi_derive::napi;
use ptyjobs_engine as engine;

use crate::error::{Result, invalid};

/// Options of `new JobManager(options?)`: the engine's limits and defaults.
#[napi(object)]
#[derive(Default)]
pub struct ManagerOptions {
    /// Most jobs running at once; `execute` beyond it throws `LIMIT_REACHED`. Default 32.
    pub max_jobs: Option<f64>,
    /// Per-job cap on the held transcript, in bytes of text; the oldest lines are evicted
    /// first (reads report them in `droppedLines`). Default 4 MiB.
    pub transcript_bytes: Option<f64>,
    /// Milliseconds between the polite signal of a kill and SIGKILL. Default 3000.
    pub kill_grace_ms: Option<f64>,
    /// Default terminal width of jobs (1..=1000). Default 120.
    pub cols: Option<f64>,
    /// Default terminal height of jobs (1..=1000). Default 40.
    pub rows: Option<f64>,
    /// The shell that runs each command as `<shell> -c <command>`. Default `/bin/sh`.
    pub shell: Option<String>,
}

/// Options of `execute(command, options?)`.
#[napi(object)]
#[derive(Default)]
pub struct ExecuteOptions {
    /// Working directory; must exist. Default: this process's current directory.
    pub cwd: Option<String>,
    /// Extra environment variables, on top of this process's environment and the terminal
    /// defaults (`TERM=xterm-256color`, `PAGER=cat`, ...).
    pub env: Option<HashMap<String, String>>,
    /// Terminal width in columns (1..=1000). Default: the manager's.
    pub cols: Option<f64>,
    /// Terminal height in rows (1..=1000). Default: the manager's.
    pub rows: Option<f64>,
    /// Kill the job (SIGTERM, grace, SIGKILL) when it runs longer than this many milliseconds;
    /// its status becomes `killed` with reason `timeout`.
    pub timeout_ms: Option<f64>,
    /// A short human name shown in listings.
    pub name: Option<String>,
}

/// Options of `output(jobId, options?)`.
#[napi(object)]
#[derive(Default)]
pub struct OutputOptions {
    /// Absolute number of the first line to read (lines are numbered from 0 for the first line
    /// the job printed, and keep their numbers after eviction). Default: the first line held.
    pub offset: Option<f64>,
    /// Most lines to return. Default: all.
    pub limit: Option<f64>,
}

/// Options of `kill(jobId, options?)`.
#[napi(object)]
#[derive(Default)]
pub struct KillOptions {
    /// The first signal: a name (`TERM`, `SIGINT`, `hup`) or a number. Default `SIGTERM`.
    pub signal: Option<String>,
    /// Milliseconds to wait after the first signal before SIGKILL. Default: the manager's
    /// `killGraceMs`.
    pub grace_ms: Option<f64>,
}

/// Options of `wait(jobId, options?)`.
#[napi(object)]
#[derive(Default)]
pub struct WaitOptions {
    /// Resolve with the still-running info after this many milliseconds. Default: no limit.
    pub timeout_ms: Option<f64>,
}

/// A job's state.
#[napi(string_enum = "lowercase")]
#[derive(Debug, PartialEq, Eq)]
pub enum JobStatus {
    /// The job's process is alive (or its last output is being drained).
    Running,
    /// The command exited with status 0.
    Completed,
    /// Non-zero exit, death by a signal ptyjobs did not send, or a failed start.
    Failed,
    /// Ended by `kill`, its timeout, or `close()`.
    Killed,
}

impl From<engine::JobStatus> for JobStatus {
    fn from(s: engine::JobStatus) -> Self {
        match s {
            engine::JobStatus::Running => Self::Running,
            engine::JobStatus::Completed => Self::Completed,
            engine::JobStatus::Failed => Self::Failed,
            engine::JobStatus::Killed => Self::Killed,
        }
    }
}

/// What `kill` ended in.
#[napi(string_enum = "snake_case")]
#[derive(Debug, PartialEq, Eq)]
pub enum KillResult {
    /// The job was running and no process of it remains.
    Killed,
    /// The job had already ended.
    AlreadyTerminated,
    /// No job with this id is known.
    NotFound,
}

impl From<engine::KillOutcome> for KillResult {
    fn from(k: engine::KillOutcome) -> Self {
        match k {
            engine::KillOutcome::Killed => Self::Killed,
            engine::KillOutcome::AlreadyTerminated => Self::AlreadyTerminated,
            engine::KillOutcome::NotFound => Self::NotFound,
        }
    }
}

/// A snapshot of one job. Fields that do not apply yet are absent (`undefined`).
#[napi(object)]
pub struct JobInfo {
    /// The job's id (a UUID): pass it to every other method.
    pub job_id: String,
    /// The name given at start, if any.
    pub name: Option<String>,
    /// The command line as given.
    pub command: String,
    /// The working directory the job started in.
    pub cwd: String,
    /// Process id of the job's shell (also its process-group and session id).
    pub pid: u32,
    /// `running`, `completed`, `failed` or `killed`.
    pub status: JobStatus,
    /// Exit code, once the job exited normally.
    pub exit_code: Option<i32>,
    /// Name of the signal that ended the job (`SIGTERM`, ...), if one did.
    pub signal: Option<String>,
    /// When the job started (ISO 8601, UTC, milliseconds).
    pub started: String,
    /// When the job became final (ISO 8601, UTC, milliseconds).
    pub finished: Option<String>,
    /// Milliseconds from start to finish, or to now while running.
    pub duration_ms: f64,
    /// Why the job was killed or failed, in a few words (`timeout`, `exited with code 3`, ...).
    pub reason: Option<String>,
    /// Terminal width.
    pub cols: u32,
    /// Terminal height.
    pub rows: u32,
}

fn iso(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// A u64 count as a JS number (exact below 2^53, which no count here reaches).
#[allow(clippy::cast_precision_loss)]
fn num(v: u64) -> f64 {
    v as f64
}

impl From<engine::JobInfo> for JobInfo {
    fn from(i: engine::JobInfo) -> Self {
        Self {
            job_id: i.id.to_string(),
            name: i.name,
            command: i.command,
            cwd: i.cwd.to_string_lossy().into_owned(),
            pid: i.pid,
            status: i.status.into(),
            exit_code: i.exit_code,
            signal: i.signal,
            started: iso(i.started),
            finished: i.finished.map(iso),
            duration_ms: num(i.duration_ms),
            reason: i.reason,
            cols: u32::from(i.size.0),
            rows: u32::from(i.size.1),
        }
    }
}

/// A read of a job's clean transcript.
#[napi(object)]
pub struct Output {
    /// The lines, joined with `\n` (no trailing newline). Colours and escapes are gone, `\r`
    /// rewrites collapsed to their final state.
    pub output: String,
    /// Absolute number of the first line returned (equal to `nextOffset` when none is).
    pub first_line: f64,
    /// How many lines were returned.
    pub line_count: f64,
    /// Absolute number of the line after the last one returned: pass it as the next `offset`
    /// to read only what is new.
    pub next_offset: f64,
    /// Lines the job has printed so far, the unfinished ones on screen included.
    pub total_lines: f64,
    /// Lines evicted from the front of the transcript to respect `transcriptBytes`.
    pub dropped_lines: f64,
    /// True when this is not the whole requested range (evicted lines, or `limit`).
    pub truncated: bool,
    /// The job's status at the time of the read.
    pub status: JobStatus,
}

impl From<engine::OutputSlice> for Output {
    fn from(s: engine::OutputSlice) -> Self {
        Self {
            output: s.output,
            first_line: num(s.first_line),
            line_count: num(s.line_count),
            next_offset: num(s.next_offset),
            total_lines: num(s.total_lines),
            dropped_lines: num(s.dropped_lines),
            truncated: s.truncated,
            status: s.status.into(),
        }
    }
}

/// A whole number in `min..=max` from a JS number, or `INVALID_ARGUMENT` naming `what`.
#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_precision_loss
)]
pub fn whole(what: &str, v: f64, min: u64, max: u64) -> Result<u64> {
    if v.is_finite() && v.fract() == 0.0 && v >= min as f64 && v <= max as f64 {
        Ok(v as u64)
    } else {
        Err(invalid(format!(
            "{what} must be a whole number between {min} and {max}, got {v}"
        )))
    }
}

/// A terminal dimension (1..=1000).
pub fn dimension(what: &str, v: f64) -> Result<u16> {
    let n = whole(what, v, 1, 1000)?;
    u16::try_from(n).map_err(|_| invalid(format!("{what} out of range")))
}

/// Milliseconds (0 ..= about 31 years) as a duration.
pub fn millis(what: &str, v: f64) -> Result<Duration> {
    Ok(Duration::from_millis(whole(what, v, 0, 1 << 50)?))
}

/// The largest whole number a JS number holds exactly.
pub const MAX_SAFE: u64 = (1 << 53) - 1;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_numbers_only_within_range() {
        assert_eq!(whole("n", 0.0, 0, 10).ok(), Some(0));
        assert_eq!(whole("n", 10.0, 0, 10).ok(), Some(10));
        for bad in [-1.0, 10.5, 11.0, f64::NAN, f64::INFINITY, -0.5] {
            let e = whole("n", bad, 0, 10).err().map(|e| e.status);
            assert_eq!(e, Some(crate::error::Code::InvalidArgument), "{bad}");
        }
    }

    #[test]
    fn dimensions_and_millis() {
        assert_eq!(dimension("cols", 1000.0).ok(), Some(1000));
        assert!(dimension("cols", 0.0).is_err());
        assert_eq!(millis("ms", 1500.0).ok(), Some(Duration::from_millis(1500)));
        assert!(millis("ms", -1.0).is_err());
    }
}
