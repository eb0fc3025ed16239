//! Starting a job, all or nothing: validate → reserve a running slot → spawn → start the
//! reader → record → insert into the table. Each step that can fail undoes what the earlier
//! ones did (guards), so a failed start leaves no slot taken, no process, no zombie and no
//! record.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use chrono::Utc;
use tokio::sync::watch;

use crate::config::EngineConfig;
use crate::error::{Error, Result};
use crate::job::{JobId, JobInfo, JobSpec};
use crate::kill::{self, Target};
use crate::manager::{Inner, Job, JobEvent, JobManager, JobSink, State, check_size};
use crate::pipeline::Lane;
use crate::signal::Signal;
use crate::store::JobRecord;
use crate::sync::{Rank, Ranked, lock};
use crate::sys::Leader;
use crate::sys::pty;
use crate::sys::spawn::{self, SpawnSpec};
use crate::terminal::Terminal;

impl JobManager {
    /// Starts `spec.command` under a new PTY and returns at once; the name, if any, already
    /// checked (the public start is [`JobManager::execute`], through [`JobManager::ensure`]).
    /// All or nothing: a failure after the spawn kills and reaps the child and releases the
    /// slot, so nothing of a failed start remains.
    pub(crate) fn start(&self, spec: JobSpec) -> Result<JobInfo> {
        let inner = &self.inner;
        let (cols, rows, cwd) = validate(&inner.config, &spec)?;
        let port = if spec.auto_port {
            Some(crate::ports::auto_port(&spec.env)?)
        } else {
            None
        };
        let slot = Slot::reserve(inner)?;
        let spare = inner.store.as_ref().and_then(|st| st.take_spare());
        let id = spare.as_ref().map_or_else(JobId::new, |spare| spare.id);
        let sandbox = match sandbox_of(&inner.config, spec.profile.as_deref(), id) {
            Ok(s) => s,
            Err(e) => {
                if let (Some(store), Some(spare)) = (&inner.store, spare) {
                    store.put_back_spare(spare);
                }
                return Err(e);
            }
        };
        let spawn_spec = SpawnSpec {
            shell: inner.config.shell.clone(),
            command: spec.command.clone(),
            cwd: cwd.clone(),
            env: crate::jobenv::own(&with_port(&spec.env, port), id),
            cols,
            rows,
            base_env: Arc::clone(&inner.base_env),
            sandbox: sandbox.as_ref().map(|(p, s, _)| (p.clone(), s.clone())),
        };
        let spawned = match spawn::spawn(&spawn_spec) {
            Ok(s) => s,
            Err(e) => {
                if let (Some(store), Some(spare)) = (&inner.store, spare) {
                    store.put_back_spare(spare);
                }
                return Err(e);
            }
        };
        let child = ChildGuard::new(id, spawned.pid, spawned.tree, spawned.start);
        let master = Arc::new(spawned.master);
        let (events, _) = watch::channel(JobEvent::default());
        let (done, _) = watch::channel(false);
        let job = Arc::new(Job {
            id,
            name: spec.name.clone(),
            command: spec.command.clone(),
            cwd,
            port,
            replaces: spec.replaces,
            kept: spec.keep,
            keep_until: keep_until(&spec),
            env: spec.env.clone(),
            policy: sandbox.map(|(_, _, watched)| watched.supervised(spawned.supervision)),
            pid: spawned.pid,
            leader: child.leader.clone(),
            started: Utc::now(),
            started_at: Instant::now(),
            state: Ranked::new(
                Rank::Job,
                State::running(
                    Terminal::new(
                        cols,
                        rows,
                        inner.config.transcript_bytes,
                        inner.config.max_line_bytes,
                    ),
                    (cols, rows),
                    Arc::clone(&master),
                ),
            ),
            events,
            done,
            input: Default::default(),
            waiting: crate::input::InputWatch::default(),
            tap: crate::tap::Tap::default(),
        });
        // Closed until the job is in the table: nothing is parsed, and so nothing can end the
        // job, before the job is complete. Opened on every way out of here.
        let lane = Lane::new(JobSink {
            job: job.clone(),
            manager: Arc::downgrade(inner),
            store: inner.store.clone(),
        });
        let gate = Gate(lane.clone());
        pty::start_reader(job.leader.clone(), master, inner.config.drain_timeout, lane)?;
        // From here on nothing fails: the reader owns the child (it reaps it), and the job
        // owns its slot (released when it ends).
        child.disarm();
        slot.disarm();
        self.record_start(&job, &spec, spare);
        {
            let mut t = lock(&inner.table);
            t.jobs.insert(job.id, job.clone());
            t.order.push(job.id);
        }
        drop(gate);
        if let Some(timeout) = spec.timeout {
            let weak = Arc::downgrade(inner);
            inner.runtime.spawn(async move {
                tokio::time::sleep(timeout).await;
                if let Some(inner) = weak.upgrade() {
                    let grace = inner.config.grace(None);
                    inner.kill(id, Signal::TERM, grace, "timeout").await;
                }
            });
        }
        if let Some(ttl) = spec.keep_ttl.filter(|_| spec.keep) {
            // The keeper ends a kept job when its TTL runs out, through the one kill path.
            let weak = Arc::downgrade(inner);
            inner.runtime.spawn(async move {
                tokio::time::sleep(ttl).await;
                if let Some(inner) = weak.upgrade() {
                    let grace = inner.config.grace(None);
                    inner
                        .kill(id, Signal::TERM, grace, crate::job::KEEP_TTL_REASON)
                        .await;
                }
            });
        }
        Ok(job.info())
    }

    /// Writes the first record of a job just started (with a store); a job whose record cannot
    /// be written is kept in memory only.
    fn record_start(&self, job: &Job, spec: &JobSpec, spare: Option<crate::store::Spare>) {
        let inner = &self.inner;
        let Some((store, server)) = inner.store.as_ref().and_then(|st| Some((st, st.server()?)))
        else {
            return;
        };
        // The leader read the shell's start time right after the spawn: no second /proc read.
        let record = JobRecord::new(
            &job.info(),
            job.leader.start,
            spec.env.keys().cloned().collect(),
            server.clone(),
        );
        match store.begin(&record, spare) {
            Ok(log) => {
                let mut s = lock(&job.state);
                s.term.emit_final_lines();
                s.log = Some(log);
                s.record = Some(record);
            }
            Err(e) => tracing::warn!("job {} is kept in memory only: {e}", job.id),
        }
        // The next job's directory, made while nobody waits for it.
        let store = Arc::clone(store);
        inner.runtime.spawn_blocking(move || store.prepare_spare());
    }
}

/// Checks a spec before anything is started: the command, the environment, the size and the
/// working directory. Returns the size and directory to use.
fn validate(cfg: &EngineConfig, spec: &JobSpec) -> Result<(u16, u16, PathBuf)> {
    if spec.command.trim().is_empty() {
        return Err(Error::InvalidArgument(
            "command is empty: give a shell command".into(),
        ));
    }
    if spec.command.contains('\0') {
        return Err(Error::InvalidArgument("command contains a NUL byte".into()));
    }
    for (k, v) in &spec.env {
        if k.is_empty() || k.contains(['=', '\0']) || v.contains('\0') {
            return Err(Error::InvalidArgument(format!(
                "invalid environment variable {k:?}"
            )));
        }
    }
    let cols = check_size("cols", spec.cols.unwrap_or(cfg.cols))?;
    let rows = check_size("rows", spec.rows.unwrap_or(cfg.rows))?;
    let cwd = match &spec.cwd {
        Some(dir) => {
            if !dir.is_dir() {
                return Err(Error::InvalidArgument(format!(
                    "cwd {} does not exist or is not a directory",
                    dir.display()
                )));
            }
            dir.clone()
        }
        None => std::env::current_dir()?,
    };
    Ok((cols, rows, cwd))
}

/// Opens a job's lane when dropped: once the job is complete, or when `execute` gave up on it
/// (then its child was killed, and the reactor reaps it and ends the job).
struct Gate(Arc<Lane>);

impl Drop for Gate {
    fn drop(&mut self) {
        self.0.open();
    }
}

/// A reserved running slot; released when dropped unless a started job took it over.
struct Slot<'a> {
    inner: &'a Inner,
    held: bool,
}

impl<'a> Slot<'a> {
    fn reserve(inner: &'a Inner) -> Result<Self> {
        let mut t = lock(&inner.table);
        if t.running >= inner.config.max_running {
            return Err(Error::LimitReached(format!(
                "{} jobs are running (the maximum); kill or wait for one first",
                t.running
            )));
        }
        t.running += 1;
        Ok(Self { inner, held: true })
    }

    /// The job now holds the slot; its end releases it.
    fn disarm(mut self) {
        self.held = false;
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        if self.held {
            let mut t = lock(&self.inner.table);
            t.running = t.running.saturating_sub(1);
        }
    }
}

/// A child just spawned whose reader has not taken it over: killed (through the kill path:
/// it is our unreaped child) and reaped when dropped, so a failed start leaves no process
/// and no zombie.
struct ChildGuard {
    id: JobId,
    leader: Arc<Leader>,
    armed: bool,
}

impl ChildGuard {
    fn new(id: JobId, pid: u32, tree: crate::sys::tree::Tree, start: Option<u64>) -> Self {
        Self {
            id,
            leader: Arc::new(Leader::new(pid, tree, start)),
            armed: true,
        }
    }

    fn disarm(mut self) {
        self.armed = false;
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        kill::signal_now(
            &[Target::own(self.id, &self.leader)],
            crate::sys::sig::SIGKILL,
        );
        spawn::reap_abandoned(&self.leader);
    }
}

/// When a kept job's TTL runs out, counted from now (its start).
fn keep_until(spec: &JobSpec) -> Option<chrono::DateTime<Utc>> {
    let ttl = spec.keep_ttl.filter(|_| spec.keep)?;
    Some(Utc::now() + chrono::TimeDelta::from_std(ttl).ok()?)
}

/// The job's own environment with `PORT` set to the `auto_port` port (when it is not set
/// already: an explicit `PORT` is the port, see [`crate::ports::auto_port`]).
fn with_port(
    env: &std::collections::BTreeMap<String, String>,
    port: Option<u16>,
) -> std::borrow::Cow<'_, std::collections::BTreeMap<String, String>> {
    match port {
        Some(p) if !env.contains_key("PORT") => {
            let mut env = env.clone();
            env.insert("PORT".into(), p.to_string());
            std::borrow::Cow::Owned(env)
        }
        _ => std::borrow::Cow::Borrowed(env),
    }
}

/// The trampoline and sandbox of a job naming `profile` (`None`: the default), and its policy
/// answer with its watched files hashed now, before it starts; `None` without a policy.
fn sandbox_of(
    cfg: &EngineConfig,
    profile: Option<&str>,
    id: JobId,
) -> Result<
    Option<(
        PathBuf,
        crate::sys::sandbox::SandboxSpec,
        crate::policy::Watched,
    )>,
> {
    let Some(policy) = &cfg.policy else {
        return match profile {
            Some(p) => Err(Error::InvalidArgument(format!(
                "profile {p:?} was given, but the server runs without a policy"
            ))),
            None => Ok(None),
        };
    };
    let program = cfg.program.clone().ok_or_else(|| {
        Error::Spawn("the server has a policy but no program to run its sandbox".into())
    })?;
    let tmpdir = std::env::temp_dir().join(format!("ptyjobs-{id}"));
    let job = policy.for_job(profile, &cfg.shell, tmpdir)?;
    let watched =
        crate::policy::Watched::start(job.report, &job.watch, job.spec.tmpdir.clone(), job.file);
    Ok(Some((program, job.spec, watched)))
}
