//! The `JobManager` class: each method converts its arguments, calls the engine, converts the
//! result. No process or terminal logic lives here. This file holds the class, its
//! construction and `close`, and the helpers its methods share; the methods themselves are in
//! one `#[napi] impl` block a concern: [`reads`] (sync reads), [`async_reads`] (their Promise
//! forms), [`input`], [`lifecycle`] (start, end, wait), [`listen`] (`onData`/`onExit`) and
//! [`services`].

mod async_reads;
mod input;
mod lifecycle;
mod listen;
mod reads;
mod services;

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use napi::bindgen_prelude::{Env, PromiseRaw, ToNapiValue};
use napi_derive::napi;
use ptyjobs_engine::{self as engine, EngineConfig, JobId};
use tokio::runtime::Handle;

use crate::error::{Code, JsErr, Result, err, from_engine, into_napi};
use crate::options::{ManagerOptions, NameOptions};
use crate::stream::Streams;
use crate::types::{MAX_SAFE, dimension, millis, whole};

/// Runs shell commands as background jobs, each under its own pseudo-terminal, and gives their
/// output back as clean text (colours and escapes gone, `\r` redraws collapsed).
///
/// Errors are `Error`s with a stable `code`: `JOB_NOT_FOUND`, `INVALID_JOB_ID`, `NOT_RUNNING`,
/// `LIMIT_REACHED`, `SPAWN_FAILED`, `INVALID_ARGUMENT`, `MANAGER_CLOSED`, `NOT_OWNER` (a job of
/// another live process sharing the state directory), `NAME_TAKEN` (a live job holds the name
/// in that directory), `IO_ERROR`.
/// Async methods reject with the same errors.
///
/// Every method that takes a `jobId` also takes a job's name (`execute`'s `name`): the live
/// job with it, else the newest ended one; a name live in several directories is an
/// `INVALID_ARGUMENT` that lists them (pass the id, or the job's directory as the `cwd`
/// option, which every such method has); an unknown one is `INVALID_JOB_ID`.
///
/// Jobs die with their manager: `close()` kills them; a manager that is garbage-collected or a
/// process that exits takes its jobs down too.
///
/// By default everything is kept in memory and nothing is written to disk. With `stateDir` (or
/// `persist: true`) each job's record and clean transcript are also kept in a state directory,
/// so its history outlives the manager: a later manager on the same directory lists the jobs
/// of earlier runs (`thisServer: false`; one whose manager died while it ran reads `killed`,
/// reason `server stopped`) and reads their output, until `removeJob` or the retention limits
/// remove them. (The MCP server persists by default; the binding only when asked.) A persisting
/// manager also serves the attach socket (Unix) while it is open: a person can type into one
/// of its jobs from a terminal with `ptyjobs attach <id> --state-dir <dir>`, as with the MCP
/// server's jobs.
#[napi]
pub struct JobManager {
    jobs: engine::JobManager,
    runtime: Handle,
    streams: Arc<Streams>,
    closed: Arc<AtomicBool>,
    /// The attach socket (`ptyjobs attach`), served while the manager is open, when jobs are
    /// persisted (Unix): the one the MCP server serves, with the same protections.
    attach: std::sync::Mutex<Option<engine::AttachServer>>,
}

/// The job a caller's `jobId` stands for, with the `cwd` of its [`NameOptions`] (see
/// [`resolve_id`]).
fn named(jobs: &engine::JobManager, id: &str, options: Option<&NameOptions>) -> Result<JobId> {
    resolve_id(jobs, id, options.and_then(|o| o.cwd.as_deref()))
}

/// The job a caller's `jobId` stands for: a job id, or a job's name (the live job with it —
/// in `cwd` when given, relative to this process's directory — else the newest ended one; a
/// name reads the state directory). A text that is neither a job id nor a known name is
/// `INVALID_JOB_ID`, as before names were keys; so is a name with no job in `cwd`.
fn resolve_id(jobs: &engine::JobManager, id: &str, cwd: Option<&str>) -> Result<JobId> {
    jobs.resolve_job(id, cwd.map(std::path::Path::new))
        .map_err(|e| match e {
            engine::Error::UnknownName { .. } => err(
                Code::InvalidJobId,
                format!(
                    "{e}, and it is not a job id (the UUID that execute() returned): call \
                     list() to see the known jobs"
                ),
            ),
            e => from_engine(e),
        })
}

#[napi]
impl JobManager {
    /// A manager with the given limits and defaults, persisting its jobs when `stateDir` or
    /// `persist: true` says where.
    ///
    /// @throws `INVALID_ARGUMENT` for an option out of range; `IO_ERROR` when the state
    /// directory cannot be created or used.
    #[napi(constructor, catch_unwind)]
    pub fn new(options: Option<ManagerOptions>) -> Result<Self> {
        // Each job holds a few descriptors: the soft default (1024) would stop at a few hundred.
        engine::raise_fd_limit();
        let o = options.unwrap_or_default();
        let mut config = EngineConfig {
            store: o.store_config()?,
            ..EngineConfig::default()
        };
        if let Some(v) = o.max_jobs {
            config.max_running =
                usize::try_from(whole("maxJobs", v, 1, 100_000)?).unwrap_or(usize::MAX);
        }
        if let Some(v) = o.transcript_bytes {
            config.transcript_bytes =
                usize::try_from(whole("transcriptBytes", v, 1, MAX_SAFE)?).unwrap_or(usize::MAX);
        }
        if let Some(v) = o.kill_grace_ms {
            config.kill_grace = millis("killGraceMs", v)?;
        }
        if let Some(v) = o.cols {
            config.cols = dimension("cols", v)?;
        }
        if let Some(v) = o.rows {
            config.rows = dimension("rows", v)?;
        }
        if let Some(v) = o.max_wait_ms {
            config.max_wait = std::time::Duration::from_millis(whole("maxWaitMs", v, 1, 1 << 50)?);
        }
        if let Some(shell) = o.shell {
            if shell.is_empty() {
                return Err(err(Code::InvalidArgument, "shell must not be empty"));
            }
            config.shell = PathBuf::from(shell);
        }
        if let Some(file) = &o.policy {
            let (policy, program) = crate::policy::load(file, o.sandbox_program.as_deref())?;
            config.policy = Some(policy);
            config.program = Some(program);
        }
        let dir = config.store.as_ref().map(|s| s.dir.clone());
        let runtime = napi::bindgen_prelude::within_runtime_if_available(Handle::current);
        let jobs =
            engine::JobManager::with_runtime(config, runtime.clone()).map_err(|e| {
                match (e, dir) {
                    (engine::Error::Io(e), Some(dir)) => err(
                        Code::IoError,
                        format!("cannot use the state directory {}: {e}", dir.display()),
                    ),
                    (e, _) => from_engine(e),
                }
            })?;
        // A person may attach to a job from a terminal (`ptyjobs attach <id>`), as to the MCP
        // server's. Without it the jobs still run: attaching is an extra.
        let attach = jobs.store().and_then(|_| jobs.serve_attach().ok());
        Ok(Self {
            jobs,
            runtime,
            streams: Arc::default(),
            closed: Arc::default(),
            attach: std::sync::Mutex::new(attach),
        })
    }

    /// Kills every running job of this manager (SIGTERM, grace, SIGKILL), as the server does on
    /// shutdown, and resolves once they are gone and their `onExit` callbacks ran. Afterwards
    /// `execute` throws `MANAGER_CLOSED`; reads of the finished jobs keep working. Idempotent.
    #[napi(catch_unwind, ts_return_type = "Promise<void>")]
    pub fn close<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, ()>> {
        self.closed.store(true, Ordering::SeqCst);
        // No one attaches to a closed manager's jobs: the socket goes first.
        drop(
            self.attach
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .take(),
        );
        let jobs = self.jobs.clone();
        let streams = self.streams.clone();
        env.spawn_future(async move {
            jobs.shutdown().await;
            // Bounded: a callback that never returns must not hang close().
            let _ = tokio::time::timeout(std::time::Duration::from_secs(5), streams.idle()).await;
            Ok(())
        })
    }
}

impl JobManager {
    /// `MANAGER_CLOSED` once `close()` was called: what starts a job checks it first.
    fn open(&self) -> Result<()> {
        if self.closed.load(Ordering::SeqCst) {
            return Err(err(
                Code::ManagerClosed,
                "this JobManager was closed: create a new one",
            ));
        }
        Ok(())
    }

    /// The shape of every Promise method: `args`, parsed on the JS thread, rejects the promise
    /// when it is an error; otherwise `run` gets the engine and the arguments and its future
    /// runs off the JS thread, its answer converted there too, and a failure rejects with the
    /// coded error.
    fn promise<'env, A, V, F>(
        &self,
        env: &'env Env,
        args: Result<A>,
        run: impl FnOnce(engine::JobManager, A) -> F,
    ) -> napi::Result<PromiseRaw<'env, V>>
    where
        F: Future<Output = engine::Result<V>> + Send + 'static,
        V: ToNapiValue + Send + 'static,
    {
        let args = match args {
            Ok(args) => args,
            Err(e) => return PromiseRaw::reject(env, e),
        };
        let work = run(self.jobs.clone(), args);
        env.spawn_future_with_callback(async move { Ok(work.await) }, |env, res| {
            res.map_err(|e| into_napi(env, from_engine(e)))
        })
    }
}

fn napi_err(e: napi::Error) -> JsErr {
    err(Code::InvalidArgument, e.reason.clone())
}
