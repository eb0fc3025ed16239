//! The handoff of a job's seccomp listener from the process that installed the filter (the
//! job's clone child, or the canary) to the server (see
//! `notify.rs`): a socketpair per sandboxed spawn, the child's end inherited as
//! [`HANDOFF_FD`], the listener sent over it with SCM_RIGHTS.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use super::super::SandboxSpec;

/// The fd the canary finds its end of the handoff socket on.
pub(crate) const HANDOFF_FD: RawFd = 3;

pub(super) fn send_fd(sock: &OwnedFd, fd: &OwnedFd) -> std::io::Result<()> {
    let mut byte = [0u8; 1];
    // SAFETY: the control buffer is sized by CMSG_SPACE for one fd and aligned for cmsghdr;
    // every pointer handed to sendmsg points into locals alive across the call.
    unsafe {
        let mut iov = libc::iovec {
            iov_base: byte.as_mut_ptr().cast(),
            iov_len: 1,
        };
        let space = libc::CMSG_SPACE(std::mem::size_of::<RawFd>() as u32) as usize;
        let mut control = vec![0u64; space.div_ceil(8)];
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = space as _;
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<RawFd>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<RawFd>(), fd.as_raw_fd());
        if libc::sendmsg(sock.as_raw_fd(), &msg, libc::MSG_NOSIGNAL) < 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

pub(super) fn recv_fd(sock: RawFd) -> std::io::Result<Option<OwnedFd>> {
    let mut byte = [0u8; 1];
    // SAFETY: as in send_fd; a received fd is owned at once (MSG_CMSG_CLOEXEC).
    unsafe {
        let mut iov = libc::iovec {
            iov_base: byte.as_mut_ptr().cast(),
            iov_len: 1,
        };
        let space = libc::CMSG_SPACE(std::mem::size_of::<RawFd>() as u32) as usize;
        let mut control = vec![0u64; space.div_ceil(8)];
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = space as _;
        let n = loop {
            let n = libc::recvmsg(sock, &mut msg, libc::MSG_CMSG_CLOEXEC | libc::MSG_DONTWAIT);
            if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            break n;
        };
        if n < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        if n == 0 || cmsg.is_null() || (*cmsg).cmsg_type != libc::SCM_RIGHTS {
            return Ok(None);
        }
        let fd = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast::<RawFd>());
        Ok(Some(OwnedFd::from_raw_fd(fd)))
    }
}

/// The server's side of one sandboxed spawn's handoff socket (see the module doc).
#[derive(Debug)]
pub(crate) struct Handoff {
    ours: OwnedFd,
    theirs: OwnedFd,
}

impl Handoff {
    /// A new socketpair (both ends close-on-exec: the child's end is dup'd to
    /// [`HANDOFF_FD`], which clears the flag on that copy only).
    pub(crate) fn new() -> std::io::Result<Self> {
        let mut fds = [0; 2];
        // SAFETY: socketpair writes two new fds, owned at once.
        unsafe {
            if libc::socketpair(
                libc::AF_UNIX,
                libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
                0,
                fds.as_mut_ptr(),
            ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(Self {
                ours: OwnedFd::from_raw_fd(fds[0]),
                theirs: OwnedFd::from_raw_fd(fds[1]),
            })
        }
    }

    /// The end the child inherits (as [`HANDOFF_FD`]).
    pub(crate) fn child_end(&self) -> RawFd {
        self.theirs.as_raw_fd()
    }

    /// Makes `cmd`'s child inherit the child's end as [`HANDOFF_FD`] (the canary: a
    /// `Command`, run once per profile at start; a job's spawn uses a posix_spawn dup2).
    pub(crate) fn prepare(&self, cmd: &mut std::process::Command) {
        use std::os::unix::process::CommandExt;
        let fd = self.child_end();
        // SAFETY: the closure runs between fork and exec and calls only dup2 and fcntl
        // (async-signal-safe).
        unsafe {
            cmd.pre_exec(move || {
                let ok = if fd == HANDOFF_FD {
                    libc::fcntl(fd, libc::F_SETFD, 0) == 0
                } else {
                    libc::dup2(fd, HANDOFF_FD) >= 0
                };
                if ok {
                    Ok(())
                } else {
                    Err(std::io::Error::last_os_error())
                }
            });
        }
    }

    /// After the spawn: registers the job of `spec` with the supervisor, which receives
    /// the child's listener on our end (a job's child has sent it before its exec; the canary
    /// sends it when it gets there). `None` when the supervisor cannot start: the job is then fail-closed
    /// (every notified call gets ENOSYS).
    pub(crate) fn supervise(self, spec: &SandboxSpec) -> Option<super::super::Supervision> {
        let Self { ours, theirs } = self;
        // The child has its copy now: without ours, its exit is our end of file.
        drop(theirs);
        super::supervisor::register(ours, spec).map(|inner| super::super::Supervision { inner })
    }
}
