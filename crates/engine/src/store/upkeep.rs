//! Upkeep of the state directory: spare job directories made ahead, retention, removal.

use std::time::Duration;

use chrono::Utc;

use super::{LOG, META, PruneReport, Store, dir_size, private_dir, private_file, temp_path};
use crate::error::{Error, Result};
use crate::job::JobId;
use crate::kill::{self, Target};

/// A job directory made ahead of time, holding an empty log and the empty temp file its first
/// record will be written to (then renamed into place). Only files are made ahead, none is
/// kept open: opening an existing file costs a fraction of creating one.
#[derive(Debug)]
pub(crate) struct Spare {
    pub(crate) id: JobId,
}

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
        kill::end(&targets, libc::SIGKILL, Duration::ZERO);
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
            let _ = std::fs::remove_dir_all(self.job_dir(spare.id));
        }
    }

    /// Takes the job directory made ahead of time, if there is one: its id becomes the new
    /// job's, its log the job's log.
    pub(crate) fn take_spare(&self) -> Option<Spare> {
        let spare = crate::manager::lock(&self.spare).take()?;
        // Another server's sweep removes spares that waited over an hour.
        self.job_dir(spare.id).join(LOG).exists().then_some(spare)
    }

    /// Makes a job directory (and empty log) ahead of time for the next job, unless one is
    /// ready. Blocking file-system work: call it off the async runtime.
    pub(crate) fn prepare_spare(&self) {
        if crate::manager::lock(&self.spare).is_some() {
            return;
        }
        let id = JobId::new();
        let dir = self.job_dir(id);
        let made = private_dir(&dir)
            .and_then(|()| private_file(&dir.join(LOG)))
            .and_then(|_| private_file(&temp_path(&dir.join(META))))
            .map(|_| Spare { id });
        match made {
            Ok(made) => {
                let mut spare = crate::manager::lock(&self.spare);
                match *spare {
                    None => *spare = Some(made),
                    // Another caller was quicker.
                    Some(_) => {
                        drop(spare);
                        let _ = std::fs::remove_dir_all(&dir);
                    }
                }
            }
            Err(e) => {
                tracing::warn!("cannot prepare a job directory: {e}");
                let _ = std::fs::remove_dir_all(&dir);
            }
        }
    }

    /// Removes job directories without a record that are over an hour old: spares of servers
    /// that were killed. (Younger ones may be another live server's spare.)
    fn sweep_spares(&self) {
        let Ok(entries) = std::fs::read_dir(self.cfg.dir.join("jobs")) else {
            return;
        };
        let hour_ago = std::time::SystemTime::now() - Duration::from_secs(3600);
        for entry in entries.flatten() {
            let path = entry.path();
            let is_job = entry
                .file_name()
                .to_str()
                .is_some_and(|n| n.parse::<JobId>().is_ok());
            let old = entry
                .metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|t| t < hour_ago);
            if is_job && old && path.is_dir() && !path.join(META).exists() {
                let _ = std::fs::remove_dir_all(&path);
            }
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

    fn remove_dir(&self, id: JobId) -> std::io::Result<u64> {
        let dir = self.job_dir(id);
        let size = dir_size(&dir);
        crate::manager::lock(&self.indexes).remove(&id);
        crate::manager::lock(&self.finals).remove(&id);
        // Remove the record first: a directory without one is invisible to every reader.
        let _ = std::fs::remove_file(dir.join(META));
        std::fs::remove_dir_all(&dir)?;
        Ok(size)
    }

    /// Applies the retention limits: finished jobs beyond `keep_jobs`, older than `keep_age`,
    /// or beyond `keep_bytes` in all are removed, oldest first. Running jobs are never touched;
    /// a server leaves other live servers' jobs alone too, while a reader (the CLI, acting for
    /// a person) prunes finished jobs whoever ran them.
    pub fn prune(&self) -> PruneReport {
        let mut report = PruneReport::default();
        let jobs = self.records_uncached();
        let mut total: u64 = jobs
            .iter()
            .map(|j| dir_size(&self.job_dir(j.record.id)))
            .sum();
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
