//! The supervisor's side of a seccomp notification (see `notify.rs`): receiving one, what
//! is known of its caller (still pending? its command, its memory, a pidfd), and the answer.
//! Never waits on the job: every call here is a read of `/proc`, of the job's memory, or a
//! nonblocking socket call; a job that ends mid-notification makes the ioctls fail with
//! ENOENT, which is normal.
//!
//! - **A refusal** (any notified call but the ones below): counted with the process's command
//!   and answered EPERM.
//! - **`truncate`**, **`openat2`**: see `truncate.rs`.
//! - **`socket(AF_UNIX, ...)`** and **`connect`** while sockets are listed: see `connect.rs`.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use super::refusal::describe;
use super::supervisor::JobCtx;
use crate::sys::sandbox::RefusalKind;

/// How a notification is answered.
pub(super) enum Answer {
    Errno(i32),
    Value(i64),
    Continue,
    /// Already answered (ADDFD with SEND), or the call is gone (the process ended or was
    /// killed): nothing to send.
    Done,
}

pub(super) fn errno() -> i32 {
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EPERM)
}

/// Receives one notification from `listener` and answers it.
pub(super) fn answer_one(listener: RawFd, job: &JobCtx) {
    // SAFETY: seccomp_notif is plain data; the kernel requires it zeroed.
    let mut n: libc::seccomp_notif = unsafe { std::mem::zeroed() };
    // SAFETY: NOTIF_RECV writes one seccomp_notif into `n`.
    if unsafe { libc::ioctl(listener, libc::SECCOMP_IOCTL_NOTIF_RECV, &mut n) } != 0 {
        return; // ENOENT: the caller went away before we read it.
    }
    let nr = i64::from(n.data.nr) & !super::notify::X32;
    let args = n.data.args;
    let supervised = !job.listed.is_empty();
    let call = Call { listener, n: &n };
    let answer = if supervised && nr == libc::SYS_socket && args[0] as i32 == libc::AF_UNIX {
        super::connect::unix_socket(&call, job)
    } else if supervised && nr == libc::SYS_connect {
        super::connect::connect(&call, job)
    } else if nr == libc::SYS_truncate {
        super::truncate::truncate(&call, job)
    } else if nr == libc::SYS_openat2 {
        // Its flags cannot be checked (see `truncate.rs`): as on a kernel without it.
        call.refuse_with(job, "openat2".into(), RefusalKind::Openat2, libc::ENOSYS)
    } else {
        let (syscall, kind) = describe(nr, &args, supervised);
        call.refuse(job, syscall, kind)
    };
    let mut resp = libc::seccomp_notif_resp {
        id: n.id,
        val: 0,
        error: 0,
        flags: 0,
    };
    match answer {
        Answer::Done => return,
        Answer::Errno(e) => resp.error = -e,
        Answer::Value(v) => resp.val = v,
        Answer::Continue => resp.flags = libc::SECCOMP_USER_NOTIF_FLAG_CONTINUE as u32,
    }
    // SAFETY: NOTIF_SEND reads one seccomp_notif_resp. ENOENT (the caller is gone) is normal.
    unsafe { libc::ioctl(listener, libc::SECCOMP_IOCTL_NOTIF_SEND, &mut resp) };
}

/// One notification being answered.
pub(super) struct Call<'a> {
    listener: RawFd,
    pub(super) n: &'a libc::seccomp_notif,
}

impl Call<'_> {
    /// Whether the notification is still pending: what was read of its process (its memory,
    /// its comm, a pidfd) was read from the caller, not from a process that reused its pid.
    pub(super) fn valid(&self) -> bool {
        let mut id = self.n.id;
        // SAFETY: NOTIF_ID_VALID reads one u64.
        unsafe { libc::ioctl(self.listener, libc::SECCOMP_IOCTL_NOTIF_ID_VALID, &mut id) == 0 }
    }

    fn command(&self) -> String {
        std::fs::read_to_string(format!("/proc/{}/comm", self.n.pid))
            .map(|c| c.trim_end().to_owned())
            .unwrap_or_else(|_| "?".into())
    }

    /// Counts the refusal (when the caller is still there) and answers EPERM.
    pub(super) fn refuse(&self, job: &JobCtx, syscall: String, kind: RefusalKind) -> Answer {
        self.refuse_with(job, syscall, kind, libc::EPERM)
    }

    /// [`Self::refuse`], answering `errno`.
    pub(super) fn refuse_with(
        &self,
        job: &JobCtx,
        syscall: String,
        kind: RefusalKind,
        errno: i32,
    ) -> Answer {
        let command = self.command();
        if !self.valid() {
            return Answer::Done;
        }
        job.count(syscall, kind, command);
        Answer::Errno(errno)
    }

    /// Reads the caller's memory at `addr` into `buf`: the bytes read (fewer when the range
    /// runs into an unmapped page), or EFAULT when none could be. Check [`Self::valid`] after.
    pub(super) fn read_memory(&self, addr: u64, buf: &mut [u8]) -> Result<usize, i32> {
        let local = libc::iovec {
            iov_base: buf.as_mut_ptr().cast(),
            iov_len: buf.len(),
        };
        let remote = libc::iovec {
            iov_base: addr as *mut libc::c_void,
            iov_len: buf.len(),
        };
        // SAFETY: process_vm_readv writes at most `buf.len()` bytes into `buf`.
        let got =
            unsafe { libc::process_vm_readv(self.n.pid as libc::pid_t, &local, 1, &remote, 1, 0) };
        usize::try_from(got)
            .ok()
            .filter(|&n| n > 0)
            .ok_or(libc::EFAULT)
    }

    /// A pidfd of the caller, checked to be the caller's.
    pub(super) fn pidfd(&self) -> Result<OwnedFd, Answer> {
        // SAFETY: pidfd_open returns a new fd, owned at once.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, self.n.pid as libc::pid_t, 0) };
        if fd < 0 {
            return Err(Answer::Done);
        }
        // SAFETY: just opened, ours.
        let fd = unsafe { OwnedFd::from_raw_fd(fd as RawFd) };
        if !self.valid() {
            return Err(Answer::Done);
        }
        Ok(fd)
    }

    /// Installs `fd` in the caller: at `at` (replacing what is there) or, with `send`, at the
    /// lowest free number, answering the call with that number.
    pub(super) fn add_fd(
        &self,
        fd: &OwnedFd,
        at: Option<RawFd>,
        cloexec: bool,
    ) -> Result<i64, i32> {
        let mut add = libc::seccomp_notif_addfd {
            id: self.n.id,
            flags: match at {
                Some(_) => libc::SECCOMP_ADDFD_FLAG_SETFD as u32,
                None => libc::SECCOMP_ADDFD_FLAG_SEND as u32,
            },
            srcfd: fd.as_raw_fd() as u32,
            newfd: at.unwrap_or(0) as u32,
            newfd_flags: if cloexec { libc::O_CLOEXEC as u32 } else { 0 },
        };
        // SAFETY: NOTIF_ADDFD reads one seccomp_notif_addfd.
        let r = unsafe { libc::ioctl(self.listener, libc::SECCOMP_IOCTL_NOTIF_ADDFD, &mut add) };
        if r < 0 {
            Err(errno())
        } else {
            Ok(i64::from(r))
        }
    }
}
