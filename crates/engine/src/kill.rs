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
pub(crate) mod killer;
mod unproven;

pub(crate) use unproven::{Proofs, why_unproven};

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::job::JobId;
use crate::procs::{self, Proc};
use crate::sys::Leader;
use crate::sys::tree;
use batch::Batch;

/// The default cap of every kill's grace period ([`crate::EngineConfig::max_kill_grace`]), and
/// the cap of a kill that has no configuration (`ptyjobs kill`): 60 s.
pub const MAX_KILL_GRACE: Duration = Duration::from_secs(60);

/// How long a kill keeps checking, after SIGKILL, until no process of the job remains; what
/// is still there then is reported as a survivor.
pub(crate) const AFTER_KILL: Duration = Duration::from_secs(5);

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

    /// A job known from its record (another server's, or a dead one's): its shell's `pid` and
    /// start time as recorded.
    pub(crate) fn recorded(id: JobId, pid: u32, start: Option<u64>) -> Self {
        Self {
            id,
            pid,
            start,
            own: None,
        }
    }

    /// The job's id.
    pub(crate) fn id(&self) -> JobId {
        self.id
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
                if group.is_some() && !procs::SCAN_SHOWS_LEADERS && !found.contains(&self.pid) {
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
                if !procs::SCAN_SHOWS_LEADERS && leader.tree.alive() {
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

/// The processes of `t` proven in `procs` (its session's and its escapees, see the module
/// docs), without signalling them: what [`crate::ports`] looks for listeners in.
pub(crate) fn members_of(t: &Target, procs: &[Proc]) -> Vec<u32> {
    let mut pids = live(t, procs);
    // Where the tree lists its processes itself (a Windows Job Object), they count too.
    if let Some(leader) = &t.own {
        pids.extend(leader.tree.pids());
        pids.sort_unstable();
        pids.dedup();
    }
    pids
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
        Target::recorded(id, pid, start)
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
