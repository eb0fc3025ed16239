//! The platform layer: the only code that knows how this OS opens a terminal, starts a command
//! on it in a new process tree, reads and writes it, resizes it, reaps the child and ends the
//! tree. The rest of the engine (terminal model, transcript, waits, store, keys) is shared.
//!
//! Each platform offers the same two modules: `pty` (open, read until EOF and reap, write,
//! resize, echo state) and `spawn` (start a job's shell on a terminal).

#[cfg(unix)]
mod unix;
#[cfg(unix)]
pub(crate) use unix::{limits, pty, spawn};

/// Off Unix there is no soft limit on open descriptors to raise.
#[cfg(not(unix))]
pub(crate) mod limits {
    /// Nothing to raise: "unlimited".
    pub(crate) fn raise_fd_limit() -> u64 {
        u64::MAX
    }
}
