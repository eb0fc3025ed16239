//! `ptyjobs`: an MCP server on stdio that runs shell commands as background jobs under PTYs.
//!
//! stdout carries JSON-RPC and nothing else; logs go to stderr (`RUST_LOG`). On stdin EOF,
//! SIGTERM or SIGINT every job is killed (TERM, grace, KILL) before the process exits.

mod budget;
mod error;
mod params;
mod resources;
mod server;
mod tools;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use clap::builder::TypedValueParser as _;
use ptyjobs_engine::{EngineConfig, JobManager};
use rmcp::ServiceExt;
use tokio::signal::unix::{SignalKind, signal};

/// Runs shell commands as background jobs under pseudo-terminals and serves them to AI agents
/// over MCP (JSON-RPC on stdin/stdout). Start it from an MCP client, not by hand.
#[derive(Debug, Parser)]
#[command(name = "ptyjobs", version)]
struct Cli {
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
    /// The shell that runs each command as `<shell> -c <command>`.
    #[arg(long, env = "PTYJOBS_SHELL", default_value = "/bin/sh")]
    shell: PathBuf,
}

impl Cli {
    fn engine_config(&self) -> EngineConfig {
        EngineConfig {
            shell: self.shell.clone(),
            cols: self.cols,
            rows: self.rows,
            max_running: self.max_jobs,
            max_finished: self.max_finished,
            transcript_bytes: self.transcript_bytes,
            max_line_bytes: self.max_line_bytes,
            kill_grace: Duration::from_millis(self.kill_grace_ms),
            max_wait: Duration::from_secs_f64(self.max_wait_secs),
            ..EngineConfig::default()
        }
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

const HINT: &str = "\
ptyjobs is an MCP server: it speaks JSON-RPC on stdin/stdout and is meant to be started by an
MCP client. To add it to one:
  Claude Code:          claude mcp add ptyjobs -- npx -y ptyjobs
  Claude Desktop, Cursor and others (mcpServers in the client's JSON config):
    \"ptyjobs\": {\"command\": \"npx\", \"args\": [\"-y\", \"ptyjobs\"]}
  Codex (~/.codex/config.toml):
    [mcp_servers.ptyjobs]
    command = \"npx\"
    args = [\"-y\", \"ptyjobs\"]
Serving on this terminal anyway; press Ctrl-D or Ctrl-C to quit. See ptyjobs --help.";

fn main() -> ExitCode {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
    if std::io::stdin().is_terminal() {
        eprintln!("{HINT}");
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("ptyjobs: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let code = runtime.block_on(serve(cli.engine_config()));
    // Don't wait for the runtime's blocking threads: a read of a terminal stdin never returns.
    // Every job is already gone (serve shut the manager down).
    std::process::exit(match code {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("ptyjobs: {e}");
            1
        }
    })
}

/// Serves MCP on stdio until stdin closes or a termination signal arrives, then kills every
/// job and returns.
async fn serve(config: EngineConfig) -> Result<(), String> {
    let mut sigterm = signal(SignalKind::terminate()).map_err(|e| format!("SIGTERM: {e}"))?;
    let mut sigint = signal(SignalKind::interrupt()).map_err(|e| format!("SIGINT: {e}"))?;
    let jobs = JobManager::new(config).map_err(|e| e.to_string())?;
    let server = server::Server::new(jobs.clone());
    let outcome = tokio::select! {
        r = async {
            let service = server.serve(rmcp::transport::stdio_pipes()).await?;
            service.waiting().await?;
            Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
        } => match r {
            Ok(()) => { tracing::info!("stdin closed; shutting down"); Ok(()) }
            Err(e) => { tracing::info!("session ended: {e}"); Ok(()) }
        },
        _ = sigterm.recv() => { tracing::info!("SIGTERM; shutting down"); Ok(()) }
        _ = sigint.recv() => { tracing::info!("SIGINT; shutting down"); Ok(()) }
    };
    jobs.shutdown().await;
    outcome
}
