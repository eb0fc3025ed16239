//! Unix: a PTY pair from `posix_openpt`, the shell started with `posix_spawn` as a new
//! session leader whose controlling terminal is the PTY.

pub(crate) mod attach;
pub(crate) mod control;
pub(crate) mod fs;
#[cfg(target_os = "linux")]
pub(crate) mod input_probe;
pub(crate) mod keeper;
pub(crate) mod limits;
#[cfg(target_os = "linux")]
pub(crate) mod net_linux;
#[cfg(target_os = "macos")]
pub(crate) mod net_macos;
#[cfg(target_os = "linux")]
pub(crate) mod procfs;
#[cfg(target_os = "linux")]
pub(crate) use procfs as procs;
#[cfg(target_os = "macos")]
#[path = "procs_macos.rs"]
pub(crate) mod procs;
pub(crate) mod pty;
mod reactor;
pub(crate) mod sched;
pub(crate) mod sig;
pub(crate) mod spawn;
#[cfg(target_os = "linux")]
mod spawn_sandboxed;
pub(crate) mod tree;

/// Elsewhere on Unix no process table is read: a process's identity is unknown and a scan
/// finds nothing.
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
pub(crate) mod procs {
    pub(crate) use super::tree::process_exists as exists;
    use crate::sys::proc_info::ProcInfo;

    /// Whether a scan shows a job's live leader among its members: no, there is no scan.
    pub(crate) const SCAN_SHOWS_LEADERS: bool = false;

    /// Unknown: `None`.
    pub(crate) fn info(_pid: u32) -> Option<ProcInfo> {
        None
    }

    /// Unknown: `None`.
    pub(crate) fn environ(_pid: u32) -> Option<Vec<u8>> {
        None
    }

    /// Nothing to walk: `f` is never called.
    pub(crate) fn each(_f: impl FnMut(u32, ProcInfo)) {}
}
