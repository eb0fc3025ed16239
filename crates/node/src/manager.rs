//! The `JobManager` class: each method converts its arguments, calls the engine, converts the
//! result. No process or terminal logic lives here.

mod services;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use napi::bindgen_prelude::{Buffer, Either, Env, Function, JsValuesTupleIntoVec, PromiseRaw};
use napi::threadsafe_function::UnknownReturnValue;
use napi_derive::napi;
use ptyjobs_engine::{self as engine, EngineConfig, JobId, JobSpec, Signal};
use tokio::runtime::Handle;

use crate::error::{Code, JsErr, Result, err, from_engine, into_napi};
use crate::options::{
    ExecuteOptions, KillOptions, ManagerOptions, OutputOptions, RestartOptions, SearchOptions,
    TailOptions, WaitOptions,
};
use crate::stream::{Callback, Streams};
use crate::types::{
    JobInfo, KillReport, MAX_SAFE, Output, ScreenSnapshot, SearchResult, WaitResult, count,
    dimension, fitted, millis, whole,
};

/// Lines `tail` returns when not told.
const DEFAULT_TAIL: usize = 50;

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
/// `INVALID_ARGUMENT` that lists them (pass the id); an unknown one is `INVALID_JOB_ID`.
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

/// The job a caller's `jobId` stands for: a job id, or a job's name (the live job with it,
/// else the newest ended one; a name reads the state directory).
fn parse_id(jobs: &engine::JobManager, id: &str) -> Result<JobId> {
    resolve_id(jobs, id, None)
}

/// [`parse_id`], with the directory that picks among a name's live jobs. A text that is
/// neither a job id nor a known name is `INVALID_JOB_ID`, as before names were keys.
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

/// A rejected promise carrying a coded error.
fn rejected<'env, T: napi::bindgen_prelude::ToNapiValue>(
    env: &'env Env,
    e: JsErr,
) -> napi::Result<PromiseRaw<'env, T>> {
    PromiseRaw::reject(env, e)
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

    /// Starts `command` through the shell (`sh -c`: pipes, `&&`, globs and quotes work) under a
    /// new pseudo-terminal and returns at once with the job's info (`jobId`, `pid`, `status`).
    ///
    /// @throws `INVALID_ARGUMENT` (empty command, bad cwd, size or env), `LIMIT_REACHED`,
    /// `SPAWN_FAILED`, `MANAGER_CLOSED`.
    #[napi(catch_unwind)]
    pub fn execute(&self, command: String, options: Option<ExecuteOptions>) -> Result<JobInfo> {
        if self.closed.load(Ordering::SeqCst) {
            return Err(err(
                Code::ManagerClosed,
                "this JobManager was closed: create a new one",
            ));
        }
        let o = options.unwrap_or_default();
        let mut spec = JobSpec::new(command);
        spec.cwd = o.cwd.map(PathBuf::from);
        spec.env = o
            .env
            .unwrap_or_default()
            .into_iter()
            .collect::<BTreeMap<_, _>>();
        spec.cols = o.cols.map(|v| dimension("cols", v)).transpose()?;
        spec.rows = o.rows.map(|v| dimension("rows", v)).transpose()?;
        spec.timeout = o.timeout_ms.map(|v| millis("timeoutMs", v)).transpose()?;
        spec.name = o.name;
        spec.auto_port = o.auto_port == Some(true);
        spec.ensure = o.ensure.unwrap_or(false);
        let started = self.jobs.ensure(spec).map_err(from_engine)?;
        let mut info = JobInfo::from(started.info);
        info.reused = started.reused.then_some(true);
        Ok(info)
    }

    /// Restarts a job (by id or name): ends every process of it (SIGTERM, the grace, SIGKILL:
    /// one that ignores SIGTERM ends too), waits until the ports it listened on are free, then
    /// starts its command in its directory with its environment, size and name (or `command`
    /// / `env` instead) as a new job, whose `replaces` is the old id. A finished job is
    /// started again. Resolves with the new job's info.
    ///
    /// Rejects with `INVALID_JOB_ID`, `JOB_NOT_FOUND`, `NAME_TAKEN`,
    /// `INVALID_ARGUMENT`, `IO_ERROR` (a port still taken after 10 s), `MANAGER_CLOSED`.
    #[napi(catch_unwind, ts_return_type = "Promise<JobInfo>")]
    pub fn restart<'env>(
        &self,
        env: &'env Env,
        job_id: String,
        options: Option<RestartOptions>,
    ) -> napi::Result<PromiseRaw<'env, JobInfo>> {
        if self.closed.load(Ordering::SeqCst) {
            return rejected(
                env,
                err(
                    Code::ManagerClosed,
                    "this JobManager was closed: create a new one",
                ),
            );
        }
        let o = options.unwrap_or_default();
        let id = match resolve_id(&self.jobs, &job_id, o.cwd.as_deref()) {
            Ok(id) => id,
            Err(e) => return rejected(env, e),
        };
        let vars = o.env.map(|e| e.into_iter().collect::<BTreeMap<_, _>>());
        let jobs = self.jobs.clone();
        env.spawn_future_with_callback(
            async move { Ok(jobs.restart(id, o.command, vars).await) },
            move |env, res| match res {
                Ok(info) => Ok(JobInfo::from(info)),
                Err(e) => Err(into_napi(env, from_engine(e))),
            },
        )
    }

    /// A snapshot of one job (with persistence, also of a job of an earlier run or of another
    /// process sharing the state directory).
    ///
    /// @throws `INVALID_JOB_ID`, `JOB_NOT_FOUND`.
    #[napi(catch_unwind)]
    pub fn status(&self, job_id: String) -> Result<JobInfo> {
        self.jobs
            .status(parse_id(&self.jobs, &job_id)?)
            .map(JobInfo::from)
            .map_err(from_engine)
    }

    /// Every known job, newest first (finished jobs too, up to the engine's cap). With
    /// persistence, also the jobs in the state directory: earlier runs' and those of other
    /// processes sharing it (`thisServer: false`).
    #[napi(catch_unwind)]
    pub fn list(&self) -> Vec<JobInfo> {
        self.jobs.list().into_iter().map(JobInfo::from).collect()
    }

    /// Lines `offset .. offset + limit` of the job's clean transcript, at most `maxBytes` of
    /// them. Line numbers are absolute and stable: pass the returned `nextOffset` as `offset`
    /// to read only new lines (lines from `finalLines` on may still change on screen).
    /// With persistence, an `offset` below the lines memory still holds reads them from the
    /// job's transcript on disk, and jobs of earlier runs are read from there.
    ///
    /// @throws `INVALID_JOB_ID`, `JOB_NOT_FOUND`, `INVALID_ARGUMENT`, `IO_ERROR` (a transcript
    /// on disk that cannot be read).
    #[napi(catch_unwind)]
    pub fn output(&self, job_id: String, options: Option<OutputOptions>) -> Result<Output> {
        let (id, offset, limit, max_bytes) = output_args(&self.jobs, &job_id, options)?;
        // Clamped to the budget before reading (a huge `limit` costs `maxBytes`, not the log).
        self.jobs
            .output_within(id, offset, limit, max_bytes.unwrap_or(usize::MAX))
            .map(|s| fitted(s, max_bytes))
            .map_err(from_engine)
    }

    /// The last `lines` lines (default 50) of the job's clean transcript, the unfinished ones on
    /// screen included: what a person would see at the bottom of the terminal. At most
    /// `maxBytes` of them, as in `output()`.
    ///
    /// @throws `INVALID_JOB_ID`, `JOB_NOT_FOUND`, `INVALID_ARGUMENT`, `IO_ERROR`.
    #[napi(catch_unwind)]
    pub fn tail(
        &self,
        job_id: String,
        lines: Option<f64>,
        options: Option<TailOptions>,
    ) -> Result<Output> {
        let (id, n, max_bytes) = tail_args(&self.jobs, &job_id, lines, options)?;
        self.jobs
            .tail_within(id, n, max_bytes.unwrap_or(usize::MAX))
            .map(|s| fitted(s, max_bytes))
            .map_err(from_engine)
    }

    /// The visible screen of the job's terminal now: rows as text, cursor, size, whether a
    /// full-screen program is on the alternate screen, the window title. What a person sees
    /// looking at `top`, `vim` or a test watcher's interactive view (drawings on the alternate
    /// screen never enter the transcript). For a job of an earlier run, its last screen.
    ///
    /// @throws `INVALID_JOB_ID`, `JOB_NOT_FOUND`.
    #[napi(catch_unwind)]
    pub fn screen(&self, job_id: String) -> Result<ScreenSnapshot> {
        self.jobs
            .screen(parse_id(&self.jobs, &job_id)?)
            .map(ScreenSnapshot::from)
            .map_err(from_engine)
    }

    /// Searches the job's whole held transcript (non-destructively) for lines matching
    /// `pattern`, a regular expression in Rust `regex` syntax (`(?i)error|panic`; no
    /// slashes, flags inline). Returns the first `maxMatches` matches with their absolute line
    /// numbers and `context` lines around each, and the count of all matches. A job read from
    /// the state directory (`thisServer: false`) is searched in its transcript on disk.
    ///
    /// @throws `INVALID_JOB_ID`, `JOB_NOT_FOUND`, `INVALID_ARGUMENT` (bad pattern or option),
    /// `IO_ERROR`.
    #[napi(catch_unwind)]
    pub fn search(
        &self,
        job_id: String,
        pattern: String,
        options: Option<SearchOptions>,
    ) -> Result<SearchResult> {
        let (id, re, context, max) = search_args(&self.jobs, &job_id, &pattern, options)?;
        self.jobs
            .search(id, &re, context, max)
            .map(SearchResult::from)
            .map_err(from_engine)
    }

    /// `status()` off the JS thread: a job of the state directory is read from disk on a
    /// worker thread, and the promise resolves with its info.
    ///
    /// Rejects as `status()` throws.
    #[napi(catch_unwind, ts_return_type = "Promise<JobInfo>")]
    pub fn status_async<'env>(
        &self,
        env: &'env Env,
        job_id: String,
    ) -> napi::Result<PromiseRaw<'env, JobInfo>> {
        let id = match parse_id(&self.jobs, &job_id) {
            Ok(id) => id,
            Err(e) => return rejected(env, e),
        };
        let jobs = self.jobs.clone();
        resolve(
            env,
            async move { jobs.status_async(id).await },
            JobInfo::from,
        )
    }

    /// `list()` off the JS thread (the state directory's records are read on a worker thread).
    #[napi(catch_unwind, ts_return_type = "Promise<JobInfo[]>")]
    pub fn list_async<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, Vec<JobInfo>>> {
        let jobs = self.jobs.clone();
        resolve(env, async move { jobs.list_async().await }, |list| {
            list.into_iter().map(JobInfo::from).collect()
        })
    }

    /// `output()` off the JS thread: a read of the job's transcript on disk (a job of an
    /// earlier run, or lines memory no longer holds) runs on a worker thread.
    ///
    /// Rejects as `output()` throws.
    #[napi(catch_unwind, ts_return_type = "Promise<Output>")]
    pub fn output_async<'env>(
        &self,
        env: &'env Env,
        job_id: String,
        options: Option<OutputOptions>,
    ) -> napi::Result<PromiseRaw<'env, Output>> {
        let (id, offset, limit, max_bytes) = match output_args(&self.jobs, &job_id, options) {
            Ok(args) => args,
            Err(e) => return rejected(env, e),
        };
        let jobs = self.jobs.clone();
        resolve(
            env,
            async move {
                jobs.output_async(id, offset, limit, max_bytes.unwrap_or(usize::MAX))
                    .await
            },
            move |s| fitted(s, max_bytes),
        )
    }

    /// `tail()` off the JS thread (see `outputAsync`).
    ///
    /// Rejects as `tail()` throws.
    #[napi(catch_unwind, ts_return_type = "Promise<Output>")]
    pub fn tail_async<'env>(
        &self,
        env: &'env Env,
        job_id: String,
        lines: Option<f64>,
        options: Option<TailOptions>,
    ) -> napi::Result<PromiseRaw<'env, Output>> {
        let (id, n, max_bytes) = match tail_args(&self.jobs, &job_id, lines, options) {
            Ok(args) => args,
            Err(e) => return rejected(env, e),
        };
        let jobs = self.jobs.clone();
        resolve(
            env,
            async move {
                jobs.tail_async(id, n, max_bytes.unwrap_or(usize::MAX))
                    .await
            },
            move |s| fitted(s, max_bytes),
        )
    }

    /// `screen()` off the JS thread (a job of an earlier run has its last screen read from
    /// disk).
    ///
    /// Rejects as `screen()` throws.
    #[napi(catch_unwind, ts_return_type = "Promise<ScreenSnapshot>")]
    pub fn screen_async<'env>(
        &self,
        env: &'env Env,
        job_id: String,
    ) -> napi::Result<PromiseRaw<'env, ScreenSnapshot>> {
        let id = match parse_id(&self.jobs, &job_id) {
            Ok(id) => id,
            Err(e) => return rejected(env, e),
        };
        let jobs = self.jobs.clone();
        resolve(
            env,
            async move { jobs.screen_async(id).await },
            ScreenSnapshot::from,
        )
    }

    /// `search()` off the JS thread: a search over a large transcript on disk takes its time
    /// on a worker thread.
    ///
    /// Rejects as `search()` throws.
    #[napi(catch_unwind, ts_return_type = "Promise<SearchResult>")]
    pub fn search_async<'env>(
        &self,
        env: &'env Env,
        job_id: String,
        pattern: String,
        options: Option<SearchOptions>,
    ) -> napi::Result<PromiseRaw<'env, SearchResult>> {
        let (id, re, context, max) = match search_args(&self.jobs, &job_id, &pattern, options) {
            Ok(args) => args,
            Err(e) => return rejected(env, e),
        };
        let jobs = self.jobs.clone();
        resolve(
            env,
            async move { jobs.search_async(id, re, context, max).await },
            SearchResult::from,
        )
    }

    /// Writes `data` to the job's terminal as typed (no newline is added: end a line with a
    /// carriage return or a line feed to press Enter). Returns the number of bytes the terminal
    /// accepted, which is less than the data only when the terminal's input buffer is full.
    ///
    /// @throws `INVALID_JOB_ID`, `JOB_NOT_FOUND`, `NOT_RUNNING`.
    #[napi(catch_unwind, ts_args_type = "jobId: string, data: string | Buffer")]
    pub fn write(&self, job_id: String, data: Either<String, Buffer>) -> Result<u32> {
        let id = parse_id(&self.jobs, &job_id)?;
        let bytes: &[u8] = match &data {
            Either::A(s) => s.as_bytes(),
            Either::B(b) => b.as_ref(),
        };
        let n = self.jobs.write(id, bytes).map_err(from_engine)?;
        Ok(u32::try_from(n).unwrap_or(u32::MAX))
    }

    /// Presses named keys and chords on the job's terminal, in order, encoded as a terminal
    /// would for the program's current mode (cursor keys follow application cursor mode):
    /// `Enter`, `Tab`, `Escape`, `Backspace`, `Delete`, `Space`, `Up`/`Down`/`Left`/`Right`,
    /// `Home`/`End`, `PageUp`/`PageDown`, `F1`-`F12`, a single character (`q`), and chords
    /// `C-c`, `C-d`, `M-x`, `C-Up`, `S-Tab` (names are case-insensitive). Resolves with the
    /// number of bytes written. For text, use `write`.
    ///
    /// Rejects with `INVALID_JOB_ID`, `JOB_NOT_FOUND`, `NOT_RUNNING`, `INVALID_ARGUMENT` (an
    /// unknown key, named in the message; nothing is sent then).
    #[napi(catch_unwind, ts_return_type = "Promise<number>")]
    pub fn send_keys<'env>(
        &self,
        env: &'env Env,
        job_id: String,
        keys: Vec<String>,
    ) -> napi::Result<PromiseRaw<'env, u32>> {
        let parsed = (|| -> Result<JobId> {
            let id = parse_id(&self.jobs, &job_id)?;
            // Validity does not depend on the cursor mode: reject before anything is sent.
            engine::encode_keys(&keys, false).map_err(from_engine)?;
            Ok(id)
        })();
        let id = match parsed {
            Ok(id) => id,
            Err(e) => return rejected(env, e),
        };
        let jobs = self.jobs.clone();
        env.spawn_future_with_callback(
            async move { Ok(jobs.send_keys(id, &keys).await) },
            |env, res| match res {
                Ok(n) => Ok(u32::try_from(n).unwrap_or(u32::MAX)),
                Err(e) => Err(into_napi(env, from_engine(e))),
            },
        )
    }

    /// Resizes the job's terminal (the program gets SIGWINCH). Returns `false`, changing
    /// nothing, when the job has already ended.
    ///
    /// @throws `INVALID_JOB_ID`, `JOB_NOT_FOUND`, `INVALID_ARGUMENT` (size outside 1..=1000).
    #[napi(catch_unwind)]
    pub fn resize(&self, job_id: String, cols: f64, rows: f64) -> Result<bool> {
        let id = parse_id(&self.jobs, &job_id)?;
        let (cols, rows) = (dimension("cols", cols)?, dimension("rows", rows)?);
        self.jobs.resize(id, cols, rows).map_err(from_engine)
    }

    /// Ends a job: `signal` (default SIGTERM) to its whole process group and session, SIGKILL
    /// after `graceMs`, and resolves once no process of the job remains.
    ///
    /// Resolves what was verified, as MCP's `kill_job` answers: `{ outcome, survivors }`, where
    /// `outcome` is `'killed'`, `'already_terminated'` (it had ended) or `'not_found'`, and
    /// `survivors` the pids of the job's processes still alive after SIGKILL and a 5 s check
    /// (normally empty). Rejects with `INVALID_JOB_ID`, `INVALID_ARGUMENT` (unknown signal, bad
    /// grace) or `NOT_OWNER` (a running job of another live process sharing the state
    /// directory).
    #[napi(catch_unwind, ts_return_type = "Promise<KillReport>")]
    pub fn kill<'env>(
        &self,
        env: &'env Env,
        job_id: String,
        options: Option<KillOptions>,
    ) -> napi::Result<PromiseRaw<'env, KillReport>> {
        self.end(env, &job_id, options)
    }

    /// The same as `kill`, kept for programs written when `kill` resolved the outcome alone.
    ///
    /// @deprecated `kill` resolves this report now.
    #[napi(catch_unwind, ts_return_type = "Promise<KillReport>")]
    pub fn kill_report<'env>(
        &self,
        env: &'env Env,
        job_id: String,
        options: Option<KillOptions>,
    ) -> napi::Result<PromiseRaw<'env, KillReport>> {
        self.end(env, &job_id, options)
    }

    /// Forgets a finished job: it leaves `list()`, its id answers `JOB_NOT_FOUND` from then
    /// on, and with persistence its record and transcript are deleted from the state
    /// directory. Works on jobs of earlier runs too.
    ///
    /// @throws `INVALID_JOB_ID`, `JOB_NOT_FOUND`, `INVALID_ARGUMENT` (the job is still
    /// running: kill it first), `NOT_OWNER` (a job of another live process sharing the state
    /// directory), `IO_ERROR`.
    #[napi(catch_unwind)]
    pub fn remove_job(&self, job_id: String) -> Result<()> {
        self.jobs
            .remove(parse_id(&self.jobs, &job_id)?)
            .map_err(from_engine)
    }

    /// Waits for the job without polling. Two forms, told apart by the options:
    ///
    /// * `wait(jobId)`, `wait(jobId, { timeoutMs })`: resolves with the job's final `JobInfo`
    ///   when it ends (a non-zero exit resolves too), or with its still-running info once
    ///   `timeoutMs` passed (no limit by default).
    /// * With `pattern`, `idleMs`, `port` and/or `input: true`: resolves with a `WaitResult` at
    ///   the first of the job's exit (`exited`), a new line matching `pattern` (`matched`, with
    ///   the line and its number; `fromStart` to include older lines), `idleMs` without output
    ///   (`idle`), `port` on localhost accepting connections (`port_open`), the job waiting for
    ///   input (`input_wanted`, with `prompt` and `echo`), or the timeout (`timeout`).
    ///   Such a wait lasts at most the manager's `maxWaitMs` (50 000 unless set): a longer
    ///   `timeoutMs` is cut to it and the result says `capped: true`, so call again.
    ///
    /// The TypeScript return type follows the options: `WaitResult` when a condition is given,
    /// `JobInfo` when none is, the union when the type cannot tell (a `WaitOptions` variable:
    /// `'info' in result` tells them apart). Rejects with `INVALID_JOB_ID`, `JOB_NOT_FOUND`,
    /// `INVALID_ARGUMENT` (bad pattern, `idleMs`, `port` or `timeoutMs`).
    ///
    /// Of a job read from the state directory (`thisServer: false`) only the end can be
    /// watched, through its record: an ended one resolves at once (`exited` in the form with a
    /// condition); for one another process runs, `pattern`, `idleMs` and `port` are not
    /// watched and the wait ends at its exit or at the timeout.
    #[napi(
        catch_unwind,
        ts_generic_types = "O extends WaitOptions = {}",
        ts_args_type = "jobId: string, options?: O",
        ts_return_type = "Promise<O extends { pattern: string } | { idleMs: number } | { port: number } | { input: true } ? WaitResult : [Extract<keyof O, 'pattern' | 'idleMs' | 'port' | 'input'>] extends [never] ? JobInfo : JobInfo | WaitResult>"
    )]
    pub fn wait<'env>(
        &self,
        env: &'env Env,
        job_id: String,
        options: Option<WaitOptions>,
    ) -> napi::Result<PromiseRaw<'env, Either<JobInfo, WaitResult>>> {
        let o = options.unwrap_or_default();
        let parsed = (|| -> Result<_> {
            let id = parse_id(&self.jobs, &job_id)?;
            self.jobs.status(id).map_err(from_engine)?;
            let timeout = o.timeout_ms.map(|v| millis("timeoutMs", v)).transpose()?;
            Ok((id, timeout, o.spec(timeout)?))
        })();
        let (id, timeout, spec) = match parsed {
            Ok(p) => p,
            Err(e) => return rejected(env, e),
        };
        let jobs = self.jobs.clone();
        env.spawn_future_with_callback(
            async move {
                Ok(match spec {
                    None => jobs.wait(id, timeout).await.map(Either::A),
                    Some(spec) => jobs.wait_for(id, &spec, |_| {}).await.map(Either::B),
                })
            },
            |env, res| match res {
                Ok(Either::A(info)) => Ok(Either::A(JobInfo::from(info))),
                Ok(Either::B(outcome)) => Ok(Either::B(WaitResult::from(outcome))),
                Err(e) => Err(into_napi(env, from_engine(e))),
            },
        )
    }

    /// Calls `callback` with the job's clean text as it becomes final: each line once, followed
    /// by a line feed, once it scrolled off the terminal's screen or was cleared from it (see
    /// `finalLines`); when the job ends, the lines still on screen, without a trailing newline.
    /// All chunks joined equal `output(jobId).output` read after the end (unless
    /// `transcriptBytes` evicted lines first).
    /// A late listener starts from the first line held. Like a child process's listeners, it
    /// keeps the process alive while the job runs, never after the job ended or the manager was
    /// closed.
    ///
    /// @throws `INVALID_JOB_ID`, `JOB_NOT_FOUND`, `NOT_OWNER` (a running job of another
    /// process sharing the state directory: it cannot be followed from here).
    #[napi(
        catch_unwind,
        ts_args_type = "jobId: string, callback: (data: string) => void"
    )]
    pub fn on_data(
        &self,
        job_id: String,
        callback: Function<'_, String, UnknownReturnValue>,
    ) -> Result<()> {
        let (id, cb) = self.listener(&job_id, callback)?;
        self.streams.on_data(&self.jobs, &self.runtime, id, cb);
        Ok(())
    }

    /// Calls `callback` once with the job's final info (`exitCode`, `signal`, `status`, ...)
    /// when it has ended, strictly after the last `onData` chunk was delivered. Registered on
    /// an ended job, it is called at once (asynchronously). It keeps the process alive while
    /// the job runs, never after the job ended or the manager was closed.
    ///
    /// @throws `INVALID_JOB_ID`, `JOB_NOT_FOUND`, `NOT_OWNER` (as `onData`).
    #[napi(
        catch_unwind,
        ts_args_type = "jobId: string, callback: (info: JobInfo) => void"
    )]
    pub fn on_exit(
        &self,
        job_id: String,
        callback: Function<'_, JobInfo, UnknownReturnValue>,
    ) -> Result<()> {
        let (id, cb) = self.listener(&job_id, callback)?;
        self.streams.on_exit(&self.jobs, &self.runtime, id, cb);
        Ok(())
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
    /// The kill behind `kill` and `killReport`.
    fn end<'env>(
        &self,
        env: &'env Env,
        job_id: &str,
        options: Option<KillOptions>,
    ) -> napi::Result<PromiseRaw<'env, KillReport>> {
        let o = options.unwrap_or_default();
        let parsed = (|| -> Result<(JobId, Signal, Option<std::time::Duration>)> {
            let id = parse_id(&self.jobs, job_id)?;
            let signal = match o.signal {
                Some(s) => s.parse::<Signal>().map_err(from_engine)?,
                None => Signal::TERM,
            };
            let grace = o.grace_ms.map(|v| millis("graceMs", v)).transpose()?;
            Ok((id, signal, grace))
        })();
        let (id, signal, grace) = match parsed {
            Ok(p) => p,
            Err(e) => return rejected(env, e),
        };
        let jobs = self.jobs.clone();
        env.spawn_future_with_callback(
            async move { Ok(jobs.kill(id, signal, grace).await) },
            move |env, res| match res {
                Ok(report) => Ok(KillReport::from(report)),
                Err(e) => Err(into_napi(env, from_engine(e))),
            },
        )
    }

    /// The job a listener is for (it must exist) and its callback as a thread-safe function
    /// (released by the stream when the job has ended).
    fn listener<T: 'static + JsValuesTupleIntoVec>(
        &self,
        job_id: &str,
        callback: Function<'_, T, UnknownReturnValue>,
    ) -> Result<(JobId, Callback<T>)> {
        let id = parse_id(&self.jobs, job_id)?;
        let info = self.jobs.status(id).map_err(from_engine)?;
        if !info.status.is_final() {
            // A running job of another process sharing the state directory has no events
            // here: NOT_OWNER rather than a listener that would take it for ended.
            self.jobs.subscribe(id).map_err(from_engine)?;
        }
        let cb = callback
            .build_threadsafe_function()
            .weak::<false>()
            .build()
            .map_err(napi_err)?;
        Ok((id, cb))
    }
}

/// The arguments of `output` and `outputAsync`: the job, `offset`, `limit`, `maxBytes`.
type OutputArgs = (JobId, Option<u64>, Option<usize>, Option<usize>);

fn output_args(
    jobs: &engine::JobManager,
    job_id: &str,
    options: Option<OutputOptions>,
) -> Result<OutputArgs> {
    let id = parse_id(jobs, job_id)?;
    let o = options.unwrap_or_default();
    let offset = o
        .offset
        .map(|v| whole("offset", v, 0, MAX_SAFE))
        .transpose()?;
    let limit = o.limit.map(|v| count("limit", v)).transpose()?;
    let max_bytes = o.max_bytes.map(|v| count("maxBytes", v)).transpose()?;
    Ok((id, offset, limit, max_bytes))
}

/// The arguments of `tail` and `tailAsync`: the job, the lines, `maxBytes`.
fn tail_args(
    jobs: &engine::JobManager,
    job_id: &str,
    lines: Option<f64>,
    options: Option<TailOptions>,
) -> Result<(JobId, usize, Option<usize>)> {
    let id = parse_id(jobs, job_id)?;
    let n = lines
        .map(|v| count("lines", v))
        .transpose()?
        .unwrap_or(DEFAULT_TAIL);
    let max_bytes = options
        .and_then(|o| o.max_bytes)
        .map(|v| count("maxBytes", v))
        .transpose()?;
    Ok((id, n, max_bytes))
}

/// The arguments of `search` and `searchAsync`: the job, the compiled pattern, `context`,
/// `maxMatches`.
fn search_args(
    jobs: &engine::JobManager,
    job_id: &str,
    pattern: &str,
    options: Option<SearchOptions>,
) -> Result<(JobId, engine::Regex, usize, usize)> {
    let id = parse_id(jobs, job_id)?;
    let re = engine::compile_pattern(pattern).map_err(from_engine)?;
    let o = options.unwrap_or_default();
    let context = o.context.map(|v| count("context", v)).transpose()?;
    let max = o.max_matches.map(|v| count("maxMatches", v)).transpose()?;
    Ok((id, re, context.unwrap_or(0), max.unwrap_or(usize::MAX)))
}

/// A promise of `read`'s answer converted by `convert` (on the JS thread), rejected with the
/// coded error of a failed read. The read runs off the JS thread.
fn resolve<'env, R, V>(
    env: &'env Env,
    read: impl std::future::Future<Output = engine::Result<R>> + Send + 'static,
    convert: impl FnOnce(R) -> V + 'static,
) -> napi::Result<PromiseRaw<'env, V>>
where
    R: Send + 'static,
    V: napi::bindgen_prelude::ToNapiValue,
{
    env.spawn_future_with_callback(async move { Ok(read.await) }, move |env, res| match res {
        Ok(r) => Ok(convert(r)),
        Err(e) => Err(into_napi(env, from_engine(e))),
    })
}

fn napi_err(e: napi::Error) -> JsErr {
    err(Code::InvalidArgument, e.reason.clone())
}
