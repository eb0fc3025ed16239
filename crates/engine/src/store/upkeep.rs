//! Upkeep of the state directory: spare job directories made ahead, retention, removal.

use std::time::Duration;

use chrono::Utc;

use super::{META, PruneReport, Spare, Store};
use crate::error::{Error, Result};
use crate::job::JobId;
use crate::kill::{self, Target};

impl Store {
    /// The upkeep a server runs at start and then periodically, off its runtime: reading every
    /// record takes over those of gone servers (`running` ones become `killed`, "server
    /// stopped"), the retention limits apply, forgotten spares go, and a spare is made ready.
    pub fn maintain(&self) -> PruneReport {
        self.take_over();
        let report = self.prune();
        self.sweep_spares();
        self.prepare_spare();
        report
    }

    /// Takes over the `running` records of servers that are gone (a server only; a reader
    /// never does): whatever is left of those jobs is ended through the one kill path —
    /// SIGKILL, to processes proven to be the job's only (see [`crate::kill`]) — and each
    /// record is rewritten as `killed` ("server stopped"). The hang-up of their terminal ended
    /// nearly all of them with their server; this ends the ones that ignored it.
    pub(crate) fn take_over(&self) {
        if self.server.is_none() {
            return;
        }
        let orphans: Vec<_> = self
            .records_uncached()
            .into_iter()
            .filter(|j| j.orphaned)
            .collect();
        if orphans.is_empty() {
            return;
        }
        let targets: Vec<Target> = orphans
            .iter()
            .map(|j| Target::recorded(j.record.id, j.record.process))
            .collect();
        kill::end(&targets, crate::sys::sig::SIGKILL, Duration::ZERO);
        for job in &orphans {
            if let Err(e) = self.write_record(&job.record) {
                tracing::warn!("cannot update the record of job {}: {e}", job.record.id);
            }
        }
    }

    /// Gives back a spare taken for a job that did not start.
    pub(crate) fn put_back_spare(&self, spare: Spare) {
        let mut slot = crate::manager::lock(&self.spare);
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
        crate::manager::lock(&self.indexes).remove(&id);
        crate::manager::lock(&self.finals).remove(&id);
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
        let mut report = PruneReport::default();
        let jobs = self.records_uncached();
        let mut total: u64 = jobs.iter().map(|j| self.job_size(j.record.id)).sum();
        let mut finished = jobs.iter().filter(|j| j.record.status.is_final()).count();
        let now = Utc::now();
        let max_age =
            chrono::Duration::from_std(self.cfg.keep_age).unwrap_or(chrono::Duration::MAX);
        // Oldest first: `records` is newest first.
        for job in jobs.iter().rev() {
            let r = &job.record;
            let removable = r.status.is_final()
                && (!job.owner_alive
                    || self.server.as_ref() == Some(&r.server)
                    || self.server.is_none());
            if !removable {
                continue;
            }
            let ended = r.finished.unwrap_or(r.started);
            let over = finished > self.cfg.keep_jobs
                || now - ended > max_age
                || total > self.cfg.keep_bytes;
            if !over {
                continue;
            }
            match self.remove_dir(r.id) {
                Ok(size) => {
                    total = total.saturating_sub(size);
                    finished -= 1;
                    report.removed.push(r.id);
                    report.bytes += size;
                }
                Err(e) => tracing::warn!("cannot prune job {}: {e}", r.id),
            }
        }
        report
    }
}
