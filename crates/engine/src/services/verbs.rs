//! The services' verbs: list a project's services beside their jobs, start one by name.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{Service, ServiceDef};
use crate::ensure::Started;
use crate::error::{Error, Result};
use crate::job::JobSpec;
use crate::manager::JobManager;
use crate::wait::{WaitOutcome, WaitProgress, WaitSpec};

/// What [`JobManager::start_service`] did.
#[derive(Debug, Clone)]
pub struct ServiceStart {
    /// The definition that was started.
    pub def: ServiceDef,
    /// The job that runs it, and whether it was already running (`reused`).
    pub started: Started,
    /// The port the readiness wait watched: the job's picked port with `auto_port`, else the
    /// definition's `port`; `None` when the service names no port (then nothing was waited for).
    pub port: Option<u16>,
    /// How the wait for that port ended (`port_open`, `exited`, `timeout`).
    pub ready: Option<WaitOutcome>,
}

impl JobManager {
    /// The services the project in `dir` describes (default: this process's working
    /// directory, as a job's `cwd` defaults to), each beside the running job with its name in
    /// its `cwd`. Reads files and the job list: blocking (see [`Self::services_async`]).
    ///
    /// # Errors
    /// As [`super::load`].
    pub fn services(&self, dir: Option<&Path>) -> Result<Vec<Service>> {
        let defs = super::load(&project_dir(dir)?)?;
        Ok(super::beside(defs, &self.list()))
    }

    /// [`Self::services`] on the runtime's blocking pool.
    ///
    /// # Errors
    /// As [`Self::services`].
    pub async fn services_async(&self, dir: Option<PathBuf>) -> Result<Vec<Service>> {
        let me = self.clone();
        self.inner
            .runtime
            .spawn_blocking(move || me.services(dir.as_deref()))
            .await
            .map_err(|e| Error::Io(std::io::Error::other(format!("read task failed: {e}"))))?
    }

    /// Starts the service `name` of the project in `dir` (default: this process's working
    /// directory): an ensure of its definition (name, command, cwd, env, `auto_port`), so a
    /// running job of that name in that directory with the same command is answered instead
    /// of a second one. When the service has a port, then waits until it listens there, at
    /// most `timeout` (capped like every wait), calling `progress` about once a second.
    ///
    /// # Errors
    /// As [`super::load`]; [`Error::InvalidArgument`] for a name the project does not define
    /// (the message lists those it does); as [`Self::ensure`] and [`Self::wait_for`].
    pub async fn start_service(
        &self,
        name: &str,
        dir: Option<PathBuf>,
        timeout: Option<Duration>,
        progress: impl FnMut(WaitProgress),
    ) -> Result<ServiceStart> {
        let dir = project_dir(dir.as_deref())?;
        let shown = dir.clone();
        let defs = self
            .inner
            .runtime
            .spawn_blocking(move || super::load(&dir))
            .await
            .map_err(|e| Error::Io(std::io::Error::other(format!("read task failed: {e}"))))??;
        let Some(def) = defs.iter().find(|d| d.name == name).cloned() else {
            let known: Vec<String> = defs.iter().map(|d| format!("{:?}", d.name)).collect();
            return Err(Error::InvalidArgument(format!(
                "no service named {:?} in {}: {}",
                super::clip(name),
                shown.display(),
                if known.is_empty() {
                    format!(
                        "it has no {} and no {}",
                        super::PROCFILE,
                        super::LAUNCH_JSON
                    )
                } else {
                    format!("its services are {}", known.join(", "))
                }
            )));
        };
        let started = self.ensure(JobSpec {
            command: def.command.clone(),
            cwd: Some(def.cwd.clone()),
            env: def.env.clone(),
            name: Some(def.name.clone()),
            ensure: true,
            auto_port: def.auto_port,
            ..JobSpec::default()
        })?;
        let port = if def.auto_port {
            started.info.port.or(def.port)
        } else {
            def.port
        };
        let ready = match port {
            None => None,
            Some(port) => {
                let spec = WaitSpec {
                    port: Some(port),
                    timeout,
                    ..WaitSpec::default()
                };
                Some(self.wait_for(started.info.id, &spec, progress).await?)
            }
        };
        Ok(ServiceStart {
            def,
            started,
            port,
            ready,
        })
    }
}

/// The project directory: `dir`, or this process's working directory.
fn project_dir(dir: Option<&Path>) -> Result<PathBuf> {
    match dir {
        Some(d) => Ok(d.to_path_buf()),
        None => Ok(std::env::current_dir()?),
    }
}
