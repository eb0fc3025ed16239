//! The command line: the server's flags, the state directory's, and the subcommands.

use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;
use clap::builder::TypedValueParser as _;
use ptyjobs_engine::{EngineConfig, StoreConfig};

/// Runs shell commands as background jobs under pseudo-terminals and serves them to AI agents
/// over MCP (JSON-RPC on stdin/stdout). Start it from an MCP client, not by hand.
#[derive(Debug, Parser)]
#[command(name = "ptyjobs", version)]
pub struct Cli {
    /// Without a subcommand, ptyjobs serves MCP on stdio.
    #[command(subcommand)]
    pub command: Option<crate::cli::Command>,
    /// The server's flags (and the state directory's, shared with the subcommands).
    #[command(flatten)]
    pub serve: ServeArgs,
}

/// The plain server's command line: [`Cli`] without the subcommands. Building a clap command
/// costs in proportion to its arguments, and an MCP client starts the plain server every time:
/// [`parse`] tries this one first. It accepts exactly the argument lists that [`Cli`] accepts
/// without a subcommand, with the same values (see the tests).
#[derive(Debug, Parser)]
#[command(name = "ptyjobs", version)]
struct Serve {
    #[command(flatten)]
    serve: ServeArgs,
}

/// The command line of this process. The plain server's flags are parsed without building the
/// subcommands' parsers; anything else (a subcommand, `--help`, `--version`, a mistake) goes to
/// the full [`Cli`], so help, versions and error messages are the full command's.
pub fn parse() -> Cli {
    parse_from(std::env::args_os())
}

fn parse_from<I, T>(args: I) -> Cli
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let args: Vec<std::ffi::OsString> = args.into_iter().map(Into::into).collect();
    match Serve::try_parse_from(&args) {
        Ok(Serve { serve }) => Cli {
            command: None,
            serve,
        },
        Err(_) => Cli::parse_from(args),
    }
}

/// The server's flags, with the state directory's.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// Where job history is kept.
    #[command(flatten)]
    pub state: StateArgs,
    /// Most jobs running at once (finished jobs never count).
    #[arg(long, env = "PTYJOBS_MAX_JOBS", default_value_t = EngineConfig::default().max_running,
          value_parser = clap::value_parser!(u32).range(1..).map(|v| v as usize))]
    max_jobs: usize,
    /// Most finished jobs kept listed; the oldest is forgotten first.
    #[arg(long, env = "PTYJOBS_MAX_FINISHED", default_value_t = EngineConfig::default().max_finished)]
    max_finished: usize,
    /// Per-job cap on the kept transcript, in bytes; the oldest lines are evicted first.
    #[arg(long, env = "PTYJOBS_TRANSCRIPT_BYTES",
          default_value_t = EngineConfig::default().transcript_bytes,
          value_parser = clap::value_parser!(u64).range(1024..).map(|v| v as usize))]
    transcript_bytes: usize,
    /// Longest transcript line in bytes; a longer line is split, so an endless line stays bounded.
    #[arg(long, env = "PTYJOBS_MAX_LINE_BYTES",
          default_value_t = EngineConfig::default().max_line_bytes,
          value_parser = clap::value_parser!(u64).range(80..).map(|v| v as usize))]
    max_line_bytes: usize,
    /// Milliseconds between the polite signal of a kill and SIGKILL.
    #[arg(long, env = "PTYJOBS_KILL_GRACE_MS", default_value_t = 3000)]
    kill_grace_ms: u64,
    /// Default terminal width of a job, 1-1000.
    #[arg(long, env = "PTYJOBS_COLS", default_value_t = EngineConfig::default().cols,
          value_parser = clap::value_parser!(u16).range(1..=1000))]
    cols: u16,
    /// Default terminal height of a job, 1-1000.
    #[arg(long, env = "PTYJOBS_ROWS", default_value_t = EngineConfig::default().rows,
          value_parser = clap::value_parser!(u16).range(1..=1000))]
    rows: u16,
    /// Longest server-side wait of one wait_for_job call, in seconds; longer waits are capped
    /// and say so. Keep it below the client's request timeout (often 60 s).
    #[arg(long, env = "PTYJOBS_MAX_WAIT_SECS",
          default_value_t = EngineConfig::default().max_wait.as_secs_f64(),
          value_parser = parse_secs)]
    max_wait_secs: f64,
    /// The shell that runs each command as `<shell> -c <command>` (default `/bin/sh`; on
    /// Windows `cmd.exe`, run as `cmd.exe /d /s /c <command>`, or PowerShell's `-Command`).
    #[arg(long, env = "PTYJOBS_SHELL", default_value_os_t = EngineConfig::default().shell)]
    shell: PathBuf,
    /// The editor jobs get as GIT_EDITOR, EDITOR and VISUAL (e.g. a non-interactive
    /// `sed -i ...` for scripted rebases). Default: a command that fails at once with a message,
    /// because an interactive editor in a background job waits forever. A job's own `env` wins.
    #[arg(long, env = "PTYJOBS_EDITOR")]
    editor: Option<String>,
    /// A policy file (TOML): every job runs in a sandbox under one of its profiles (Linux;
    /// see docs/POLICY.md). Read once at start; nothing a client sends can widen it.
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
}

impl ServeArgs {
    /// The `--policy` file, read and checked (its canary run): an error stops the server.
    pub fn load_policy(&self) -> Result<Option<std::sync::Arc<ptyjobs_engine::Policy>>, String> {
        let Some(file) = &self.policy else {
            return Ok(None);
        };
        let program = std::env::current_exe()
            .map_err(|e| format!("cannot find this executable to run the sandbox: {e}"))?;
        ptyjobs_engine::Policy::load(file, &program).map(|p| Some(std::sync::Arc::new(p)))
    }

    /// The engine's configuration for serving; `Err` when the state directory cannot be found.
    pub fn engine_config(&self) -> Result<EngineConfig, String> {
        let store = match self.state.store_config() {
            _ if self.state.no_persist => None,
            Ok(store) => Some(store),
            Err(e) => return Err(e),
        };
        Ok(EngineConfig {
            shell: self.shell.clone(),
            cols: self.cols,
            rows: self.rows,
            max_running: self.max_jobs,
            max_finished: self.max_finished,
            transcript_bytes: self.transcript_bytes,
            max_line_bytes: self.max_line_bytes,
            kill_grace: Duration::from_millis(self.kill_grace_ms),
            max_wait: Duration::from_secs_f64(self.max_wait_secs),
            editor: self.editor.clone(),
            store,
            policy: self.load_policy()?,
            // Kept jobs' keeper and sandboxed jobs' trampoline: this same program.
            program: std::env::current_exe().ok(),
            ..EngineConfig::default()
        })
    }
}

/// Where job history is kept and for how long; also read by the subcommands.
#[derive(Debug, clap::Args)]
pub struct StateArgs {
    /// The state directory that keeps job records and logs across restarts. Default: the
    /// platform's state directory (`$XDG_STATE_HOME/ptyjobs`, `~/.local/state/ptyjobs`).
    #[arg(long, env = "PTYJOBS_STATE_DIR", global = true)]
    pub state_dir: Option<PathBuf>,
    /// Keep every job in memory only: nothing is written to disk.
    #[arg(long, env = "PTYJOBS_NO_PERSIST", global = true)]
    pub no_persist: bool,
    /// Most finished jobs kept on disk; the oldest are pruned first.
    #[arg(long, env = "PTYJOBS_KEEP_JOBS", default_value_t = 500, global = true)]
    pub keep_jobs: usize,
    /// Finished jobs older than this many days are pruned.
    #[arg(long, env = "PTYJOBS_KEEP_DAYS", default_value_t = 14.0, global = true)]
    pub keep_days: f64,
    /// Most megabytes (MiB) all job records and logs may take together.
    #[arg(long, env = "PTYJOBS_KEEP_MB", default_value_t = 1024, global = true)]
    pub keep_mb: u64,
    /// Per-job cap of the disk log in MiB; a marker line ends a log that reached it.
    #[arg(long, env = "PTYJOBS_JOB_LOG_MB", default_value_t = 100, global = true)]
    pub job_log_mb: u64,
}

impl StateArgs {
    /// The store settings these flags give.
    pub fn store_config(&self) -> Result<StoreConfig, String> {
        let dir = match &self.state_dir {
            Some(dir) => dir.clone(),
            None => StoreConfig::default_dir().ok_or(
                "cannot find a state directory (no home directory): give --state-dir or \
                 --no-persist",
            )?,
        };
        let days = if self.keep_days.is_finite() && self.keep_days >= 0.0 {
            self.keep_days.min(1e6)
        } else {
            return Err(format!(
                "--keep-days must be a number of days, got {}",
                self.keep_days
            ));
        };
        Ok(StoreConfig {
            keep_jobs: self.keep_jobs,
            keep_age: Duration::from_secs_f64(days * 86_400.0),
            keep_bytes: self.keep_mb.saturating_mul(1 << 20),
            job_log_bytes: self.job_log_mb.saturating_mul(1 << 20),
            ..StoreConfig::new(dir)
        })
    }
}

/// A positive number of seconds, at most a day.
fn parse_secs(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v <= 86_400.0 => Ok(v),
        _ => Err(format!(
            "expected a number of seconds between 0 and 86400, got {s:?}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    /// The fast path gives what the full command line gives, and leaves everything else to it.
    #[test]
    fn the_plain_server_parses_as_the_full_command_line_does() {
        let plain: &[&[&str]] = &[
            &["ptyjobs"],
            &["ptyjobs", "--no-persist"],
            &["ptyjobs", "--max-jobs", "7", "--cols", "100", "--rows=30"],
            &[
                "ptyjobs",
                "--state-dir",
                "/tmp/x",
                "--keep-days",
                "2.5",
                "--editor",
                "true",
            ],
            &["ptyjobs", "--shell", "/bin/bash", "--max-wait-secs", "20"],
        ];
        for argv in plain {
            let fast = Serve::try_parse_from(*argv).expect("fast path");
            let full = Cli::try_parse_from(*argv).expect("full");
            assert!(full.command.is_none());
            assert_eq!(
                format!("{:?}", fast.serve),
                format!("{:?}", full.serve),
                "{argv:?}"
            );
            assert_eq!(format!("{:?}", parse_from(*argv)), format!("{full:?}"));
        }
        // A subcommand (with flags before it) is the full command line's.
        let cli = parse_from(["ptyjobs", "--state-dir", "/tmp/x", "list", "--json"]);
        assert!(matches!(
            cli.command,
            Some(crate::cli::Command::List { json: true, .. })
        ));
        assert!(Serve::try_parse_from(["ptyjobs", "list"]).is_err());
        // Help, version and mistakes are answered by the full command line: its help lists
        // the subcommands.
        for argv in [
            &["ptyjobs", "--help"][..],
            &["ptyjobs", "--version"],
            &["ptyjobs", "lst"],
        ] {
            assert!(Serve::try_parse_from(argv).is_err(), "{argv:?}");
            assert!(Cli::try_parse_from(argv).is_err(), "{argv:?}");
        }
        let help = Cli::command().render_help().to_string();
        assert!(help.contains("attach"), "{help}");
    }
}
