//! A job's state under its lock: the lifecycle ([`Phase`]: running, then final, never back) and
//! what every phase shares (the terminal, its size, the disk log, the record).
//!
//! The lifecycle is private to this module: read it through the accessors, change it only
//! through [`State::finish`] (the one transition) and [`State::set_kill_reason`] (which only
//! notes, on a running job, why ptyjobs is ending it).

use std::sync::Arc;
use std::time::Instant;

use chrono::{DateTime, Utc};

use crate::job::JobStatus;
use crate::pipeline::ExitInfo;
use crate::signal;
use crate::store::{JobRecord, LogWriter};
use crate::sys::pty::Master;
use crate::terminal::Terminal;

/// Where a job is in its life. Each variant carries what only that phase has.
enum Phase {
    /// The job's shell is alive, or its output is still being drained.
    Running {
        /// The PTY master, for writes and resizes.
        master: Arc<Master>,
        /// Set when ptyjobs decided to end the job; it becomes the job's reason.
        kill_reason: Option<String>,
    },
    /// The job has ended and its output is all held. Nothing leaves this phase.
    Final {
        /// `completed`, `failed` or `killed`; never `running`.
        status: JobStatus,
        exit: ExitInfo,
        finished: DateTime<Utc>,
        finished_at: Instant,
        /// Why the job was killed or failed.
        reason: Option<String>,
    },
}

/// A job's state, behind the job's lock.
pub(crate) struct State {
    phase: Phase,
    /// The terminal model, fed while running and read in every phase.
    pub(crate) term: Terminal,
    /// Terminal size `(cols, rows)`.
    pub(crate) size: (u16, u16),
    /// The job's record on disk, when jobs are persisted.
    pub(crate) record: Option<JobRecord>,
    /// The job's disk log, when jobs are persisted: a sink of the terminal's final lines. Kept
    /// (closed) once the job is final: readers of a finished job ask it how many lines it holds.
    pub(crate) log: Option<LogWriter>,
}

impl State {
    /// A running job's state: its terminal of `size` and the PTY `master` it is fed from.
    pub(crate) fn running(term: Terminal, size: (u16, u16), master: Arc<Master>) -> Self {
        Self {
            phase: Phase::Running {
                master,
                kill_reason: None,
            },
            term,
            size,
            record: None,
            log: None,
        }
    }

    /// The job's status: `running` until [`Self::finish`], then the final one.
    pub(crate) fn status(&self) -> JobStatus {
        match &self.phase {
            Phase::Running { .. } => JobStatus::Running,
            Phase::Final { status, .. } => *status,
        }
    }

    /// Whether the job has ended.
    pub(crate) fn is_final(&self) -> bool {
        matches!(self.phase, Phase::Final { .. })
    }

    /// The PTY master while the job runs; `None` once it is final.
    pub(crate) fn master(&self) -> Option<Arc<Master>> {
        match &self.phase {
            Phase::Running { master, .. } => Some(Arc::clone(master)),
            Phase::Final { .. } => None,
        }
    }

    /// How the job's shell ended, once final.
    pub(crate) fn exit(&self) -> Option<ExitInfo> {
        match &self.phase {
            Phase::Running { .. } => None,
            Phase::Final { exit, .. } => Some(*exit),
        }
    }

    /// When the job became final (wall clock and monotonic).
    pub(crate) fn finished(&self) -> Option<(DateTime<Utc>, Instant)> {
        match &self.phase {
            Phase::Running { .. } => None,
            Phase::Final {
                finished,
                finished_at,
                ..
            } => Some((*finished, *finished_at)),
        }
    }

    /// Why the job was killed or failed, once final.
    pub(crate) fn reason(&self) -> Option<&str> {
        match &self.phase {
            Phase::Running { .. } => None,
            Phase::Final { reason, .. } => reason.as_deref(),
        }
    }

    /// Whether ptyjobs is ending this running job already (a kill reason was noted).
    pub(crate) fn killing(&self) -> bool {
        matches!(
            &self.phase,
            Phase::Running {
                kill_reason: Some(_),
                ..
            }
        )
    }

    /// Notes that ptyjobs ends this running job, for `reason` (the first reason given stays).
    /// Returns false, changing nothing, when the job is already final.
    pub(crate) fn set_kill_reason(&mut self, reason: &str) -> bool {
        match &mut self.phase {
            Phase::Running { kill_reason, .. } => {
                kill_reason.get_or_insert_with(|| reason.to_owned());
                true
            }
            Phase::Final { .. } => false,
        }
    }

    /// Hands the lines the terminal made final to the disk log (call after every feed and
    /// before the log is read, under the job's lock, so the log never lags behind a reader).
    pub(crate) fn log_final_lines(&mut self) {
        let log = self.log.as_mut();
        self.term.drain_final_lines(|lines| {
            if let Some(log) = log {
                log.push_all(lines);
            }
        });
    }

    /// The one transition, running → final, for a shell that ended with `exit` at `finished`
    /// (`finished_at` on the monotonic clock). The status and reason follow from the kill
    /// reason ptyjobs noted (or `requested()`, asked only when none was noted: a kill asked
    /// for from outside this process) and the exit. Returns the PTY master the running phase
    /// held (the caller decides when it is dropped); `None`, changing nothing, when the job
    /// is already final (a lane delivers one exit, so this does not happen).
    pub(crate) fn finish(
        &mut self,
        exit: ExitInfo,
        finished: DateTime<Utc>,
        finished_at: Instant,
        requested: impl FnOnce() -> Option<String>,
    ) -> Option<Arc<Master>> {
        let Phase::Running { kill_reason, .. } = &mut self.phase else {
            return None;
        };
        let kill_reason = kill_reason.take().or_else(requested);
        let (status, reason) = verdict(kill_reason, exit);
        let running = std::mem::replace(
            &mut self.phase,
            Phase::Final {
                status,
                exit,
                finished,
                finished_at,
                reason,
            },
        );
        match running {
            Phase::Running { master, .. } => Some(master),
            Phase::Final { .. } => None,
        }
    }
}

/// The status and reason a job ends with.
fn verdict(kill_reason: Option<String>, exit: ExitInfo) -> (JobStatus, Option<String>) {
    match (kill_reason, exit) {
        (Some(reason), _) => (JobStatus::Killed, Some(reason)),
        (None, ExitInfo::Code(0)) => (JobStatus::Completed, None),
        (None, ExitInfo::Code(c)) => (JobStatus::Failed, Some(format!("exited with code {c}"))),
        (None, ExitInfo::Signal(n)) => (
            JobStatus::Failed,
            Some(format!("killed by {}", signal::signal_name(n))),
        ),
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    /// A running state; its "PTY master" is any descriptor (nothing here writes to it).
    fn running() -> State {
        let fd = std::fs::File::open("/dev/null").expect("/dev/null opens");
        State::running(
            Terminal::new(80, 24, 1 << 16, 1 << 12),
            (80, 24),
            Arc::new(fd.into()),
        )
    }

    fn end(s: &mut State, exit: ExitInfo) -> Option<Arc<Master>> {
        s.finish(exit, Utc::now(), Instant::now(), || None)
    }

    #[test]
    fn a_running_job_has_a_master_and_no_end() {
        let s = running();
        assert_eq!(s.status(), JobStatus::Running);
        assert!(!s.is_final());
        assert!(s.master().is_some());
        assert_eq!((s.exit(), s.finished(), s.reason()), (None, None, None));
    }

    #[test]
    fn finish_decides_the_status_from_the_exit() {
        let cases = [
            (ExitInfo::Code(0), JobStatus::Completed, None),
            (
                ExitInfo::Code(3),
                JobStatus::Failed,
                Some("exited with code 3"),
            ),
        ];
        for (exit, status, reason) in cases {
            let mut s = running();
            assert!(end(&mut s, exit).is_some(), "the master is handed back");
            assert_eq!(s.status(), status);
            assert_eq!(s.exit(), Some(exit));
            assert_eq!(s.reason(), reason);
            assert!(s.is_final() && s.master().is_none() && s.finished().is_some());
        }
    }

    #[test]
    fn a_noted_kill_reason_makes_the_job_killed_and_the_first_reason_stays() {
        let mut s = running();
        assert!(s.set_kill_reason("timeout"));
        assert!(s.set_kill_reason("kill_job"));
        end(&mut s, ExitInfo::Code(0));
        assert_eq!(s.status(), JobStatus::Killed);
        assert_eq!(s.reason(), Some("timeout"));
    }

    #[test]
    fn a_kill_asked_for_from_outside_counts_only_without_a_noted_reason() {
        let mut s = running();
        s.finish(ExitInfo::Code(1), Utc::now(), Instant::now(), || {
            Some("killed by ptyjobs kill".into())
        });
        assert_eq!(s.reason(), Some("killed by ptyjobs kill"));
        let mut s = running();
        s.set_kill_reason("shutdown");
        s.finish(ExitInfo::Code(1), Utc::now(), Instant::now(), || {
            unreachable!("not asked when a reason is noted")
        });
        assert_eq!(s.reason(), Some("shutdown"));
    }

    #[test]
    fn nothing_leaves_the_final_phase() {
        let mut s = running();
        end(&mut s, ExitInfo::Code(0));
        assert!(
            !s.set_kill_reason("late"),
            "a final job takes no kill reason"
        );
        assert!(
            end(&mut s, ExitInfo::Code(9)).is_none(),
            "a second finish changes nothing"
        );
        assert_eq!(s.status(), JobStatus::Completed);
        assert_eq!(s.exit(), Some(ExitInfo::Code(0)));
    }
}
