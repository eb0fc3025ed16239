//! The process table on macOS (the platform's side of `crate::procs`), from libproc:
//! `proc_listallpids` for the pids and `proc_pidinfo(PROC_PIDTBSDINFO)` for each one's status,
//! process group and start time (`pbi_start_tvsec`/`pbi_start_tvusec`), `getsid` for its
//! session.
//!
//! A start time here is in microseconds since the epoch (Linux's is in clock ticks since boot):
//! only ever compared with another start time read on the same machine.
//!
//! Not read: a process's environment (that needs `sysctl(KERN_PROCARGS2)`), so no job marker;
//! a process that left its job's session is not recognised on macOS.
//! Compile-checked here (clippy --target aarch64-apple-darwin); it has not run on a Mac.

pub(crate) use super::tree::process_exists as exists;
use crate::sys::proc_info::ProcInfo;

/// Whether a scan shows a job's live leader among its members: taken as no, as it has not
/// been seen to on a Mac; a live process tree stands for its leader.
pub(crate) const SCAN_SHOWS_LEADERS: bool = false;

/// One process's BSD info, or None when it is gone or not ours to read.
fn bsd_info(pid: u32) -> Option<libc::proc_bsdinfo> {
    let pid = libc::c_int::try_from(pid).ok()?;
    let size = libc::c_int::try_from(std::mem::size_of::<libc::proc_bsdinfo>()).ok()?;
    // SAFETY: proc_bsdinfo is plain old data, so all-zero is a valid value.
    let mut info: libc::proc_bsdinfo = unsafe { std::mem::zeroed() };
    // SAFETY: the buffer is a proc_bsdinfo of exactly `size` bytes, owned by this frame.
    let n =
        unsafe { libc::proc_pidinfo(pid, libc::PROC_PIDTBSDINFO, 0, (&raw mut info).cast(), size) };
    (n == size).then_some(info)
}

fn start(info: &libc::proc_bsdinfo) -> u64 {
    info.pbi_start_tvsec
        .saturating_mul(1_000_000)
        .saturating_add(info.pbi_start_tvusec)
}

fn session_of(pid: u32) -> Option<u32> {
    let pid = libc::pid_t::try_from(pid).ok()?;
    // SAFETY: getsid takes a pid and touches no memory.
    let sid = unsafe { libc::getsid(pid) };
    u32::try_from(sid).ok().filter(|&s| s > 0)
}

fn proc_info(pid: u32, info: &libc::proc_bsdinfo) -> ProcInfo {
    ProcInfo {
        pgrp: info.pbi_pgid,
        // 0 when it cannot be read: such a process is never a candidate of a scan.
        sid: session_of(pid).unwrap_or(0),
        start: start(info),
        zombie: info.pbi_status == libc::SZOMB,
    }
}

/// `pid`'s entry, if it exists.
pub(crate) fn info(pid: u32) -> Option<ProcInfo> {
    bsd_info(pid).map(|info| proc_info(pid, &info))
}

/// A process's environment is not read on macOS (see the module docs).
pub(crate) fn environ(_pid: u32) -> Option<Vec<u8>> {
    None
}

/// Calls `f` with every process libproc lists.
pub(crate) fn each(mut f: impl FnMut(u32, ProcInfo)) {
    for pid in all_pids() {
        if let Some(info) = bsd_info(pid) {
            f(pid, proc_info(pid, &info));
        }
    }
}

/// The pids of every process, as libproc lists them (retried with room to spare, since the
/// table can grow between the sizing call and the listing).
pub(crate) fn all_pids() -> Vec<u32> {
    let pid_size = std::mem::size_of::<libc::pid_t>();
    for _ in 0..3 {
        // SAFETY: with a null buffer, proc_listallpids only returns how many pids there are.
        let count = unsafe { libc::proc_listallpids(std::ptr::null_mut(), 0) };
        let Ok(count) = usize::try_from(count) else {
            return Vec::new();
        };
        let mut pids: Vec<libc::pid_t> = vec![0; count + 64];
        let Ok(bytes) = libc::c_int::try_from(pids.len() * pid_size) else {
            return Vec::new();
        };
        // SAFETY: the buffer holds `bytes` bytes of pid_t, owned by this frame.
        let n = unsafe { libc::proc_listallpids(pids.as_mut_ptr().cast(), bytes) };
        let Ok(n) = usize::try_from(n) else {
            return Vec::new();
        };
        if n < pids.len() {
            pids.truncate(n);
            return pids
                .into_iter()
                .filter_map(|p| u32::try_from(p).ok())
                .collect();
        }
    }
    Vec::new()
}
