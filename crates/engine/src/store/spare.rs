//! Spare job directories: one made ahead of time, so that starting a job writes one file.

use std::fs::File;
use std::io::Write;
use std::time::Duration;

use super::fs::Dir;
use super::log::LogWriter;
use super::{LOG, META, Store};
use crate::job::JobId;

/// A job directory made ahead of time, holding its future log and the file its first record
/// will be written to, both under random names and kept open: starting the job writes the
/// record and renames the two into place (a link planted at either final name is replaced).
#[derive(Debug)]
pub(crate) struct Spare {
    pub(crate) id: JobId,
    dir: Dir,
    log: (String, File),
    meta: (String, File),
}

impl Spare {
    /// Writes the first record `json`, then puts the log and the record in place.
    pub(crate) fn begin(self, json: &[u8], cap: u64) -> std::io::Result<LogWriter> {
        let Self {
            dir,
            log: (log_tmp, log),
            meta: (meta_tmp, mut meta),
            ..
        } = self;
        meta.write_all(json)?;
        drop(meta);
        dir.rename(&log_tmp, LOG)?;
        dir.rename(&meta_tmp, META)?;
        Ok(LogWriter::new(log, cap))
    }
}

impl Store {
    /// Takes the job directory made ahead of time, if there is one: its id becomes the new
    /// job's, its log the job's log.
    pub(crate) fn take_spare(&self) -> Option<Spare> {
        let spare = crate::sync::lock(&self.spare).take()?;
        // Another server's sweep removes spares that waited over an hour.
        let ours = self.jobs.meta(&spare.id.to_string()).ok()?;
        let held = spare.dir.meta_self().ok()?;
        let still_there = ours.id == held.id && spare.dir.exists(&spare.log.0);
        still_there.then_some(spare)
    }

    /// Makes a job directory (and its files) ahead of time for the next job, unless one is
    /// ready. Blocking file-system work: call it off the async runtime.
    pub(crate) fn prepare_spare(&self) {
        use std::sync::atomic::Ordering;
        // Checked before the flag is taken, so the flag is held only while no spare is ready
        // (and a job can take none): a caller skipped below leaves the spare to be made.
        if crate::sync::lock(&self.spare).is_some() {
            return;
        }
        if self
            .preparing
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            // Another caller is making one.
            return;
        }
        self.make_spare();
        self.preparing.store(false, Ordering::Release);
    }

    /// [`Self::prepare_spare`]'s work, by its one caller at a time.
    fn make_spare(&self) {
        // A spare made by the flag's previous holder since the check.
        if crate::sync::lock(&self.spare).is_some() {
            return;
        }
        let id = JobId::new();
        let name = id.to_string();
        let made = self.jobs.mkdir_new(&name).and_then(|()| {
            let dir = self.jobs.sub(&name)?;
            let log = dir.create_temp(LOG)?;
            let meta = dir.create_temp(META)?;
            Ok(Spare { id, dir, log, meta })
        });
        match made {
            Ok(made) => {
                let mut spare = crate::sync::lock(&self.spare);
                match *spare {
                    None => *spare = Some(made),
                    // Not reached while the flag is held; kept so a spare is never lost.
                    Some(_) => {
                        drop(spare);
                        let _ = self.jobs.remove_tree(&name);
                    }
                }
            }
            Err(e) => {
                tracing::warn!("cannot prepare a job directory: {e}");
                let _ = self.jobs.remove_tree(&name);
            }
        }
    }

    /// Removes job directories without a record that are over an hour old: spares of servers
    /// that were killed. (Younger ones may be another live server's spare.) Only real
    /// directories are swept; a link in their place is not followed.
    pub(crate) fn sweep_spares(&self) {
        let Ok(entries) = self.jobs.entries() else {
            return;
        };
        let hour_ago = std::time::SystemTime::now() - Duration::from_secs(3600);
        let hour_ago = hour_ago
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
        for (name, _) in entries {
            if name.parse::<JobId>().is_err() {
                continue;
            }
            let Ok(meta) = self.jobs.meta(&name) else {
                continue;
            };
            if meta.is_dir
                && meta.mtime < hour_ago
                && self.jobs.sub(&name).is_ok_and(|d| !d.exists(META))
            {
                let _ = self.jobs.remove_tree(&name);
            }
        }
    }
}
