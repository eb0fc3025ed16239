//! The JSON form of a job for scripts (`list --json`, `status --json`). Field names follow the
//! record on disk; times are RFC 3339 in UTC; absent values are `null`, never left out.

use chrono::{DateTime, SecondsFormat, Utc};
use ptyjobs_engine::{InputWait, Listener, StoredJob};
use serde::Serialize;

/// One job as `list --json` and `status --json` print it.
#[derive(Debug, Serialize)]
pub(crate) struct JobJson {
    /// The full job id.
    pub id: String,
    pub name: Option<String>,
    pub command: String,
    pub cwd: String,
    /// `running`, `completed`, `failed` or `killed`.
    pub status: &'static str,
    pub exit_code: Option<i32>,
    /// Name of the signal that ended the job (`SIGTERM`), if one did.
    pub signal: Option<String>,
    /// The job's shell (also its process group and session).
    pub pid: u32,
    pub started: String,
    pub finished: Option<String>,
    /// Run time; so far, while running.
    pub duration_ms: u64,
    /// Why the job failed or was killed.
    pub reason: Option<String>,
    /// Names (never values) of the extra environment variables the job got.
    pub env_names: Vec<String>,
    /// Whether the server that runs (or ran) the job is alive.
    pub owner_alive: bool,
    /// That server's pid.
    pub server_pid: u32,
    /// Whether the disk log reached its cap (its last line then says so).
    pub log_truncated: bool,
    /// Set while the running job waits for input: `echo` (false while a password is typed),
    /// `mode` (`line` or `raw`), `prompt` (the question on screen) and `pid` (the process that
    /// waits). As its server
    /// last wrote it: at most about a second behind the job.
    pub input: Option<InputWait>,
    /// The TCP listeners of the job's processes while it runs (`address`, `port`, `pid`).
    pub ports: Vec<Listener>,
    /// Whether the job is kept (run by the state directory's keeper; outlives its starter).
    pub kept: bool,
    /// When a kept job's TTL ends; `null`: kept until killed (or not kept).
    pub keep_until: Option<String>,
    /// Under a policy: the profile, what is enforced, the refused calls and their hints (as
    /// the record last said: the final one once the job ended). Absent without one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy: Option<ptyjobs_engine::JobPolicy>,
}

fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

impl From<&StoredJob> for JobJson {
    fn from(job: &StoredJob) -> Self {
        let info = job.info(None);
        let r = &job.record;
        Self {
            id: info.id.to_string(),
            name: info.name,
            command: info.command,
            cwd: info.cwd.display().to_string(),
            status: info.status.as_str(),
            exit_code: info.exit_code,
            signal: info.signal,
            pid: info.pid,
            started: rfc3339(info.started),
            finished: info.finished.map(rfc3339),
            duration_ms: info.duration_ms,
            reason: info.reason,
            env_names: r.env_names.clone(),
            owner_alive: job.owner_alive,
            server_pid: r.server.process.pid,
            log_truncated: r.log_truncated,
            input: info.input,
            ports: Vec::new(),
            kept: info.kept,
            keep_until: info.keep_until.map(rfc3339),
            policy: info.policy,
        }
    }
}
