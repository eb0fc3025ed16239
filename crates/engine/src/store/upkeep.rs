//! Upkeep of the state directory: spare job directories made ahead, retention, removal.
//!
//! The upkeep runs beside requests (at start, every 10 minutes, and every 200 finished jobs of
//! a busy server), so it is kept small and sliced: a final record never changes, so each is
//! read once and then remembered as a few fields ([`Settled`]); the records still to read are
//! read in slices, and after each slice the upkeep rests as long as the slice took, so it never
//! holds a core for more than a few milliseconds at a time.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};

use super::{JobRecord, META, PruneReport, ServerRef, Spare, Store};
use crate::error::{Error, Result};
use crate::job::JobId;
use crate::kill::{self, Target};

/// Records read from disk between two rests of the upkeep.
const SLICE: usize = 32;

/// What the upkeep keeps of a final job it has read: all retention needs.
#[derive(Debug, Clone)]
pub(crate) struct Settled {
    started: DateTime<Utc>,
    ended: DateTime<Utc>,
    server: ServerRef,
    bytes: u64,
}

/// One job as the upkeep sees it.
struct Entry {
    id: JobId,
    started: DateTime<Utc>,
    /// End time of a final job (`None` while running).
    ended: Option<DateTime<Utc>>,
    server: ServerRef,
    bytes: u64,
    /// A `running` record of a server that is gone, already shown as killed: to be taken over.
    orphan: Option<JobRecord>,
}

/// Runs `work` over `items` in slices of [`SLICE`], resting after each slice as long as it
/// took (at most 50 % of a core, a few milliseconds at a time).
fn sliced<T>(items: impl IntoIterator<Item = T>, mut work: impl FnMut(T)) {
    let mut slice = Instant::now();
    for (i, item) in items.into_iter().enumerate() {
        work(item);
        if (i + 1) % SLICE == 0 {
            std::thread::sleep(slice.elapsed().min(Duration::from_millis(20)));
            slice = Instant::now();
        }
    }
}

impl Store {
    /// The upkeep a server runs at start and then periodically, off its runtime: reading every
    /// record takes over those of gone servers (`running` ones become `killed`, "server
    /// stopped"), the retention limits apply, forgotten spares go, and a spare is made ready.
    /// Blocking and sliced (see the module): call it on a blocking thread. While one runs,
    /// another call returns at once with an empty report, and the running one goes round once
    /// more when it is done (it may have scanned before the jobs that asked ended).
    pub fn maintain(&self) -> PruneReport {
        let _one_at_a_time = match self.upkeep.try_lock() {
            Ok(guard) => guard,
            // A panic in an earlier upkeep left nothing to protect: go on.
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => {
                // The running upkeep may have scanned before the jobs that asked for this one
                // ended: it goes round again, else they would wait for the next upkeep.
                self.upkeep_again.store(true, Ordering::SeqCst);
                return PruneReport::default();
            }
        };
        let mut report = PruneReport::default();
        loop {
            self.upkeep_again.store(false, Ordering::SeqCst);
            let jobs = self.scan();
            self.take_over(&jobs);
            let pruned = self.prune_scanned(&jobs);
            report.removed.extend(pruned.removed);
            report.bytes += pruned.bytes;
            if !self.upkeep_again.load(Ordering::SeqCst) {
                break;
            }
        }
        self.sweep_spares();
        self.prepare_spare();
        report
    }

    /// Every job in the directory, newest first: final ones already read come from memory,
    /// the others are read from disk in slices.
    fn scan(&self) -> Vec<Entry> {
        let Ok(names) = self.jobs.entries() else {
            return Vec::new();
        };
        let ids: Vec<JobId> = names.iter().filter_map(|(n, _)| n.parse().ok()).collect();
        let present: HashSet<JobId> = ids.iter().copied().collect();
        let mut settled = std::mem::take(&mut *crate::sync::lock(&self.settled));
        // Jobs removed by anyone since the last scan are forgotten.
        settled.retain(|id, _| present.contains(id));
        let mut jobs = Vec::with_capacity(ids.len());
        let to_read: Vec<JobId> = ids
            .into_iter()
            .filter(|id| match settled.get(id) {
                Some(s) => {
                    jobs.push(Entry {
                        id: *id,
                        started: s.started,
                        ended: Some(s.ended),
                        server: s.server.clone(),
                        bytes: s.bytes,
                        orphan: None,
                    });
                    false
                }
                None => true,
            })
            .collect();
        let mut alive = HashMap::new();
        sliced(to_read, |id| {
            let job = match self.load_with(id, &mut alive, false) {
                Ok(job) => job,
                // A spare, or a job being created or removed.
                Err(Error::JobNotFound(_)) => return,
                Err(e) => {
                    tracing::warn!("skipping job {id}: {e}");
                    return;
                }
            };
            let r = job.record;
            let bytes = self.job_size(id);
            let ended = r.status.is_final().then(|| r.finished.unwrap_or(r.started));
            if let (Some(ended), false) = (ended, job.orphaned) {
                let server = r.server.clone();
                let keep = Settled {
                    started: r.started,
                    ended,
                    server,
                    bytes,
                };
                settled.insert(id, keep);
            }
            jobs.push(Entry {
                id,
                started: r.started,
                ended,
                server: r.server.clone(),
                bytes,
                orphan: job.orphaned.then_some(r),
            });
        });
        // Removals that ran meanwhile (`remove_dir`) are kept: what they took is gone.
        let mut kept = crate::sync::lock(&self.settled);
        for (id, s) in settled {
            if self.jobs.exists(&id.to_string()) {
                kept.entry(id).or_insert(s);
            }
        }
        drop(kept);
        jobs.sort_by_key(|j| std::cmp::Reverse(j.started));
        jobs
    }

    /// Takes over the `running` records of servers that are gone (a server only; a reader
    /// never does): whatever is left of those jobs is ended through the one kill path —
    /// SIGKILL, to processes proven to be the job's only (see [`crate::kill`]) — and each
    /// record is rewritten as `killed` ("server stopped"). The hang-up of their terminal ended
    /// nearly all of them with their server; this ends the ones that ignored it.
    fn take_over(&self, jobs: &[Entry]) {
        if self.server.is_none() {
            return;
        }
        let orphans: Vec<&JobRecord> = jobs.iter().filter_map(|j| j.orphan.as_ref()).collect();
        if orphans.is_empty() {
            return;
        }
        let targets: Vec<Target> = orphans
            .iter()
            .map(|r| Target::recorded(r.id, r.process.pid, r.process.start_ticks))
            .collect();
        kill::end(&targets, crate::sys::sig::SIGKILL, Duration::ZERO);
        for record in orphans {
            if let Err(e) = self.write_record(record) {
                tracing::warn!("cannot update the record of job {}: {e}", record.id);
            }
        }
    }

    /// Gives back a spare taken for a job that did not start.
    pub(crate) fn put_back_spare(&self, spare: Spare) {
        let mut slot = crate::sync::lock(&self.spare);
        if slot.is_none() {
            *slot = Some(spare);
        } else {
            drop(slot);
            let _ = self.jobs.remove_tree(&spare.id.to_string());
        }
    }

    /// Removes a finished job's record and log.
    ///
    /// # Errors
    /// [`Error::JobNotFound`]; [`Error::InvalidArgument`] when the job is still running.
    pub fn remove(&self, id: JobId) -> Result<()> {
        let job = self.load(id)?;
        if !job.record.status.is_final() {
            return Err(Error::InvalidArgument(format!(
                "job {id} is still running: kill it first"
            )));
        }
        self.remove_dir(id)?;
        Ok(())
    }

    /// Removes a job's directory, never through a link (one in its place is unlinked itself).
    fn remove_dir(&self, id: JobId) -> std::io::Result<u64> {
        let size = self.job_size(id);
        crate::sync::lock(&self.indexes).remove(&id);
        crate::sync::lock(&self.finals).remove(&id);
        crate::sync::lock(&self.settled).remove(&id);
        // Remove the record first: a directory without one is invisible to every reader.
        if let Ok(dir) = self.job_dir(id) {
            dir.remove_file(META)?;
        }
        self.jobs.remove_tree(&id.to_string())?;
        Ok(size)
    }

    /// Bytes of a job's files (0 when its directory cannot be opened).
    fn job_size(&self, id: JobId) -> u64 {
        self.job_dir(id).map_or(0, |d| d.size())
    }

    /// Applies the retention limits: finished jobs beyond `keep_jobs`, older than `keep_age`,
    /// or beyond `keep_bytes` in all are removed, oldest first. Running jobs are never touched;
    /// a server leaves other live servers' jobs alone too, while a reader (the CLI, acting for
    /// a person) prunes finished jobs whoever ran them.
    pub fn prune(&self) -> PruneReport {
        let jobs = self.scan();
        self.prune_scanned(&jobs)
    }

    fn prune_scanned(&self, jobs: &[Entry]) -> PruneReport {
        let mut report = PruneReport::default();
        let mut total: u64 = jobs.iter().map(|j| j.bytes).sum();
        let mut finished = jobs.iter().filter(|j| j.ended.is_some()).count();
        let now = Utc::now();
        let max_age =
            chrono::Duration::from_std(self.cfg.keep_age).unwrap_or(chrono::Duration::MAX);
        let mut alive: HashMap<ServerRef, bool> = HashMap::new();
        let mut removals = Vec::new();
        // Oldest first: `jobs` is newest first.
        for job in jobs.iter().rev() {
            let Some(ended) = job.ended else { continue };
            let over = finished > self.cfg.keep_jobs
                || now - ended > max_age
                || total > self.cfg.keep_bytes;
            if !over {
                // Older jobs were kept for the same reasons, but a younger one may still be
                // over the count or the bytes: go on.
                continue;
            }
            let removable = self.server.is_none()
                || self.server.as_ref() == Some(&job.server)
                || !*alive
                    .entry(job.server.clone())
                    .or_insert_with(|| job.server.is_alive());
            if !removable {
                continue;
            }
            removals.push(job);
            total = total.saturating_sub(job.bytes);
            finished -= 1;
        }
        sliced(removals, |job| match self.remove_dir(job.id) {
            Ok(size) => {
                report.removed.push(job.id);
                report.bytes += size;
            }
            Err(e) => tracing::warn!("cannot prune job {}: {e}", job.id),
        });
        report
    }
}
