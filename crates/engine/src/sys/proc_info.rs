//! What every platform's process table (`sys::procs`) tells of one process: the same facts on
//! every platform, read by `crate::procs`.

/// One process as the process table shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ProcInfo {
    /// Process group id (0 where the platform has none).
    pub pgrp: u32,
    /// Session id (0 where the platform has none, or it cannot be read).
    pub sid: u32,
    /// Start time, in the platform's unit: clock ticks since boot (Linux), microseconds since
    /// the epoch (macOS), 100 ns since 1601 (Windows). Only ever compared with another start
    /// time read on the same machine.
    pub start: u64,
    /// It has exited and runs no more (a zombie on Unix).
    pub zombie: bool,
}
