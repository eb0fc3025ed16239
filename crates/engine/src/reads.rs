//! Reading jobs and forgetting them: each read serves a job from memory when this manager
//! holds it, else from the state directory (jobs of earlier runs and of other servers).

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::watch;

use crate::error::{Error, Result};
use crate::job::{JobId, JobInfo};
use crate::manager::{Found, Job, JobEvent, JobManager};
use crate::output::OutputSlice;
use crate::store::{Store, StoredJob};
use crate::sync::lock;
use crate::terminal::ScreenSnapshot;

impl JobManager {
    /// A snapshot of one job (from the state directory when not in memory).
    ///
    /// # Errors
    /// [`Error::JobNotFound`].
    pub fn status(&self, id: JobId) -> Result<JobInfo> {
        Ok(match self.inner.find(id)? {
            Found::Live(job) => job.info(),
            Found::Stored(job) => self.stored_info(&job),
        })
    }

    fn stored_info(&self, job: &StoredJob) -> JobInfo {
        job.info(self.inner.store.as_deref().and_then(Store::instance))
    }

    /// Every known job, newest first: this manager's, then (with a state directory) those of
    /// earlier runs and of other servers sharing it.
    pub fn list(&self) -> Vec<JobInfo> {
        let jobs: Vec<Arc<Job>> = {
            let t = lock(&self.inner.table);
            t.order
                .iter()
                .rev()
                .filter_map(|id| t.jobs.get(id).cloned())
                .collect()
        };
        let mut list: Vec<JobInfo> = jobs.iter().map(|j| j.info()).collect();
        if let Some(store) = &self.inner.store {
            let known: std::collections::HashSet<JobId> = list.iter().map(|j| j.id).collect();
            let stored = store.records_except(|id| known.contains(&id));
            if !stored.is_empty() {
                list.extend(stored.iter().map(|j| self.stored_info(j)));
                list.sort_by_key(|j| std::cmp::Reverse(j.started));
            }
        }
        list
    }

    /// Lines `offset..offset+limit` of the clean transcript (absolute line numbers; `offset`
    /// defaults to the first line still held in memory, `limit` to all). With a state
    /// directory, lines memory no longer holds are read from the job's disk log.
    ///
    /// # Errors
    /// [`Error::JobNotFound`]; [`Error::Io`] when a disk log cannot be read.
    pub fn output(
        &self,
        id: JobId,
        offset: Option<u64>,
        limit: Option<usize>,
    ) -> Result<OutputSlice> {
        let job = match self.inner.find(id)? {
            Found::Live(job) => job,
            Found::Stored(job) => return self.stored_in()?.output(&job, offset, limit),
        };
        let (mut slice, on_disk) = {
            let mut s = lock(&job.state);
            let on_disk = s.log.as_mut().map_or(0, |log| {
                log.flush();
                log.lines()
            });
            (s.term.slice(offset, limit, s.status), on_disk)
        };
        match (&self.inner.store, offset) {
            (Some(store), Some(from)) if from < slice.first_line && from < on_disk => {
                // Evicted from memory but on disk: read the gap from the log.
                let gap_end = slice.first_line.min(on_disk);
                let want = limit.unwrap_or(usize::MAX);
                let gap = usize::try_from(gap_end - from)
                    .unwrap_or(usize::MAX)
                    .min(want);
                let mut lines = store.read_log(id, from, gap)?;
                // Then memory's lines, if the disk reached them (a capped log may stop short).
                if gap_end == slice.first_line && slice.line_count > 0 {
                    let room = want.saturating_sub(lines.len());
                    lines.extend(slice.output.split('\n').take(room).map(str::to_owned));
                }
                let count = lines.len() as u64;
                slice.output = lines.join("\n");
                slice.bytes = slice.output.len() as u64;
                slice.first_line = from;
                slice.line_count = count;
                slice.next_offset = from + count;
                slice.truncated = slice.next_offset < slice.total_lines;
                Ok(slice)
            }
            _ => Ok(slice),
        }
    }

    /// The state directory a job found there came from.
    fn stored_in(&self) -> Result<&Store> {
        self.inner
            .store
            .as_deref()
            .ok_or_else(|| Error::InvalidArgument("no state directory".into()))
    }

    /// The last `lines` lines of the clean transcript.
    ///
    /// # Errors
    /// [`Error::JobNotFound`]; [`Error::Io`] when a disk log cannot be read.
    pub fn tail(&self, id: JobId, lines: usize) -> Result<OutputSlice> {
        match self.inner.find(id)? {
            Found::Live(job) => {
                let s = lock(&job.state);
                Ok(s.term.tail(lines, s.status))
            }
            Found::Stored(job) => self.stored_in()?.tail(&job, lines),
        }
    }

    /// The job's visible screen now (its last screen, for a job from the state directory).
    ///
    /// # Errors
    /// [`Error::JobNotFound`].
    pub fn screen(&self, id: JobId) -> Result<ScreenSnapshot> {
        match self.inner.find(id)? {
            Found::Live(job) => Ok(lock(&job.state).term.screen()),
            Found::Stored(job) => Ok(self.stored_in()?.screen(&job)),
        }
    }

    /// Waits until the job is final, or until `timeout` passes; returns its info either way.
    /// A job another server runs is watched through its record.
    ///
    /// # Errors
    /// [`Error::JobNotFound`].
    pub async fn wait(&self, id: JobId, timeout: Option<Duration>) -> Result<JobInfo> {
        match self.inner.find(id)? {
            Found::Live(job) => {
                job.wait_final(timeout.unwrap_or(Duration::MAX)).await;
                Ok(job.info())
            }
            Found::Stored(_) => {
                let deadline = timeout.map(|t| Instant::now() + t);
                loop {
                    let info = self.status_async(id).await?;
                    if info.status.is_final() || deadline.is_some_and(|d| Instant::now() >= d) {
                        return Ok(info);
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
    }

    /// A receiver of the job's change notifications.
    ///
    /// # Errors
    /// [`Error::JobNotFound`]; for a job known only from the state directory,
    /// [`Error::NotRunning`] or [`Error::NotOwner`].
    pub fn subscribe(&self, id: JobId) -> Result<watch::Receiver<JobEvent>> {
        Ok(self.inner.job(id)?.events.subscribe())
    }

    /// [`Self::remove`] on the blocking pool (a record and a log are deleted from disk).
    ///
    /// # Errors
    /// As [`Self::remove`].
    pub async fn remove_async(&self, id: JobId) -> Result<()> {
        let me = self.clone();
        tokio::task::spawn_blocking(move || me.remove(id))
            .await
            .map_err(|e| Error::Io(std::io::Error::other(format!("remove task failed: {e}"))))?
    }

    /// Forgets a finished job: removes it from the table and, with a state directory, deletes
    /// its record and log.
    ///
    /// # Errors
    /// [`Error::JobNotFound`]; [`Error::InvalidArgument`] when the job is still running;
    /// [`Error::NotOwner`] for a job of another live server.
    pub fn remove(&self, id: JobId) -> Result<()> {
        match self.inner.find(id)? {
            Found::Live(job) => {
                if !lock(&job.state).status.is_final() {
                    return Err(Error::InvalidArgument(format!(
                        "job {id} is still running: kill it first"
                    )));
                }
                {
                    let mut t = lock(&self.inner.table);
                    t.jobs.remove(&id);
                    t.order.retain(|j| *j != id);
                    t.finished.retain(|j| *j != id);
                }
                match &self.inner.store {
                    Some(store) => match store.remove(id) {
                        Err(Error::JobNotFound(_)) => Ok(()),
                        r => r,
                    },
                    None => Ok(()),
                }
            }
            Found::Stored(job) => {
                let ours =
                    self.inner.store.as_deref().and_then(Store::server) == Some(&job.record.server);
                if job.owner_alive && !ours {
                    return Err(Error::NotOwner {
                        id,
                        server_pid: job.record.server.process.pid,
                    });
                }
                self.stored_in()?.remove(id)
            }
        }
    }
}
