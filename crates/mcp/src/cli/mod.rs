//! The human CLI over the state directory: `ptyjobs list | logs | status | kill | rm | prune`.
//! It reads the records the servers write; it never serves MCP.

use std::process::ExitCode;

use ptyjobs_engine::StoreConfig;

/// The subcommands. Job ids may be given as any unique prefix, like git's.
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
        /// Only the last N lines.
        #[arg(long, short = 'n')]
        tail: Option<usize>,
        /// Keep printing lines as they are appended, until the job ends.
        #[arg(long, short)]
        follow: bool,
    },
    /// Show one job's record.
    Status {
        /// The job's id or a unique prefix of it.
        id: String,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Stop a running job and every process it started (TERM, then KILL after the grace).
    Kill {
        /// The job's id or a unique prefix of it.
        id: String,
        /// Milliseconds between TERM and KILL.
        #[arg(long, default_value_t = 3000)]
        grace_ms: u64,
    },
    /// Remove finished jobs' records and logs.
    Rm {
        /// Job ids or unique prefixes.
        #[arg(required = true)]
        ids: Vec<String>,
    },
    /// Apply the retention limits now (--keep-jobs, --keep-days, --keep-mb).
    Prune,
}

/// Runs one subcommand; the exit code is 0 on success, 1 on an error (printed on stderr).
pub fn run(command: Command, store: Result<StoreConfig, String>) -> ExitCode {
    let _ = (command, store);
    eprintln!("ptyjobs: subcommands are not implemented yet");
    ExitCode::FAILURE
}
