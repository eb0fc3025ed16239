//! `JobManager`: the job table behind one lock, and the only place a job's status changes
//! (`finish`). Starting a job is in [`crate::start`], ending one in [`crate::stop`] (through the
//! kill path, [`crate::kill`]).
//!
//! The order of the table lock, the jobs' locks and the locks under them is stated once, in
//! [`crate::sync`].

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use tokio::sync::watch;

use crate::config::EngineConfig;
use crate::error::{Error, Result};
use crate::job::{JobId, JobInfo};
use crate::kill::{self, Target};
use crate::pipeline::{ExitInfo, Sink};
use crate::signal;
use crate::store::{SavedScreen, Store, StoredJob};
use crate::sync::{Rank, Ranked, lock};
use crate::sys::{Leader, sig};

mod remote;
mod state;
pub(crate) use remote::Controlled;
pub(crate) use state::State;

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
    pub(crate) table: Ranked<Table>,
    /// The state directory, when jobs are persisted. Shared with the parse workers, which
    /// write a job's final record even after the manager is gone.
    pub(crate) store: Option<Arc<Store>>,
    /// The environment every job starts from, built once.
    pub(crate) base_env: Arc<crate::sys::spawn_spec::BaseEnv>,
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
    /// The port `auto_port` picked, if asked.
    pub(crate) port: Option<u16>,
    /// The job this one replaced (restart).
    pub(crate) replaces: Option<JobId>,
    /// Kept (run by the keeper), and until when (see [`JobInfo::keep_until`]).
    pub(crate) kept: bool,
    pub(crate) keep_until: Option<DateTime<Utc>>,
    /// The extra environment it was started with (in memory only: a restart reuses it).
    pub(crate) env: std::collections::BTreeMap<String, String>,
    /// Its policy and watched files, when the server has a policy.
    pub(crate) policy: Option<crate::policy::Watched>,
    pub(crate) pid: u32,
    /// The job's shell as its parent knows it: what proves the identity of what is signalled.
    pub(crate) leader: Arc<Leader>,
    pub(crate) started: DateTime<Utc>,
    pub(crate) started_at: Instant,
    pub(crate) state: Ranked<State>,
    pub(crate) events: watch::Sender<JobEvent>,
    /// Becomes true when the job is final. Separate from `events` so that waiting for the end
    /// does not wake up for every batch of output.
    pub(crate) done: watch::Sender<bool>,
    /// Everything written to the job's input goes through here, in order.
    pub(crate) input: crate::input_queue::InputQueue,
    /// Whether the job waits for input, as its reader thread last found.
    pub(crate) waiting: crate::input::InputWatch,
    /// The raw output, for attached clients.
    pub(crate) tap: crate::tap::Tap,
}

impl Job {
    pub(crate) fn info(&self) -> JobInfo {
        self.info_of(&lock(&self.state))
    }

    /// [`Self::info`] unless the job's lock is held (the reader feeding a batch, or `finish`
    /// writing the final record): for callers on an async worker, which must not wait on disk.
    pub(crate) fn try_info(&self) -> Option<JobInfo> {
        self.state.try_lock().map(|s| self.info_of(&s))
    }

    /// The snapshot of the job in state `s` (held by the caller).
    fn info_of(&self, s: &State) -> JobInfo {
        let end = s.finished().map_or_else(Instant::now, |(_, at)| at);
        JobInfo {
            id: self.id,
            name: self.name.clone(),
            command: self.command.clone(),
            cwd: self.cwd.clone(),
            pid: self.pid,
            status: s.status(),
            exit_code: match s.exit() {
                Some(ExitInfo::Code(c)) => Some(c),
                _ => None,
            },
            signal: match s.exit() {
                Some(ExitInfo::Signal(n)) => Some(signal::signal_name(n)),
                _ => None,
            },
            started: self.started,
            finished: s.finished().map(|(at, _)| at),
            duration_ms: u64::try_from(end.duration_since(self.started_at).as_millis())
                .unwrap_or(u64::MAX),
            reason: s.reason().map(str::to_owned),
            size: s.size,
            this_server: true,
            input: (!s.is_final()).then(|| self.waiting.current()).flatten(),
            ports: Vec::new(),
            port: self.port,
            replaces: self.replaces,
            kept: self.kept,
            keep_until: self.keep_until,
            policy: self.policy.as_ref().map(crate::policy::Watched::report),
        }
    }

    /// The job as the kill path proves its processes (also what its ports are looked up by).
    pub(crate) fn target(&self) -> Target {
        Target::own(self.id, &self.leader)
    }

    pub(crate) fn master(&self) -> Result<Arc<crate::sys::pty::Master>> {
        let s = lock(&self.state);
        s.master().ok_or(Error::NotRunning {
            id: self.id,
            status: s.status(),
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

impl crate::input::Probed for Job {
    fn watch(&self) -> &crate::input::InputWatch {
        &self.waiting
    }

    fn terminal(&self) -> Option<Arc<crate::sys::pty::Master>> {
        lock(&self.state).master()
    }

    fn screen(&self) -> crate::terminal::ScreenSnapshot {
        lock(&self.state).term.screen()
    }
}

/// The parse side of a job (run by the parse workers, in order, through the job's lane).
pub(crate) struct JobSink {
    pub(crate) job: Arc<Job>,
    pub(crate) manager: Weak<Inner>,
    pub(crate) store: Option<Arc<Store>>,
}

impl Sink for JobSink {
    fn data(&self, bytes: &[u8]) {
        self.job.waiting.output();
        let (replies, master) = {
            let mut s = lock(&self.job.state);
            s.term.feed(bytes);
            self.job.tap.send(bytes);
            s.log_final_lines();
            // One write per batch: readers of the log (and a crash) lag by one batch at most.
            if let Some(log) = s.log.as_mut() {
                log.flush();
            }
            (s.term.take_replies(), s.master())
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
        // New output cleared a wait: the record stops saying so (paced).
        persist_input(&self.job, store);
        let screen = {
            let s = lock(&self.job.state);
            if s.record.is_none() || s.is_final() {
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

    fn quiet_delay(&self) -> Option<Duration> {
        crate::input::quiet_delay()
    }

    fn quiet(&self, quiet: Duration) -> Option<Duration> {
        let next = crate::input::on_quiet(&*self.job, quiet);
        if let Some(store) = &self.store {
            // What the probe found reaches the record (paced).
            persist_input(&self.job, store);
        }
        next
    }

    fn drain_timeout(&self) {
        // What still holds the terminal is the job's: it ends with its shell, SIGKILL, not
        // waited for (the reader must go on draining).
        kill::signal_now(&[Target::own(self.job.id, &self.job.leader)], sig::SIGKILL);
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

/// Brings the input state of `job`'s record on disk (so that readers of the state directory —
/// `ptyjobs status`, `ptyjobs list`, another server — see what this server's callers see) up to what its watch says, when a write
/// is due (see `crate::input::Pace::due`). Blocking (a file write, about a millisecond): call it on a parse
/// worker. The write happens under the job's lock, as the final record's does, so it can never
/// land after the final record and overwrite it.
fn persist_input(job: &Job, store: &Store) {
    let wait = job.waiting.current();
    let mut s = lock(&job.state);
    if s.is_final() {
        return;
    }
    let Some(record) = s.record.as_mut() else {
        return;
    };
    if !lock(&job.waiting.pace).due(&wait, Instant::now()) {
        return;
    }
    record.info.input = wait;
    if let Err(e) = store.write_record(record) {
        tracing::warn!("cannot save the input state of job {}: {e}", job.id);
    }
}

/// Makes a job final: the one place a job leaves `running` (through [`State::finish`]).
///
/// Durable first: with a store, the final record is on disk before the final status can be
/// seen, so a status a client has seen survives a crash at any moment. The job's lock is held
/// from the first change to the last (the transition and the record write: about a
/// millisecond), so no reader ever sees a half-finished job or a final status not yet on disk, and every write to the job's directory is done
/// before it reads final (a `remove` then cannot be undone by a late write).
fn finish(job: &Job, exit: ExitInfo, store: Option<&Store>) {
    // Before the final status can be seen, so it carries the changes.
    if let Some(w) = &job.policy
        && !lock(&job.state).is_final()
    {
        w.end(job.id);
    }
    let finished = Utc::now();
    let finished_at = Instant::now();
    let mut s = lock(&job.state);
    s.term.finish();
    s.log_final_lines();
    let requested = || {
        store
            .is_some_and(|st| st.kill_requested(job.id))
            .then(|| "killed by ptyjobs kill".to_owned())
    };
    // The running phase's PTY master is dropped last, under the lock, as the job's last change.
    let Some(_master) = s.finish(exit, finished, finished_at, requested) else {
        return;
    };
    if let Some(store) = store
        && s.record.is_some()
    {
        let info = job.info_of(&s);
        // A finished job keeps no file open: hundreds of finished jobs stay listed.
        let truncated = s.log.as_mut().map(|log| {
            log.close();
            log.truncated()
        });
        let screen = s.term.screen();
        if let Some(record) = s.record.as_mut() {
            record.update(&info);
            record.log_truncated = truncated.unwrap_or(false);
            record.screen = Some(screen);
            if let Err(e) = store.write_record(record) {
                tracing::warn!("cannot save the final record of job {}: {e}", job.id);
            }
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
        let base_env = Arc::new(crate::jobenv::base(config.editor.as_deref()));
        let inner = Arc::new(Inner {
            config,
            runtime,
            table: Ranked::new(Rank::Table, Table::default()),
            store,
            base_env,
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
}

/// How often the retention limits are applied while a manager runs.
const PRUNE_EVERY: Duration = Duration::from_secs(600);
/// ... and after how many finished jobs, whichever comes first.
const UPKEEP_EVERY_JOBS: usize = 200;
