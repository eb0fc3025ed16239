//! The human CLI over the state directory: `ptyjobs list | logs | status | kill | rm | prune |
//! attach | services | wait`, and `policy | sandbox` (a policy file, no state directory). It reads the records the servers write; it never serves MCP (`attach`
//! talks to a live server's socket).
//!
//! Contract of every subcommand: the answer goes to stdout and nothing else does; an error is
//! one line on stderr, prefixed `ptyjobs: `, with exit code 1 (`wait`: 2; its help says why). A
//! reader that goes away (`ptyjobs logs X | head -1`) ends the command quietly with exit code 0.

#[cfg(unix)]
mod attach;
mod format;
mod json;
mod keep;
mod keeper;
mod list;
mod logs;
mod manage;
mod out;
mod policy;
#[cfg(unix)]
mod restart;
mod services;
mod status;
mod wait;

use std::process::ExitCode;

use ptyjobs_engine::{Error, Store, StoreConfig};

/// The subcommands. A job may be given by its id, any unique prefix of it (like git's), or
/// its name (the live job with it, else the newest ended one); `--cwd` says which directory's
/// when the name is live in several (without it: the current directory's, else an error that
/// lists them).
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// List the jobs of every server on the state directory, newest first.
    List {
        /// Only jobs with this status: running, completed, failed or killed.
        #[arg(long)]
        status: Option<String>,
        /// Print JSON (one array of job records) instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Print a job's clean output.
    Logs {
        /// The job's id or a unique prefix of it.
        id: String,
        /// Which directory, for a name live in several.
        #[arg(long)]
        cwd: Option<std::path::PathBuf>,
        /// Only the last N lines.
        #[arg(long, short = 'n')]
        tail: Option<usize>,
        /// Keep printing lines as they become final, until the job ends. Lines are final once
        /// they scrolled off the job's screen; the rest are printed when the job ends.
        #[arg(long, short)]
        follow: bool,
    },
    /// Show one job's record.
    Status {
        /// The job's id or a unique prefix of it.
        id: String,
        /// Which directory, for a name live in several.
        #[arg(long)]
        cwd: Option<std::path::PathBuf>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Stop a running job and every process it started (TERM, then KILL after the grace).
    Kill {
        /// The job's id or a unique prefix of it.
        #[arg(required_unless_present = "kept", conflicts_with = "kept")]
        id: Option<String>,
        /// Which directory, for a name live in several.
        #[arg(long)]
        cwd: Option<std::path::PathBuf>,
        /// Instead of one job: every running kept job (of live and gone keepers alike).
        #[arg(long)]
        kept: bool,
        /// Milliseconds between TERM and KILL, at most 60000 (the engine's cap).
        #[arg(long, default_value_t = 3000, value_parser = clap::value_parser!(u64).range(..=ptyjobs_engine::MAX_KILL_GRACE.as_millis() as u64))]
        grace_ms: u64,
    },
    /// Remove finished jobs' records and logs.
    Rm {
        /// Job ids or unique prefixes.
        #[arg(required = true)]
        ids: Vec<String>,
        /// Which directory, for a name live in several.
        #[arg(long)]
        cwd: Option<std::path::PathBuf>,
    },
    /// Apply the retention limits now (--keep-jobs, --keep-days, --keep-mb).
    Prune,
    /// List the services a project's Procfile and .claude/launch.json describe, each beside
    /// the running job that runs it. Nothing is started.
    Services {
        /// The project directory. Default: the current directory.
        #[arg(long)]
        dir: Option<std::path::PathBuf>,
        /// Start (or reuse) this service as a kept job, which outlives this command; prints
        /// its id.
        #[arg(long, value_name = "NAME")]
        start: Option<String>,
        /// With --start: end the kept job after this many seconds (0: only when killed).
        #[arg(long, requires = "start", default_value_t = keep::DEFAULT_TTL_SECS)]
        keep_ttl: u64,
        /// Print JSON (one array of services) instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Connect this terminal to a running job: its screen, then live output; what you type
    /// goes to the job. Ctrl-] detaches (the job keeps running). Works with a live server on
    /// the same state directory, as the same user.
    Attach {
        /// The job's id or a unique prefix of it.
        id: String,
        /// Which directory, for a name live in several.
        #[arg(long)]
        cwd: Option<std::path::PathBuf>,
    },
    /// Block until a job ends, prints a line, listens, wants input or goes quiet.
    ///
    /// Prints one JSON line. Exit code: 0 the condition was met, 1 the job ended without it,
    /// 2 an error, 124 the timeout passed.
    #[command(after_long_help = wait::AFTER_HELP)]
    Wait(wait::WaitArgs),
    /// Start a kept job: it outlives this command, run by the state directory's keeper, until
    /// killed or its --keep-ttl ends. Prints its id. Unix only.
    Run(keep::RunArgs),
    /// The state directory's keeper of kept jobs (started on demand; not for people).
    #[command(hide = true)]
    Keeper,
    /// Restart a job: a live server on the state directory ends its whole tree, waits until
    /// its ports are free and starts it again (same command, directory, environment, name).
    Restart {
        /// The job's id, a unique prefix of it, or its name.
        id: String,
        /// Which directory, for a name live in several.
        #[arg(long)]
        cwd: Option<std::path::PathBuf>,
        /// A new command line.
        #[arg(long)]
        command: Option<String>,
        /// A new environment variable (KEY=VALUE; repeat; replaces the job's extra ones).
        #[arg(long = "env", value_name = "KEY=VALUE")]
        env: Vec<String>,
        /// Print the new job's record as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Print what each profile of a policy file enforces on this kernel (Linux).
    Policy {
        /// The policy file (TOML; see docs/POLICY.md).
        #[arg(long, value_name = "FILE")]
        policy: std::path::PathBuf,
    },
    /// Run one command under a profile of a policy file, in this terminal, to try it.
    Sandbox {
        /// The policy file (TOML; see docs/POLICY.md).
        #[arg(long, value_name = "FILE")]
        policy: std::path::PathBuf,
        /// The profile (any of the file's, not only those jobs may name).
        #[arg(long, default_value = "default")]
        profile: String,
        /// The command and its arguments, after `--`.
        #[arg(last = true, required = true)]
        command: Vec<std::ffi::OsString>,
    },
}

/// Why a subcommand stopped early.
#[derive(Debug)]
pub(crate) enum Failure {
    /// Printed as `ptyjobs: <message>` on stderr; exit code 1.
    Message(String),
    /// The errors were printed already: exit code 1.
    Reported,
    /// Nobody reads stdout any more: exit quietly.
    Gone,
}

impl Failure {
    pub(crate) fn msg(message: impl Into<String>) -> Self {
        Self::Message(message.into())
    }
}

impl From<std::io::Error> for Failure {
    /// A write to stdout failed: a closed pipe ends the command quietly, anything else is an
    /// error.
    fn from(e: std::io::Error) -> Self {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            Self::Gone
        } else {
            Self::Message(format!("cannot write the output: {e}"))
        }
    }
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Self::Message(describe(&e))
    }
}

/// An engine error in words for a person at a terminal (the engine's own texts address an
/// MCP client).
pub(crate) fn describe(e: &Error) -> String {
    match e {
        Error::JobNotFound(id) => format!("no job {id}"),
        Error::NotRunning { id, status } => {
            format!("job {id} is not running (status: {status})")
        }
        Error::InvalidArgument(m) => m.clone(),
        Error::Io(e) => e.to_string(),
        e => e.to_string(),
    }
}

/// What a subcommand returns.
pub(crate) type CmdResult = Result<(), Failure>;

/// Runs one subcommand; the exit code is 0 on success, 1 on an error (printed on stderr).
pub fn run(command: Command, store: Result<StoreConfig, String>) -> ExitCode {
    // A project's services are listed without any job records too (no server has run yet).
    if let Command::Keeper = command {
        return keeper::run(store);
    }
    // Kept jobs need the state directory, not its records (none may exist yet).
    if let Command::Run(args) = command {
        return finish(
            store
                .map_err(Failure::Message)
                .and_then(|s| keep::run(&s.dir, args)),
        );
    }
    if let Command::Services {
        dir,
        json,
        start: Some(name),
        keep_ttl,
    } = command
    {
        let outcome = store
            .map_err(Failure::Message)
            .and_then(|s| keep::start_service(&s.dir, dir.as_deref(), &name, keep_ttl, json));
        return finish(outcome);
    }
    if let Command::Services {
        dir,
        json,
        start: None,
        ..
    } = &command
    {
        let store = store.ok().and_then(|cfg| Store::open_reader(cfg).ok());
        return finish(services::run(store.as_ref(), dir.as_deref(), *json));
    }
    // A policy needs no state directory.
    match &command {
        Command::Policy { policy: file } => return finish(policy::show(file)),
        Command::Sandbox {
            policy: file,
            profile,
            command,
        } => return finish(policy::sandbox(file, profile, command)),
        _ => {}
    }
    // `wait` has exit codes of its own (an error is 2: 1 says the job ended first).
    if let Command::Wait(args) = command {
        return wait::run(&args, store);
    }
    let outcome = store
        .map_err(Failure::Message)
        .and_then(|cfg| Store::open_reader(cfg).map_err(Failure::from))
        .and_then(|store| dispatch(command, &store));
    finish(outcome)
}

/// The exit code of a subcommand's outcome, its error printed on stderr.
fn finish(outcome: CmdResult) -> ExitCode {
    match outcome {
        Ok(()) | Err(Failure::Gone) => ExitCode::SUCCESS,
        Err(Failure::Message(m)) => {
            // Messages quote paths and record fields: nothing in them may drive the terminal.
            eprintln!("ptyjobs: {}", format::one_line(&m));
            ExitCode::FAILURE
        }
        Err(Failure::Reported) => ExitCode::FAILURE,
    }
}

fn dispatch(command: Command, store: &Store) -> CmdResult {
    match command {
        Command::List { status, json } => list::run(store, status.as_deref(), json),
        Command::Logs {
            id,
            cwd,
            tail,
            follow,
        } => logs::run(store, &id, cwd.as_deref(), tail, follow),
        Command::Status { id, cwd, json } => status::run(store, &id, cwd.as_deref(), json),
        Command::Kill {
            kept: true,
            grace_ms,
            ..
        } => keep::kill_kept(store, grace_ms),
        Command::Kill {
            id, cwd, grace_ms, ..
        } => manage::kill(store, &id.unwrap_or_default(), cwd.as_deref(), grace_ms),
        Command::Run(_) | Command::Keeper => unreachable!("run() answers them itself"),
        Command::Rm { ids, cwd } => manage::rm(store, &ids, cwd.as_deref()),
        Command::Prune => manage::prune(store),
        Command::Services { dir, json, .. } => services::run(Some(store), dir.as_deref(), json),
        Command::Wait(_) | Command::Policy { .. } | Command::Sandbox { .. } => {
            unreachable!("run() answers these itself")
        }
        #[cfg(unix)]
        Command::Attach { id, cwd } => attach::run(store, &id, cwd.as_deref()),
        #[cfg(not(unix))]
        Command::Attach { .. } => Err(Failure::msg(
            "ptyjobs attach is not offered on this platform (it needs a Unix socket); \
             use `ptyjobs logs --follow` to watch a job",
        )),
        #[cfg(unix)]
        Command::Restart {
            id,
            cwd,
            command,
            env,
            json,
        } => restart::run(store, &id, cwd.as_deref(), command, &env, json),
        #[cfg(not(unix))]
        Command::Restart { .. } => Err(Failure::msg(
            "ptyjobs restart is not offered on this platform (it needs a server's Unix \
             socket); restart the job from your MCP client (restart_job)",
        )),
    }
}
