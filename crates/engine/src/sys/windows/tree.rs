//! A job's process tree on Windows: the Job Object its shell was put in before it ran a single
//! instruction (created suspended), so every process it starts is in it too. The Job Object is
//! made with `JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE`: when its last handle closes (the job is
//! dropped, or the server dies) the whole tree ends.
//!
//! Windows has no signals: any signal ends the tree (`TerminateJobObject`) with exit code
//! `128 + signal`. Nothing outside a job's Job Object is ever ended, and a job recorded by
//! another (or a dead) server is never signalled: there is no process table scan here.

use std::os::windows::io::{AsRawHandle, OwnedHandle};

use windows_sys::Win32::Foundation::HANDLE;
use windows_sys::Win32::System::JobObjects::{
    JOBOBJECT_BASIC_ACCOUNTING_INFORMATION, JobObjectBasicAccountingInformation,
    JobObjectBasicProcessIdList, QueryInformationJobObject, TerminateJobObject,
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

    /// The pids of the tree's live processes (the Job Object's list; at most 1024).
    pub(crate) fn pids(&self) -> Vec<u32> {
        /// `JOBOBJECT_BASIC_PROCESS_ID_LIST` with room for 1024 ids.
        #[repr(C)]
        struct List {
            assigned: u32,
            listed: u32,
            ids: [usize; 1024],
        }
        // SAFETY: a zeroed plain-data struct, filled by the call from a valid Job Object handle;
        // its layout is JOBOBJECT_BASIC_PROCESS_ID_LIST's with a longer id array.
        unsafe {
            let mut list: List = std::mem::zeroed();
            let ok = QueryInformationJobObject(
                self.job.as_raw_handle(),
                JobObjectBasicProcessIdList,
                (&raw mut list).cast(),
                size_of::<List>() as u32,
                std::ptr::null_mut(),
            );
            if ok == 0 {
                return Vec::new();
            }
            let n = (list.listed as usize).min(list.ids.len());
            list.ids[..n]
                .iter()
                .filter_map(|&id| u32::try_from(id).ok())
                .collect()
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
