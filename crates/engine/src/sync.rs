//! Locking, for every floor of the engine: one helper, so that no module has to import the
//! manager (or anything else above it) to take a lock.

use std::sync::{Mutex, MutexGuard};

/// Locks `m`, taking over a poisoned lock: a panic while holding a lock leaves plain data
/// behind; keep serving rather than cascade.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
