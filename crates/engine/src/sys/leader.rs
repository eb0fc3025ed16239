//! A job's shell as its parent knows it ([`Leader`]): shared by the platform's reader, which
//! reaps it, and the kill path, which signals its tree.

use std::sync::Mutex;

use super::tree::Tree;
use crate::sync::lock;

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
            start: start.or_else(|| super::procs::info(pid).map(|p| p.start)),
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
    pub(crate) fn while_unreaped(&self, f: impl FnOnce()) -> bool {
        let reaped = lock(&self.reaped);
        if *reaped {
            return false;
        }
        f();
        true
    }
}
