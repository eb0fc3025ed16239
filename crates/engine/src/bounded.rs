//! Reads off the async runtime: the `*_async` variants run a read (which may read a stored
//! job's files, or search a 100 MB log) on the runtime's blocking pool, so a slow read never
//! holds an async worker and never delays another call. The reads themselves, within a byte
//! budget, are in [`crate::reads`].

use regex::Regex;

use crate::control::{ControlOp, SLACK, unreachable};
use crate::error::{Error, Result};
use crate::job::JobId;
use crate::manager::JobManager;
use crate::output::OutputSlice;
use crate::search::SearchResult;
use crate::sync::lock;

impl JobManager {
    /// [`Self::output_within`] on the blocking pool.
    ///
    /// # Errors
    /// As [`Self::output_within`].
    pub async fn output_async(
        &self,
        id: JobId,
        offset: Option<u64>,
        limit: Option<usize>,
        max_bytes: usize,
    ) -> Result<OutputSlice> {
        let me = self.clone();
        self.blocking(move || me.output_within(id, offset, limit, max_bytes))
            .await
    }

    /// [`Self::tail_within`] on the blocking pool.
    ///
    /// # Errors
    /// As [`Self::tail_within`].
    pub async fn tail_async(
        &self,
        id: JobId,
        lines: usize,
        max_bytes: usize,
    ) -> Result<OutputSlice> {
        let me = self.clone();
        self.blocking(move || me.tail_within(id, lines, max_bytes))
            .await
    }

    /// [`Self::search`] on the blocking pool: a search over a large disk log takes its time
    /// there, not on an async worker.
    ///
    /// # Errors
    /// As [`Self::search`].
    pub async fn search_async(
        &self,
        id: JobId,
        pattern: Regex,
        context: usize,
        max_matches: usize,
    ) -> Result<SearchResult> {
        let me = self.clone();
        self.blocking(move || me.search(id, &pattern, context, max_matches))
            .await
    }

    /// [`Self::status`] without blocking the caller's async worker: an ended job in memory whose
    /// lock is free is answered at once (a snapshot of a few fields: a hop to the blocking pool
    /// would cost more than the answer); a stored job's record is read on the blocking pool,
    /// and so is a job whose lock is held (it may be writing its final record).
    ///
    /// # Errors
    /// As [`Self::status`].
    pub async fn status_async(&self, id: JobId) -> Result<crate::job::JobInfo> {
        let live = lock(&self.inner.table).jobs.get(&id).cloned();
        // A running job's ports are a look at the process table: on the blocking pool.
        if let Some(info) = live.and_then(|job| job.try_info())
            && info.status.is_final()
        {
            return Ok(info);
        }
        let me = self.clone();
        self.blocking(move || me.status(id)).await
    }

    /// [`Self::list`] on the blocking pool (the state directory's records are read from disk).
    ///
    /// # Errors
    /// Only when the blocking task itself fails.
    pub async fn list_async(&self) -> Result<Vec<crate::job::JobInfo>> {
        let me = self.clone();
        self.blocking(move || Ok(me.list())).await
    }

    /// [`Self::screen_status`]: another live server's job already known is asked on this task
    /// (a socket round trip: no blocking-pool hop on top of it); the rest — finding an owner
    /// from a record, this manager's own jobs, stored ones — on the blocking pool.
    ///
    /// # Errors
    /// As [`Self::screen_status`].
    pub async fn screen_status_async(
        &self,
        id: JobId,
    ) -> Result<(crate::terminal::ScreenSnapshot, crate::job::JobStatus)> {
        if let Some(remote) = self.inner.known_remote(id) {
            match remote.ask(&ControlOp::Screen, SLACK).await {
                Err(e) if unreachable(&e) => {}
                live => return live,
            }
        }
        let me = self.clone();
        self.blocking(move || me.screen_status(id)).await
    }

    /// [`Self::screen`] on the blocking pool.
    ///
    /// # Errors
    /// As [`Self::screen`].
    pub async fn screen_async(&self, id: JobId) -> Result<crate::terminal::ScreenSnapshot> {
        let me = self.clone();
        self.blocking(move || me.screen(id)).await
    }

    /// Runs `f` on the runtime's blocking pool and waits for it.
    async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> Result<T> + Send + 'static,
    ) -> Result<T> {
        self.inner
            .runtime
            .spawn_blocking(f)
            .await
            .map_err(|e| Error::Io(std::io::Error::other(format!("read task failed: {e}"))))?
    }
}
