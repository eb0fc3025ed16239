//! The handoff of a job's seccomp listener from the process that installed the filter (the
//! job's clone child, or the canary) to the server (see
//! `notify.rs`): a socketpair per sandboxed spawn, the child's end inherited as
//! [`HANDOFF_FD`], the listener sent over it with SCM_RIGHTS.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use super::super::SandboxSpec;

/// The fd the canary finds its end of the handoff socket on.
pub(crate) const HANDOFF_FD: RawFd = 3;

/// A message of one byte carrying one fd (SCM_RIGHTS), as `sendmsg` and `recvmsg` take it: the
/// buffers live here and [`FdMessage::header`] points into them, so a message must stay where
/// it is while a header made from it is in use. Made before a `clone` too, for a child that
/// only fills in the fd and calls `sendmsg` (`sys/unix/spawn_sandboxed.rs`).
pub(crate) struct FdMessage {
    byte: [u8; 1],
    iov: libc::iovec,
    /// Room for `CMSG_SPACE(sizeof(int))` (24 bytes on Linux), 8-byte aligned.
    control: [u64; 4],
}

impl FdMessage {
    pub(crate) fn new() -> Self {
        Self {
            byte: [0],
            iov: libc::iovec {
                iov_base: std::ptr::null_mut(),
                iov_len: 1,
            },
            control: [0; 4],
        }
    }

    /// A header over this message's buffers with its SCM_RIGHTS header filled in, and where
    /// the fd it carries goes (to write before `sendmsg`; `recvmsg` overwrites it all).
    pub(crate) fn header(&mut self) -> (libc::msghdr, *mut RawFd) {
        self.iov.iov_base = self.byte.as_mut_ptr().cast();
        // SAFETY: a zeroed msghdr is valid; CMSG_SPACE(4) fits `control` (checked), which is
        // aligned for cmsghdr; every pointer points into `self`.
        unsafe {
            let fd = std::mem::size_of::<RawFd>() as u32;
            let space = libc::CMSG_SPACE(fd) as usize;
            assert!(space <= std::mem::size_of_val(&self.control));
            let mut msg: libc::msghdr = std::mem::zeroed();
            msg.msg_iov = &mut self.iov;
            msg.msg_iovlen = 1;
            msg.msg_control = self.control.as_mut_ptr().cast();
            msg.msg_controllen = space as _;
            let cmsg = libc::CMSG_FIRSTHDR(&msg);
            (*cmsg).cmsg_level = libc::SOL_SOCKET;
            (*cmsg).cmsg_type = libc::SCM_RIGHTS;
            (*cmsg).cmsg_len = libc::CMSG_LEN(fd) as _;
            (msg, libc::CMSG_DATA(cmsg).cast())
        }
    }
}

pub(super) fn send_fd(sock: &OwnedFd, fd: &OwnedFd) -> std::io::Result<()> {
    let mut message = FdMessage::new();
    let (msg, slot) = message.header();
    // SAFETY: `slot` and `msg` point into `message`, alive and unmoved across the calls.
    unsafe {
        std::ptr::write_unaligned(slot, fd.as_raw_fd());
        if libc::sendmsg(sock.as_raw_fd(), &msg, libc::MSG_NOSIGNAL) < 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

pub(super) fn recv_fd(sock: RawFd) -> std::io::Result<Option<OwnedFd>> {
    let mut message = FdMessage::new();
    let (mut msg, _) = message.header();
    // SAFETY: `msg` points into `message`, alive and unmoved across the calls; a received fd
    // is owned at once (MSG_CMSG_CLOEXEC).
    unsafe {
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
