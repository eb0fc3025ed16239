//! `ptyjobs`: an MCP server on stdio that runs shell commands as background jobs under PTYs.
//!
//! stdout carries JSON-RPC and nothing else; logs go to stderr (`RUST_LOG`). On stdin EOF,
//! SIGTERM or SIGINT every job is killed (TERM, grace, KILL) before the process exits.

mod args;
mod budget;
mod cli;
mod error;
mod params;
mod platform;
mod resources;
mod schema;
mod server;
mod tasks;
mod tools;
mod transport;

use std::io::IsTerminal;
use std::process::ExitCode;

use ptyjobs_engine::{EngineConfig, JobManager};
use rmcp::ServiceExt;

const HINT: &str = "\
ptyjobs is an MCP server: it speaks JSON-RPC on stdin/stdout and is meant to be started by an
MCP client. To add it to one:
  Claude Code:          claude mcp add ptyjobs -- npx -y ptyjobs
  Claude Desktop, Cursor and others (mcpServers in the client's JSON config):
    \"ptyjobs\": {\"command\": \"npx\", \"args\": [\"-y\", \"ptyjobs\"]}
  VS Code (.vscode/mcp.json):
    \"servers\": {\"ptyjobs\": {\"type\": \"stdio\", \"command\": \"npx\", \"args\": [\"-y\", \"ptyjobs\"]}}
  Codex (~/.codex/config.toml):
    [mcp_servers.ptyjobs]
    command = \"npx\"
    args = [\"-y\", \"ptyjobs\"]
More clients (Gemini CLI, Windsurf, Zed) and an MCP bundle: see the README.
Serving on this terminal anyway; press Ctrl-D or Ctrl-C to quit. See ptyjobs --help.";

fn main() -> ExitCode {
    // Windows: this executable is also the console launcher of every job (never returns then).
    ptyjobs_engine::launcher_if_asked();
    let cli = args::parse();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
    if let Some(command) = cli.command {
        return cli::run(command, cli.serve.state.store_config());
    }
    let config = match cli.serve.engine_config() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("ptyjobs: {e}");
            return ExitCode::FAILURE;
        }
    };
    if std::io::stdin().is_terminal() {
        eprintln!("{HINT}");
    }
    // Each job holds a few descriptors: the usual soft limit (1024) would stop at a few hundred.
    ptyjobs_engine::raise_fd_limit();
    // The threads that start jobs and answer: a job's shell starting up on the same CPU must
    // not hold the answer back (see the engine's doc of it).
    ptyjobs_engine::prefer_prompt_wakeups();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .on_thread_start(|| {
            ptyjobs_engine::prefer_prompt_wakeups();
        })
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("ptyjobs: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let code = runtime.block_on(serve(config));
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
    let mut termination = platform::Termination::new()?;
    let server = server::Server::new();
    // The state directory is opened on the blocking pool, beside the handshake: `initialize`
    // needs no job, and a call that comes before the manager is ready waits for it.
    let making = {
        let server = server.clone();
        tokio::task::spawn_blocking(move || {
            let jobs = job_manager(config)?;
            server.set_jobs(jobs.clone());
            Ok::<_, Fatal>(jobs)
        })
    };
    let mut attach = None;
    let outcome = tokio::select! {
        r = async {
            let service = server.clone().serve(transport::stdio()).await?;
            let jobs = making.await.map_err(|e| Fatal(e.to_string()))??;
            // The tools' schemas, off the handshake's path too (see `server::TOOLS`).
            server::prepare_tools();
            // `ptyjobs attach`: a person may take over a job, through a socket in the state
            // directory.
            attach = jobs.store().and_then(|_| {
                jobs.serve_attach()
                    .inspect_err(|e| tracing::warn!("ptyjobs attach is unavailable: {e}"))
                    .ok()
            });
            service.waiting().await?;
            Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
        } => match r {
            Ok(()) => { tracing::info!("stdin closed; shutting down"); Ok(()) }
            Err(e) if e.is::<Fatal>() => Err(e.to_string()),
            Err(e) => { tracing::info!("session ended: {e}"); Ok(()) }
        },
        why = termination.recv() => { tracing::info!("{why}; shutting down"); Ok(()) }
    };
    drop(attach);
    // No job can have started without the manager.
    if let Some(jobs) = server.jobs_if_ready() {
        jobs.shutdown().await;
    }
    outcome
}

/// The job manager over `config`'s state directory. An unusable state directory (read-only,
/// a file in the way) must not keep the agent from its jobs: they are served from memory, and
/// stderr says why.
fn job_manager(config: EngineConfig) -> Result<JobManager, Fatal> {
    match JobManager::new(config.clone()) {
        Ok(jobs) => Ok(jobs),
        Err(e) if config.store.is_some() => {
            let dir = config.store.as_ref().map(|s| s.dir.display().to_string());
            eprintln!(
                "ptyjobs: cannot use the state directory {}: {e}; jobs are kept in memory only",
                dir.unwrap_or_default()
            );
            JobManager::new(EngineConfig {
                store: None,
                ..config
            })
            .map_err(|e| Fatal(e.to_string()))
        }
        Err(e) => Err(Fatal(e.to_string())),
    }
}

/// No job manager could be made: the server cannot serve.
#[derive(Debug)]
struct Fatal(String);

impl std::fmt::Display for Fatal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Fatal {}
