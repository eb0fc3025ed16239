//! Reading a stored job's transcript and screen: its disk log, then the lines it still had on
//! screen when it last went quiet.

use std::fs::File;

use super::{LOG, SCREEN, SavedScreen, Store, StoredJob};
use crate::error::{Error, Result};
use crate::job::JobId;
use crate::output::OutputSlice;
use crate::terminal::ScreenSnapshot;

impl Store {
    /// Complete lines in the job's disk log.
    ///
    /// # Errors
    /// [`Error::Io`] when the log cannot be read.
    pub fn log_lines(&self, id: JobId) -> Result<u64> {
        let file = File::open(self.job_dir(id).join(LOG))?;
        let mut indexes = crate::manager::lock(&self.indexes);
        Ok(indexes.entry(id).or_default().update(&file)?)
    }

    /// Lines `from..from+limit` of the job's disk log.
    ///
    /// # Errors
    /// [`Error::Io`] when the log cannot be read.
    pub fn read_log(&self, id: JobId, from: u64, limit: usize) -> Result<Vec<String>> {
        let file = match File::open(self.job_dir(id).join(LOG)) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e.into()),
        };
        let mut indexes = crate::manager::lock(&self.indexes);
        let index = indexes.entry(id).or_default();
        index.update(&file)?;
        Ok(index.read(&file, from, limit)?)
    }

    /// The lines a job not yet finished by its server still had on screen when it last went
    /// quiet. `None` once its final record holds the screen: the log then has every line.
    pub fn saved_screen(&self, job: &StoredJob) -> Option<SavedScreen> {
        if job.record.screen.is_some() {
            return None;
        }
        let text = std::fs::read(self.job_dir(job.record.id).join(SCREEN)).ok()?;
        serde_json::from_slice(&text).ok()
    }

    /// Lines `offset..offset+limit` of a stored job's transcript: its log, then the lines that
    /// were still on screen. Numbers are the same as when the job was in memory.
    ///
    /// # Errors
    /// [`Error::Io`] when the log cannot be read.
    pub fn output(
        &self,
        job: &StoredJob,
        offset: Option<u64>,
        limit: Option<usize>,
    ) -> Result<OutputSlice> {
        let id = job.record.id;
        let log_lines = match self.log_lines(id) {
            Ok(n) => n,
            Err(Error::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => 0,
            Err(e) => return Err(e),
        };
        // The saved screen continues the log; lines of it the log has since taken are skipped.
        let screen: Vec<String> = self.saved_screen(job).map_or_else(Vec::new, |s| {
            let taken = usize::try_from(log_lines.saturating_sub(s.first_line)).unwrap_or(0);
            s.lines.into_iter().skip(taken).collect()
        });
        let end = log_lines + screen.len() as u64;
        let requested = offset.unwrap_or(0).min(end);
        let available = usize::try_from(end - requested).unwrap_or(usize::MAX);
        let count = limit.map_or(available, |l| l.min(available));
        let mut lines = self.read_log(id, requested, count)?;
        let skip = usize::try_from(requested.saturating_sub(log_lines)).unwrap_or(usize::MAX);
        lines.extend(
            screen
                .into_iter()
                .skip(skip)
                .take(count.saturating_sub(lines.len())),
        );
        let output = lines.join("\n");
        Ok(OutputSlice {
            bytes: output.len() as u64,
            output,
            first_line: requested,
            line_count: lines.len() as u64,
            next_offset: requested + lines.len() as u64,
            total_lines: end,
            dropped_lines: 0,
            final_lines: if job.record.status.is_final() {
                end
            } else {
                log_lines
            },
            truncated: count < available,
            omitted_lines: 0,
            omitted_bytes: 0,
            omitted_from: None,
            status: job.record.status,
        })
    }

    /// The last `n` lines of a stored job's transcript.
    ///
    /// # Errors
    /// [`Error::Io`] when the log cannot be read.
    pub fn tail(&self, job: &StoredJob, n: usize) -> Result<OutputSlice> {
        let total = self.output(job, None, Some(0))?.total_lines;
        self.output(job, Some(total.saturating_sub(n as u64)), None)
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
