//! A job's life: `execute` starts it, `restart` starts it again, `kill` ends it, `wait` waits
//! for its end or a condition, `removeJob` forgets it.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use napi::bindgen_prelude::{Either, Env, PromiseRaw};
use napi_derive::napi;
use ptyjobs_engine::{JobId, JobSpec, Signal};

use super::{JobManager, named, resolve_id};
use crate::error::{Result, from_engine};
use crate::options::{ExecuteOptions, KillOptions, NameOptions, RestartOptions, WaitOptions};
use crate::types::{JobInfo, KillReport, WaitResult, dimension, millis, whole};

#[napi]
impl JobManager {
    /// Starts `command` through the shell (`sh -c`: pipes, `&&`, globs and quotes work) under a
    /// new pseudo-terminal and returns at once with the job's info (`jobId`, `pid`, `status`).
    ///
    /// @throws `INVALID_ARGUMENT` (empty command, bad cwd, size or env), `LIMIT_REACHED`,
    /// `SPAWN_FAILED`, `MANAGER_CLOSED`.
    #[napi(catch_unwind)]
    pub fn execute(&self, command: String, options: Option<ExecuteOptions>) -> Result<JobInfo> {
        self.open()?;
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
        spec.keep = o.keep == Some(true);
        spec.keep_ttl = match o.keep_ttl_secs.map(|v| whole("keepTtlSecs", v, 0, 1 << 40)) {
            None => Some(Duration::from_secs(86_400)),
            Some(secs) => Some(secs?).filter(|&s| s > 0).map(Duration::from_secs),
        };
        spec.profile = o.profile;
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
        let o = options.unwrap_or_default();
        let args = self
            .open()
            .and_then(|()| resolve_id(&self.jobs, &job_id, o.cwd.as_deref()));
        let vars = o.env.map(|e| e.into_iter().collect::<BTreeMap<_, _>>());
        self.promise(env, args, |jobs, id| async move {
            jobs.restart(id, o.command, vars).await.map(JobInfo::from)
        })
    }

    /// Ends a job: `signal` (default SIGTERM) to its whole process group and session, SIGKILL
    /// after `graceMs`, and resolves once no process of the job remains.
    ///
    /// Resolves what was verified, as MCP's `kill_job` answers: `{ outcome, survivors }`, where
    /// `outcome` is `'killed'`, `'already_terminated'` (it had ended) or `'not_found'`, and
    /// `survivors` the pids of the job's processes still alive after SIGKILL and a 5 s check
    /// (normally empty). Rejects with `INVALID_JOB_ID`, `INVALID_ARGUMENT` (unknown signal, bad
    /// grace) or `NOT_OWNER` (a running job of another live process sharing the state
    /// directory that serves no attach socket). Another live process's job is killed by that
    /// process, through its kill path (asked over its attach socket).
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
    pub fn remove_job(&self, job_id: String, options: Option<NameOptions>) -> Result<()> {
        self.jobs
            .remove(named(&self.jobs, &job_id, options.as_ref())?)
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
    /// Of a job read from the state directory (`thisServer: false`): an ended one resolves at
    /// once (`exited` in the form with a condition); for one another live process runs, that
    /// process waits for `pattern`, `idleMs` and `input` (asked over its attach socket), and
    /// `port` and `listening` are watched through the job's processes.
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
        let args = (|| -> Result<_> {
            let id = resolve_id(&self.jobs, &job_id, o.cwd.as_deref())?;
            self.jobs.status(id).map_err(from_engine)?;
            let timeout = o.timeout_ms.map(|v| millis("timeoutMs", v)).transpose()?;
            Ok((id, timeout, o.spec(timeout)?))
        })();
        self.promise(env, args, |jobs, (id, timeout, spec)| async move {
            Ok(match spec {
                None => Either::A(JobInfo::from(jobs.wait(id, timeout).await?)),
                Some(spec) => Either::B(WaitResult::from(jobs.wait_for(id, &spec, |_| {}).await?)),
            })
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
        let args = (|| -> Result<(JobId, Signal, Option<std::time::Duration>)> {
            let id = resolve_id(&self.jobs, job_id, o.cwd.as_deref())?;
            let signal = match o.signal {
                Some(s) => s.parse::<Signal>().map_err(from_engine)?,
                None => Signal::TERM,
            };
            let grace = o.grace_ms.map(|v| millis("graceMs", v)).transpose()?;
            Ok((id, signal, grace))
        })();
        self.promise(env, args, |jobs, (id, signal, grace)| async move {
            jobs.kill(id, signal, grace).await.map(KillReport::from)
        })
    }
}
