//! Job identity, the spec a job is started from, and the snapshots handed to callers.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// A job's id: a UUID v4, printed in its hyphenated lowercase form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct JobId(pub(crate) uuid::Uuid);

impl JobId {
    /// A fresh random id.
    pub fn new() -> Self {
        Self(uuid::Uuid::new_v4())
    }
}

impl Default for JobId {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Display for JobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.hyphenated().fmt(f)
    }
}

/// What to run. Only `command` is required; `None` fields take the manager's defaults.
#[derive(Debug, Clone, Default)]
pub struct JobSpec {
    /// The command line, run as `<shell> -c <command>` (pipes, `&&`, quotes and globs work).
    pub command: String,
    /// Working directory; must exist and be a directory. Default: the server's.
    pub cwd: Option<PathBuf>,
    /// Extra environment variables, on top of the server's and the terminal defaults.
    pub env: BTreeMap<String, String>,
    /// Terminal width in columns (1..=1000).
    pub cols: Option<u16>,
    /// Terminal height in rows (1..=1000).
    pub rows: Option<u16>,
    /// A short human name shown in listings.
    pub name: Option<String>,
    /// Kill the job (TERM, grace, KILL) when it runs longer than this.
    pub timeout: Option<Duration>,
    /// With a `name`: answer with the live job that holds (name, cwd) and runs the same
    /// command instead of starting a second one (see [`crate::JobManager::ensure`]).
    pub ensure: bool,
    /// Pick a free TCP port, give it to the job as `PORT` and report it as [`JobInfo::port`].
    pub auto_port: bool,
    /// The job this one replaces (set by restart).
    pub replaces: Option<JobId>,
    /// Keep the job running after this process ends: it is started by the state directory's
    /// keeper (see [`crate::JobManager::ensure`]). Needs a state directory; Unix only.
    pub keep: bool,
    /// With `keep`: end the job (through the kill path, reason [`KEEP_TTL_REASON`]) this long
    /// after its start; `None`: only when killed.
    pub keep_ttl: Option<Duration>,
    /// The policy profile it runs under (`None`: the default); only with a policy, and only
    /// a profile the policy lets jobs name.
    pub profile: Option<String>,
}

/// The reason recorded for a kept job ended because its keep TTL ran out.
pub const KEEP_TTL_REASON: &str = "keep_ttl ended";

impl JobSpec {
    /// A spec for `command` with every option at its default.
    pub fn new(command: impl Into<String>) -> Self {
        Self {
            command: command.into(),
            ..Self::default()
        }
    }
}

/// A job's state. Wire names are exactly `running`, `completed`, `failed`, `killed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JobStatus {
    /// The job's process is alive (or its output is still being drained).
    Running,
    /// The command exited with status 0.
    Completed,
    /// Non-zero exit, death by a signal ptyjobs did not send, or a failed start.
    Failed,
    /// Ended by `kill`, by its timeout, or by shutdown.
    Killed,
}

impl JobStatus {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Killed => "killed",
        }
    }

    /// Whether the job has ended (any status but `Running`).
    pub fn is_final(self) -> bool {
        self != Self::Running
    }
}

impl fmt::Display for JobStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A plain snapshot of one job, taken under the manager's lock and handed out by value.
///
/// Also the body of the job's record on disk ([`crate::store::JobRecord`]), which is why it
/// deserializes: there `pid` may be absent (older records) and `this_server` and `input` are
/// not read back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobInfo {
    /// The job's id.
    pub id: JobId,
    /// Optional human name given at start.
    pub name: Option<String>,
    /// The command line as given.
    pub command: String,
    /// The working directory the job started in.
    pub cwd: PathBuf,
    /// Process id of the job's shell (also its process-group and session id).
    #[serde(default)]
    pub pid: u32,
    /// Current status.
    pub status: JobStatus,
    /// Exit code, once the job exited normally.
    pub exit_code: Option<i32>,
    /// Name of the signal that ended the job (`SIGTERM`, ...), if one did.
    pub signal: Option<String>,
    /// When the job started.
    pub started: DateTime<Utc>,
    /// When the job became final.
    pub finished: Option<DateTime<Utc>>,
    /// Milliseconds from start to finish, or to now while running.
    pub duration_ms: u64,
    /// Why a job was killed or failed, in a few words (`kill_job`, `timeout`, `shutdown`, ...).
    pub reason: Option<String>,
    /// Terminal size `(cols, rows)`.
    pub size: (u16, u16),
    /// Whether this manager started the job in its present run. False for jobs read from the
    /// state directory: earlier runs', and those another live server owns.
    #[serde(skip_deserializing)]
    pub this_server: bool,
    /// Set while the job waits for input: its foreground process is blocked reading the
    /// terminal and its output is quiet (see [`InputWait`] for how this is told and
    /// when it can be wrong). Always `None` for a job that is not running. In a record on disk:
    /// the state its server last wrote (paced: at most about a second behind the job).
    #[serde(default)]
    pub input: Option<InputWait>,
    /// The TCP listeners of the job's processes, as seen when the snapshot was taken. Empty for
    /// a job that has ended; never stored (a record's would be stale).
    #[serde(skip)]
    pub ports: Vec<Listener>,
    /// The port picked for the job by `auto_port` (also its `PORT` variable).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    /// The job this one replaced, when it was started by a restart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replaces: Option<JobId>,
    /// Whether the job is kept: it runs in the state directory's keeper and outlives the
    /// process that asked for it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub kept: bool,
    /// When a kept job's keep TTL runs out (it is then killed); `None`: kept until killed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep_until: Option<DateTime<Utc>>,
    /// Its policy, when the server has one: the profile, what is enforced, what is not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<JobPolicy>,
}

/// A TCP socket in the listening state held by one of a job's processes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Listener {
    /// The local address it is bound to (`0.0.0.0`, `::`, `127.0.0.1`, ...).
    pub address: std::net::IpAddr,
    /// The local port.
    pub port: u16,
    /// A process that holds the socket.
    pub pid: u32,
}

/// A job waiting for input: what the person at its terminal would see.
///
/// A running job waits for input when its output has been quiet for 150 ms and a process of
/// its terminal's foreground process group is asleep waiting for the terminal: in a `read` of
/// it, or in a `poll`/`select`/`epoll_wait` whose set holds it. Looked at on the job's reader
/// thread while output is quiet (at 150 ms, every 250 ms, every second after 3 s, every 5 s
/// after 10 s) and every 250 ms by a wait for input in progress; new output or input written to
/// the job clears it until the next look.
///
/// When it can be wrong:
/// - **Late**: a job that starts reading without printing anything first is seen at the next
///   look: up to 5 s later for a job that has long been quiet, 250 ms for a wait for input.
/// - **Polling programs**: a program that waits on the terminal *and* other descriptors with
///   `poll`/`select`/`epoll` (a full-screen program such as `top` between redraws, a REPL with
///   timers) counts as waiting whenever it is quiet, because it does accept keys then. A
///   program that polls the terminal with a zero timeout in a busy loop is not seen. A descriptor set that cannot be read
///   (`/proc/<pid>/mem` refused, e.g. a setuid program) counts as not waiting.
/// - **Quiet readers of other things**: a process blocked reading a pipe or a socket is never
///   waiting for input, even if a person would call it so (`cat | sort` waits on `cat`, which
///   does read the terminal, and is reported).
/// - **Busy groups**: while a process of the foreground group runs or waits for a CPU, the
///   job is not waiting, even if another process of the group reads the terminal.
/// - **Background groups**: only the foreground process group counts. A process of a
///   background group that reads the terminal is stopped by `SIGTTIN` and is not reported; a
///   job that made itself a new session (`setsid`) has left the terminal and is not seen.
/// - **Not Linux**: there is no `/proc`; `waiting_for_input` is always false.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputWait {
    /// False only for a password prompt: line mode with the terminal's echo off (`getpass`,
    /// `ssh-keygen`, `sudo`), where what is typed never appears — ask your user. True in raw
    /// mode, where the program itself draws what is typed (REPLs, menus, editors).
    pub echo: bool,
    /// How the program reads: [`InputMode::Line`] (the terminal collects a line, Enter sends
    /// it) or [`InputMode::Raw`] (every key goes to the program at once).
    #[serde(default)]
    pub mode: InputMode,
    /// The question on screen: the cursor's line (trailing blanks trimmed), such as
    /// `Password:` or `Continue? [y/N]`. When that line is blank or holds nothing but box
    /// drawing or a lone `>`/`?`, the nearest line above that holds letters (and is not a
    /// menu choice), then the cursor's line if it is not blank; a visible menu's choices
    /// follow it, one a line (a few at most). Empty on a blank screen.
    pub prompt: String,
    /// The process that waits (a member of the terminal's foreground process group).
    pub pid: u32,
}

/// How a program waiting for input reads its terminal.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum InputMode {
    /// Canonical mode (`ICANON` on): the terminal edits a line and hands it over at Enter
    /// (shell `read`, `input()`, `git add -p`, password prompts).
    #[default]
    Line,
    /// `ICANON` off: the program gets every key as it is pressed and draws the echo itself
    /// (REPLs with line editing, select menus, prompt libraries, full-screen programs).
    Raw,
}

impl InputMode {
    /// The wire name: `line` or `raw`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Line => "line",
            Self::Raw => "raw",
        }
    }
}

/// A job's policy as its status and execute's answer carry it.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct JobPolicy {
    /// The profile it runs under.
    pub profile: String,
    /// What the kernel enforces for it.
    pub enforced: Vec<String>,
    /// What is only a guardrail (the exec allowlist): a determined program gets around it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub guardrail: Vec<String>,
    /// What the profile asks that is not enforced (only with `enforce = "best-effort"`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_enforced: Vec<String>,
    /// Watched files that changed while the job ran (filled in when it ends).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changed: Vec<String>,
    /// Calls the sandbox refused, per call and command, counted while the job runs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub refused: Vec<RefusedCall>,
    /// One line per kind of refusal: what the profile refused, and what the person would set
    /// in the policy file to allow it (or that nothing can).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hints: Vec<String>,
}

/// Calls of one kind the sandbox refused to one command of a job.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct RefusedCall {
    /// The call with its distinguishing argument: `socket(AF_INET, SOCK_DGRAM)`.
    pub syscall: String,
    /// The command of the process that made it (`/proc/<pid>/comm`).
    pub command: String,
    /// How many times it was refused.
    pub count: u64,
}
