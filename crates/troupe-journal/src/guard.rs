//! Locking the journal's mutexes without giving up on poison: a panic while
//! one is held leaves nothing half-updated that the tail's failed flag does
//! not already cover.

use std::sync::{Mutex, MutexGuard};

/// Locks `m`, taking the guard back from a poisoned lock.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
