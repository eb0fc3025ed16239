//! `services()` and `startService()`: the services a project's Procfile and
//! `.claude/launch.json` describe, listed beside their jobs and started by name.

use std::path::PathBuf;

use napi::bindgen_prelude::{Env, PromiseRaw};
use napi_derive::napi;
use ptyjobs_engine as engine;

use super::JobManager;
use crate::error::{Result, from_engine};
use crate::types::{JobInfo, WaitResult, millis};

/// One service of a project's Procfile or `.claude/launch.json`.
#[napi(object)]
pub struct Service {
    /// Its name: the job's name when it runs, and what `startService` takes.
    pub name: String,
    /// The command line it runs (launch.json: `runtimeExecutable` and `runtimeArgs`, quoted
    /// for a POSIX shell).
    pub command: String,
    /// The directory it runs in (absolute).
    pub cwd: String,
    /// Its own environment variables (launch.json's `env`).
    pub env: std::collections::HashMap<String, String>,
    /// The port it listens on when ready (launch.json's `port`): `startService` waits for it.
    pub port: Option<u32>,
    /// Whether it is given a free port as `PORT` (launch.json's `autoPort`, or a Procfile
    /// command that uses `$PORT`).
    pub auto_port: bool,
    /// The file that defines it.
    pub source: String,
    /// Where in that file: `line 2` (Procfile) or `configurations[0]` (launch.json).
    pub at: String,
    /// The running job with its name in its directory, if any.
    pub job: Option<JobInfo>,
}

impl From<engine::Service> for Service {
    fn from(s: engine::Service) -> Self {
        let d = s.def;
        Self {
            name: d.name,
            command: d.command,
            cwd: d.cwd.display().to_string(),
            env: d.env.into_iter().collect(),
            port: d.port.map(u32::from),
            auto_port: d.auto_port,
            source: d.source.display().to_string(),
            at: d.at,
            job: s.job.map(JobInfo::from),
        }
    }
}

/// What `startService` did.
#[napi(object)]
pub struct StartedService {
    /// The service's definition.
    pub service: Service,
    /// The job that runs it now.
    pub job: JobInfo,
    /// True when a job of that name already ran the same command in that directory and
    /// nothing was started.
    pub reused: bool,
    /// The port the readiness wait watched, if the service has one.
    pub port: Option<u32>,
    /// How that wait ended (`port_open`, `exited`, `timeout`); absent without a port.
    pub ready: Option<WaitResult>,
}

/// Options of `startService`.
#[napi(object)]
#[derive(Default)]
pub struct StartServiceOptions {
    /// The project directory (where its Procfile and `.claude/` are). Default: this
    /// process's working directory.
    pub cwd: Option<String>,
    /// Longest wait for the service's port, in milliseconds (capped by `maxWaitMs`).
    pub timeout_ms: Option<f64>,
}

#[napi]
impl JobManager {
    /// The services the project in `dir` (default: this process's working directory)
    /// describes in its `Procfile` and `.claude/launch.json`, each with the running job that
    /// runs it (same name, same directory), if any. Reading the files runs nothing.
    ///
    /// @throws `INVALID_ARGUMENT` when `dir` is not a directory or a file is malformed (the
    /// message names the file, the line or key such as `configurations[2].port`, and what is
    /// wrong).
    #[napi(catch_unwind)]
    pub fn services(&self, dir: Option<String>) -> Result<Vec<Service>> {
        self.jobs
            .services(dir.map(PathBuf::from).as_deref())
            .map(|list| list.into_iter().map(Service::from).collect())
            .map_err(from_engine)
    }

    /// Starts the service `name` of the project in `options.cwd`: ensures its definition
    /// (a running job of that name in its directory with the same command is reused, not
    /// doubled), then, when the service has a port, waits until it listens there.
    ///
    /// Rejects with `INVALID_ARGUMENT` (an unknown name — the message lists the project's
    /// services — or a malformed file), `SPAWN_FAILED`, `LIMIT_REACHED`, `MANAGER_CLOSED`.
    #[napi(catch_unwind, ts_return_type = "Promise<StartedService>")]
    pub fn start_service<'env>(
        &self,
        env: &'env Env,
        name: String,
        options: Option<StartServiceOptions>,
    ) -> napi::Result<PromiseRaw<'env, StartedService>> {
        let o = options.unwrap_or_default();
        let args = self
            .open()
            .and_then(|()| o.timeout_ms.map(|v| millis("timeoutMs", v)).transpose());
        let dir = o.cwd.map(PathBuf::from);
        self.promise(env, args, |jobs, timeout| async move {
            let s = jobs.start_service(&name, dir, timeout, |_| {}).await?;
            Ok(StartedService {
                port: s.port.map(u32::from),
                ready: s.ready.map(WaitResult::from),
                reused: s.started.reused,
                job: JobInfo::from(s.started.info),
                service: Service::from(engine::Service {
                    def: s.def,
                    job: None,
                }),
            })
        })
    }
}
