//! The one kill path: every signal ptyjobs sends to a job's processes goes through
//! [`end`] (or, where nothing may wait, [`signal_now`]) — `kill_job`, timeouts, shutdown,
//! dropping a manager, the drain timeout of a finished shell, the takeover of a dead server's
//! jobs, and `ptyjobs kill`.
//!
//! **Identity before any signal.** A process is signalled only when it is proven to be the
//! job's:
//! - the job's own shell while it is this process's child and not yet reaped (its pid, and so
//!   its process group and session id, cannot have been reused): its process group, and on
//!   Linux every process of its session that started no earlier than the job;
//! - on Linux, for a job recorded by another (or a dead) server: the session's processes that
//!   started no earlier than the job, but only while the recorded leader itself is alive with
//!   its recorded start time;
//! - on Linux, any process (in the session or not: `setsid -f` escapes it) whose environment
//!   carries the job's id in `PTYJOBS_JOB_ID` and that started no earlier than the job.
//!
//! Never signalled: pid 0 or 1, a negative pid, this process, its own session or process group
//! (they are not even in the process table, see [`crate::procs`]), or a bare number from a
//! record whose process is gone. On macOS the process table has sessions and start times but no
//! job markers: the first two rules apply. Elsewhere there is no process table: only the first
//! rule applies, and a job recorded by another server is never signalled. A kill of a recorded
//! job that could prove nothing says why ([`why_unproven`]).
//!
//! On Windows a job's tree is its Job Object ([`crate::sys::tree`]): any signal ends it at once
//! (`TerminateJobObject`), there is no process table, and a recorded job is never signalled.
//!
//! The sequence: the polite signal, the grace (capped by
//! [`crate::EngineConfig::max_kill_grace`]), SIGKILL to whatever is left, then a bounded
//! verification. What survives it is reported, never hidden. Every job being ended moves through
//! that sequence in rounds shared with the others (one look at the process table per round:
//! [`batch`]); a manager's kills are driven by one thread per process ([`killer`]).

mod batch;
mod killer;
mod unproven;

pub(crate) use unproven::{Proofs, why_unproven};

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::job::JobId;
use crate::manager::{Inner, JobManager, lock};
use crate::procs::{self, Proc};
use crate::signal::{KillOutcome, KillReport, Signal};
use crate::store::ProcessRef;
use crate::sys::sig;
use crate::sys::tree::{self, Tree};
use batch::Batch;

/// How long a kill keeps checking, after SIGKILL, until no process of the job remains; what
/// is still there then is reported as a survivor.
const AFTER_KILL: Duration = Duration::from_secs(5);

/// A job's shell as its parent knows it: the pid, the start time read while it was surely
/// ours, and whether it has been reaped. Reaping takes the same lock as signalling, so a signal
/// to its process group can never reach a reused pid.
#[derive(Debug)]
pub(crate) struct Leader {
    pub(crate) pid: u32,
    /// Start time in clock ticks since boot (Linux): known from the spawn, or read right after
    /// it.
    pub(crate) start: Option<u64>,
    /// The job's process tree (Unix: its process group; Windows: its Job Object).
    pub(crate) tree: Tree,
    reaped: Mutex<bool>,
}

impl Leader {
    /// The leader of a child just spawned, with its start time when the spawn knew it; else
    /// that is read now (not yet reaped: its /proc entry is surely its own).
    pub(crate) fn new(pid: u32, tree: Tree, start: Option<u64>) -> Self {
        Self {
            pid,
            start: start.or_else(|| procs::start_of(pid).map(|(start, _)| start)),
            tree,
            reaped: Mutex::new(false),
        }
    }

    /// Reaps the child with `reap` (which must return `Some` once it has reaped it) while no
    /// signal can be in flight.
    pub(crate) fn reap<T>(&self, reap: impl FnOnce() -> Option<T>) -> Option<T> {
        let mut reaped = lock(&self.reaped);
        if *reaped {
            return None;
        }
        let r = reap();
        *reaped = r.is_some();
        r
    }

    /// Runs `f` with the lock held if the child is not reaped yet; returns whether it ran.
    fn while_unreaped(&self, f: impl FnOnce()) -> bool {
        let reaped = lock(&self.reaped);
        if *reaped {
            return false;
        }
        f();
        true
    }
}

/// One job to end, with what proves its processes' identity.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    id: JobId,
    pid: u32,
    start: Option<u64>,
    /// Set for a job of this process: its shell, our child.
    own: Option<Arc<Leader>>,
}

impl Target {
    /// A job this process started.
    pub(crate) fn own(id: JobId, leader: &Arc<Leader>) -> Self {
        Self {
            id,
            pid: leader.pid,
            start: leader.start,
            own: Some(leader.clone()),
        }
    }

    /// A job known from its record (another server's, or a dead one's).
    pub(crate) fn recorded(id: JobId, process: ProcessRef) -> Self {
        Self {
            id,
            pid: process.pid,
            start: process.start_ticks,
            own: None,
        }
    }

    /// Whether the recorded leader is alive in `procs` with its recorded start time.
    fn leader_alive(&self, procs: &[Proc]) -> bool {
        self.pid > 1
            && self.start.is_some()
            && procs
                .iter()
                .any(|p| p.pid == self.pid && Some(p.start) == self.start)
    }

    /// The processes of `procs` proven to be this job's (see the module docs); `session` says
    /// whether the session `pid` is proven to be the job's.
    fn members<'p>(&self, procs: &'p [Proc], session: bool) -> Vec<&'p Proc> {
        let after = |p: &Proc| self.start.is_some_and(|s| p.start >= s);
        procs
            .iter()
            .filter(|p| {
                let by_session = session && self.pid > 1 && p.sid == self.pid && after(p);
                let by_marker = p.marker == Some(self.id) && (self.start.is_none() || after(p));
                by_session || by_marker
            })
            .collect()
    }

    /// Sends `sig` to every process of the job proven in `procs` that is not in `already`, each
    /// once: for a job of ours, its process group with one `killpg` (which also reaches a process
    /// started since the look), then one by one the proven members outside that group; for a
    /// recorded job, its proven members one by one. With `already` (the processes that got `sig`
    /// earlier in this kill), the group is not signalled again: a second SIGTERM or SIGINT turns
    /// many programs' graceful exit into an abrupt one. Returns every proven process (for a job
    /// of ours off Linux, the leader's pid while its group exists).
    fn signal(&self, procs: &[Proc], sig: i32, already: Option<&HashSet<u32>>) -> Vec<u32> {
        let fresh = |p: &&Proc| already.is_none_or(|a| !a.contains(&p.pid));
        let mut found = Vec::new();
        let ran = match &self.own {
            Some(leader) => leader.while_unreaped(|| {
                let members = self.members(procs, true);
                // Its process group first: every process of nearly every job, without a scan.
                // (Its id is the leader's pid: the leader made it with `setsid`.)
                let mut group = None;
                if already.is_none() && leader.tree.alive() {
                    leader.tree.signal(sig);
                    group = Some(self.pid);
                }
                for p in members.iter().copied().filter(fresh) {
                    if group != Some(p.pgrp) {
                        tree::signal_process(p.pid, sig);
                    }
                }
                found = pids(members);
                if group.is_some() && !cfg!(target_os = "linux") && !found.contains(&self.pid) {
                    found.push(self.pid);
                }
            }),
            None => false,
        };
        if !ran {
            let members = self.members(procs, self.own.is_none() && self.leader_alive(procs));
            for p in members.iter().copied().filter(fresh) {
                tree::signal_process(p.pid, sig);
            }
            found = pids(members);
        }
        found
    }
}

/// What [`end`] did to one job.
#[derive(Debug, Clone, Default)]
pub(crate) struct Ended {
    /// Some process of the job was alive (and signalled) when the kill began.
    pub(crate) signalled: bool,
    /// The job's processes still alive when the kill stopped checking.
    pub(crate) survivors: Vec<u32>,
}

/// Ends `targets` together on this thread: `sig` to each job's proven processes, up to
/// `grace` for them to go (newcomers get `sig` too), SIGKILL to what is left, then checks until
/// none is left or [`AFTER_KILL`] passes (see [`batch`]). Blocking (sleeps, reads `/proc`):
/// for callers with no runtime (the CLI's kill, the takeover of a dead server's jobs); a
/// manager's kills go through the [`killer`], which shares its looks at `/proc` among all of
/// them.
pub(crate) fn end(targets: &[Target], sig: i32, grace: Duration) -> Vec<Ended> {
    let mut ended = vec![Ended::default(); targets.len()];
    let mut b = Batch::new();
    for (i, t) in targets.iter().enumerate() {
        b.add(t.clone(), sig, grace, i);
    }
    b.finish(|i, e| ended[i] = e);
    ended
}

/// The job's proven processes alive in `procs`, without signalling them.
fn live(t: &Target, procs: &[Proc]) -> Vec<u32> {
    match &t.own {
        Some(leader) => {
            let mut found = Vec::new();
            let ran = leader.while_unreaped(|| {
                found = pids(t.members(procs, true));
                if !cfg!(target_os = "linux") && leader.tree.alive() {
                    found.push(t.pid);
                }
            });
            if ran {
                found
            } else {
                pids(t.members(procs, false))
            }
        }
        None => pids(t.members(procs, t.leader_alive(procs))),
    }
}

/// The pids of `procs`.
fn pids(procs: Vec<&Proc>) -> Vec<u32> {
    procs.into_iter().map(|p| p.pid).collect()
}

/// Sends `sig` once to every proven process of `targets`, without waiting: for a manager that
/// goes away, and the drain timeout of a job whose shell has exited.
pub(crate) fn signal_now(targets: &[Target], sig: i32) {
    let procs = procs::since(Instant::now());
    for t in targets {
        t.signal(&procs, sig, None);
    }
}

impl Inner {
    /// Ends a running job (see [`Inner::kill_many`]).
    pub(crate) async fn kill(
        &self,
        id: JobId,
        sig: Signal,
        grace: Duration,
        reason: &str,
    ) -> KillReport {
        self.kill_many(&[id], sig, grace, reason)
            .await
            .pop()
            .unwrap_or_else(|| KillReport::of(KillOutcome::NotFound))
    }

    /// Ends running jobs through the [`killer`] (they join the kills in progress), then waits
    /// (bounded) until each is final, and answers what was verified. Never holds a lock while
    /// waiting.
    pub(crate) async fn kill_many(
        &self,
        ids: &[JobId],
        sig: Signal,
        grace: Duration,
        reason: &str,
    ) -> Vec<KillReport> {
        let grace = self.config.grace(Some(grace));
        let mut reports: Vec<Option<KillReport>> = Vec::with_capacity(ids.len());
        let mut jobs = Vec::new();
        for &id in ids {
            let job = match self.job(id) {
                Ok(job) => job,
                // Known from the state directory only, and ended.
                Err(crate::Error::NotRunning { .. }) => {
                    reports.push(Some(KillReport::of(KillOutcome::AlreadyTerminated)));
                    continue;
                }
                Err(_) => {
                    reports.push(Some(KillReport::of(KillOutcome::NotFound)));
                    continue;
                }
            };
            {
                let mut s = lock(&job.state);
                if s.status.is_final() {
                    reports.push(Some(KillReport::of(KillOutcome::AlreadyTerminated)));
                    continue;
                }
                // The job ends by our hand from here on: its status will say so.
                s.kill_reason.get_or_insert_with(|| reason.to_owned());
            }
            reports.push(None);
            jobs.push(job);
        }
        if jobs.is_empty() {
            return reports.into_iter().flatten().collect();
        }
        let targets: Vec<Target> = jobs.iter().map(|j| Target::own(j.id, &j.leader)).collect();
        let mut ended = Vec::with_capacity(targets.len());
        for reply in killer::submit(targets, sig.number(), grace) {
            // No answer only if the killer failed (a bug, logged by the panic hook).
            ended.push(reply.await.unwrap_or_default());
        }
        // No process is left: the reader drains the terminal to its end and records the exit.
        let deadline = Instant::now() + AFTER_KILL;
        for job in &jobs {
            if !job
                .wait_final(deadline.saturating_duration_since(Instant::now()))
                .await
            {
                tracing::warn!("job {} is not final after its kill", job.id);
            }
        }
        let mut ended = ended.into_iter();
        reports
            .into_iter()
            .map(|r| {
                r.unwrap_or_else(|| KillReport {
                    outcome: KillOutcome::Killed,
                    survivors: ended.next().unwrap_or_default().survivors,
                })
            })
            .collect()
    }
}

impl Drop for Inner {
    /// A manager that goes away takes its jobs with it: no orphans. SIGKILL, not waited for
    /// (a drop must not block).
    fn drop(&mut self) {
        let targets: Vec<Target> = lock(&self.table)
            .jobs
            .values()
            .filter(|j| {
                let mut s = lock(&j.state);
                let running = !s.status.is_final();
                if running {
                    s.kill_reason
                        .get_or_insert_with(|| "manager dropped".to_owned());
                }
                running
            })
            .map(|j| Target::own(j.id, &j.leader))
            .collect();
        if !targets.is_empty() {
            signal_now(&targets, sig::SIGKILL);
        }
    }
}

impl JobManager {
    /// Ends a job: `signal` to every process proven to be the job's, SIGKILL after `grace`
    /// (default the configured grace; capped by [`crate::EngineConfig::max_kill_grace`]), then
    /// checks that none is left. Unknown ids answer [`KillOutcome::NotFound`], ended ones
    /// [`KillOutcome::AlreadyTerminated`]; processes that outlived SIGKILL are named in
    /// [`KillReport::survivors`].
    ///
    /// # Errors
    /// [`crate::Error::NotOwner`] for a running job of another live server sharing the state
    /// directory: only that server controls it.
    pub async fn kill(
        &self,
        id: JobId,
        signal: Signal,
        grace: Option<Duration>,
    ) -> crate::Result<KillReport> {
        let inner = self.inner.clone();
        let owner = tokio::task::spawn_blocking(move || inner.job(id).map(|_| ()))
            .await
            .unwrap_or(Ok(()));
        if let Err(e @ crate::Error::NotOwner { .. }) = owner {
            return Err(e);
        }
        let grace = self.inner.config.grace(grace);
        Ok(self
            .inner
            .kill(id, signal, grace, "killed by request")
            .await)
    }

    /// Kills every running job (TERM, grace, KILL), all at once, and waits for them.
    pub async fn shutdown(&self) {
        let running: Vec<JobId> = {
            let t = lock(&self.inner.table);
            t.jobs
                .values()
                .filter(|j| !lock(&j.state).status.is_final())
                .map(|j| j.id)
                .collect()
        };
        let grace = self.inner.config.grace(None);
        self.inner
            .kill_many(&running, Signal::TERM, grace, "shutdown")
            .await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(pid: u32, sid: u32, start: u64, marker: Option<JobId>) -> Proc {
        Proc {
            pid,
            sid,
            pgrp: sid,
            start,
            marker,
        }
    }

    fn recorded(id: JobId, pid: u32, start: Option<u64>) -> Target {
        Target::recorded(
            id,
            ProcessRef {
                pid,
                start_ticks: start,
            },
        )
    }

    #[test]
    fn a_live_leader_with_its_start_time_proves_the_members_of_its_session_started_after_it() {
        let id = JobId::new();
        let t = recorded(id, 100, Some(50));
        let procs = [
            p(100, 100, 50, None),
            p(101, 100, 60, None),
            // In the session but older than the job: not the job's.
            p(102, 100, 40, None),
            p(103, 7, 60, None),
        ];
        assert_eq!(live(&t, &procs), [100, 101]);
    }

    #[test]
    fn a_session_whose_recorded_leader_is_gone_or_reused_proves_nothing() {
        let id = JobId::new();
        let t = recorded(id, 100, Some(50));
        // The leader exited, leaving a process in its session (a double-forked daemon).
        assert_eq!(live(&t, &[p(101, 100, 60, None)]), Vec::<u32>::new());
        // The pid now belongs to another program, started later.
        let reused = [p(100, 100, 70, None), p(101, 100, 80, None)];
        assert_eq!(live(&t, &reused), Vec::<u32>::new());
    }

    #[test]
    fn pid_0_1_and_a_missing_start_time_prove_nothing_but_the_jobs_marker_does() {
        let id = JobId::new();
        let procs = [
            p(0, 0, 60, None),
            p(1, 1, 60, None),
            p(300, 300, 60, None),
            p(301, 301, 60, Some(JobId::new())),
        ];
        for t in [
            recorded(id, 0, None),
            recorded(id, 1, Some(1)),
            recorded(id, 300, None),
        ] {
            assert_eq!(live(&t, &procs), Vec::<u32>::new(), "{t:?}");
        }
        // A process carrying the job's id, in any session, started after the job.
        let escaped = [p(200, 200, 60, Some(id))];
        assert_eq!(live(&recorded(id, 1, None), &escaped), [200]);
        assert_eq!(live(&recorded(id, 9, Some(50)), &escaped), [200]);
        // ... but not one that started before it.
        assert_eq!(
            live(&recorded(id, 9, Some(70)), &escaped),
            Vec::<u32>::new()
        );
    }
}
