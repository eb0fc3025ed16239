//! Engine-wide limits and defaults.

use std::path::PathBuf;
use std::time::Duration;

use crate::kill::MAX_KILL_GRACE;

/// Limits and defaults of a [`crate::JobManager`]. `Default` gives the documented values.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// The shell that runs each command as `<shell> -c <command>` (Windows: `cmd.exe /d /s /c`,
    /// or `-Command` for PowerShell). Default `/bin/sh` (Windows: `cmd.exe`).
    pub shell: PathBuf,
    /// Default terminal width for jobs that do not give one. Default 120.
    pub cols: u16,
    /// Default terminal height for jobs that do not give one. Default 40.
    pub rows: u16,
    /// Most jobs running at once; finished jobs never count. Default 32.
    pub max_running: usize,
    /// Most finished jobs kept listed; the oldest finished job is forgotten first. Default 500.
    pub max_finished: usize,
    /// Per-job cap on the held transcript, in bytes of text; oldest lines are evicted first.
    /// Default 4 MiB.
    pub transcript_bytes: usize,
    /// A line longer than this many bytes is split into several transcript lines, so a single
    /// endless line stays bounded. Default 64 KiB.
    pub max_line_bytes: usize,
    /// Time between the polite signal of a kill and SIGKILL. Default 3 s.
    pub kill_grace: Duration,
    /// The longest grace any kill waits, whoever asks (a tool call, the CLI, the Node
    /// binding, this config's own `kill_grace`): longer requests are shortened to it.
    /// Default [`MAX_KILL_GRACE`] (60 s).
    pub max_kill_grace: Duration,
    /// After the job's shell exits, how long output is still drained while some other process
    /// (a background grandchild) holds the terminal open, before that process group is killed.
    /// Default 500 ms.
    pub drain_timeout: Duration,
    /// Longest server-side wait (`wait_for`); longer requests are capped and say so. Default
    /// 50 s, below the 60 s many MCP clients allow a request.
    pub max_wait: Duration,
    /// What jobs run as `GIT_EDITOR`, `EDITOR` and `VISUAL` (a job's own `env` wins): `None`
    /// (the default) gives them a command that fails at once and says why, since an
    /// interactive editor in a background job waits forever for keys nobody types.
    pub editor: Option<String>,
    /// Where job records and logs are kept across restarts; `None` (the default) keeps
    /// everything in memory.
    pub store: Option<crate::store::StoreConfig>,
    /// The person's policy (`--policy FILE`): every job runs under one of its profiles, in a
    /// sandbox. `None` (the default): jobs run unsandboxed, as ever.
    pub policy: Option<std::sync::Arc<crate::policy::Policy>>,
    /// This face's `ptyjobs` executable: started (as `ptyjobs keeper`) to hold kept jobs when no
    /// keeper runs on the state directory yet, and run as each sandboxed job's trampoline (see
    /// `sys/sandbox`). `None` (the default): `PTYJOBS_BIN`, else keeping a job, or a job under
    /// a policy, fails with a message that says so.
    pub program: Option<PathBuf>,
}

impl Default for EngineConfig {
    fn default() -> Self {
        Self {
            shell: PathBuf::from(crate::sys::spawn::DEFAULT_SHELL),
            cols: 120,
            rows: 40,
            max_running: 32,
            max_finished: 500,
            transcript_bytes: 4 * 1024 * 1024,
            max_line_bytes: 64 * 1024,
            kill_grace: Duration::from_secs(3),
            max_kill_grace: MAX_KILL_GRACE,
            drain_timeout: Duration::from_millis(500),
            max_wait: Duration::from_secs(50),
            editor: None,
            store: None,
            policy: None,
            program: None,
        }
    }
}

/// Raises this process's soft limit on open files to its hard limit, and returns the soft limit
/// now in force (`u64::MAX`: unlimited). Both faces call it once at start: each job holds a few
/// descriptors, and the usual soft default (1024 on Linux, 256 on macOS) would stop a server at
/// a few hundred jobs; past the hard limit a start fails with [`crate::Error::LimitReached`].
pub fn raise_fd_limit() -> u64 {
    crate::sys::limits::raise_fd_limit()
}

/// Asks the scheduler to run the calling thread promptly when it wakes, even beside a job that
/// keeps the CPU busy (Linux ≥ 6.12: a short slice), without any job or thread it starts
/// inheriting that; returns whether the hint was taken. For the threads of a server of its own
/// that start jobs and answer requests (the MCP server's runtime threads) — not for a host's
/// threads, whose scheduling is the host's business.
pub fn prefer_prompt_wakeups() -> bool {
    crate::sys::sched::prefer_prompt_wakeups()
}

impl EngineConfig {
    /// `grace` (or the configured `kill_grace`) shortened to `max_kill_grace`: the one place a
    /// kill's grace is capped.
    pub fn grace(&self, grace: Option<Duration>) -> Duration {
        grace.unwrap_or(self.kill_grace).min(self.max_kill_grace)
    }
}
