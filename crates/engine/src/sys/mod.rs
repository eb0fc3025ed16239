//! The platform layer: the only code that knows how this OS opens a terminal, starts a command
//! on it in a new process tree, reads and writes it, resizes it, reaps the child and ends the
//! tree. The rest of the engine (terminal model, transcript, waits, store, keys) is shared.
//!
//! Each platform offers the same modules: `pty` (open, read until EOF and reap, write, resize,
//! echo state, the [`pty::Master`] handle), `spawn` (start a job's shell on a terminal), `tree`
//! (a job's process tree: is it alive, end it, process identity), `sig` (signal numbers) and
//! `fs` (the state directory's file primitives). What the reader delivers, [`Sink`] and
//! [`ExitInfo`], is shared.

use std::time::Duration;

#[cfg(unix)]
mod unix;
#[cfg(unix)]
pub(crate) use unix::{fs, pty, sig, spawn, tree};

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

/// How the job's shell ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ExitInfo {
    /// Exited with this code.
    Code(i32),
    /// Died of this signal.
    #[cfg_attr(windows, allow(dead_code))]
    Signal(i32),
}

/// Where the reader delivers what it sees. Called from the job's reader thread.
pub(crate) trait Sink: Send + 'static {
    /// Called first, before anything is read: may wait until the job is ready to be seen.
    fn start(&self) {}
    /// Bytes read from the PTY, in order.
    fn data(&self, bytes: &[u8]);
    /// Output has paused for [`IDLE`] after some arrived (a prompt, a server that is up).
    fn idle(&self) {}
    /// Output has been quiet for the given time (since the last byte, or the start); returns
    /// how long until the next call (`None`: not until output arrives again).
    fn quiet(&self, _quiet: Duration) -> Option<Duration> {
        None
    }
    /// The child was reaped and the output drained; called exactly once, last.
    fn exited(&self, exit: ExitInfo);
}

/// How long output must pause before [`Sink::idle`] is called.
pub(crate) const IDLE: Duration = Duration::from_millis(200);
