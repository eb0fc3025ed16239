//! execute_command, get_job_status, list_jobs, kill_job, remove_job.

use std::collections::BTreeMap;

use ptyjobs_engine::{JobInfo, KillOutcome, KillReport};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Port, Status, WaitResult, ports, rfc3339};
use crate::budget;

/// Input of execute_command.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ExecuteParams {
    /// Shell command line, run as `/bin/sh -c <command>`: pipes, `&&`, quotes, globs work.
    #[serde(default)]
    pub command: Option<String>,
    /// Instead of command: start (or reuse) this service of cwd's Procfile or .claude/launch.json.
    #[serde(default)]
    pub service: Option<String>,
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
    /// Kill the job (TERM, then KILL) after this many seconds. Default: no limit.
    #[serde(default)]
    pub timeout_secs: Option<f64>,
    /// A label, e.g. `"dev"`: unique among live jobs of one cwd; other tools take it as job_id.
    #[serde(default)]
    pub name: Option<String>,
    /// With name: if a live job has this name and command, answer it (`reused`); start none.
    #[serde(default)]
    pub ensure: Option<bool>,
    /// Answer when the job has ended (`outcome`: exit status, last lines); for builds and
    /// tests. Without MCP tasks at most 50 s (`outcome.capped`: then call wait_for_job).
    #[serde(default)]
    pub wait: Option<bool>,
    /// Pick a free TCP port, give it as $PORT, answer it as `port`; `listening` waits for it.
    #[serde(default)]
    pub auto_port: bool,
    /// Keep the job running after this server ends (Unix).
    #[serde(default)]
    pub keep: Option<bool>,
    /// With keep: end it after this many seconds (default 86400; 0: never).
    #[serde(default)]
    pub keep_ttl_secs: Option<u64>,
    /// Policy profile to run under (default: default).
    pub profile: Option<String>,
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
    /// With `wait`: how the wait ended, the exit code or signal, and the last lines.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome: Option<WaitResult>,
    /// With `service`: the service started or reused; `outcome` is then the wait for its port.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service: Option<super::ServiceStarted>,
    /// True when `ensure` found this job already running: nothing was started.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub reused: bool,
    /// When reused: the job's last lines.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tail: Option<String>,
    /// From restart_job: the job this one replaced.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replaces: Option<String>,
    /// When reused: the job's TCP listeners.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ports: Vec<super::Port>,
    /// With `auto_port`: the port picked for the job (its $PORT).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    /// Under a policy: the job's profile, what is enforced and what is not (not in the
    /// schema: the tool list's budget).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(skip)]
    pub policy: Option<ptyjobs_engine::JobPolicy>,
}

impl From<JobInfo> for ExecuteResult {
    fn from(j: JobInfo) -> Self {
        Self {
            job_id: j.id.to_string(),
            pid: j.pid,
            status: j.status.into(),
            outcome: None,
            service: None,
            reused: false,
            tail: None,
            replaces: j.replaces.map(|r| r.to_string()),
            ports: super::ports(j.ports),
            port: j.port,
            policy: j.policy,
        }
    }
}

impl ExecuteResult {
    /// This result with the job's status and `outcome` after a wait.
    pub fn with_outcome(mut self, outcome: WaitResult) -> Self {
        self.status = outcome.status;
        self.outcome = Some(outcome);
        self
    }
}

/// Result of get_job_status.
#[derive(Debug, Serialize, JsonSchema)]
pub struct StatusResult {
    /// The job's UUID.
    pub job_id: String,
    /// running, completed, failed or killed.
    pub status: Status,
    /// Exit code once the job exited normally (127 = command not found), else absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// Signal that ended the job (e.g. `SIGTERM`), else absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signal: Option<String>,
    /// Process id of the job's shell.
    pub pid: u32,
    /// The command line as given.
    pub command: String,
    /// When the job started (RFC 3339).
    pub started: String,
    /// When the job ended (RFC 3339), absent while running.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finished: Option<String>,
    /// Run time in milliseconds, so far if still running.
    pub duration_ms: u64,
    /// The label given at start, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Why the job failed or was killed, in a few words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Working directory of the job.
    pub cwd: String,
    /// False for a job this server did not start in its present run: one of an earlier run
    /// (read from the state directory), or one another server sharing it runs.
    pub this_server: bool,
    /// True while the job waits for input: its foreground process is blocked reading the
    /// terminal and it has printed nothing for a moment (a prompt such as `Password:`,
    /// `[y/N]`, a REPL). Answer with interact_with_job or send_keys.
    pub waiting_for_input: bool,
    /// Only while waiting_for_input: false means a password or secret is asked for (line
    /// mode, echo off): ask the user rather than guess; the answer will not appear in the
    /// output.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "bool")]
    pub echo: Option<bool>,
    /// Only while waiting_for_input: `line` (Enter sends a line) or `raw` (every key goes to
    /// the program: a menu, REPL or editor).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub mode: Option<&'static str>,
    /// Only while waiting_for_input: the question on screen (the cursor's line, or the line
    /// above that asks), then a visible menu's choices, one a line.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub prompt: Option<String>,
    /// The TCP listeners of the job's own processes (absent when none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ports: Vec<Port>,
    /// The port `auto_port` picked for the job.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    /// True for a kept job: it outlives its server (execute_command `keep`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub kept: bool,
    /// When a kept job's keep_ttl_secs ends (RFC 3339); absent: kept until killed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub keep_until: Option<String>,
    /// Under a policy: the job's profile, what is enforced and what is not, and the watched
    /// files it changed (not in the schema: the tool list's budget).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(skip)]
    pub policy: Option<ptyjobs_engine::JobPolicy>,
}

impl From<JobInfo> for StatusResult {
    fn from(j: JobInfo) -> Self {
        Self {
            job_id: j.id.to_string(),
            status: j.status.into(),
            exit_code: j.exit_code,
            signal: j.signal,
            pid: j.pid,
            command: budget::shorten(j.command, budget::STATUS_COMMAND_BYTES),
            started: rfc3339(j.started),
            finished: j.finished.map(rfc3339),
            duration_ms: j.duration_ms,
            name: j.name.map(|n| budget::shorten(n, budget::LIST_TEXT_BYTES)),
            reason: j.reason,
            cwd: j.cwd.display().to_string(),
            this_server: j.this_server,
            waiting_for_input: j.input.is_some(),
            echo: j.input.as_ref().map(|w| w.echo),
            mode: j.input.as_ref().map(|w| w.mode.as_str()),
            prompt: j.input.map(|w| w.prompt),
            ports: ports(j.ports),
            port: j.port,
            kept: j.kept,
            keep_until: j.keep_until.map(rfc3339),
            policy: j.policy,
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
    /// The command line as given (a long one is cut after 512 bytes; get_job_status shows
    /// more).
    pub command: String,
    /// When the job started (RFC 3339).
    pub started: String,
    /// Exit code once the job exited normally, else absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// The label given at start, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Process id of the job's shell.
    pub pid: u32,
    /// False for a job of an earlier run of the server (kept in the state directory) or of
    /// another server sharing that directory: control goes through that server.
    pub this_server: bool,
    /// True while the job waits for input: its foreground process is blocked reading the
    /// terminal and it has printed nothing for a moment (a prompt such as `Password:`,
    /// `[y/N]`, a REPL). Answer with interact_with_job or send_keys.
    pub waiting_for_input: bool,
    /// Only while waiting_for_input: false means a password or secret is asked for (line
    /// mode, echo off): ask the user rather than guess; the answer will not appear in the
    /// output.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "bool")]
    pub echo: Option<bool>,
    /// Only while waiting_for_input: `line` (Enter sends a line) or `raw` (every key goes to
    /// the program: a menu, REPL or editor).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub mode: Option<&'static str>,
    /// Only while waiting_for_input: the question on screen (the cursor's line, or the line
    /// above that asks), then a visible menu's choices, one a line.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub prompt: Option<String>,
    /// The TCP listeners of the job's own processes (absent when none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ports: Vec<Port>,
    /// True for a kept job: it outlives its server (execute_command `keep`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub kept: bool,
    /// When a kept job's keep_ttl_secs ends (RFC 3339); absent: kept until killed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub keep_until: Option<String>,
}

impl From<JobInfo> for JobSummary {
    fn from(j: JobInfo) -> Self {
        Self {
            job_id: j.id.to_string(),
            status: j.status.into(),
            command: budget::shorten(j.command, budget::LIST_TEXT_BYTES),
            started: rfc3339(j.started),
            exit_code: j.exit_code,
            name: j.name.map(|n| budget::shorten(n, budget::LIST_TEXT_BYTES)),
            pid: j.pid,
            this_server: j.this_server,
            waiting_for_input: j.input.is_some(),
            echo: j.input.as_ref().map(|w| w.echo),
            mode: j.input.as_ref().map(|w| w.mode.as_str()),
            prompt: j.input.map(|w| w.prompt),
            ports: ports(j.ports),
            kept: j.kept,
            keep_until: j.keep_until.map(rfc3339),
        }
    }
}

/// Input of list_jobs.
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct ListParams {
    /// Only jobs with this status, e.g. `"running"`. Default: every job.
    #[serde(default)]
    pub status: Option<Status>,
    /// Continue a listing: the `next_cursor` of the previous answer.
    #[serde(default)]
    pub cursor: Option<String>,
    /// Most bytes of jobs in one answer, 256-65536 (default and maximum 65536).
    #[serde(default)]
    pub max_bytes: Option<u64>,
    /// List the services of cwd's Procfile and .claude/launch.json, with their jobs, instead.
    #[serde(default)]
    pub services: Option<bool>,
    /// With services: the project directory. Default: the server's working directory.
    #[serde(default)]
    pub cwd: Option<String>,
}

/// Result of list_jobs.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ListResult {
    /// Known jobs, newest first: this server's, then those of earlier runs and of other
    /// servers kept in the state directory, until retention prunes the oldest. One answer
    /// holds at most 64 KiB of them; `next_cursor` continues.
    pub jobs: Vec<JobSummary>,
    /// Jobs matching the filter, in this answer or not.
    pub total_jobs: u64,
    /// Jobs matching the filter not in this answer (before the cursor or after this page).
    pub omitted_jobs: u64,
    /// Pass as `cursor` to list the next jobs; absent when this answer reaches the last one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// With `services: true` (then `jobs` is empty): the project's services, each with the
    /// running job that runs it, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub services: Option<Vec<super::ServiceSummary>>,
    /// Services left out of this answer to keep it within 64 KiB.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub omitted_services: Option<u64>,
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
    #[serde(flatten)]
    pub job: super::JobIdParams,
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
    /// Pids of the job's processes still alive after SIGKILL and a bounded wait (normally
    /// absent: nothing survived).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub survivors: Vec<u32>,
}

impl From<KillOutcome> for KillResult {
    fn from(k: KillOutcome) -> Self {
        KillReport::of(k).into()
    }
}

impl From<KillReport> for KillResult {
    fn from(k: KillReport) -> Self {
        let status = match k.outcome {
            KillOutcome::Killed => KillStatus::Killed,
            KillOutcome::AlreadyTerminated => KillStatus::AlreadyTerminated,
            KillOutcome::NotFound => KillStatus::NotFound,
        };
        Self {
            status,
            survivors: k.survivors,
        }
    }
}

/// Result of remove_job.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RemoveResult {
    /// The job's UUID.
    pub job_id: String,
    /// Always true: the record and its output are gone.
    pub removed: bool,
}
