//! The keeper itself: `ptyjobs keeper --state-dir D` runs [`run_keeper`].

use std::time::{Duration, Instant};

use super::rendezvous;
use crate::attach::start::{become_keeper, close_if_idle};
use crate::config::EngineConfig;
use crate::error::{Error, Result};
use crate::manager::JobManager;
use crate::sync::lock;

/// How long a keeper that lost the race for the lock tries before leaving (a starter holds it
/// shared for a moment while it looks).
const LOCK_WITHIN: Duration = Duration::from_secs(1);
/// How often the keeper looks whether it has a running job.
const LOOK_EVERY: Duration = Duration::from_millis(250);

/// Runs the keeper of `config`'s state directory until it has had no running job for `idle`
/// (or `stop` resolves: then its jobs are shut down like any server's), and returns. Returns
/// at once, `Ok`, when another keeper holds the state directory.
///
/// The keeper is a [`JobManager`] on the same store serving its attach socket; its starts are
/// kept jobs. Call it in a tokio runtime, once per process.
///
/// # Errors
/// [`Error::InvalidArgument`] without a state directory; [`Error::Io`] when `keeper.lock` is
/// not a private regular file of this user, or the socket cannot be served; as
/// [`JobManager::new`].
pub async fn run_keeper(
    config: EngineConfig,
    idle: Duration,
    stop: impl std::future::Future<Output = ()>,
) -> Result<()> {
    let dir = config
        .store
        .as_ref()
        .map(|s| s.dir.clone())
        .ok_or_else(|| Error::InvalidArgument("a keeper needs a state directory".into()))?;
    crate::sys::keeper::make_dir(&dir)?;
    let Some(file) = rendezvous::take(&dir, LOCK_WITHIN)? else {
        tracing::info!("another keeper holds {}: leaving", dir.display());
        return Ok(());
    };
    become_keeper();
    let jobs = JobManager::new(config)?;
    let instance = jobs
        .store()
        .and_then(|s| s.instance().map(str::to_owned))
        .ok_or_else(|| Error::InvalidArgument("the keeper's store has no instance".into()))?;
    let serving = jobs.serve_attach()?;
    // Published once the socket listens: a starter that reads the instance can connect.
    let held = rendezvous::publish(file, &instance)?;
    tracing::info!(pid = std::process::id(), %instance, "keeper serving {}", dir.display());
    tokio::pin!(stop);
    let mut idle_since = Instant::now();
    loop {
        tokio::select! {
            () = &mut stop => {
                tracing::info!("keeper stopping: its jobs are ended");
                drop(serving);
                jobs.shutdown().await;
                drop(held);
                return Ok(());
            }
            () = tokio::time::sleep(LOOK_EVERY) => {}
        }
        let running = || lock(&jobs.inner.table).running;
        if running() > 0 {
            idle_since = Instant::now();
            continue;
        }
        if idle_since.elapsed() >= idle && close_if_idle(|| running() == 0) {
            break;
        }
    }
    tracing::info!("keeper idle for {} ms: leaving", idle.as_millis());
    // The socket goes first, then the lock: a starter that still finds the lock held meanwhile
    // cannot connect and looks again until a new keeper holds it.
    drop(serving);
    jobs.shutdown().await;
    drop(held);
    Ok(())
}
