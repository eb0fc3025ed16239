//! Following a job's transcript: its final lines from a line on, each handed out once, as
//! they become final, then the rest when the job has ended.
//!
//! A line is *final* once it has scrolled off the emulated screen or was cleared from it (the
//! `final_lines` boundary of every read): it will never change again. Lines still on screen
//! (a prompt waiting for input) are handed out only when the job has ended, in one last
//! chunk. Every read goes through the manager's one read path ([`JobManager::output`]), so a
//! follow reads memory, the disk log and a stored job's files exactly as `output` does.
//!
//! A job this manager runs is followed through its change notifications; a job known only
//! from the state directory (another live server's, or one that has ended) through its record,
//! looked at every [`POLL`]. A reader of the state directory without a manager (the
//! `ptyjobs logs -f` command) follows through [`Store::follow`], the same way.

use std::time::Duration;

use tokio::sync::watch;

use crate::error::Result;
use crate::job::JobId;
use crate::manager::{Found, JobEvent, JobManager};
use crate::output::OutputSlice;
use crate::store::Store;

/// How often a job known only from the state directory is looked at.
pub const POLL: Duration = Duration::from_millis(100);

/// Most lines handed out in one chunk.
const CHUNK_LINES: u64 = 10_000;

/// Lines a [`Follow`] hands out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Followed {
    /// Absolute number of the first line.
    pub first_line: u64,
    /// Lines in `text`.
    pub line_count: u64,
    /// The lines: while the job runs, each final line followed by `\n`; the last chunk (the
    /// lines left when the job ended) joined by `\n`, without one after the last.
    pub text: String,
    /// This is the last chunk: the job has ended.
    pub last: bool,
}

/// How a follow learns that the job changed.
enum Changes {
    /// The job's change notifications (a job this manager runs).
    Events(watch::Receiver<JobEvent>),
    /// The notifications ended: the job has ended (or was forgotten).
    Gone,
    /// A job known only from the state directory: its record, every [`POLL`].
    Poll,
}

/// Where a follow reads: a manager's one read path, or a state directory's reader.
enum Source<'a> {
    Manager(JobManager),
    Store(&'a Store),
}

impl Source<'_> {
    fn output(&self, id: JobId, offset: Option<u64>, limit: Option<usize>) -> Result<OutputSlice> {
        match self {
            Self::Manager(jobs) => jobs.output(id, offset, limit),
            Self::Store(store) => store.output(&store.load(id)?, offset, limit),
        }
    }

    fn ended(&self, id: JobId) -> Result<bool> {
        Ok(match self {
            Self::Manager(jobs) => jobs.status(id)?.status.is_final(),
            Self::Store(store) => store.load(id)?.record.status.is_final(),
        })
    }
}

/// A stream of one job's final lines (see the module docs), made by [`JobManager::follow`]
/// (then `'static`) or [`Store::follow`].
///
/// [`Self::next`] waits for the next chunk; [`Self::try_next`] hands out what is there now,
/// for a caller with its own wake-ups. Dropping a follow ends it.
pub struct Follow<'a> {
    source: Source<'a>,
    id: JobId,
    /// Number of the next line to hand out; `None` before the first read (then the first
    /// line still held).
    next: Option<u64>,
    changes: Changes,
    ended: bool,
}

impl JobManager {
    /// Follows job `id` from line `from` (by default the first line still held in memory):
    /// see [`Follow`].
    ///
    /// # Errors
    /// [`crate::Error::JobNotFound`].
    pub fn follow(&self, id: JobId, from: Option<u64>) -> Result<Follow<'static>> {
        let changes = match self.inner.find(id)? {
            Found::Live(job) => Changes::Events(job.events.subscribe()),
            Found::Stored(_) => Changes::Poll,
        };
        Ok(Follow {
            source: Source::Manager(self.clone()),
            id,
            next: from,
            changes,
            ended: false,
        })
    }
}

impl Store {
    /// Follows job `id` of this state directory from line `from` (by default its first
    /// line), through its record and its files, looked at every [`POLL`]: see [`Follow`].
    ///
    /// # Errors
    /// [`crate::Error::JobNotFound`].
    pub fn follow(&self, id: JobId, from: Option<u64>) -> Result<Follow<'_>> {
        self.load(id)?;
        Ok(Follow {
            source: Source::Store(self),
            id,
            next: from,
            changes: Changes::Poll,
            ended: false,
        })
    }
}

impl Follow<'_> {
    /// The job followed.
    pub fn id(&self) -> JobId {
        self.id
    }

    /// Whether the last chunk was handed out (or the job has ended with nothing left).
    pub fn ended(&self) -> bool {
        self.ended
    }

    /// The next chunk, waiting for one; `None` once the job has ended and everything was
    /// handed out.
    ///
    /// # Errors
    /// As [`JobManager::output`] (the job was forgotten, a disk log cannot be read).
    pub async fn next(&mut self) -> Result<Option<Followed>> {
        loop {
            if let Some(chunk) = self.try_next()? {
                return Ok(Some(chunk));
            }
            if self.ended {
                return Ok(None);
            }
            self.changed().await;
        }
    }

    /// The final lines not handed out yet, at most a chunk of them, without waiting; or, once
    /// the job has ended, the rest. `None` when there is nothing new now (or ever, see
    /// [`Self::ended`]).
    ///
    /// # Errors
    /// As [`JobManager::output`].
    pub fn try_next(&mut self) -> Result<Option<Followed>> {
        if self.ended {
            return Ok(None);
        }
        // Whether the job has ended is looked at first: once it has, everything it printed is
        // in memory or in its log (its writer flushes the log before it marks the end).
        let finished = match &mut self.changes {
            Changes::Events(rx) => rx.borrow_and_update().finished,
            Changes::Gone => true,
            Changes::Poll => self.source.ended(self.id)?,
        };
        if finished {
            self.ended = true;
            let rest = self.source.output(self.id, self.next, None)?;
            self.next = Some(rest.next_offset);
            return Ok((!rest.output.is_empty()).then_some(Followed {
                first_line: rest.first_line,
                line_count: rest.line_count,
                text: rest.output,
                last: true,
            }));
        }
        let probe = self.source.output(self.id, Some(u64::MAX), Some(0))?;
        if probe.status.is_final() {
            // Ended since the look above: the next call hands out the rest.
            self.changes = Changes::Gone;
            return self.try_next();
        }
        let (boundary, held) = (probe.final_lines, probe.dropped_lines);
        let start = self.next.unwrap_or(0).max(held);
        if start >= boundary {
            return Ok(None);
        }
        let want = usize::try_from((boundary - start).min(CHUNK_LINES)).unwrap_or(usize::MAX);
        let slice = self.source.output(self.id, Some(start), Some(want))?;
        // Lines evicted since the probe move the slice later: never pass `boundary`.
        let keep = boundary
            .saturating_sub(slice.first_line)
            .min(slice.line_count);
        if keep == 0 {
            self.next = Some(boundary);
            return Ok(None);
        }
        let mut text = if keep < slice.line_count {
            slice
                .output
                .split('\n')
                .take(usize::try_from(keep).unwrap_or(usize::MAX))
                .collect::<Vec<_>>()
                .join("\n")
        } else {
            slice.output
        };
        text.push('\n');
        self.next = Some(slice.first_line + keep);
        Ok(Some(Followed {
            first_line: slice.first_line,
            line_count: keep,
            text,
            last: false,
        }))
    }

    /// Waits until the job has changed since the last [`Self::try_next`] (at once when it
    /// has ended; every [`POLL`] for a job known only from the state directory).
    pub async fn changed(&mut self) {
        if self.ended {
            return;
        }
        match &mut self.changes {
            Changes::Events(rx) => {
                if rx.changed().await.is_err() {
                    self.changes = Changes::Gone;
                }
            }
            Changes::Gone => {}
            Changes::Poll => tokio::time::sleep(POLL).await,
        }
    }
}
