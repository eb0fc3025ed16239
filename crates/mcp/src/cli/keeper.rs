//! `ptyjobs keeper` (hidden): the state directory's keeper of kept jobs, started on demand by
//! whoever keeps a job (see the engine's `run_keeper`). Not for people: it runs detached, its
//! log is `<state>/keeper.log`.

use std::process::ExitCode;
use std::time::Duration;

use ptyjobs_engine::{EngineConfig, StoreConfig};

/// How long the keeper stays with no running job before it leaves (ms).
const IDLE_ENV: &str = "PTYJOBS_KEEPER_IDLE_MS";
const IDLE_DEFAULT: Duration = Duration::from_secs(5);
/// Most kept jobs running at once.
const KEEPER_MAX_RUNNING: usize = 1000;

/// Runs the keeper of `store`'s directory until it is idle or told to stop.
pub(crate) fn run(store: Result<StoreConfig, String>) -> ExitCode {
    let store = match store {
        Ok(s) => s,
        Err(e) => {
            eprintln!("ptyjobs keeper: {e}");
            return ExitCode::FAILURE;
        }
    };
    let idle = std::env::var(IDLE_ENV)
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .map_or(IDLE_DEFAULT, Duration::from_millis);
    ptyjobs_engine::raise_fd_limit();
    // Few threads: the keeper may hold hundreds of jobs and does little but wait.
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(4)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("ptyjobs keeper: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let config = EngineConfig {
        store: Some(store),
        // Every kept job was asked for by name of `keep` and ends with its TTL: the keeper
        // holds hundreds (a server's default cap, 32, is for one session's jobs).
        max_running: KEEPER_MAX_RUNNING,
        program: std::env::current_exe().ok(),
        ..EngineConfig::default()
    };
    let outcome = runtime.block_on(async {
        let mut termination = crate::platform::Termination::new()?;
        let stop = async move {
            let why = termination.recv().await;
            tracing::info!("{why}");
        };
        ptyjobs_engine::run_keeper(config, idle, stop)
            .await
            .map_err(|e| e.to_string())
    });
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ptyjobs keeper: {e}");
            ExitCode::FAILURE
        }
    }
}
