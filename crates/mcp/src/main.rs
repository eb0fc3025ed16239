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
    let code = runtime.block_on(serve(config, cli.serve.editor));
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
async fn serve(config: EngineConfig, editor: Option<String>) -> Result<(), String> {
    let mut termination = platform::Termination::new()?;
    let jobs = match JobManager::new(config.clone()) {
        Ok(jobs) => jobs,
        // An unusable state directory (read-only, a file in the way) must not keep the agent
        // from its jobs: serve them from memory and say why on stderr.
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
            .map_err(|e| e.to_string())?
        }
        Err(e) => return Err(e.to_string()),
    };
    let mut attach = None;
    let server = server::Server::new(jobs.clone()).with_editor(editor);
    let outcome = tokio::select! {
        r = async {
            let service = server.serve(transport::stdio()).await?;
            // The tools' schemas, once the handshake is answered (see `server::TOOLS`).
            server::prepare_tools();
            // `ptyjobs attach`: a person may take over a job, through a socket in the state
            // directory. Made once the handshake is answered: the client waits for nothing else.
            attach = jobs.store().and_then(|_| {
                jobs.serve_attach()
                    .inspect_err(|e| tracing::warn!("ptyjobs attach is unavailable: {e}"))
                    .ok()
            });
            service.waiting().await?;
            Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
        } => match r {
            Ok(()) => { tracing::info!("stdin closed; shutting down"); Ok(()) }
            Err(e) => { tracing::info!("session ended: {e}"); Ok(()) }
        },
        why = termination.recv() => { tracing::info!("{why}; shutting down"); Ok(()) }
    };
    drop(attach);
    jobs.shutdown().await;
    outcome
}
