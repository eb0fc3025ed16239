//! The platform layer: the only code that knows how this OS opens a terminal, starts a command
//! on it in a new process tree, reads and writes it, resizes it, reaps the child and ends the
//! tree. The rest of the engine (terminal model, transcript, waits, store, keys) is shared.
//!
//! Each platform offers the same modules: `pty` (open, read until EOF and reap, write, resize,
//! echo state, the [`pty::Master`] handle), `spawn` (start a job's shell on a terminal, from
//! the one [`spawn_spec::SpawnSpec`]), `tree` (a job's process tree: is it alive, end it),
//! `procs` (the process table: a process's identity, group and session as one
//! [`proc_info::ProcInfo`], its environment, a walk of every process), `input_probe` (which
//! process waits to read the terminal: Linux only, elsewhere it tells nothing), `sig` (signal
//! numbers) and `fs` (the state directory's file primitives). What a reader delivers goes into
//! the job's [`crate::pipeline::Lane`], shared by every platform.

mod dir;
/// Whether this platform's process table can be read (pids, sessions, start times): Linux
/// `/proc`, macOS libproc.
pub(crate) const PROCESS_TABLE: bool = cfg!(any(target_os = "linux", target_os = "macos"));
/// Whether job markers (`PTYJOBS_JOB_ID` in a process's environment) can be read (Linux only).
pub(crate) const JOB_MARKERS: bool = cfg!(target_os = "linux");

mod leader;
pub(crate) use leader::Leader;
pub(crate) mod net;
pub(crate) mod proc_info;
pub(crate) mod sandbox;
pub(crate) mod spawn_spec;

#[cfg(unix)]
mod unix;
#[cfg(unix)]
pub(crate) use unix::{attach, control, fs, keeper, limits, procs, pty, sched, sig, spawn, tree};

#[cfg(windows)]
mod windows;
#[cfg(windows)]
pub(crate) use windows::{attach, control, fs, keeper, procs, pty, sig, spawn, tree};

/// When this process was started as a job's sandbox trampoline (Linux, see `sandbox`), or on
/// Windows as a job's console launcher (see
/// `sys/windows/launch.rs`), runs the job's command and exits with its exit code; otherwise, and
/// on every other platform, returns at once. A face's `main` calls it first.
pub fn launcher_if_asked() {
    // Linux: this executable is also the sandbox trampoline of every job under a policy.
    sandbox::if_asked();
    #[cfg(windows)]
    windows::launch::if_asked();
}

#[cfg(target_os = "linux")]
pub(crate) use unix::input_probe;

/// Off Linux there is no `/proc` to tell a job waiting for input from.
#[cfg(not(target_os = "linux"))]
pub(crate) mod input_probe {
    /// Whether this platform can tell a job waiting for input: no.
    pub(crate) const AVAILABLE: bool = false;

    /// Nothing can be told: `None`.
    pub(crate) fn reader_in_group(_pgrp: u32) -> Option<u32> {
        None
    }
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
