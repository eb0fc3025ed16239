//! Reading jobs and forgetting them: each read serves a job from memory when this manager
//! holds it, else from the state directory (jobs of earlier runs and of other servers).
//!
//! Every read of a transcript (`output`, `tail`, their budgeted and async forms,
//! [`crate::Follow`], and `search`) goes through one path: a [`Plan`] made where the job's
//! lines are (the one place that tells a live job from a stored one), then either one
//! windowed read of its disk part and its held part, or one visit of every line (the disk
//! part streamed) for a search. Reads never write: a job's disk log is flushed by its writer
//! as lines become final.

use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::watch;

use crate::error::{Error, Result};
use crate::job::{JobId, JobInfo, JobStatus};
use crate::manager::{Controlled, Found, Job, JobEvent, JobManager, State};
use crate::output::OutputSlice;
use crate::output::window::{Captured, Plan, Start};
use crate::store::{Store, StoredJob};
use crate::sync::{RankedGuard, lock};
use crate::terminal::ScreenSnapshot;

impl JobManager {
    /// A snapshot of one job (from the state directory when not in memory).
    ///
    /// # Errors
    /// [`Error::JobNotFound`].
    pub fn status(&self, id: JobId) -> Result<JobInfo> {
        let (info, target) = match self.inner.find(id)? {
            Found::Live(job) => (job.info(), Some(job.target())),
            Found::Stored(job) => (self.stored_info(&job), job.target()),
        };
        let mut infos = [info];
        crate::ports::fill(&mut infos, vec![target]);
        let [info] = infos;
        Ok(info)
    }

    fn stored_info(&self, job: &StoredJob) -> JobInfo {
        job.info(self.inner.store.as_deref().and_then(Store::instance))
    }

    /// Every known job, newest first: this manager's, then (with a state directory) those of
    /// earlier runs and of other servers sharing it.
    pub fn list(&self) -> Vec<JobInfo> {
        let (mut list, targets): (Vec<JobInfo>, Vec<_>) = self.known().into_iter().unzip();
        crate::ports::fill(&mut list, targets);
        list
    }

    /// [`Self::list`] without the ports, each job beside what proves its processes: for
    /// lookups by name, which must not pay a process scan (a named start does it under the
    /// names lock).
    pub(crate) fn known(&self) -> Vec<(JobInfo, Option<crate::kill::Target>)> {
        let jobs: Vec<Arc<Job>> = {
            let t = lock(&self.inner.table);
            t.order
                .iter()
                .rev()
                .filter_map(|id| t.jobs.get(id).cloned())
                .collect()
        };
        let mut list: Vec<JobInfo> = jobs.iter().map(|j| j.info()).collect();
        let mut targets: Vec<_> = jobs.iter().map(|j| Some(j.target())).collect();
        let mut others = false;
        if let Some(store) = &self.inner.store {
            let known: std::collections::HashSet<JobId> = list.iter().map(|j| j.id).collect();
            let stored = store.records_except(|id| known.contains(&id));
            if !stored.is_empty() {
                list.extend(stored.iter().map(|j| self.stored_info(j)));
                targets.extend(stored.iter().map(StoredJob::target));
                others = true;
            }
        }
        let mut known: Vec<_> = list.into_iter().zip(targets).collect();
        if others {
            known.sort_by_key(|(j, _)| std::cmp::Reverse(j.started));
        }
        known
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
        self.read(id, Start::Offset(offset), limit, usize::MAX, false)
    }

    /// [`Self::output`] within `max_bytes` of text: a range that does not fit keeps its head
    /// and tail lines around a marker line, and `omitted_lines` / `omitted_bytes` /
    /// `omitted_from` say what was left out. Only what is kept is read or copied.
    ///
    /// This is a caller's read of a live job: one from an offset that reaches the end (the
    /// last `next_offset`) starts at the first line above the offset whose text changed since
    /// a read of this kind (or an interaction) showed it — a question redrawn in place — and
    /// says so in `rewritten_from`; what it shows of lines still on screen is noted for the
    /// next. [`Self::output`] neither moves nor notes (streams of final lines use it).
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
        self.read(id, Start::Offset(offset), limit, max_bytes, true)
    }

    /// The last `lines` lines of the clean transcript.
    ///
    /// # Errors
    /// [`Error::JobNotFound`]; [`Error::Io`] when a disk log cannot be read.
    pub fn tail(&self, id: JobId, lines: usize) -> Result<OutputSlice> {
        self.read(id, Start::Last(lines), None, usize::MAX, false)
    }

    /// The last `lines` lines within `max_bytes` of text (see [`Self::output_within`]; a tail
    /// moves back and notes as a read to the end does).
    ///
    /// # Errors
    /// [`Error::JobNotFound`]; [`Error::Io`] when a disk log cannot be read.
    pub fn tail_within(&self, id: JobId, lines: usize, max_bytes: usize) -> Result<OutputSlice> {
        self.read(id, Start::Last(lines), None, max_bytes, true)
    }

    /// The one read of a transcript: planned where the job's lines are (see [`Self::locate`]),
    /// then read within `max_bytes` (see [`crate::output::window`]). Only what the budget
    /// keeps is read or copied: a live job's held lines under its lock, its disk part after
    /// the lock is released.
    fn read(
        &self,
        id: JobId,
        start: Start,
        limit: Option<usize>,
        max_bytes: usize,
        since: bool,
    ) -> Result<OutputSlice> {
        let found = self.inner.find(id)?;
        let plan = self
            .locate(&found, start, limit, since)?
            .map_held(|held| held.capture(max_bytes.saturating_add(1)));
        match &self.inner.store {
            Some(store) => store.read_plan(id, plan, max_bytes),
            None => Ok(plan.read_held(max_bytes)?),
        }
    }

    /// The one visit of a transcript: calls `f` with each line a read from `start` would
    /// cover (every line from there on), numbered, until it breaks: the plan's disk part
    /// streamed a buffer at a time (memory stays bounded whatever the log's size), then its
    /// held lines. Returns the plan (its counts and status; `held` emptied).
    ///
    /// A live job's lock is held while its memory is visited, not while its disk log is: with
    /// a disk part, lines memory lets go meanwhile are skipped.
    ///
    /// # Errors
    /// [`Error::JobNotFound`]; [`Error::Io`] when a disk log cannot be read.
    pub(crate) fn visit(
        &self,
        id: JobId,
        start: Start,
        f: &mut dyn FnMut(u64, &str) -> ControlFlow<()>,
    ) -> Result<Plan<()>> {
        let found = self.inner.find(id)?;
        let mut plan = self.locate(&found, start, None, false)?;
        if plan.disk_to > plan.first {
            plan.held.unlock();
            let store = self.stored_in()?;
            if store.visit_log(id, plan.first, plan.disk_to, f)?.is_break() {
                return Ok(plan.map_held(drop));
            }
        }
        plan.held.visit(plan.first.max(plan.disk_to), f);
        Ok(plan.map_held(drop))
    }

    /// Plans a read where the job's lines are: memory and the disk log for a job this manager
    /// runs (its held lines stay under its lock), the disk log and the saved screen for a
    /// stored job. The one place a transcript's read tells a live job from a stored one.
    fn locate<'a>(
        &self,
        found: &'a Found,
        start: Start,
        limit: Option<usize>,
        since: bool,
    ) -> Result<Plan<Held<'a>>> {
        Ok(match found {
            Found::Live(job) => self.live_plan(job, start, limit, since),
            Found::Stored(job) => self
                .stored_in()?
                .plan(job, start, limit)?
                .map_held(Held::Screen),
        })
    }

    /// Plans a read of a job in memory, under its lock (kept in the plan's [`Held::Memory`]).
    /// The log's line count is read, never flushed: its writer flushes as lines become final.
    ///
    /// With `since` (a caller's read, see [`Self::output_within`]), a read to the end moves back
    /// to a line above its start that changed since a read showed it, and notes what it shows
    /// (see [`crate::OutputSlice::rewritten_from`]).
    fn live_plan<'a>(
        &self,
        job: &'a Job,
        start: Start,
        limit: Option<usize>,
        since: bool,
    ) -> Plan<Held<'a>> {
        let want = limit.map_or(u64::MAX, |l| l as u64);
        let mut s = lock(&job.state);
        let on_disk = s.log.as_ref().map_or(0, crate::store::LogWriter::lines);
        // An empty read at the end: the counts, nothing copied.
        let meta = s.term.slice(Some(u64::MAX), Some(0), s.status());
        let (end, dropped) = (meta.total_lines, meta.dropped_lines);
        let offset = match start {
            Start::Offset(offset) => offset,
            Start::Last(n) => Some(end.saturating_sub(n as u64)),
        };
        // A caller's read that reaches the end (a tail, or from an offset with no limit short
        // of the end) is a read of what came since its start: it starts at a line above that
        // changed since a read showed it (a question redrawn in place), and notes what it shows.
        let since = since
            && match (start, offset) {
                (Start::Last(_), _) => true,
                (Start::Offset(_), o) => o.unwrap_or(dropped).saturating_add(want) >= end,
            };
        let rewritten_from = offset
            .filter(|_| since)
            .and_then(|o| s.term.rewritten_before(o));
        let offset = rewritten_from.or(offset);
        let requested = offset.unwrap_or(dropped).min(end);
        let from_disk = self.inner.store.is_some()
            && offset.is_some()
            && requested < dropped
            && requested < on_disk;
        let (first, disk_to, mem_from) = if from_disk {
            let gap_end = dropped.min(on_disk);
            // Memory's lines follow only when the disk reached them (a capped log may stop
            // short).
            let mem_from = if gap_end == dropped { dropped } else { end };
            (
                requested,
                gap_end.min(requested.saturating_add(want)),
                mem_from,
            )
        } else {
            let from = requested.max(dropped);
            (from, from, from)
        };
        let mem_to = end.min(first.saturating_add(want)).max(mem_from);
        if since {
            s.term.remember(mem_from, mem_to);
        }
        let status = s.status();
        Plan {
            requested,
            first,
            disk_to,
            held: Held::Memory {
                job,
                state: Some(s),
                from: mem_from,
                to: mem_to,
            },
            tail: matches!(start, Start::Last(_)),
            total_lines: end,
            dropped_lines: dropped,
            final_lines: meta.final_lines,
            status,
            rewritten_from,
        }
    }

    /// The state directory a job found there came from.
    fn stored_in(&self) -> Result<&Store> {
        self.inner
            .store
            .as_deref()
            .ok_or_else(|| Error::InvalidArgument("no state directory".into()))
    }

    /// The job's visible screen now (its last screen, for a job from the state directory).
    ///
    /// # Errors
    /// [`Error::JobNotFound`].
    pub fn screen(&self, id: JobId) -> Result<ScreenSnapshot> {
        Ok(self.screen_status(id)?.0)
    }

    /// The job's visible screen and its status, taken at one moment (under the job's lock; a
    /// stored job's from one read of its record; another live server's running job's from
    /// that server, asked over its attach socket).
    ///
    /// # Errors
    /// [`Error::JobNotFound`].
    pub fn screen_status(&self, id: JobId) -> Result<(ScreenSnapshot, JobStatus)> {
        // Another live server's running job: its screen now, from that server (else, when it
        // cannot be reached, the screen it last saved).
        if let Ok(Controlled::Remote(remote)) = self.inner.controlled(id) {
            let op = crate::control::ControlOp::Screen;
            match remote.ask_blocking(&op, crate::control::SLACK) {
                Err(e) if crate::control::unreachable(&e) => {}
                live => return live,
            }
        }
        self.held_screen_status(id)
    }

    /// [`Self::screen_status`] of what this manager holds: its own job's screen (a lock and
    /// a copy, cheap enough for an async task), or the screen a stored job's record saved.
    ///
    /// # Errors
    /// [`Error::JobNotFound`].
    pub(crate) fn held_screen_status(&self, id: JobId) -> Result<(ScreenSnapshot, JobStatus)> {
        match self.inner.find(id)? {
            Found::Live(job) => {
                let s = lock(&job.state);
                Ok((s.term.screen(), s.status()))
            }
            Found::Stored(job) => {
                let status = self.stored_info(&job).status;
                Ok((self.stored_in()?.screen(&job), status))
            }
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
                if !lock(&job.state).is_final() {
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

/// Where a planned read's lines after the disk log's are.
enum Held<'a> {
    /// Lines `from..to` of a job in memory, under its lock (`None` once released, to read the
    /// disk part without stalling the job: taken again to visit them).
    Memory {
        job: &'a Job,
        state: Option<RankedGuard<'a, State>>,
        from: u64,
        to: u64,
    },
    /// A stored job's saved screen lines in the range.
    Screen(Vec<String>),
}

impl Held<'_> {
    /// What a read within `cap` bytes needs of the lines (a saved screen's are all kept), taken
    /// in one or two walks of [`Self::visit`] under one hold of the job's lock.
    fn capture(mut self, cap: usize) -> Captured {
        if let Held::Screen(lines) = self {
            return Captured::of_lines(lines);
        }
        Captured::capture(cap, |f| {
            self.visit(0, &mut |_, line| {
                f(line);
                ControlFlow::Continue(())
            });
        })
    }

    /// Releases a job's lock (a no-op for a saved screen).
    fn unlock(&mut self) {
        if let Held::Memory { state, .. } = self {
            *state = None;
        }
    }

    /// Calls `f` with each line, numbered, until it breaks. A job's lock is taken if it was
    /// released and kept (so a second walk sees the same lines) until this is dropped or
    /// [`Self::unlock`]ed. A saved screen's lines are numbered on from `from` (the line after
    /// the plan's disk part); a job's lines carry their own numbers.
    fn visit(&mut self, from: u64, f: &mut dyn FnMut(u64, &str) -> ControlFlow<()>) {
        match self {
            Held::Memory {
                job,
                state,
                from,
                to,
            } => {
                let s = state.get_or_insert_with(|| lock(&job.state));
                s.term.visit_lines(*from, |n, line| {
                    if n >= *to {
                        return ControlFlow::Break(());
                    }
                    f(n, line)
                });
            }
            Held::Screen(lines) => {
                for (n, line) in (from..).zip(lines.iter()) {
                    if f(n, line).is_break() {
                        break;
                    }
                }
            }
        }
    }
}
