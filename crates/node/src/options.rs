//! The options objects JS passes in, checked and turned into the engine's settings.

use std::collections::HashMap;
use std::time::Duration;

use napi_derive::napi;
use ptyjobs_engine as engine;

use crate::error::{Result, from_engine, invalid};
use crate::types::{MAX_SAFE, count, whole};

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
    /// Longest `wait` with a `pattern`, `idleMs` or `port` condition, in milliseconds; a longer
    /// `timeoutMs` is cut to it and the result says `capped: true`. Default 50 000 (the MCP
    /// server's bound, below the 60 s many MCP clients allow a request).
    pub max_wait_ms: Option<f64>,
    /// Keep job records and clean transcripts in this directory (created with mode 0700, files
    /// 0600), so that jobs outlive the manager: a later manager on the same directory (in this
    /// process or another one) lists them, with `thisServer: false`, and reads their output.
    /// A relative path is taken from the current directory. Giving it turns persistence on;
    /// `persist: false` turns it off again.
    pub state_dir: Option<String>,
    /// Persist jobs (see `stateDir`) in the platform's state directory
    /// (`$XDG_STATE_HOME/ptyjobs`, `~/.local/state/ptyjobs`) unless `stateDir` names another.
    /// Default false: unlike the MCP server, which persists by default, the binding keeps
    /// everything in memory and writes nothing unless asked. `false` wins over `stateDir`.
    pub persist: Option<bool>,
    /// With persistence: most finished jobs kept on disk, the oldest pruned first. Default 500.
    pub keep_jobs: Option<f64>,
    /// With persistence: finished jobs older than this many days (fractions allowed) are
    /// pruned. Default 14.
    pub keep_days: Option<f64>,
    /// With persistence: most bytes all records and logs in the state directory may take
    /// together; the oldest finished jobs are pruned first. Default 1 GiB.
    pub keep_bytes: Option<f64>,
    /// With persistence: per-job cap of the transcript on disk, in bytes; a marker line ends a
    /// log that reached it (memory still holds the recent lines). Default 100 MiB.
    pub job_log_bytes: Option<f64>,
    /// A policy file (TOML, docs/POLICY.md), read once: every job runs in a kernel sandbox
    /// under one of its profiles (Linux; elsewhere the constructor throws). A file that is
    /// invalid or that this kernel cannot enforce throws `INVALID_ARGUMENT`.
    pub policy: Option<String>,
    /// With `policy`: the `ptyjobs` executable that applies each job's sandbox. Default: the
    /// one shipped beside this addon.
    pub sandbox_program: Option<String>,
}

/// Longest `keepDays` accepted (about 2700 years, as the server).
const MAX_KEEP_DAYS: f64 = 1e6;

impl ManagerOptions {
    /// The state directory's settings these options ask for: `None` for in-memory only. The
    /// retention options are checked even then (a typo should not wait for `persist: true`).
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` for an empty `stateDir`, a retention option out of range, or
    /// `persist: true` where the platform has no state directory.
    pub fn store_config(&self) -> Result<Option<engine::StoreConfig>> {
        let keep_jobs = self.keep_jobs.map(|v| count("keepJobs", v)).transpose()?;
        let keep_age = match self.keep_days {
            Some(d) if d.is_finite() && (0.0..=MAX_KEEP_DAYS).contains(&d) => {
                Some(Duration::from_secs_f64(d * 86_400.0))
            }
            Some(d) => {
                return Err(invalid(format!(
                    "keepDays must be a number of days between 0 and {MAX_KEEP_DAYS}, got {d}"
                )));
            }
            None => None,
        };
        let keep_bytes = self
            .keep_bytes
            .map(|v| whole("keepBytes", v, 0, MAX_SAFE))
            .transpose()?;
        let job_log_bytes = self
            .job_log_bytes
            .map(|v| whole("jobLogBytes", v, 0, MAX_SAFE))
            .transpose()?;
        let dir = match (&self.state_dir, self.persist) {
            (Some(dir), _) if dir.is_empty() => {
                return Err(invalid(
                    "stateDir must not be empty: give a directory, or leave it out",
                ));
            }
            (_, Some(false)) | (None, None) => return Ok(None),
            (Some(dir), _) => std::path::absolute(dir)
                .map_err(|e| invalid(format!("stateDir {dir:?} cannot be made absolute: {e}")))?,
            (None, Some(true)) => engine::StoreConfig::default_dir().ok_or_else(|| {
                invalid(
                    "persist: the platform has no state directory (no home directory): \
                     give stateDir",
                )
            })?,
        };
        let mut cfg = engine::StoreConfig::new(dir);
        if let Some(v) = keep_jobs {
            cfg.keep_jobs = v;
        }
        if let Some(v) = keep_age {
            cfg.keep_age = v;
        }
        if let Some(v) = keep_bytes {
            cfg.keep_bytes = v;
        }
        if let Some(v) = job_log_bytes {
            cfg.job_log_bytes = v;
        }
        Ok(Some(cfg))
    }
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
    /// A name for the job: unique among the live jobs of one working directory (across every
    /// process sharing the state directory); every method taking a job id takes it too.
    pub name: Option<String>,
    /// With `name`: when a live job holds that name in that directory and runs the same
    /// command, return it (`reused: true`) instead of starting another; a different command
    /// is refused (`NAME_TAKEN`: restart it to change it).
    pub ensure: Option<bool>,
    /// Pick a free TCP port, give it to the job as `PORT` and answer it as `info.port` (an
    /// explicit `env.PORT` is the port instead); a `listening` wait then counts only it.
    pub auto_port: Option<bool>,
    /// Keep the job running after this process ends: the state directory's keeper (the
    /// `ptyjobs` binary of the platform package, or `PTYJOBS_BIN`) runs it. Needs a state
    /// directory; Linux and macOS only (`IO_ERROR` elsewhere). Blocks while a keeper starts.
    pub keep: Option<bool>,
    /// With `keep`: end the job this many seconds after its start (default 86400; 0: only
    /// when killed).
    pub keep_ttl_secs: Option<f64>,
    /// The profile of the manager's `policy` to run under (default: `default`); only
    /// `default` and the file's `agent_profiles` may be named.
    pub profile: Option<String>,
}

/// Options of `restart(jobIdOrName, options?)`.
#[napi(object)]
#[derive(Default)]
pub struct RestartOptions {
    /// A new command line. Default: the job's.
    pub command: Option<String>,
    /// New extra environment variables. Default: the job's.
    pub env: Option<HashMap<String, String>>,
    /// For a name live in several directories: which one.
    pub cwd: Option<String>,
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
    /// Most bytes of `output`: beyond it, the first and last lines are kept and a marker line
    /// in the middle says how many lines and bytes were left out (`omittedLines`,
    /// `omittedBytes`). `firstLine` and `nextOffset` still cover the whole range read.
    /// Default: no limit.
    pub max_bytes: Option<f64>,
    /// For a name live in several directories: which one (relative to this process's).
    pub cwd: Option<String>,
}

/// Options of `tail(jobId, lines?, options?)`.
#[napi(object)]
#[derive(Default)]
pub struct TailOptions {
    /// Most bytes of `output`, as in `output()`'s `maxBytes`. Default: no limit.
    pub max_bytes: Option<f64>,
    /// For a name live in several directories: which one (relative to this process's).
    pub cwd: Option<String>,
}

/// Options of `search(jobId, pattern, options?)`.
#[napi(object)]
#[derive(Default)]
pub struct SearchOptions {
    /// Lines of context returned before and after each match. Default 0.
    pub context: Option<f64>,
    /// Most matches returned (`totalMatches` counts them all). Default: all.
    pub max_matches: Option<f64>,
    /// For a name live in several directories: which one (relative to this process's).
    pub cwd: Option<String>,
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
    /// For a name live in several directories: which one (relative to this process's).
    pub cwd: Option<String>,
}

/// Options of `wait(jobId, options?)`.
///
/// With none of `pattern`, `idleMs`, `port`, `input`, the wait ends when the job does (or at
/// `timeoutMs`) and resolves with the job's `JobInfo`. With any of them it ends at the first
/// condition met, the job's exit included, and resolves with a `WaitResult` saying which.
#[napi(object)]
#[derive(Default)]
pub struct WaitOptions {
    /// Give up after this many milliseconds. Without a condition: resolve with the
    /// still-running info; default no limit. With a condition: resolve with reason
    /// `timeout`; default and upper bound the manager's `maxWaitMs` (50 000 unless set), a
    /// longer value being cut to it (`capped: true`: call again to keep waiting).
    pub timeout_ms: Option<f64>,
    /// End when a line of clean output matches this regular expression (Rust `regex` syntax,
    /// e.g. `(?i)listening on|ready`). By default only new lines count: those from the line
    /// the cursor was on when the call began (it may still be completed) onwards.
    pub pattern: Option<String>,
    /// Also match the lines printed before the call (every line still held). Default false.
    pub from_start: Option<bool>,
    /// End when the job has printed nothing for this many milliseconds (at least 1): a
    /// program waiting at its prompt, a build gone quiet.
    pub idle_ms: Option<f64>,
    /// End when one of the job's own processes listens on this TCP port (1..=65535), any
    /// address; when another process holds it, end at once with `port_taken` and its
    /// `holder`. Looked at every 5 ms.
    pub port: Option<f64>,
    /// `true`: end when the job listens on any TCP port (reason `listening`, with `ports` and
    /// `urls`: where the server ended up); with `autoPort`, only on its port.
    pub listening: Option<bool>,
    /// End when an HTTP GET of this `http://localhost:PORT/...` URL, on a port the job listens
    /// on, answers below 500 (or `expectStatus`); redirects are not followed, each request
    /// may take 2 s (reason `http_ready`, with `httpStatus`).
    pub url: Option<String>,
    /// With `url`: the exact status that counts as ready.
    pub expect_status: Option<f64>,
    /// `true`: end as soon as the job waits for input (reason `input_wanted`, with `prompt`
    /// and `echo`); at once if it already does. Linux only.
    pub input: Option<bool>,
    /// For a name live in several directories: which one (relative to this process's).
    pub cwd: Option<String>,
}

impl WaitOptions {
    /// The engine's wait spec when a condition beyond exit and timeout was given (the
    /// `WaitResult` form), `None` for a plain wait.
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` for a bad pattern, `idleMs` or `port`.
    pub fn spec(&self, timeout: Option<Duration>) -> Result<Option<engine::WaitSpec>> {
        if self.pattern.is_none()
            && self.idle_ms.is_none()
            && self.port.is_none()
            && self.input != Some(true)
            && self.listening != Some(true)
            && self.url.is_none()
            && self.expect_status.is_none()
        {
            return Ok(None);
        }
        let port = self
            .port
            .map(|v| whole("port", v, 1, u64::from(u16::MAX)))
            .transpose()?;
        Ok(Some(engine::WaitSpec {
            pattern: self
                .pattern
                .as_deref()
                .map(engine::compile_pattern)
                .transpose()
                .map_err(from_engine)?,
            from_start: self.from_start.unwrap_or(false),
            idle: self
                .idle_ms
                .map(|v| whole("idleMs", v, 1, 1 << 50).map(Duration::from_millis))
                .transpose()?,
            port: port.map(|p| u16::try_from(p).unwrap_or(u16::MAX)),
            input: self.input == Some(true),
            listening: self.listening == Some(true),
            url: self.url.clone(),
            expect_status: self
                .expect_status
                .map(|v| whole("expectStatus", v, 100, 599))
                .transpose()?
                .map(|v| u16::try_from(v).unwrap_or(u16::MAX)),
            timeout,
        }))
    }
}

/// Options of the methods that take a job and nothing else to tune (`status`, `screen`,
/// `write`, `sendKeys`, `resize`, `removeJob`, `onData`, `onExit` and their Promise forms).
#[napi(object)]
#[derive(Default)]
pub struct NameOptions {
    /// For a name live in several directories: which one (relative to this process's).
    pub cwd: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wait_options_without_a_condition_are_a_plain_wait() {
        let plain = WaitOptions {
            timeout_ms: Some(5.0),
            from_start: Some(true),
            ..WaitOptions::default()
        };
        assert!(matches!(plain.spec(None), Ok(None)));
    }

    #[test]
    fn wait_options_with_conditions_become_a_spec() {
        let o = WaitOptions {
            pattern: Some("^ready".into()),
            idle_ms: Some(250.0),
            port: Some(8080.0),
            ..WaitOptions::default()
        };
        let spec = o.spec(Some(Duration::from_secs(3))).ok().flatten();
        let spec = spec.as_ref();
        assert!(spec.is_some_and(|s| s.pattern.as_ref().is_some_and(|p| p.is_match("ready!"))));
        assert_eq!(spec.and_then(|s| s.idle), Some(Duration::from_millis(250)));
        assert_eq!(spec.and_then(|s| s.port), Some(8080));
        assert_eq!(spec.and_then(|s| s.timeout), Some(Duration::from_secs(3)));
        assert!(spec.is_some_and(|s| !s.from_start));
        for bad in [
            WaitOptions {
                pattern: Some("(".into()),
                ..WaitOptions::default()
            },
            WaitOptions {
                port: Some(0.0),
                ..WaitOptions::default()
            },
            WaitOptions {
                port: Some(65_536.0),
                ..WaitOptions::default()
            },
            WaitOptions {
                idle_ms: Some(0.0),
                ..WaitOptions::default()
            },
        ] {
            let e = bad.spec(None).err().map(|e| e.status);
            assert_eq!(e, Some(crate::error::Code::InvalidArgument));
        }
    }

    #[test]
    fn persistence_is_off_unless_asked() {
        let none = ManagerOptions::default();
        assert!(matches!(none.store_config(), Ok(None)));
        let off = ManagerOptions {
            state_dir: Some("/tmp/x".into()),
            persist: Some(false),
            keep_jobs: Some(3.0),
            ..ManagerOptions::default()
        };
        assert!(matches!(off.store_config(), Ok(None)));
    }

    #[test]
    fn a_state_dir_with_retention_becomes_a_store_config() {
        let o = ManagerOptions {
            state_dir: Some("/tmp/state".into()),
            keep_jobs: Some(7.0),
            keep_days: Some(0.5),
            keep_bytes: Some(1000.0),
            job_log_bytes: Some(0.0),
            ..ManagerOptions::default()
        };
        let cfg = o.store_config().ok().flatten();
        let cfg = cfg.as_ref();
        assert_eq!(cfg.map(|c| c.dir.clone()), Some("/tmp/state".into()));
        assert_eq!(cfg.map(|c| c.keep_jobs), Some(7));
        assert_eq!(cfg.map(|c| c.keep_age), Some(Duration::from_secs(43_200)));
        assert_eq!(cfg.map(|c| c.keep_bytes), Some(1000));
        assert_eq!(cfg.map(|c| c.job_log_bytes), Some(0));
        let relative = ManagerOptions {
            state_dir: Some("rel/dir".into()),
            persist: Some(true),
            ..ManagerOptions::default()
        };
        let dir = relative.store_config().ok().flatten().map(|c| c.dir);
        assert!(dir.is_some_and(|d| d.is_absolute() && d.ends_with("rel/dir")));
    }

    #[test]
    fn bad_persistence_options_are_invalid_arguments() {
        for bad in [
            ManagerOptions {
                state_dir: Some(String::new()),
                ..ManagerOptions::default()
            },
            ManagerOptions {
                keep_jobs: Some(-1.0),
                ..ManagerOptions::default()
            },
            ManagerOptions {
                keep_days: Some(f64::NAN),
                persist: Some(true),
                ..ManagerOptions::default()
            },
            ManagerOptions {
                keep_days: Some(-0.1),
                ..ManagerOptions::default()
            },
            ManagerOptions {
                keep_bytes: Some(1.5),
                ..ManagerOptions::default()
            },
            ManagerOptions {
                job_log_bytes: Some(f64::INFINITY),
                ..ManagerOptions::default()
            },
        ] {
            let e = bad.store_config().err().map(|e| e.status);
            assert_eq!(e, Some(crate::error::Code::InvalidArgument));
        }
    }
}
