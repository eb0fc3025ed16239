//! A job's record on disk (`meta.json`): everything `JobInfo` says, plus who owns the job.
//! Environment variable values are never part of it (only names): they are where secrets live.

use std::path::PathBuf;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::owner::ProcessRef;
use crate::job::InputWait;
use crate::job::{JobId, JobInfo, JobStatus};
use crate::terminal::ScreenSnapshot;

/// Bumped when the record's meaning changes incompatibly; other versions are skipped.
pub(crate) const FORMAT: u32 = 1;

/// The server (or Node process) that started a job and alone controls it while it lives.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ServerRef {
    /// Random id of that server's run.
    pub instance: String,
    /// Its process.
    pub process: ProcessRef,
}

/// One job as stored in `jobs/<id>/meta.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobRecord {
    /// Record format version ([`FORMAT`]).
    pub format: u32,
    /// The job's id.
    pub id: JobId,
    /// Optional human name.
    pub name: Option<String>,
    /// The command line.
    pub command: String,
    /// Working directory.
    pub cwd: PathBuf,
    /// Names (never values) of the extra environment variables the job was given.
    pub env_names: Vec<String>,
    /// The job's shell process (also its process group and session).
    pub process: ProcessRef,
    /// Status when written.
    pub status: JobStatus,
    /// Exit code, once exited normally.
    pub exit_code: Option<i32>,
    /// Signal that ended the job, if one did.
    pub signal: Option<String>,
    /// Start time.
    pub started: DateTime<Utc>,
    /// End time, once final.
    pub finished: Option<DateTime<Utc>>,
    /// Milliseconds from start to finish (0 while running).
    pub duration_ms: u64,
    /// Why the job was killed or failed.
    pub reason: Option<String>,
    /// Terminal size `(cols, rows)`.
    pub size: (u16, u16),
    /// The owner.
    pub server: ServerRef,
    /// Whether the disk log hit its cap (its last line is then a marker).
    pub log_truncated: bool,
    /// The final screen, once final.
    pub screen: Option<ScreenSnapshot>,
    /// Set while the running job waits for input, as its server last wrote it (at most about
    /// a second behind the job: see the input watch's pacing). Absent in records written
    /// before it existed, and never set on a final record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<InputWait>,
}

impl JobRecord {
    /// The record of `info`, owned by `server`; `start_ticks` is the start time of its shell
    /// as read right after the spawn (see [`crate::sys::Leader`]).
    pub(crate) fn new(
        info: &JobInfo,
        start_ticks: Option<u64>,
        env_names: Vec<String>,
        server: ServerRef,
    ) -> Self {
        Self {
            format: FORMAT,
            id: info.id,
            name: info.name.clone(),
            command: info.command.clone(),
            cwd: info.cwd.clone(),
            env_names,
            process: ProcessRef {
                pid: info.pid,
                start_ticks,
            },
            status: info.status,
            exit_code: info.exit_code,
            signal: info.signal.clone(),
            started: info.started,
            finished: info.finished,
            duration_ms: 0,
            reason: info.reason.clone(),
            size: info.size,
            server,
            log_truncated: false,
            screen: None,
            input: None,
        }
    }

    /// Brings the status fields up to `info`'s.
    pub(crate) fn update(&mut self, info: &JobInfo) {
        self.status = info.status;
        self.exit_code = info.exit_code;
        self.signal = info.signal.clone();
        self.finished = info.finished;
        self.duration_ms = if info.status.is_final() {
            info.duration_ms
        } else {
            0
        };
        self.reason = info.reason.clone();
        self.size = info.size;
        if info.status.is_final() {
            self.input = None;
        }
    }

    /// The record as the `JobInfo` callers see; `this_server` says whether the reader owns it.
    pub fn info(&self, this_server: bool) -> JobInfo {
        let duration_ms = match self.finished {
            Some(_) => self.duration_ms,
            None => u64::try_from((Utc::now() - self.started).num_milliseconds()).unwrap_or(0),
        };
        JobInfo {
            id: self.id,
            name: self.name.clone(),
            command: self.command.clone(),
            cwd: self.cwd.clone(),
            pid: self.process.pid,
            status: self.status,
            exit_code: self.exit_code,
            signal: self.signal.clone(),
            started: self.started,
            finished: self.finished,
            duration_ms,
            reason: self.reason.clone(),
            size: self.size,
            this_server,
            input: (!self.status.is_final())
                .then(|| self.input.clone())
                .flatten(),
        }
    }

    /// Marks a running record whose server is gone as killed: its terminal died with it.
    /// `last_seen` (the newest write to the job's files) stands in for the unknown end time.
    pub(crate) fn orphaned(&mut self, last_seen: DateTime<Utc>) {
        let end = last_seen.max(self.started);
        self.status = JobStatus::Killed;
        self.reason = Some("server stopped".into());
        self.input = None;
        self.duration_ms = u64::try_from((end - self.started).num_milliseconds()).unwrap_or(0);
        self.finished = Some(end);
    }
}
