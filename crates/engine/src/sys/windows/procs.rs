//! The process table on Windows (the platform's side of `crate::procs`): a process's identity
//! (its creation time) and whether it runs. There is no scan: nothing outside a job's Job
//! Object is ever ended on Windows (see `tree.rs`), so no process needs to be found.

use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle};

use windows_sys::Win32::Foundation::{FILETIME, STILL_ACTIVE};
use windows_sys::Win32::System::Threading::{
    GetExitCodeProcess, GetProcessTimes, OpenProcess, PROCESS_QUERY_LIMITED_INFORMATION,
};

use crate::sys::proc_info::ProcInfo;

fn open(pid: u32) -> Option<OwnedHandle> {
    // SAFETY: OpenProcess returns a new handle or NULL.
    let h = unsafe { OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, 0, pid) };
    // SAFETY: a non-NULL return is a fresh handle that we now own.
    (!h.is_null()).then(|| unsafe { OwnedHandle::from_raw_handle(h) })
}

/// Whether the process behind `h` still runs.
fn running(h: &OwnedHandle) -> bool {
    let mut code = 0u32;
    // SAFETY: a valid process handle and a pointer to a u32 that outlives the call.
    let ok = unsafe { GetExitCodeProcess(h.as_raw_handle(), &mut code) };
    ok != 0 && code == STILL_ACTIVE as u32
}

/// Whether the process `pid` is alive.
pub(crate) fn exists(pid: u32) -> bool {
    open(pid).is_some_and(|h| running(&h))
}

/// `pid`'s identity: its creation time (100 ns units since 1601), and whether it has exited
/// (Windows has no zombies: an exited process is gone, or held only by handles). No group or
/// session.
pub(crate) fn info(pid: u32) -> Option<ProcInfo> {
    let h = open(pid)?;
    let zero = FILETIME {
        dwLowDateTime: 0,
        dwHighDateTime: 0,
    };
    let (mut created, mut exited, mut kernel, mut user) = (zero, zero, zero, zero);
    // SAFETY: a valid process handle and four FILETIMEs that outlive the call.
    let ok = unsafe {
        GetProcessTimes(
            h.as_raw_handle(),
            &mut created,
            &mut exited,
            &mut kernel,
            &mut user,
        )
    };
    (ok != 0).then(|| ProcInfo {
        pgrp: 0,
        sid: 0,
        start: u64::from(created.dwHighDateTime) << 32 | u64::from(created.dwLowDateTime),
        zombie: !running(&h),
    })
}

/// A process's environment is not read on Windows.
pub(crate) fn environ(_pid: u32) -> Option<Vec<u8>> {
    None
}

/// No scan on Windows (see the module docs): `f` is never called.
pub(crate) fn each(_f: impl FnMut(u32, ProcInfo)) {}
