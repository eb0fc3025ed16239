//! Locking, for every floor of the engine: one helper, so that no module has to import the
//! manager (or anything else above it) to take a lock.
//!
//! # The lock order
//!
//! This is the one statement of it; other places refer here. The manager's job table and each
//! job's state have a lock each ([`Rank::Table`], [`Rank::Job`]), taken in this order only:
//!
//! ```text
//!  table  →  job state
//! ```
//!
//! Before both, and only by a thread that holds no other lock, a named start takes the name
//! lock ([`crate::names`]: a process-wide mutex, then the state directory's lock file) from its
//! check until the new job is in the table; a reuse of this server's own job does not take it.
//!
//! A thread that holds a job's state never takes the table (the finishing path releases the
//! job's lock before it takes the table's to move the job to the finished list). Debug builds
//! check it on every [`lock`] of a [`Ranked`] lock: taking the table while holding a job's
//! state panics. No lock is held across an `.await` or a blocking wait. Every other lock (a
//! job's input queue, its input watch, the kill leader's, a lane's, the store's caches) is a
//! leaf: nothing else is taken while one is held, except that the kill leader signals under
//! its own lock so that a pid cannot be reaped, and reused, between the identity check and the
//! signal. Under a job's state lock the reader also copies its input watch (a snapshot takes
//! the last probe) and sends to its tap (output reaches attached clients under the lock that
//! feeds the terminal, so a client sees each byte once: in its first screen or in the stream).

use std::ops::{Deref, DerefMut};
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};

/// Locks `m`, taking over a poisoned lock: a panic while holding a lock leaves plain data
/// behind; keep serving rather than cascade.
pub(crate) fn lock<L: Lock + ?Sized>(m: &L) -> L::Guard<'_> {
    m.acquire()
}

/// What [`lock`] takes: a plain mutex (a leaf lock) or a [`Ranked`] one.
pub(crate) trait Lock {
    /// The guard [`lock`] returns.
    type Guard<'a>
    where
        Self: 'a;
    /// Blocks until the lock is held (see [`lock`]).
    fn acquire(&self) -> Self::Guard<'_>;
}

impl<T: ?Sized> Lock for Mutex<T> {
    type Guard<'a>
        = MutexGuard<'a, T>
    where
        T: 'a;

    fn acquire(&self) -> MutexGuard<'_, T> {
        self.lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl<L: Lock + ?Sized> Lock for Arc<L> {
    type Guard<'a>
        = L::Guard<'a>
    where
        L: 'a;

    fn acquire(&self) -> L::Guard<'_> {
        (**self).acquire()
    }
}

/// The place of a lock in [the lock order](self): a lock is never taken while a lock of a
/// later rank is held by the same thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Rank {
    /// The manager's job table.
    Table = 0,
    /// One job's state.
    Job = 1,
}

/// A mutex with its place in the lock order, checked in debug builds.
pub(crate) struct Ranked<T> {
    rank: Rank,
    mutex: Mutex<T>,
}

impl<T> Ranked<T> {
    /// `value` behind a lock of `rank`.
    pub(crate) fn new(rank: Rank, value: T) -> Self {
        Self {
            rank,
            mutex: Mutex::new(value),
        }
    }

    /// The lock if it is free now (taken over if poisoned); `None` if another holds it.
    /// Never waits, so it is not checked against the order; it does count as held.
    pub(crate) fn try_lock(&self) -> Option<RankedGuard<'_, T>> {
        let guard = match self.mutex.try_lock() {
            Ok(g) => g,
            Err(TryLockError::Poisoned(p)) => p.into_inner(),
            Err(TryLockError::WouldBlock) => return None,
        };
        Some(RankedGuard::held(self.rank, guard))
    }
}

impl<T> Lock for Ranked<T> {
    type Guard<'a>
        = RankedGuard<'a, T>
    where
        T: 'a;

    fn acquire(&self) -> RankedGuard<'_, T> {
        held::check(self.rank);
        RankedGuard::held(self.rank, self.mutex.acquire())
    }
}

/// A held [`Ranked`] lock; releases it when dropped.
pub(crate) struct RankedGuard<'a, T> {
    guard: MutexGuard<'a, T>,
    rank: Rank,
}

impl<'a, T> RankedGuard<'a, T> {
    fn held(rank: Rank, guard: MutexGuard<'a, T>) -> Self {
        held::add(rank, 1);
        Self { guard, rank }
    }
}

impl<T> Drop for RankedGuard<'_, T> {
    fn drop(&mut self) {
        held::add(self.rank, -1);
    }
}

impl<T> Deref for RankedGuard<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.guard
    }
}

impl<T> DerefMut for RankedGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.guard
    }
}

/// The ranked locks this thread holds, counted per rank (debug builds only; no-ops otherwise).
mod held {
    use super::Rank;

    #[cfg(debug_assertions)]
    thread_local! {
        static HELD: std::cell::Cell<[i32; 2]> = const { std::cell::Cell::new([0; 2]) };
    }

    /// Panics if this thread holds a lock that comes after `rank` in the order.
    pub(super) fn check(rank: Rank) {
        #[cfg(debug_assertions)]
        HELD.with(|h| {
            let held = h.get();
            for later in (rank as usize + 1)..held.len() {
                assert!(
                    held[later] == 0,
                    "lock order: {rank:?} taken while holding a {:?} lock (see crate::sync)",
                    [Rank::Table, Rank::Job][later]
                );
            }
        });
        #[cfg(not(debug_assertions))]
        let _ = rank;
    }

    pub(super) fn add(rank: Rank, n: i32) {
        #[cfg(debug_assertions)]
        HELD.with(|h| {
            let mut held = h.get();
            held[rank as usize] += n;
            h.set(held);
        });
        #[cfg(not(debug_assertions))]
        let _ = (rank, n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_then_a_job_is_the_order() {
        let table = Ranked::new(Rank::Table, ());
        let job = Ranked::new(Rank::Job, ());
        let t = lock(&table);
        let j = lock(&job);
        drop((j, t));
        // Released in any order, and taken again.
        let _t = lock(&table);
        assert!(job.try_lock().is_some());
    }

    #[cfg(debug_assertions)]
    #[test]
    #[should_panic(expected = "lock order")]
    fn taking_the_table_while_holding_a_job_panics() {
        let table = Ranked::new(Rank::Table, ());
        let job = Ranked::new(Rank::Job, ());
        let _j = lock(&job);
        let _t = lock(&table);
    }
}
