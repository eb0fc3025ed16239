//! The PTY side of a job: open the pair, write, resize, and the child's exit and reap as the
//! reactor ([`super::reactor`]) uses them. Starting the child on it is in [`super::spawn`].

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Arc;
use std::time::Duration;

use nix::errno::Errno;
use nix::fcntl::{FcntlArg, OFlag, fcntl};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid;

use crate::error::{Error, Result};
use crate::pipeline::Lane;
use crate::sys::Leader;

pub(crate) use crate::pipeline::ExitInfo;

pub(crate) fn errno_io(e: Errno) -> std::io::Error {
    std::io::Error::from_raw_os_error(e as i32)
}

/// Opens a PTY master (close-on-exec, so no other child inherits it) of the given size and
/// returns it with the path of its slave, which the child opens.
pub(crate) fn open_pty(cols: u16, rows: u16) -> Result<(OwnedFd, String)> {
    let master = nix::pty::posix_openpt(OFlag::O_RDWR | OFlag::O_NOCTTY | OFlag::O_CLOEXEC)
        .map_err(|e| match e {
            Errno::ENOSPC | Errno::EAGAIN | Errno::EMFILE | Errno::ENFILE => Error::LimitReached(
                format!("no pseudo-terminal available ({e}); kill or wait for some jobs"),
            ),
            e => Error::Spawn(format!("opening a pseudo-terminal failed: {e}")),
        })?;
    nix::pty::grantpt(&master).map_err(|e| Error::Spawn(format!("grantpt: {e}")))?;
    nix::pty::unlockpt(&master).map_err(|e| Error::Spawn(format!("unlockpt: {e}")))?;
    let name = pts_name(&master)?;
    let master: OwnedFd = master.into();
    set_size(&master, cols, rows)?;
    Ok((master, name))
}

/// Makes reads and writes of the master non-blocking: the reader polls, and a write to a job
/// that does not read must never block the caller.
pub(crate) fn set_nonblocking(master: &OwnedFd) -> Result<()> {
    let flags = fcntl(master, FcntlArg::F_GETFL).map_err(errno_io)?;
    fcntl(
        master,
        FcntlArg::F_SETFL(OFlag::from_bits_truncate(flags) | OFlag::O_NONBLOCK),
    )
    .map_err(errno_io)?;
    Ok(())
}

#[cfg(target_os = "linux")]
fn pts_name(master: &nix::pty::PtyMaster) -> Result<String> {
    nix::pty::ptsname_r(master).map_err(|e| Error::Spawn(format!("ptsname: {e}")))
}

#[cfg(not(target_os = "linux"))]
fn pts_name(master: &nix::pty::PtyMaster) -> Result<String> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _serial = LOCK
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    // SAFETY: ptsname returns a static buffer; the lock serialises its callers here.
    unsafe { nix::pty::ptsname(master) }.map_err(|e| Error::Spawn(format!("ptsname: {e}")))
}

/// Sets the terminal size; the kernel sends SIGWINCH to the foreground process group.
pub(crate) fn set_size(master: &impl AsRawFd, cols: u16, rows: u16) -> Result<()> {
    let ws = libc::winsize {
        ws_row: rows,
        ws_col: cols,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCSWINSZ reads one winsize from the pointer, which outlives the call.
    let r = unsafe { libc::ioctl(master.as_raw_fd(), libc::TIOCSWINSZ, &ws) };
    if r != 0 {
        return Err(Error::Io(std::io::Error::last_os_error()));
    }
    Ok(())
}

/// Starts reading a job: its master joins the I/O reactor, which drains it into `lane` until
/// EOF, reaps the child, and after the child exits keeps draining for at most `drain` while some
/// other process still holds the terminal open, then reports the drain timeout to `lane`
/// (whose sink ends what is left of the job).
pub(crate) fn start_reader(
    leader: Arc<Leader>,
    master: Arc<OwnedFd>,
    drain: Duration,
    lane: Arc<Lane>,
) -> Result<()> {
    super::reactor::add(leader, master, drain, lane)
}

fn exit_info(status: WaitStatus) -> Option<ExitInfo> {
    match status {
        WaitStatus::Exited(_, code) => Some(ExitInfo::Code(code)),
        WaitStatus::Signaled(_, sig, _) => Some(ExitInfo::Signal(sig as i32)),
        _ => None,
    }
}

/// The child's exit, if it has exited (never waits). On Linux the child is
/// left unreaped (a zombie): while it is, its pid — and so the job's process group and
/// session id — cannot be reused, which is what lets the drain timeout signal the session.
/// Elsewhere it is reaped here, under the leader's lock.
pub(super) fn exited(leader: &Leader) -> Option<ExitInfo> {
    let pid = Pid::from_raw(libc::pid_t::try_from(leader.pid).unwrap_or(0));
    let flags = WaitPidFlag::WEXITED | WaitPidFlag::WNOHANG;
    loop {
        #[cfg(target_os = "linux")]
        let r = nix::sys::wait::waitid(nix::sys::wait::Id::Pid(pid), flags | WaitPidFlag::WNOWAIT);
        #[cfg(not(target_os = "linux"))]
        let r = {
            let mut out = None;
            leader.reap(|| {
                let r = waitpid(
                    pid,
                    Some(flags & !WaitPidFlag::WEXITED | WaitPidFlag::WNOHANG),
                );
                let done = !matches!(r, Ok(WaitStatus::StillAlive) | Err(Errno::EINTR));
                out = Some(r);
                done.then_some(())
            });
            match out {
                Some(r) => r,
                None => return Some(ExitInfo::Code(-1)),
            }
        };
        return match r {
            Ok(status) => exit_info(status),
            Err(Errno::EINTR) => continue,
            // ECHILD: someone else reaped it (should not happen); report it as gone.
            Err(Errno::ECHILD) => Some(ExitInfo::Code(-1)),
            Err(_) => None,
        };
    }
}

/// Reaps the exited child (Linux; elsewhere [`exited`] already did) under the leader's lock.
pub(super) fn reap(leader: &Leader) {
    #[cfg(target_os = "linux")]
    {
        let pid = Pid::from_raw(libc::pid_t::try_from(leader.pid).unwrap_or(0));
        leader.reap(|| {
            loop {
                match waitpid(pid, None) {
                    Err(Errno::EINTR) => continue,
                    _ => break Some(()),
                }
            }
        });
    }
    #[cfg(not(target_os = "linux"))]
    let _ = leader;
}

#[cfg(target_os = "linux")]
pub(super) fn pidfd_open(pid: u32) -> Option<OwnedFd> {
    use std::os::fd::FromRawFd;
    // SAFETY: pidfd_open takes a pid and flags and returns a new fd or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
    // SAFETY: a non-negative return is a fresh fd that we now own.
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

#[cfg(not(target_os = "linux"))]
pub(super) fn pidfd_open(_pid: u32) -> Option<OwnedFd> {
    None
}

/// Writes as much of `data` as the terminal takes without blocking.
pub(crate) fn write_some(master: &OwnedFd, data: &[u8]) -> std::io::Result<usize> {
    loop {
        match nix::unistd::write(master, data) {
            Ok(n) => return Ok(n),
            Err(Errno::EAGAIN) => return Ok(0),
            Err(Errno::EINTR) => continue,
            Err(e) => return Err(errno_io(e)),
        }
    }
}

/// Whether the terminal echoes input (the ECHO flag of its line discipline).
pub(crate) fn echoes(master: &OwnedFd) -> bool {
    nix::sys::termios::tcgetattr(master)
        .map(|t| t.local_flags.contains(nix::sys::termios::LocalFlags::ECHO))
        .unwrap_or(false)
}

/// The handle writes and resizes go through: the PTY master.
pub(crate) type Master = OwnedFd;

/// The terminal's foreground process group and whether the terminal echoes input; `None` when
/// it cannot be told.
pub(crate) fn foreground(master: &OwnedFd) -> Option<(u32, bool)> {
    let echo = nix::sys::termios::tcgetattr(master)
        .ok()?
        .local_flags
        .contains(nix::sys::termios::LocalFlags::ECHO);
    // SAFETY: tcgetpgrp only reads the descriptor's terminal; the fd is open for the call.
    let pgrp = unsafe { libc::tcgetpgrp(master.as_raw_fd()) };
    (pgrp > 0).then(|| (pgrp.unsigned_abs(), echo))
}
