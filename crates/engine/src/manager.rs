//! `JobManager`: the job table behind one lock, and the only place a job's status changes.
//!
//! Locking: the table lock and a job's state lock are never held together except table → job
//! (the finishing path releases the job lock before it takes the table lock). No lock is held
//! across an `.await` or a blocking wait.

use std::collections::{HashMap, VecDeque};
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use tokio::sync::watch;

use crate::config::EngineConfig;
use crate::error::{Error, Result};
use crate::job::{JobId, JobInfo, JobSpec, JobStatus};
use crate::pty::{self, ExitInfo};
use crate::signal::{self, Signal};
use crate::spawn::{self, SpawnSpec};
use crate::store::{JobRecord, SavedScreen, Store, StoredJob};
use crate::terminal::Terminal;

/// A change notification of one job: sent whenever output arrives and when the job ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct JobEvent {
    /// Bytes read from the job's terminal so far.
    pub bytes: u64,
    /// The job is final (status no longer `running`, all output held).
    pub finished: bool,
}

/// Runs jobs under PTYs and keeps their records. Cheap to clone; all clones share one table.
///
/// Create it inside a tokio runtime: timers (job timeouts) run on that runtime.
#[derive(Clone)]
pub struct JobManager {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for JobManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobManager")
            .field("config", &self.inner.config)
            .finish()
    }
}

pub(crate) struct Inner {
    pub(crate) config: EngineConfig,
    pub(crate) runtime: tokio::runtime::Handle,
    pub(crate) table: Mutex<Table>,
    /// The state directory, when jobs are persisted. Shared with the reader threads, which
    /// write a job's final record even after the manager is gone.
    pub(crate) store: Option<Arc<Store>>,
}

#[derive(Default)]
pub(crate) struct Table {
    pub(crate) jobs: HashMap<JobId, Arc<Job>>,
    /// Ids in start order (oldest first), for listing.
    pub(crate) order: Vec<JobId>,
    /// Finished ids in finish order, for evicting the oldest.
    pub(crate) finished: VecDeque<JobId>,
    pub(crate) running: usize,
    /// Jobs finished since the store's last upkeep was started by count.
    pub(crate) since_upkeep: usize,
}

pub(crate) struct Job {
    pub(crate) id: JobId,
    pub(crate) name: Option<String>,
    pub(crate) command: String,
    pub(crate) cwd: PathBuf,
    pub(crate) pid: u32,
    pub(crate) started: DateTime<Utc>,
    pub(crate) started_at: Instant,
    pub(crate) state: Mutex<State>,
    pub(crate) events: watch::Sender<JobEvent>,
    /// Becomes true when the job is final. Separate from `events` so that waiting for the end
    /// does not wake up for every batch of output.
    pub(crate) done: watch::Sender<bool>,
    /// Everything written to the job's input goes through here, in order.
    pub(crate) input: crate::interact::InputQueue,
    /// Whether the job waits for input, as its reader thread last found.
    pub(crate) waiting: crate::input::InputWatch,
    /// The raw output, for attached clients.
    pub(crate) tap: crate::attach::Tap,
}

pub(crate) struct State {
    pub(crate) status: JobStatus,
    pub(crate) exit: Option<ExitInfo>,
    pub(crate) finished: Option<DateTime<Utc>>,
    pub(crate) finished_at: Option<Instant>,
    pub(crate) reason: Option<String>,
    /// Set when ptyjobs decided to end the job; the reason becomes the job's.
    pub(crate) kill_reason: Option<String>,
    pub(crate) term: Terminal,
    pub(crate) size: (u16, u16),
    /// The PTY master for writes and resizes; `None` once the job is final.
    pub(crate) master: Option<Arc<OwnedFd>>,
    /// The job's record on disk, when jobs are persisted.
    pub(crate) record: Option<JobRecord>,
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding a lock leaves plain data behind; keep serving rather than cascade.
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Job {
    pub(crate) fn info(&self) -> JobInfo {
        let s = lock(&self.state);
        let end = s.finished_at.unwrap_or_else(Instant::now);
        JobInfo {
            id: self.id,
            name: self.name.clone(),
            command: self.command.clone(),
            cwd: self.cwd.clone(),
            pid: self.pid,
            status: s.status,
            exit_code: match s.exit {
                Some(ExitInfo::Code(c)) => Some(c),
                _ => None,
            },
            signal: match s.exit {
                Some(ExitInfo::Signal(n)) => Some(signal::signal_name(n)),
                _ => None,
            },
            started: self.started,
            finished: s.finished,
            duration_ms: u64::try_from(end.duration_since(self.started_at).as_millis())
                .unwrap_or(u64::MAX),
            reason: s.reason.clone(),
            size: s.size,
            this_server: true,
            input: (!s.status.is_final())
                .then(|| self.waiting.current())
                .flatten(),
        }
    }

    pub(crate) fn master(&self) -> Result<Arc<OwnedFd>> {
        let s = lock(&self.state);
        s.master.clone().ok_or(Error::NotRunning {
            id: self.id,
            status: s.status,
        })
    }

    /// Waits until the job is final or `timeout` passes; true if final.
    pub(crate) async fn wait_final(&self, timeout: Duration) -> bool {
        let mut rx = self.done.subscribe();
        matches!(
            tokio::time::timeout(timeout, rx.wait_for(|&done| done)).await,
            Ok(Ok(_))
        )
    }
}

/// The reader thread's view of a job.
struct JobSink {
    job: Arc<Job>,
    manager: Weak<Inner>,
    store: Option<Arc<Store>>,
}

impl pty::Sink for JobSink {
    fn data(&self, bytes: &[u8]) {
        self.job.waiting.output();
        let (replies, master) = {
            let mut s = lock(&self.job.state);
            s.term.feed(bytes);
            self.job.tap.send(bytes);
            // One write per batch: readers of the log (and a crash) lag by one batch at most.
            if let Some(log) = s.term.log_mut() {
                log.flush();
            }
            (s.term.take_replies(), s.master.clone())
        };
        // The terminal's answers to queries go to the job's input, in order with other writes.
        if let Some(master) = master {
            self.job.input.reply(&master, &replies);
        }
        self.job
            .events
            .send_modify(|e| e.bytes += bytes.len() as u64);
    }

    fn idle(&self) {
        let Some(store) = &self.store else {
            return;
        };
        let screen = {
            let s = lock(&self.job.state);
            if s.record.is_none() || s.status.is_final() {
                return;
            }
            SavedScreen {
                first_line: s.term.final_end(),
                cursor_line: s.term.cursor_line(),
                lines: s.term.screen_lines(),
            }
        };
        store.write_screen(self.job.id, Some(&screen));
    }

    fn quiet(&self, quiet: Duration) -> Option<Duration> {
        crate::input::on_quiet(&self.job, quiet)
    }

    fn exited(&self, exit: ExitInfo) {
        finish(&self.job, exit, self.store.as_deref());
        if let Some(inner) = self.manager.upgrade() {
            inner.retire(self.job.id);
        }
        self.job.events.send_modify(|e| e.finished = true);
        self.job.done.send_replace(true);
    }
}

/// Makes a job final: the one place a job leaves `running`. With a store, the record on disk
/// is final before this returns (so before anyone waiting for the job wakes up).
fn finish(job: &Job, exit: ExitInfo, store: Option<&Store>) {
    let mut s = lock(&job.state);
    s.term.finish();
    s.exit = Some(exit);
    s.finished = Some(Utc::now());
    s.finished_at = Some(Instant::now());
    s.master = None;
    if s.kill_reason.is_none() && store.is_some_and(|st| st.kill_requested(job.id)) {
        s.kill_reason = Some("killed by ptyjobs kill".into());
    }
    (s.status, s.reason) = match (s.kill_reason.take(), exit) {
        (Some(reason), _) => (JobStatus::Killed, Some(reason)),
        (None, ExitInfo::Code(0)) => (JobStatus::Completed, None),
        (None, ExitInfo::Code(c)) => (JobStatus::Failed, Some(format!("exited with code {c}"))),
        (None, ExitInfo::Signal(n)) => (
            JobStatus::Failed,
            Some(format!("killed by {}", signal::signal_name(n))),
        ),
    };
    let Some(store) = store else {
        return;
    };
    // A finished job keeps no file open: hundreds of finished jobs stay listed.
    let truncated = s.term.log_mut().map(|log| {
        log.close();
        log.truncated()
    });
    let screen = s.term.screen();
    drop(s);
    let info = job.info();
    let mut s = lock(&job.state);
    if let Some(record) = s.record.as_mut() {
        record.update(&info);
        record.log_truncated = truncated.unwrap_or(false);
        record.screen = Some(screen);
        let record = record.clone();
        drop(s);
        if let Err(e) = store.write_record(&record) {
            tracing::warn!("cannot save the final record of job {}: {e}", job.id);
        }
        // Every line is in the log now; the saved screen lines would repeat them.
        store.write_screen(job.id, None);
    }
}

/// A job found by id: one this manager runs or ran, or one known only from the state directory.
pub(crate) enum Found {
    Live(Arc<Job>),
    Stored(Box<StoredJob>),
}

impl Inner {
    /// A job this manager controls. For a job known only from the state directory the error
    /// says why it cannot be controlled: it has ended, or another live server owns it.
    pub(crate) fn job(&self, id: JobId) -> Result<Arc<Job>> {
        match self.find(id)? {
            Found::Live(job) => Ok(job),
            Found::Stored(job) if job.record.status.is_final() => Err(Error::NotRunning {
                id,
                status: job.record.status,
            }),
            Found::Stored(job) => Err(Error::NotOwner {
                id,
                server_pid: job.record.server.process.pid,
            }),
        }
    }

    /// A job by id: in memory first, then in the state directory.
    pub(crate) fn find(&self, id: JobId) -> Result<Found> {
        if let Some(job) = lock(&self.table).jobs.get(&id).cloned() {
            return Ok(Found::Live(job));
        }
        match &self.store {
            Some(store) => Ok(Found::Stored(Box::new(store.load(id)?))),
            None => Err(Error::JobNotFound(id)),
        }
    }

    /// Moves a final job from the running count to the finished list, evicting the oldest
    /// finished jobs over the cap.
    fn retire(&self, id: JobId) {
        let mut t = lock(&self.table);
        t.running = t.running.saturating_sub(1);
        t.finished.push_back(id);
        t.since_upkeep += 1;
        if let Some(store) = &self.store
            && t.since_upkeep >= UPKEEP_EVERY_JOBS
        {
            // A busy server does its upkeep by the number of jobs too, so the state directory
            // never holds many more records than the retention allows.
            t.since_upkeep = 0;
            let store = Arc::clone(store);
            self.runtime.spawn_blocking(move || store.maintain());
        }
        while t.finished.len() > self.config.max_finished {
            if let Some(old) = t.finished.pop_front() {
                t.jobs.remove(&old);
                t.order.retain(|j| *j != old);
            }
        }
    }
}

pub(crate) fn check_size(what: &str, v: u16) -> Result<u16> {
    if (1..=1000).contains(&v) {
        Ok(v)
    } else {
        Err(Error::InvalidArgument(format!(
            "{what} must be between 1 and 1000, got {v}"
        )))
    }
}

impl JobManager {
    /// A manager with `config`, using the current tokio runtime for its timers.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] outside a tokio runtime.
    pub fn new(config: EngineConfig) -> Result<Self> {
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| {
            Error::InvalidArgument("JobManager::new must be called inside a tokio runtime".into())
        })?;
        Self::with_runtime(config, runtime)
    }

    /// A manager with `config` whose timers run on `runtime`.
    ///
    /// # Errors
    /// [`Error::Io`] when the configured state directory cannot be created.
    pub fn with_runtime(config: EngineConfig, runtime: tokio::runtime::Handle) -> Result<Self> {
        let store = config
            .store
            .clone()
            .map(Store::open)
            .transpose()?
            .map(Arc::new);
        let inner = Arc::new(Inner {
            config,
            runtime,
            table: Mutex::new(Table::default()),
            store,
        });
        if let Some(store) = &inner.store {
            // The store's upkeep, at once and then periodically, never in the way of a request.
            let weak = Arc::downgrade(store);
            inner.runtime.spawn(async move {
                // A moment first: the client's handshake and first requests go before upkeep.
                tokio::time::sleep(Duration::from_secs(1)).await;
                loop {
                    let Some(store) = weak.upgrade() else { return };
                    let _ = tokio::task::spawn_blocking(move || store.maintain()).await;
                    tokio::time::sleep(PRUNE_EVERY).await;
                }
            });
        }
        Ok(Self { inner })
    }

    /// The state directory, when jobs are persisted.
    pub fn store(&self) -> Option<&Store> {
        self.inner.store.as_deref()
    }

    /// The limits and defaults in force.
    pub fn config(&self) -> &EngineConfig {
        &self.inner.config
    }

    /// Starts `spec.command` under a new PTY and returns at once.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an empty command, a bad size or a `cwd` that is not a
    /// directory; [`Error::LimitReached`] when `max_running` jobs run or no PTY is left;
    /// [`Error::Spawn`] when the shell cannot be started.
    pub fn execute(&self, spec: JobSpec) -> Result<JobInfo> {
        let inner = &self.inner;
        let cfg = &inner.config;
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
        {
            let mut t = lock(&inner.table);
            if t.running >= cfg.max_running {
                return Err(Error::LimitReached(format!(
                    "{} jobs are running (the maximum); kill or wait for one first",
                    t.running
                )));
            }
            t.running += 1; // reserve the slot; released below if the spawn fails
        }
        let spawn_spec = SpawnSpec {
            shell: cfg.shell.clone(),
            command: spec.command.clone(),
            cwd: cwd.clone(),
            env: spec.env.clone(),
            cols,
            rows,
        };
        let spawned = match spawn::spawn(&spawn_spec) {
            Ok(s) => s,
            Err(e) => {
                let mut t = lock(&inner.table);
                t.running = t.running.saturating_sub(1);
                return Err(e);
            }
        };
        let master = Arc::new(spawned.master);
        let reader_fd = master.try_clone()?;
        let spare = inner.store.as_ref().and_then(|st| st.take_spare());
        let (events, _) = watch::channel(JobEvent::default());
        let (done, _) = watch::channel(false);
        let job = Arc::new(Job {
            id: spare.as_ref().map_or_else(JobId::new, |spare| spare.id),
            name: spec.name.clone(),
            command: spec.command.clone(),
            cwd,
            pid: spawned.pid,
            started: Utc::now(),
            started_at: Instant::now(),
            state: Mutex::new(State {
                status: JobStatus::Running,
                exit: None,
                finished: None,
                finished_at: None,
                reason: None,
                kill_reason: None,
                term: Terminal::new(cols, rows, cfg.transcript_bytes, cfg.max_line_bytes),
                size: (cols, rows),
                master: Some(master),
                record: None,
            }),
            events,
            done,
            input: Default::default(),
            waiting: crate::input::InputWatch::default(),
            tap: crate::attach::Tap::default(),
        });
        if let Some((store, server)) = inner.store.as_ref().and_then(|st| Some((st, st.server()?)))
        {
            let record = JobRecord::new(
                &job.info(),
                spec.env.keys().cloned().collect(),
                server.clone(),
            );
            match store.begin(&record, spare) {
                Ok(log) => {
                    let mut s = lock(&job.state);
                    s.term.set_log(log);
                    s.record = Some(record);
                }
                Err(e) => tracing::warn!("job {} is kept in memory only: {e}", job.id),
            }
            // The next job's directory, made while nobody waits for it.
            let store = Arc::clone(store);
            inner.runtime.spawn_blocking(move || store.prepare_spare());
        }
        {
            let mut t = lock(&inner.table);
            t.jobs.insert(job.id, job.clone());
            t.order.push(job.id);
        }
        let sink = JobSink {
            job: job.clone(),
            manager: Arc::downgrade(inner),
            store: inner.store.clone(),
        };
        if let Err(e) = pty::start_reader(job.pid, reader_fd, cfg.drain_timeout, sink) {
            signal::kill_jobs(&[job.pid], libc::SIGKILL);
            return Err(e);
        }
        if let Some(timeout) = spec.timeout {
            let weak = Arc::downgrade(inner);
            let id = job.id;
            inner.runtime.spawn(async move {
                tokio::time::sleep(timeout).await;
                if let Some(inner) = weak.upgrade() {
                    let grace = inner.config.kill_grace;
                    inner.kill(id, Signal::TERM, grace, "timeout").await;
                }
            });
        }
        Ok(job.info())
    }
}

/// How often the retention limits are applied while a manager runs.
const PRUNE_EVERY: Duration = Duration::from_secs(600);
/// ... and after how many finished jobs, whichever comes first.
const UPKEEP_EVERY_JOBS: usize = 200;
