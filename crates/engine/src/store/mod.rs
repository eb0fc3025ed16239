//! Durable job records: a state directory that outlives the server.
//!
//! Layout (directories 0700, files 0600):
//! ```text
//! <dir>/jobs/<id>/meta.json    the record, rewritten atomically (temp file + rename)
//! <dir>/jobs/<id>/output.log   final transcript lines, appended as they become final
//! <dir>/jobs/<id>/screen.json  the lines still on screen, with their numbers, rewritten when
//!                              the job goes quiet (removed once the log holds every line)
//! <dir>/jobs/<id>/kill-request written by `ptyjobs kill` before it signals the job
//! ```
//!
//! What is trusted on disk ([`fs`] holds the only file-system code): the state directory and
//! `jobs/` must be this user's and not writable by group or others, or the store refuses them;
//! every file is written under a random name opened `O_EXCL|O_NOFOLLOW` and renamed into place;
//! job directories are opened relative to `jobs/` without following links; removal unlinks a
//! planted link itself, never its target; records and saved screens larger than
//! [`MAX_RECORD_BYTES`] are refused unread.
//!
//! A job directory without `meta.json` is a server's spare, made ahead of time for its next
//! job (file creation costs ~80 µs apiece on a VM's disk; the record alone is then written when
//! a job starts). Readers never see it; its store removes it, and an hour-old one is swept.
//!
//! Several servers may share one directory. Each record names its owner (instance id, pid and
//! process start time); only the owner writes a record while the owner lives. A `running`
//! record whose owner is gone is shown as `killed` ("server stopped") and rewritten so by the
//! next server that opens the directory.

mod disk_run;
pub(crate) use crate::sys::fs;
mod log;
mod owner;
mod read;
mod record;
mod spare;
mod upkeep;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::error::{Error, Result};
use crate::job::{JobId, JobInfo, JobStatus};
use crate::kill::{self, Target};
use crate::signal::{KillOutcome, KillReport, Signal};

use fs::Dir;
use log::LogIndex;
pub(crate) use log::LogWriter;
pub use owner::ProcessRef;
pub use record::{JobRecord, ServerRef};
pub(crate) use spare::Spare;

/// Where and how much job history is kept on disk.
#[derive(Debug, Clone, PartialEq)]
pub struct StoreConfig {
    /// The state directory.
    pub dir: PathBuf,
    /// Most finished jobs kept; the oldest are pruned first. Default 500.
    pub keep_jobs: usize,
    /// Finished jobs older than this are pruned. Default 14 days.
    pub keep_age: Duration,
    /// Most bytes all records and logs may take together. Default 1 GiB.
    pub keep_bytes: u64,
    /// Per-job cap of the disk log; a marker line ends a log that reached it. Default 100 MiB.
    pub job_log_bytes: u64,
}

impl StoreConfig {
    /// `dir` with the default retention.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: dir.into(),
            keep_jobs: 500,
            keep_age: Duration::from_secs(14 * 24 * 3600),
            keep_bytes: 1 << 30,
            job_log_bytes: 100 << 20,
        }
    }

    /// The platform's state directory for ptyjobs: `$XDG_STATE_HOME/ptyjobs` or
    /// `~/.local/state/ptyjobs` on Linux, the local application-data directory elsewhere.
    pub fn default_dir() -> Option<PathBuf> {
        dirs::state_dir()
            .or_else(dirs::data_local_dir)
            .map(|d| d.join("ptyjobs"))
    }
}

/// A record as read from disk, with what is known of its owner now.
#[derive(Debug, Clone)]
pub struct StoredJob {
    /// The record; a `running` record whose owner is gone already reads `killed`.
    pub record: JobRecord,
    /// Whether the server that owns the job is alive now.
    pub owner_alive: bool,
    /// The record on disk still says `running` but its server is gone: it is shown as
    /// `killed` ("server stopped"), and the next server's upkeep ends whatever is left of the
    /// job (identity checked) and rewrites the record so. Reading never does either.
    pub orphaned: bool,
}

impl StoredJob {
    /// The job as callers see it; `instance` is the reader's own instance id, if it has one.
    pub fn info(&self, instance: Option<&str>) -> JobInfo {
        self.record
            .info(instance == Some(self.record.server.instance.as_str()))
    }

    /// The job as the kill path would prove its processes, while its record says running and
    /// its server is alive (what its ports are looked up by); `None` otherwise.
    pub(crate) fn target(&self) -> Option<crate::kill::Target> {
        let r = &self.record;
        (r.status == JobStatus::Running && self.owner_alive)
            .then(|| crate::kill::Target::recorded(r.id, r.process.pid, r.process.start_ticks))
    }
}

/// The lines a running job still had on its screen when it last went quiet. They follow the
/// log: line `first_line` is the first of them, numbered like every transcript line.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SavedScreen {
    /// Absolute number of `lines[0]`.
    pub first_line: u64,
    /// Absolute number of the line the cursor was on: the lines before it were complete
    /// (ended by a newline), the one at it was possibly still being written.
    pub cursor_line: u64,
    /// The lines, top to bottom, without trailing blank lines.
    pub lines: Vec<String>,
}

/// What a prune removed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PruneReport {
    /// Jobs whose record and log were removed.
    pub removed: Vec<JobId>,
    /// Bytes freed.
    pub bytes: u64,
}

/// The state directory of one server (or of a reader such as the CLI).
#[derive(Debug)]
pub struct Store {
    cfg: StoreConfig,
    /// This server; `None` for a reader, which never takes ownership of jobs.
    server: Option<ServerRef>,
    /// `<dir>/jobs`, opened once and checked: every job directory is opened relative to it.
    jobs: Dir,
    indexes: Mutex<HashMap<JobId, LogIndex>>,
    /// A job directory made ahead of time, with its empty log: starting a job then costs one
    /// file written (its record) instead of three file-system creations (~80 µs each here).
    spare: Mutex<Option<Spare>>,
    /// Set while a spare is being made: one at a time, so no second directory is made only to
    /// be removed again (and a reader of the state directory never sees two spares of ours).
    preparing: std::sync::atomic::AtomicBool,
    /// Final records already read: they never change, so listing hundreds of earlier jobs
    /// costs a directory read, not hundreds of file reads.
    finals: Mutex<HashMap<JobId, JobRecord>>,
    /// What the upkeep keeps of the final jobs it has read (a few fields each), so each
    /// upkeep reads only the records that are new since the last.
    settled: Mutex<HashMap<JobId, upkeep::Settled>>,
    /// Held while an upkeep runs: one at a time (a second would only repeat the first's work
    /// on another core).
    upkeep: Mutex<()>,
    /// Set by an upkeep asked for while another runs: the running one goes round once more,
    /// since it may have scanned before the jobs that asked for it ended.
    upkeep_again: std::sync::atomic::AtomicBool,
}

/// Instances of stores open in this process. A process that hosts several managers (a Node
/// program) knows exactly which of its own are alive; other processes are judged by pid and
/// start time.
static OPEN_HERE: Mutex<Vec<String>> = Mutex::new(Vec::new());

impl ServerRef {
    /// Whether this server still runs.
    fn is_alive(&self) -> bool {
        // Our own process needs no look at /proc: its pid cannot have been reused.
        if self.process.pid == std::process::id() {
            crate::sync::lock(&OPEN_HERE).contains(&self.instance)
        } else {
            self.process.is_alive()
        }
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        if let Some(spare) = crate::sync::lock(&self.spare).take() {
            let _ = self.jobs.remove_tree(&spare.id.to_string());
        }
        if let Some(me) = &self.server {
            crate::sync::lock(&OPEN_HERE).retain(|i| *i != me.instance);
        }
    }
}

const META: &str = "meta.json";
const LOG: &str = "output.log";
const SCREEN: &str = "screen.json";
const KILL_REQUEST: &str = "kill-request";

/// Largest `meta.json` or `screen.json` read: a record is a few KiB (a final screen of
/// 1000×1000 wide characters stays below it); a larger file is refused, not loaded.
pub(crate) const MAX_RECORD_BYTES: u64 = 16 << 20;

/// When `path` was last written (the name itself: a link is not followed).
fn mtime(path: &Path) -> Option<DateTime<Utc>> {
    std::fs::symlink_metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .map(DateTime::<Utc>::from)
}

impl Store {
    /// The write time and length of job `id`'s record file (the name itself: a link is not
    /// followed), to tell whether it changed since it was read; `None` when it cannot be read.
    pub(crate) fn record_stamp(&self, id: JobId) -> Option<(std::time::SystemTime, u64)> {
        let m = std::fs::symlink_metadata(self.job_path(id).join(META)).ok()?;
        Some((m.modified().ok()?, m.len()))
    }

    /// Opens `cfg.dir` as the store of a server: creates it (0700) and nothing more, so a
    /// server answers at once whatever the directory holds. [`Self::maintain`] does the rest.
    ///
    /// # Errors
    /// [`Error::Io`] when the directory cannot be created, or is refused: not owned by this
    /// user, or writable by group or others (the message says which and what to do).
    pub fn open(cfg: StoreConfig) -> Result<Self> {
        let jobs = Dir::open_state(&cfg.dir, true)
            .and_then(|state| state.private_sub("jobs", true, &cfg.dir.join("jobs")))
            .map_err(Error::Io)?;
        let server = ServerRef {
            instance: uuid::Uuid::new_v4().to_string(),
            process: ProcessRef::current(),
        };
        crate::sync::lock(&OPEN_HERE).push(server.instance.clone());
        let store = Self {
            server: Some(server),
            cfg,
            jobs,
            indexes: Mutex::default(),
            spare: Mutex::default(),
            preparing: std::sync::atomic::AtomicBool::new(false),
            upkeep_again: std::sync::atomic::AtomicBool::new(false),
            finals: Mutex::default(),
            settled: Mutex::default(),
            upkeep: Mutex::default(),
        };
        Ok(store)
    }

    /// Opens `cfg.dir` to read it (the CLI): nothing is created or taken over.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the directory has no job records; [`Error::Io`] when it
    /// is refused, as by [`Self::open`].
    pub fn open_reader(cfg: StoreConfig) -> Result<Self> {
        if !cfg.dir.join("jobs").is_dir() {
            return Err(Error::InvalidArgument(format!(
                "no job records in {} (no ptyjobs server has used it)",
                cfg.dir.display()
            )));
        }
        let jobs = Dir::open_state(&cfg.dir, false)
            .and_then(|state| state.private_sub("jobs", false, &cfg.dir.join("jobs")))
            .map_err(Error::Io)?;
        Ok(Self {
            cfg,
            jobs,
            server: None,
            indexes: Mutex::default(),
            spare: Mutex::default(),
            preparing: std::sync::atomic::AtomicBool::new(false),
            upkeep_again: std::sync::atomic::AtomicBool::new(false),
            finals: Mutex::default(),
            settled: Mutex::default(),
            upkeep: Mutex::default(),
        })
    }

    /// The TCP listeners of each of `jobs` (the same order) that runs and whose server is
    /// alive, from one look at the machine's listeners and one process scan for them all (see
    /// [`crate::JobInfo::ports`]); empty for the others. Blocking: reads the process table.
    pub fn ports_of(jobs: &[StoredJob]) -> Vec<Vec<crate::Listener>> {
        let mut infos: Vec<JobInfo> = jobs.iter().map(|j| j.record.info(false)).collect();
        crate::ports::fill(&mut infos, jobs.iter().map(StoredJob::target).collect());
        infos.into_iter().map(|i| i.ports).collect()
    }

    /// The settings in force.
    pub fn config(&self) -> &StoreConfig {
        &self.cfg
    }

    /// This server's instance id (`None` for a reader).
    pub fn instance(&self) -> Option<&str> {
        self.server.as_ref().map(|s| s.instance.as_str())
    }

    pub(crate) fn server(&self) -> Option<&ServerRef> {
        self.server.as_ref()
    }

    /// Where a job's directory is, for messages (never opened by this path).
    pub(crate) fn job_path(&self, id: JobId) -> PathBuf {
        self.cfg.dir.join("jobs").join(id.to_string())
    }

    /// Opens a job's directory relative to `jobs/`; a symbolic link in its place is an error,
    /// never followed. Everything a job keeps on disk goes through this handle (see [`fs`]).
    pub(crate) fn job_dir(&self, id: JobId) -> std::io::Result<Dir> {
        self.jobs.sub(&id.to_string()).map_err(|e| {
            if fs::is_link_error(&e) {
                std::io::Error::new(
                    e.kind(),
                    format!(
                        "{} is not a directory of its own (a symbolic link?): not followed",
                        self.job_path(id).display()
                    ),
                )
            } else {
                e
            }
        })
    }

    /// Writes the first record of a new job and creates its log (both through random names
    /// renamed into place); with a spare, in the directory made ahead of time.
    pub(crate) fn begin(
        &self,
        record: &JobRecord,
        spare: Option<Spare>,
    ) -> std::io::Result<LogWriter> {
        let json = serde_json::to_vec_pretty(record).map_err(std::io::Error::other)?;
        match spare {
            Some(spare) => spare.begin(&json, self.cfg.job_log_bytes),
            None => {
                let name = record.id.to_string();
                self.jobs.mkdir_new(&name)?;
                let dir = self.jobs.sub(&name)?;
                let log = LogWriter::new(dir.create_file(LOG)?, self.cfg.job_log_bytes);
                dir.write_atomic(META, &json)?;
                Ok(log)
            }
        }
    }

    /// Rewrites a job's record atomically.
    pub(crate) fn write_record(&self, record: &JobRecord) -> std::io::Result<()> {
        let json = serde_json::to_vec_pretty(record).map_err(std::io::Error::other)?;
        self.job_dir(record.id)?.write_atomic(META, &json)
    }

    /// Rewrites the job's lines still on screen (`None`: removes them).
    pub(crate) fn write_screen(&self, id: JobId, screen: Option<&SavedScreen>) {
        let result = self.job_dir(id).and_then(|dir| match screen {
            None => dir.remove_file(SCREEN),
            Some(screen) => serde_json::to_vec(screen)
                .map_err(std::io::Error::other)
                .and_then(|json| dir.write_atomic(SCREEN, &json)),
        });
        if let Err(e) = result {
            tracing::warn!("cannot save the screen of job {id}: {e}");
        }
    }

    /// Whether `ptyjobs kill` asked for this job's end (then its signal death is a kill).
    pub(crate) fn kill_requested(&self, id: JobId) -> bool {
        self.job_dir(id).is_ok_and(|dir| dir.exists(KILL_REQUEST))
    }

    /// Leaves the kill request `ptyjobs kill` writes before it signals a job (a new empty
    /// file, renamed into place: a link planted there is replaced, not written through).
    ///
    /// # Errors
    /// When the job's directory cannot be opened or the file written.
    pub(crate) fn leave_kill_request(&self, id: JobId) -> std::io::Result<()> {
        self.job_dir(id)?.write_atomic(KILL_REQUEST, b"")
    }

    /// Reads one record.
    ///
    /// # Errors
    /// [`Error::JobNotFound`] when there is none; [`Error::Io`] when it cannot be read or parsed.
    pub fn load(&self, id: JobId) -> Result<StoredJob> {
        self.load_with(id, &mut HashMap::new(), true)
    }

    /// [`Self::load`], with the liveness of servers already looked at in `alive`.
    /// Final records already cached are served from the cache; with `cache`, a final record
    /// read from disk is kept for the next reads.
    fn load_with(
        &self,
        id: JobId,
        alive: &mut HashMap<ServerRef, bool>,
        cache: bool,
    ) -> Result<StoredJob> {
        let dir = self.job_path(id);
        let cached = crate::sync::lock(&self.finals).get(&id).cloned();
        if let Some(record) = cached {
            // A final record never changes; it only goes away.
            if self.job_dir(id).is_ok_and(|d| d.exists(META)) {
                let owner_alive = self.server.as_ref() == Some(&record.server)
                    || *alive
                        .entry(record.server.clone())
                        .or_insert_with(|| record.server.is_alive());
                return Ok(StoredJob {
                    record,
                    owner_alive,
                    orphaned: false,
                });
            }
            crate::sync::lock(&self.finals).remove(&id);
            return Err(Error::JobNotFound(id));
        }
        let text = match self
            .job_dir(id)
            .and_then(|d| d.read(META, MAX_RECORD_BYTES))
        {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(Error::JobNotFound(id));
            }
            Err(e) => return Err(e.into()),
        };
        let mut record = JobRecord::from_json(&text).map_err(|e| {
            Error::Io(std::io::Error::other(format!(
                "job record {} is unreadable: {e}",
                dir.join(META).display()
            )))
        })?;
        if record.format != record::FORMAT || record.id != id {
            return Err(Error::Io(std::io::Error::other(format!(
                "job record {} has an unknown format",
                dir.join(META).display()
            ))));
        }
        let mine = self.server.as_ref() == Some(&record.server);
        let owner_alive = mine
            || *alive
                .entry(record.server.clone())
                .or_insert_with(|| record.server.is_alive());
        // A server takes over the records of gone servers in its upkeep (`take_over`); a read
        // only shows them so: reads never signal and never write.
        let orphaned = record.status == JobStatus::Running && !owner_alive;
        if orphaned {
            let last_seen = [META, LOG, SCREEN]
                .iter()
                .filter_map(|f| mtime(&dir.join(f)))
                .max()
                .unwrap_or_else(Utc::now);
            record.orphaned(last_seen);
        }
        if cache && record.status.is_final() && !orphaned {
            crate::sync::lock(&self.finals).insert(id, record.clone());
        }
        Ok(StoredJob {
            record,
            owner_alive,
            orphaned,
        })
    }

    /// Every readable record, newest first. Unreadable ones are skipped with a warning.
    pub fn records(&self) -> Vec<StoredJob> {
        self.records_except(|_| false)
    }

    /// Every readable record but those `skip` says, newest first.
    pub(crate) fn records_except(&self, skip: impl Fn(JobId) -> bool) -> Vec<StoredJob> {
        let Ok(entries) = self.jobs.entries() else {
            return Vec::new();
        };
        let mut alive = HashMap::new();
        let mut jobs: Vec<StoredJob> = entries
            .into_iter()
            .filter_map(|(name, _)| {
                let id: JobId = name.parse().ok()?;
                if skip(id) {
                    return None;
                }
                match self.load_with(id, &mut alive, true) {
                    Ok(job) => Some(job),
                    // A job being created (directory made, record not yet renamed in) or removed.
                    Err(Error::JobNotFound(_)) => None,
                    Err(e) => {
                        tracing::warn!("skipping job {id}: {e}");
                        None
                    }
                }
            })
            .collect();
        jobs.sort_by_key(|j| std::cmp::Reverse(j.record.started));
        jobs
    }

    /// Finds the one job whose id starts with `prefix` (case-insensitive), like git.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when no job or several match.
    pub fn resolve(&self, prefix: &str) -> Result<JobId> {
        let p = prefix.trim().to_ascii_lowercase();
        if p.is_empty() {
            return Err(Error::InvalidArgument("empty job id".into()));
        }
        let entries = self.jobs.entries()?;
        let matches: Vec<JobId> = entries
            .into_iter()
            .filter_map(|(name, _)| name.parse::<JobId>().ok())
            .filter(|id| id.to_string().starts_with(&p))
            // Only jobs with a record (not a server's spare directory, not a link).
            .filter(|id| self.job_dir(*id).is_ok_and(|d| d.exists(META)))
            .collect();
        match matches.as_slice() {
            [one] => Ok(*one),
            [] => Err(Error::InvalidArgument(format!(
                "no job id starts with {prefix:?}"
            ))),
            many => Err(Error::InvalidArgument(format!(
                "job id prefix {prefix:?} is ambiguous: it matches {}",
                many.iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ))),
        }
    }

    /// Kills a job for the CLI through the engine's one kill path: leaves a kill request (so
    /// its server records `killed`), then TERM, the grace (capped by
    /// [`kill::MAX_KILL_GRACE`]), KILL, each only to processes proven to be the job's. A
    /// record that is not `running` on disk is never acted on. A job whose server is gone is
    /// ended the same way and its record rewritten as `killed`.
    ///
    /// # Errors
    /// [`Error::NotRunning`] when the record is final or no process of the job is alive.
    pub fn kill(&self, id: JobId, grace: Duration) -> Result<KillReport> {
        let job = self.load(id)?;
        let r = &job.record;
        if r.status != JobStatus::Running && !job.orphaned {
            return Err(Error::NotRunning {
                id,
                status: r.status,
            });
        }
        if let Err(e) = self.leave_kill_request(id) {
            tracing::warn!("cannot leave a kill request for job {id}: {e}");
        }
        let target = Target::recorded(id, r.process.pid, r.process.start_ticks);
        let ended = kill::end(
            std::slice::from_ref(&target),
            Signal::TERM.number(),
            grace.min(kill::MAX_KILL_GRACE),
        )
        .pop()
        .unwrap_or_default();
        if job.orphaned {
            // Its server is gone: nobody else will record the end.
            if let Err(e) = self.write_record(&job.record) {
                tracing::warn!("cannot update the record of job {id}: {e}");
            }
        }
        if !ended.signalled {
            // Gone, or not provable here? The answer says which.
            let procs = crate::procs::since(std::time::Instant::now());
            if let Some(reason) = kill::why_unproven(&target, &procs, kill::Proofs::HOST) {
                return Err(Error::Unproven { id, reason });
            }
            return Err(Error::NotRunning {
                id,
                status: r.status,
            });
        }
        Ok(KillReport {
            outcome: KillOutcome::Killed,
            survivors: ended.survivors,
        })
    }
}
