//! A job's record on disk (`meta.json`): everything `JobInfo` says, plus who owns the job.
//! Environment variable values are never part of it (only names): they are where secrets live.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::owner::ProcessRef;
use crate::job::{JobInfo, JobStatus};
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

/// One job as stored in `jobs/<id>/meta.json`: the job's [`JobInfo`] (flattened: its fields are
/// the record's), plus what only the disk knows. It reads as its info (`record.status`).
///
/// On disk, the info's `pid` repeats `process.pid` (records of an older ptyjobs have only the
/// latter, which is the one read); `this_server` and `input` are written but never read back:
/// what they say depends on the reader and the moment ([`Self::info`] fills them in).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobRecord {
    /// Record format version ([`FORMAT`]).
    pub format: u32,
    /// The job as last written: status, exit, times, reason, size. `duration_ms` is 0 while
    /// running.
    #[serde(flatten)]
    pub info: JobInfo,
    /// Names (never values) of the extra environment variables the job was given.
    pub env_names: Vec<String>,
    /// The job's shell process (also its process group and session).
    pub process: ProcessRef,
    /// The owner.
    pub server: ServerRef,
    /// Whether the disk log hit its cap (its last line is then a marker).
    pub log_truncated: bool,
    /// The final screen, once final.
    pub screen: Option<ScreenSnapshot>,
}

impl std::ops::Deref for JobRecord {
    type Target = JobInfo;

    fn deref(&self) -> &JobInfo {
        &self.info
    }
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
        let mut record = Self {
            format: FORMAT,
            info: info.clone(),
            env_names,
            process: ProcessRef {
                pid: info.pid,
                start_ticks,
            },
            server,
            log_truncated: false,
            screen: None,
        };
        record.update(info);
        record
    }

    /// A record read from `json` (the shape of this ptyjobs or of an older one).
    pub(crate) fn from_json(json: &[u8]) -> serde_json::Result<Self> {
        let mut record: Self = serde_json::from_slice(json)?;
        record.info.pid = record.process.pid;
        Ok(record)
    }

    /// Brings the record's info up to `info`'s, `info` being the same job's.
    pub(crate) fn update(&mut self, info: &JobInfo) {
        self.info = JobInfo {
            pid: self.process.pid,
            duration_ms: if info.status.is_final() {
                info.duration_ms
            } else {
                0
            },
            this_server: false,
            ..info.clone()
        };
    }

    /// The record as the `JobInfo` callers see; `this_server` says whether the reader owns it.
    pub fn info(&self, this_server: bool) -> JobInfo {
        let duration_ms = match self.info.finished {
            Some(_) => self.info.duration_ms,
            None => u64::try_from((Utc::now() - self.info.started).num_milliseconds()).unwrap_or(0),
        };
        JobInfo {
            pid: self.process.pid,
            duration_ms,
            this_server,
            input: (!self.info.status.is_final())
                .then(|| self.info.input.clone())
                .flatten(),
            ..self.info.clone()
        }
    }

    /// Marks a running record whose server is gone as killed: its terminal died with it.
    /// `last_seen` (the newest write to the job's files) stands in for the unknown end time.
    pub(crate) fn orphaned(&mut self, last_seen: DateTime<Utc>) {
        let info = &mut self.info;
        let end = last_seen.max(info.started);
        info.status = JobStatus::Killed;
        info.reason = Some("server stopped".into());
        info.duration_ms = u64::try_from((end - info.started).num_milliseconds()).unwrap_or(0);
        info.finished = Some(end);
        info.input = None;
    }
}

#[cfg(test)]
#[path = "record_tests.rs"]
mod tests;
