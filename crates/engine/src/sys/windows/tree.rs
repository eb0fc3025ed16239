//! A job's process tree on Windows: the Job Object its shell was put in before it ran a single
//! instruction (created suspended), so every process it starts is in it too. The Job Object is
//! made with `JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE`: when its last handle closes (the job is
//! dropped, or the server dies) the whole tree ends.
//!
//! Windows has no signals: any signal ends the tree (`TerminateJobObject`) with exit code
//! `128 + signal`. Nothing outside a job's Job Object is ever ended, and a job recorded by
//! another (or a dead) server is never signalled: there is no process table scan here.

use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle};

use windows_sys::Win32::Foundation::{FILETIME, HANDLE, STILL_ACTIVE};
use windows_sys::Win32::System::JobObjects::{
    JOBOBJECT_BASIC_ACCOUNTING_INFORMATION, JobObjectBasicAccountingInformation,
    QueryInformationJobObject, TerminateJobObject,
};
use windows_sys::Win32::System::Threading::{
    GetExitCodeProcess, GetProcessTimes, OpenProcess, PROCESS_QUERY_LIMITED_INFORMATION,
};

/// The Job Object of a job and the handle of its shell (which also keeps the shell's pid from
/// being reused while the job is known).
#[derive(Debug)]
pub(crate) struct Tree {
    job: OwnedHandle,
    process: OwnedHandle,
}

impl Tree {
    /// Wraps a Job Object and the process handle of the shell assigned to it.
    pub(crate) fn new(job: OwnedHandle, process: OwnedHandle) -> Self {
        Self { job, process }
    }

    /// The shell's process handle (to wait for its exit).
    pub(crate) fn process(&self) -> HANDLE {
        self.process.as_raw_handle()
    }

    /// Whether a process of the tree is alive.
    pub(crate) fn alive(&self) -> bool {
        // SAFETY: a zeroed plain-data struct, filled by the call from a valid Job Object handle.
        unsafe {
            let mut info: JOBOBJECT_BASIC_ACCOUNTING_INFORMATION = std::mem::zeroed();
            let ok = QueryInformationJobObject(
                self.job.as_raw_handle(),
                JobObjectBasicAccountingInformation,
                (&raw mut info).cast(),
                size_of::<JOBOBJECT_BASIC_ACCOUNTING_INFORMATION>() as u32,
                std::ptr::null_mut(),
            );
            ok != 0 && info.ActiveProcesses > 0
        }
    }

    /// Ends every process of the tree, with exit code `128 + sig`.
    pub(crate) fn signal(&self, sig: i32) {
        // SAFETY: the handle is a valid Job Object handle owned by self.
        unsafe { TerminateJobObject(self.job.as_raw_handle(), 128 + sig.unsigned_abs()) };
    }
}

/// Nothing outside a job's Job Object is ever ended on Windows.
pub(crate) fn signal_process(_pid: u32, _sig: i32) {}

fn open(pid: u32) -> Option<OwnedHandle> {
    // SAFETY: OpenProcess returns a new handle or NULL.
    let h = unsafe { OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, 0, pid) };
    // SAFETY: a non-NULL return is a fresh handle that we now own.
    (!h.is_null()).then(|| unsafe { OwnedHandle::from_raw_handle(h) })
}

/// Whether the process `pid` is alive.
pub(crate) fn process_exists(pid: u32) -> bool {
    let Some(h) = open(pid) else {
        return false;
    };
    let mut code = 0u32;
    // SAFETY: a valid process handle and a pointer to a u32 that outlives the call.
    let ok = unsafe { GetExitCodeProcess(h.as_raw_handle(), &mut code) };
    ok != 0 && code == STILL_ACTIVE as u32
}

/// The creation time of `pid` (100 ns units since 1601): with the pid, what identifies it.
pub(crate) fn start_time(pid: u32) -> Option<u64> {
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
    (ok != 0).then(|| u64::from(created.dwHighDateTime) << 32 | u64::from(created.dwLowDateTime))
}

/// Windows has no zombies: an exited process is gone (or held only by handles).
pub(crate) fn is_zombie(pid: u32) -> bool {
    !process_exists(pid)
}
