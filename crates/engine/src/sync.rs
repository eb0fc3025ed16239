//! Locking, for every floor of the engine: one helper, so that no module has to import the
//! manager (or anything else above it) to take a lock; and the engine's lock order, stated here
//! and nowhere else.
//!
//! # Lock order
//! A lock is taken while holding another only as listed; every other lock of the engine (the
//! store's caches, a lane's queue, the parse workers' run queue, the killer's queue, the reactor's
//! commands, a job's input queue and reap lock, ...) is a leaf: nothing else is locked under it.
//! No lock is held across an `.await` or a blocking wait.
//!
//! 1. The manager's job table (`manager::Inner::table`).
//! 2. A job's state (`manager::Job::state`), under the table lock only to read each job's status
//!    while walking the table (shutdown, a manager dropped). The finishing path releases the job's
//!    lock before it takes the table lock (`JobSink::exited`: `finish`, then `retire`).
//! 3. Under a job's state lock: its input watch (a snapshot copies the last probe) and its tap
//!    (output reaches attached clients under the lock that feeds the terminal, so a client sees
//!    each byte once: in its first screen or in the stream).

use std::sync::{Mutex, MutexGuard};

/// Locks `m`, taking over a poisoned lock: a panic while holding a lock leaves plain data
/// behind; keep serving rather than cascade.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
