//! The kill sequence of many jobs at once, driven in rounds: each round takes **one** look at
//! the process table and moves every job one step through its own sequence.
//!
//! A job's sequence (its [`Phase`]): its signal to its proven processes; the grace, during
//! which each round checks which of them are alive and gives the signal to those not yet told
//! (processes that appeared since); SIGKILL to whatever is left, repeated each round until a
//! look finds none of them or [`AFTER_KILL`] passes, and what is still there is its survivors.
//! Every job has its own signal, grace and deadlines, so a job that joins a batch already under
//! way is ended exactly as if it were alone.
//!
//! Why rounds: a look at `/proc` reads the `stat` of every process on the machine, so its cost
//! grows with the number of jobs. Ending N jobs with N sequences of their own (N concurrent
//! `kill_job` calls, each polling `/proc` during its grace) made N looks per poll, one after
//! another: a thousand kills took 24 s. Sharing each look makes the cost a few looks per round,
//! whatever N.
//!
//! Each decision uses a look that began after the job's previous signals (a round looks first,
//! then signals), so "a look found none of the job's processes" is a verification, as before.
//! The identity rules are [`Target`]'s, unchanged (see [`crate::kill`]).

use std::collections::HashSet;
use std::time::{Duration, Instant};

use super::{AFTER_KILL, Ended, Target, live};
use crate::procs::{self, Proc};
use crate::sys::sig;

/// The shortest pause between two rounds: how often a kill in progress looks again.
pub(crate) const ROUND: Duration = Duration::from_millis(10);

/// Where one job is in its sequence.
#[derive(Debug, Clone, Copy)]
enum Phase {
    /// Not signalled yet: its first round sends its signal.
    New,
    /// Its signal was sent; SIGKILL follows at the deadline, or as soon as none is left.
    Grace(Instant),
    /// SIGKILL each round until none is left or the deadline passes.
    Kill(Instant),
}

/// One job being ended, and `tag`: who is told the result.
#[derive(Debug)]
struct Entry<T> {
    target: Target,
    sig: i32,
    grace: Duration,
    phase: Phase,
    /// Every process of the job that was sent `sig`.
    sent: HashSet<u32>,
    /// Whether its first signal found a process of the job alive.
    signalled: bool,
    tag: T,
}

/// Jobs being ended together (see the module docs).
#[derive(Debug)]
pub(crate) struct Batch<T> {
    entries: Vec<Entry<T>>,
    /// How long the last look at the process table took.
    last_look: Duration,
}

impl<T> Batch<T> {
    /// An empty batch.
    pub(crate) fn new() -> Self {
        Self {
            entries: Vec::new(),
            last_look: Duration::ZERO,
        }
    }

    /// Adds a job to end with `sig` (SIGKILL after `grace`, unless `sig` is SIGKILL); its
    /// sequence starts at the next round.
    pub(crate) fn add(&mut self, target: Target, sig: i32, grace: Duration, tag: T) {
        self.entries.push(Entry {
            target,
            sig,
            grace,
            phase: Phase::New,
            sent: HashSet::new(),
            signalled: false,
            tag,
        });
    }

    /// Whether no job is left in the batch.
    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// One round: one look at the process table (it began after this call), then one step for
    /// every job. Returns the jobs whose sequence is over, with what it did to them. Blocking
    /// (reads `/proc`).
    pub(crate) fn round(&mut self) -> Vec<(T, Ended)> {
        let began = Instant::now();
        let procs = procs::since(began);
        self.last_look = began.elapsed();
        self.step(&procs, Instant::now())
    }

    /// How long to wait before the next round: [`ROUND`], or as long as the last look took if
    /// that is longer, so that looking never takes more than about half of a core.
    pub(crate) fn pause(&self) -> Duration {
        ROUND.max(self.last_look)
    }

    /// Moves every job one step on the look `procs`, taken at `now`.
    fn step(&mut self, procs: &[Proc], now: Instant) -> Vec<(T, Ended)> {
        let mut done = Vec::new();
        let mut i = 0;
        while i < self.entries.len() {
            match self.entries[i].step(procs, now) {
                Some(ended) => done.push((self.entries.swap_remove(i).tag, ended)),
                None => i += 1,
            }
        }
        done
    }

    /// Runs rounds until every job is done; gives each result to `done` as it comes.
    pub(crate) fn finish(mut self, mut done: impl FnMut(T, Ended)) {
        loop {
            for (tag, ended) in self.round() {
                done(tag, ended);
            }
            if self.is_empty() {
                return;
            }
            std::thread::sleep(self.pause());
        }
    }
}

impl<T> Entry<T> {
    /// One step of this job's sequence on the look `procs`; `Some` when the sequence is over.
    fn step(&mut self, procs: &[Proc], now: Instant) -> Option<Ended> {
        let t = &self.target;
        if let Phase::New = self.phase {
            let found = t.signal(procs, self.sig, None);
            self.signalled = !found.is_empty();
            self.sent.extend(found);
            self.phase = if self.sig == sig::SIGKILL {
                Phase::Kill(now + AFTER_KILL)
            } else {
                Phase::Grace(now + self.grace)
            };
            return None;
        }
        if let Phase::Grace(until) = self.phase {
            let alive = live(t, procs);
            if now < until && !alive.is_empty() {
                // Newcomers (started since the last look) get the polite signal too, one by
                // one: the others got it already.
                if alive.iter().any(|p| !self.sent.contains(p)) {
                    let found = t.signal(procs, self.sig, Some(&self.sent));
                    self.sent.extend(found);
                }
                return None;
            }
            // The grace is over, or none is left: SIGKILL (to nothing, in the second case: the
            // same look proves it) in this same round.
            self.phase = Phase::Kill(now + AFTER_KILL);
        }
        let Phase::Kill(until) = self.phase else {
            unreachable!("the phases above end in Kill")
        };
        let found = t.signal(procs, sig::SIGKILL, None);
        if !found.is_empty() && now < until {
            return None;
        }
        if !found.is_empty() {
            tracing::warn!(
                "job {}: processes {found:?} survived SIGKILL for {AFTER_KILL:?}",
                t.id
            );
        }
        Some(Ended {
            signalled: self.signalled,
            survivors: found,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::JobId;

    /// A recorded job whose leader is not in any look: nothing of it is ever signalled.
    fn gone() -> Target {
        Target::recorded(JobId::new(), u32::MAX - 1, Some(1))
    }

    #[test]
    fn a_job_with_nothing_left_is_done_in_two_rounds_and_was_not_signalled() {
        let mut b = Batch::new();
        b.add(gone(), sig::SIGTERM, Duration::from_secs(3), 1);
        b.add(gone(), sig::SIGKILL, Duration::ZERO, 2);
        let now = Instant::now();
        assert!(b.step(&[], now).is_empty(), "the first round only signals");
        let mut done = b.step(&[], now);
        done.sort_by_key(|(tag, _)| *tag);
        assert_eq!(done.len(), 2);
        for (_, e) in done {
            assert!(!e.signalled);
            assert!(e.survivors.is_empty());
        }
        assert!(b.is_empty());
    }

    #[test]
    fn a_job_added_later_starts_its_own_sequence() {
        let mut b = Batch::new();
        let now = Instant::now();
        b.add(gone(), sig::SIGTERM, Duration::from_secs(3), 1);
        assert!(b.step(&[], now).is_empty());
        b.add(gone(), sig::SIGTERM, Duration::from_secs(3), 2);
        let done: Vec<i32> = b.step(&[], now).into_iter().map(|(t, _)| t).collect();
        assert_eq!(done, [1], "the newcomer was only signalled this round");
        let done: Vec<i32> = b.step(&[], now).into_iter().map(|(t, _)| t).collect();
        assert_eq!(done, [2]);
    }
}
