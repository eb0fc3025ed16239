//! Restarting a job: end its whole tree through the one kill path, wait until the ports it
//! held are free, start the same command again (same directory, environment, size and name)
//! as a new job that records which one it replaces.

use std::collections::BTreeMap;
use std::net::{SocketAddr, TcpListener};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::job::{JobId, JobInfo, JobSpec, Listener};
use crate::manager::{Found, JobManager};
use crate::signal::Signal;

/// How long a restart waits for the old job's ports to be free before it gives up.
const PORTS_FREE_WITHIN: Duration = Duration::from_secs(10);
/// How often a port still taken is tried again.
const PORT_POLL: Duration = Duration::from_millis(10);

/// A job's environment as kept: the values, or (for a job of another server) only the names.
type KeptEnv = std::result::Result<BTreeMap<String, String>, Vec<String>>;

impl JobManager {
    /// Restarts job `id`: ends every process of it (TERM, the grace, KILL: a job that ignores
    /// SIGTERM ends too), waits until each TCP port it listened on can be bound again, then
    /// starts its command in its directory with its environment, terminal size and name —
    /// or `command` / `env` instead when given — as a new job whose `replaces` is `id`. A
    /// job that has ended is started again. A running job of another live server sharing
    /// the state directory is ended through the same proofs (`ptyjobs kill`'s); the new job
    /// is this manager's.
    ///
    /// The environment values of a job this manager did not start are not known (records
    /// keep only the variables' names): restarting such a job that had some needs `env`.
    ///
    /// # Errors
    /// [`Error::JobNotFound`]; [`Error::InvalidArgument`] for the unknown environment above
    /// or a bad `command`; [`Error::Unproven`] when the old job's processes could not be
    /// proven (then nothing is started); [`Error::Io`] when processes of it survived SIGKILL
    /// or a port stayed taken for 10 s; any error of [`Self::ensure`] (the name is taken
    /// meanwhile by another job).
    pub async fn restart(
        &self,
        id: JobId,
        command: Option<String>,
        env: Option<BTreeMap<String, String>>,
    ) -> Result<JobInfo> {
        let this = self.clone();
        let (old, kept_env) = blocking(move || this.restart_plan(id)).await?;
        let env = match (env, kept_env) {
            (Some(env), _) => env,
            (None, Ok(env)) => env,
            (None, Err(names)) => {
                return Err(Error::InvalidArgument(format!(
                    "job {id} was started by another server with the environment variables \
                     {}, whose values only that server knew: give env to restart it",
                    names.join(", ")
                )));
            }
        };
        self.end_for_restart(&old).await?;
        ports_free(&old.ports, PORTS_FREE_WITHIN).await?;
        let spec = JobSpec {
            command: command.unwrap_or_else(|| old.command.clone()),
            cwd: Some(old.cwd.clone()),
            env,
            cols: Some(old.size.0),
            rows: Some(old.size.1),
            name: old.name.clone(),
            replaces: Some(id),
            // A kept job's successor is kept too, for what is left of its TTL.
            keep: old.kept,
            keep_ttl: old
                .keep_until
                .map(|until| (until - chrono::Utc::now()).to_std().unwrap_or_default()),
            profile: old.policy.as_ref().map(|p| p.profile.clone()),
            ..JobSpec::default()
        };
        let this = self.clone();
        blocking(move || this.ensure(spec).map(|s| s.info)).await
    }

    /// The old job's snapshot (with its ports) and its environment: the values when this
    /// manager started it, else the names it had (`Err`) when there were any.
    fn restart_plan(&self, id: JobId) -> Result<(JobInfo, KeptEnv)> {
        let env = match self.inner.find(id)? {
            Found::Live(job) => Ok(job.env.clone()),
            Found::Stored(job) if job.record.env_names.is_empty() => Ok(BTreeMap::new()),
            Found::Stored(job) => Err(job.record.env_names.clone()),
        };
        Ok((self.status(id)?, env))
    }

    /// Ends the old job's whole tree if it still runs: this manager's through its kill path,
    /// another server's (or a dead server's) through the state directory's.
    async fn end_for_restart(&self, old: &JobInfo) -> Result<()> {
        let id = old.id;
        let grace = self.inner.config.grace(None);
        let this = self.clone();
        let found = blocking(move || this.inner.find(id)).await?;
        let survivors = match found {
            Found::Live(_) => {
                self.inner
                    .kill(id, Signal::TERM, grace, "restarted")
                    .await
                    .survivors
            }
            Found::Stored(job) if job.record.status.is_final() && !job.orphaned => Vec::new(),
            Found::Stored(_) => {
                let this = self.clone();
                match blocking(move || match this.inner.store.as_deref() {
                    Some(store) => store.kill(id, grace),
                    None => Err(Error::JobNotFound(id)),
                })
                .await
                {
                    Ok(report) => report.survivors,
                    // Its processes are gone already.
                    Err(Error::NotRunning { .. }) => Vec::new(),
                    Err(e) => return Err(e),
                }
            }
        };
        if survivors.is_empty() {
            Ok(())
        } else {
            Err(Error::Io(std::io::Error::other(format!(
                "processes {survivors:?} of job {id} survived SIGKILL: not restarted"
            ))))
        }
    }
}

/// Waits (at most `within`) until every port of `ports` can be bound on its address again
/// (the old job's sockets are closed), polling.
async fn ports_free(ports: &[Listener], within: Duration) -> Result<()> {
    let deadline = Instant::now() + within;
    for l in ports {
        let addr = SocketAddr::new(l.address, l.port);
        while TcpListener::bind(addr).is_err() {
            if Instant::now() >= deadline {
                return Err(Error::Io(std::io::Error::new(
                    std::io::ErrorKind::AddrInUse,
                    format!(
                        "port {addr} of the old job is still taken after {} ms: not restarted",
                        within.as_millis()
                    ),
                )));
            }
            tokio::time::sleep(PORT_POLL).await;
        }
    }
    Ok(())
}

/// Runs blocking work (the state directory, a start) off the async workers.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Error::Io(std::io::Error::other(e.to_string())))?
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listener_of(l: &TcpListener) -> Listener {
        let addr = l.local_addr().expect("addr");
        Listener {
            address: addr.ip(),
            port: addr.port(),
            pid: std::process::id(),
        }
    }

    #[tokio::test]
    async fn a_restart_waits_until_the_old_ports_are_free() {
        let held = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener_of(&held);
        let release = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            drop(held);
        });
        let t = Instant::now();
        ports_free(&[port], Duration::from_secs(10))
            .await
            .expect("freed");
        assert!(
            t.elapsed() >= Duration::from_millis(100),
            "{:?}",
            t.elapsed()
        );
        release.join().expect("thread");
    }

    #[tokio::test]
    async fn a_port_that_stays_taken_stops_the_restart() {
        let held = TcpListener::bind("127.0.0.1:0").expect("bind");
        let e = ports_free(&[listener_of(&held)], Duration::from_millis(50))
            .await
            .expect_err("still taken");
        let port = held.local_addr().expect("addr").port();
        assert!(e.to_string().contains(&port.to_string()), "{e}");
    }
}
