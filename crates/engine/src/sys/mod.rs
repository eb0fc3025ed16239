//! The platform layer: the only code that knows how this OS opens a terminal, starts a command
//! on it in a new process tree, reads and writes it, resizes it, reaps the child and ends the
//! tree. The rest of the engine (terminal model, transcript, waits, store, keys) is shared.
//!
//! Each platform offers the same modules: `pty` (open, read until EOF and reap, write, resize,
//! echo state, the [`pty::Master`] handle), `spawn` (start a job's shell on a terminal), `tree`
//! (a job's process tree: is it alive, end it, process identity), `sig` (signal numbers) and
//! `fs` (the state directory's file primitives). What a reader delivers goes into the job's
//! [`crate::pipeline::Lane`], shared by every platform.

mod dir;
mod leader;
pub(crate) use leader::Leader;

#[cfg(unix)]
mod unix;
#[cfg(unix)]
pub(crate) use unix::{fs, limits, pty, sched, sig, spawn, tree};

#[cfg(windows)]
mod windows;
#[cfg(windows)]
pub(crate) use windows::{fs, pty, sig, spawn, tree};

/// On Windows, when this process was started as a job's console launcher (see
/// `sys/windows/launch.rs`), runs the job's command and exits with its exit code; otherwise, and
/// on every other platform, returns at once. A face's `main` calls it first.
pub fn launcher_if_asked() {
    #[cfg(windows)]
    windows::launch::if_asked();
}

/// Off Unix no scheduling hint is given.
#[cfg(not(unix))]
pub(crate) mod sched {
    /// No hint: `false`.
    pub(crate) fn prefer_prompt_wakeups() -> bool {
        false
    }
}

/// Off Unix there is no soft limit on open descriptors to raise.
#[cfg(not(unix))]
pub(crate) mod limits {
    /// Nothing to raise: "unlimited".
    pub(crate) fn raise_fd_limit() -> u64 {
        u64::MAX
    }
}
