//! Reading a stored job's transcript and screen: its disk log, then the lines it still had on
//! screen when it last went quiet. Files are opened through the job's directory handle, never
//! through a link; reads are bounded (see [`crate::output::window`]).

use std::fs::File;
use std::ops::ControlFlow;

use super::disk_run::DiskRun;
use super::{LOG, MAX_RECORD_BYTES, SCREEN, SavedScreen, Store, StoredJob};
use crate::error::{Error, Result};
use crate::job::JobId;
use crate::output::OutputSlice;
use crate::output::window::{Captured, LineRun, Plan, Start, read_window};
use crate::terminal::ScreenSnapshot;

impl Store {
    /// The job's log, opened without following a link.
    fn open_log(&self, id: JobId) -> std::io::Result<File> {
        self.job_dir(id)?.open_read(LOG)
    }

    /// Complete lines in the job's disk log.
    ///
    /// # Errors
    /// [`Error::Io`] when the log cannot be read.
    pub fn log_lines(&self, id: JobId) -> Result<u64> {
        let file = self.open_log(id)?;
        let mut indexes = crate::sync::lock(&self.indexes);
        Ok(indexes.entry(id).or_default().update(&file)?)
    }

    /// Lines `from..from+limit` of the job's disk log. Every line asked for is read: callers
    /// ask for bounded chunks (see [`Self::log_window`] for a read within a byte budget).
    ///
    /// # Errors
    /// [`Error::Io`] when the log cannot be read.
    pub fn read_log(&self, id: JobId, from: u64, limit: usize) -> Result<Vec<String>> {
        let file = match self.open_log(id) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e.into()),
        };
        let mut indexes = crate::sync::lock(&self.indexes);
        let index = indexes.entry(id).or_default();
        index.update(&file)?;
        Ok(index.read(&file, from, limit)?)
    }

    /// Runs `read` over log lines `from..to` as a [`LineRun`] (an empty one without a log).
    pub(crate) fn with_log_run<T>(
        &self,
        id: JobId,
        from: u64,
        to: u64,
        read: impl FnOnce(&mut dyn LineRun) -> std::io::Result<T>,
    ) -> Result<T> {
        let file = match self.open_log(id) {
            Ok(f) => Some(f),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(e.into()),
        };
        let mut indexes = crate::sync::lock(&self.indexes);
        let index = indexes.entry(id).or_default();
        match &file {
            Some(file) => {
                index.update(file)?;
                Ok(read(&mut DiskRun::new(file, index, from, to))?)
            }
            None => Ok(read(&mut Captured::default())?),
        }
    }

    /// The lines a job not yet finished by its server still had on screen when it last went
    /// quiet. `None` once its final record holds the screen: the log then has every line.
    pub fn saved_screen(&self, job: &StoredJob) -> Option<SavedScreen> {
        if job.record.screen.is_some() {
            return None;
        }
        let text = self
            .job_dir(job.record.id)
            .and_then(|d| d.read(SCREEN, MAX_RECORD_BYTES))
            .ok()?;
        serde_json::from_slice(&text).ok()
    }

    /// The saved screen's lines after the log's `log_lines` (lines of it the log has since
    /// taken are skipped).
    fn screen_after_log(&self, job: &StoredJob, log_lines: u64) -> Vec<String> {
        self.saved_screen(job).map_or_else(Vec::new, |s| {
            let taken = usize::try_from(log_lines.saturating_sub(s.first_line)).unwrap_or(0);
            s.lines.into_iter().skip(taken).collect()
        })
    }

    fn log_len(&self, id: JobId) -> Result<u64> {
        match self.log_lines(id) {
            Ok(n) => Ok(n),
            Err(Error::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => Ok(0),
            Err(e) => Err(e),
        }
    }

    /// Lines `offset..offset+limit` of a stored job's transcript: its log, then the lines that
    /// were still on screen. Numbers are the same as when the job was in memory. Every line
    /// asked for is read (see [`Self::output_within`] for a read within a byte budget).
    ///
    /// # Errors
    /// [`Error::Io`] when the log cannot be read.
    pub fn output(
        &self,
        job: &StoredJob,
        offset: Option<u64>,
        limit: Option<usize>,
    ) -> Result<OutputSlice> {
        self.output_within(job, offset, limit, usize::MAX)
    }

    /// [`Self::output`] within `max_bytes` of text: the range is clamped to what the budget
    /// can carry *before* anything is read (its head and tail lines around a marker line, with
    /// `omitted_lines`, `omitted_bytes` and `omitted_from` saying what was left out), so a
    /// huge `limit` over a huge log costs the budget, not the log.
    ///
    /// # Errors
    /// [`Error::Io`] when the log cannot be read.
    pub fn output_within(
        &self,
        job: &StoredJob,
        offset: Option<u64>,
        limit: Option<usize>,
        max_bytes: usize,
    ) -> Result<OutputSlice> {
        let plan = self.plan(job, Start::Offset(offset), limit)?;
        self.read_plan(job.record.id, plan.map_held(Captured::of_lines), max_bytes)
    }

    /// Plans a read of a stored job's transcript (see [`Plan`]): the log's lines, then those
    /// of its saved screen the log has not taken (held: the screen's lines in the range).
    pub(crate) fn plan(
        &self,
        job: &StoredJob,
        start: Start,
        limit: Option<usize>,
    ) -> Result<Plan<Vec<String>>> {
        let log_lines = self.log_len(job.record.id)?;
        let screen = self.screen_after_log(job, log_lines);
        let end = log_lines + screen.len() as u64;
        let requested = match start {
            Start::Offset(offset) => offset.unwrap_or(0).min(end),
            Start::Last(n) => end.saturating_sub(n as u64),
        };
        let available = end - requested;
        let to = requested + limit.map_or(available, |l| (l as u64).min(available));
        let skip = usize::try_from(requested.saturating_sub(log_lines)).unwrap_or(usize::MAX);
        let take = usize::try_from(to.saturating_sub(log_lines.max(requested))).unwrap_or(0);
        Ok(Plan {
            requested,
            first: requested,
            disk_to: to.min(log_lines),
            held: screen.into_iter().skip(skip).take(take).collect(),
            tail: matches!(start, Start::Last(_)),
            total_lines: end,
            dropped_lines: 0,
            final_lines: if job.record.status.is_final() {
                end
            } else {
                log_lines
            },
            status: job.record.status,
            rewritten_from: None,
        })
    }

    /// Reads a planned read of job `id`: its log's part, then its held lines, within
    /// `max_bytes` (see [`crate::output::window`]).
    ///
    /// # Errors
    /// [`Error::Io`] when the log cannot be read.
    pub(crate) fn read_plan(&self, id: JobId, plan: Plan, max_bytes: usize) -> Result<OutputSlice> {
        if plan.disk_to <= plan.first {
            return Ok(plan.read_held(max_bytes)?);
        }
        let (first, disk_to) = (plan.first, plan.disk_to);
        let mut plan = plan;
        let held = &mut plan.held;
        let window = self.with_log_run(id, first, disk_to, |log| {
            read_window(&mut [log, held], first, max_bytes)
        })?;
        Ok(plan.finish(window))
    }

    /// The last `n` lines of a stored job's transcript.
    ///
    /// # Errors
    /// [`Error::Io`] when the log cannot be read.
    pub fn tail(&self, job: &StoredJob, n: usize) -> Result<OutputSlice> {
        self.tail_within(job, n, usize::MAX)
    }

    /// [`Self::tail`] within `max_bytes` of text (see [`Self::output_within`]).
    ///
    /// # Errors
    /// [`Error::Io`] when the log cannot be read.
    pub fn tail_within(&self, job: &StoredJob, n: usize, max_bytes: usize) -> Result<OutputSlice> {
        let plan = self.plan(job, Start::Last(n), None)?;
        self.read_plan(job.record.id, plan.map_held(Captured::of_lines), max_bytes)
    }

    /// Calls `f` with log lines `from..to` of job `id`, numbered, until it breaks (the part of
    /// a [`Plan`] on disk, as a search visits it): the log streamed a buffer at a time, so
    /// memory stays bounded whatever its size. No lines without a log.
    ///
    /// # Errors
    /// [`Error::Io`] when the log cannot be read.
    pub(crate) fn visit_log(
        &self,
        id: JobId,
        from: u64,
        to: u64,
        f: &mut dyn FnMut(u64, &str) -> ControlFlow<()>,
    ) -> Result<ControlFlow<()>> {
        if to <= from {
            return Ok(ControlFlow::Continue(()));
        }
        let file = match self.open_log(id) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(ControlFlow::Continue(()));
            }
            Err(e) => return Err(e.into()),
        };
        // The index is updated under the lock, then cloned: the walk itself holds no lock (a
        // search over a large log must not stall other reads).
        let index = {
            let mut indexes = crate::sync::lock(&self.indexes);
            let index = indexes.entry(id).or_default();
            index.update(&file)?;
            index.clone()
        };
        Ok(index.visit(&file, from, to, f)?)
    }

    /// The final screen of a stored job (or, for a job another server runs, its last saved
    /// lines).
    pub fn screen(&self, job: &StoredJob) -> ScreenSnapshot {
        job.record.screen.clone().unwrap_or_else(|| {
            let rows = self.saved_screen(job).map(|s| s.lines).unwrap_or_default();
            ScreenSnapshot {
                cursor_row: u16::try_from(rows.len().saturating_sub(1)).unwrap_or(0),
                cursor_col: 0,
                cols: job.record.size.0,
                height: job.record.size.1,
                alternate_screen: false,
                title: None,
                rows,
            }
        })
    }
}
