//! Reads within a byte budget, and reads off the async runtime.
//!
//! [`JobManager::output_within`] and [`JobManager::tail_within`] clamp the range they read to
//! `max_bytes` *before* reading, from memory and from the disk log alike (see
//! [`crate::output::window`]): a huge `limit` costs the budget, not the transcript. The
//! `*_async` variants run the read (which may read a stored job's files, or search a 100 MB
//! log) on the runtime's blocking pool, so a slow read never holds an async worker and never
//! delays another call.

use std::ops::ControlFlow;

use regex::Regex;

use crate::error::{Error, Result};
use crate::job::JobId;
use crate::manager::{Found, JobManager};
use crate::output::OutputSlice;
use crate::output::window::{Captured, read_window};
use crate::search::SearchResult;
use crate::sync::lock;

impl JobManager {
    /// [`Self::output`] within `max_bytes` of text: a range that does not fit keeps its head
    /// and tail lines around a marker line, and `omitted_lines` / `omitted_bytes` /
    /// `omitted_from` say what was left out. Only what is kept is read or copied.
    ///
    /// # Errors
    /// [`Error::JobNotFound`]; [`Error::Io`] when a disk log cannot be read.
    pub fn output_within(
        &self,
        id: JobId,
        offset: Option<u64>,
        limit: Option<usize>,
        max_bytes: usize,
    ) -> Result<OutputSlice> {
        let job = match self.inner.find(id)? {
            Found::Live(job) => job,
            Found::Stored(job) => {
                return self
                    .store_or_not_found(id)?
                    .output_within(&job, offset, limit, max_bytes);
            }
        };
        let want = limit.map_or(u64::MAX, |l| l as u64);
        // What memory holds, and the part of the range it holds, copied within the budget
        // while the job's lock is held; the disk is read after it is released.
        let (meta, on_disk, mut held, first, disk_to) = {
            let mut s = lock(&job.state);
            let on_disk = s.log.as_mut().map_or(0, |log| {
                log.flush();
                log.lines()
            });
            let status = s.status;
            // An empty read at the end: the counts, nothing copied.
            let meta = s.term.slice(Some(u64::MAX), Some(0), status);
            let (end, dropped) = (meta.total_lines, meta.dropped_lines);
            let requested = offset.unwrap_or(dropped).min(end);
            let from_disk = self.inner.store.is_some()
                && offset.is_some()
                && requested < dropped
                && requested < on_disk;
            let (first, disk_to, mem_from) = if from_disk {
                let gap_end = dropped.min(on_disk);
                let disk_to = gap_end.min(requested.saturating_add(want));
                // Memory's lines follow only when the disk reached them (a capped log may
                // stop short).
                let mem_from = if gap_end == dropped { dropped } else { end };
                (requested, disk_to, mem_from)
            } else {
                let from = requested.max(dropped);
                (from, from, from)
            };
            let mem_to = end.min(first.saturating_add(want)).max(mem_from);
            let held = Captured::capture(max_bytes.saturating_add(1), |f| {
                s.term.visit_lines(mem_from, |n, line| {
                    if n >= mem_to {
                        return ControlFlow::Break(());
                    }
                    f(line);
                    ControlFlow::Continue(())
                });
            });
            (meta, on_disk, held, first, disk_to)
        };
        let window = match (&self.inner.store, disk_to > first) {
            (Some(store), true) => store.with_log_run(id, first, disk_to.min(on_disk), |log| {
                read_window(&mut [log, &mut held], first, max_bytes)
            })?,
            _ => read_window(&mut [&mut held], first, max_bytes)?,
        };
        let next_offset = first + window.line_count;
        let requested = offset.unwrap_or(meta.dropped_lines).min(meta.total_lines);
        Ok(OutputSlice {
            bytes: window.output.len() as u64,
            output: window.output,
            first_line: first,
            line_count: window.line_count,
            next_offset,
            total_lines: meta.total_lines,
            dropped_lines: meta.dropped_lines,
            final_lines: meta.final_lines,
            truncated: first > requested || next_offset < meta.total_lines,
            omitted_lines: window.omitted_lines,
            omitted_bytes: window.omitted_bytes,
            omitted_from: window.omitted_from,
            status: meta.status,
        })
    }

    /// The last `lines` lines within `max_bytes` of text (see [`Self::output_within`]).
    ///
    /// # Errors
    /// [`Error::JobNotFound`]; [`Error::Io`] when a disk log cannot be read.
    pub fn tail_within(&self, id: JobId, lines: usize, max_bytes: usize) -> Result<OutputSlice> {
        let total = match self.inner.find(id)? {
            Found::Live(job) => lock(&job.state).term.total_lines(),
            Found::Stored(job) => {
                return self
                    .store_or_not_found(id)?
                    .tail_within(&job, lines, max_bytes);
            }
        };
        let from = total.saturating_sub(lines as u64);
        let mut slice = self.output_within(id, Some(from), None, max_bytes)?;
        slice.truncated = false;
        Ok(slice)
    }

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

    /// [`Self::status`] without blocking the caller's async worker: a job in memory whose lock
    /// is free is answered at once (a snapshot of a few fields: a hop to the blocking pool
    /// would cost more than the answer); a stored job's record is read on the blocking pool,
    /// and so is a job whose lock is held (it may be writing its final record).
    ///
    /// # Errors
    /// As [`Self::status`].
    pub async fn status_async(&self, id: JobId) -> Result<crate::job::JobInfo> {
        let live = lock(&self.inner.table).jobs.get(&id).cloned();
        if let Some(info) = live.and_then(|job| job.try_info()) {
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

    fn store_or_not_found(&self, id: JobId) -> Result<&crate::store::Store> {
        self.inner.store.as_deref().ok_or(Error::JobNotFound(id))
    }
}
