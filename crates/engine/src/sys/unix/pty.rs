//! The PTY side of a job: open the pair, write, resize, and the child's exit and reap as the
//! reactor ([`super::reactor`]) uses them. Starting the child on it is in [`super::spawn`].

use std::os::fd::{AsFd, OwnedFd};
use std::sync::Arc;
use std::time::Duration;

use rustix::fs::{OFlags, fcntl_getfl, fcntl_setfl};
use rustix::io::Errno;
use rustix::process::{Pid, WaitOptions, waitpid};
use rustix::pty::OpenptFlags;
use rustix::termios::{LocalModes, Winsize};

use crate::error::{Error, Result};
use crate::pipeline::Lane;
use crate::sys::Leader;

pub(crate) use crate::pipeline::ExitInfo;

/// `pid` as the system calls take it (`None` for 0 or a pid out of range).
pub(crate) fn pid(pid: u32) -> Option<Pid> {
    Pid::from_raw(i32::try_from(pid).ok()?)
}

/// Opens a PTY master (close-on-exec, so no other child inherits it) of the given size and
/// returns it with the path of its slave, which the child opens.
pub(crate) fn open_pty(cols: u16, rows: u16) -> Result<(OwnedFd, String)> {
    // rustix names O_CLOEXEC only where `posix_openpt` documents it (Linux, some BSDs); it is
    // passed on every platform, as it always was.
    let cloexec = OpenptFlags::from_bits_retain(libc::O_CLOEXEC.unsigned_abs());
    let master = rustix::pty::openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY | cloexec).map_err(
        |e| match e {
            Errno::NOSPC | Errno::AGAIN | Errno::MFILE | Errno::NFILE => Error::LimitReached(
                format!("no pseudo-terminal available ({e}); kill or wait for some jobs"),
            ),
            e => Error::Spawn(format!("opening a pseudo-terminal failed: {e}")),
        },
    )?;
    rustix::pty::grantpt(&master).map_err(|e| Error::Spawn(format!("grantpt: {e}")))?;
    rustix::pty::unlockpt(&master).map_err(|e| Error::Spawn(format!("unlockpt: {e}")))?;
    // Thread-safe on every platform (an ioctl, not `ptsname`'s static buffer).
    let name = rustix::pty::ptsname(&master, Vec::new())
        .map_err(|e| Error::Spawn(format!("ptsname: {e}")))?
        .into_string()
        .map_err(|_| Error::Spawn("ptsname: not UTF-8".into()))?;
    set_size(&master, cols, rows)?;
    Ok((master, name))
}

/// Makes reads and writes of the master non-blocking: the reader polls, and a write to a job
/// that does not read must never block the caller.
pub(crate) fn set_nonblocking(master: &OwnedFd) -> Result<()> {
    let flags = fcntl_getfl(master).map_err(std::io::Error::from)?;
    fcntl_setfl(master, flags | OFlags::NONBLOCK).map_err(std::io::Error::from)?;
    Ok(())
}

/// Sets the terminal size; the kernel sends SIGWINCH to the foreground process group.
pub(crate) fn set_size(master: &impl AsFd, cols: u16, rows: u16) -> Result<()> {
    let ws = Winsize {
        ws_row: rows,
        ws_col: cols,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    rustix::termios::tcsetwinsize(master, ws).map_err(|e| Error::Io(e.into()))
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

/// The child's exit, if it has exited (never waits). On Linux the child is
/// left unreaped (a zombie): while it is, its pid — and so the job's process group and
/// session id — cannot be reused, which is what lets the drain timeout signal the session.
/// Elsewhere it is reaped here, under the leader's lock.
pub(super) fn exited(leader: &Leader) -> Option<ExitInfo> {
    // A pid out of range is no child of ours: nothing to tell (never so for a real child).
    let pid = pid(leader.pid)?;
    loop {
        #[cfg(target_os = "linux")]
        let r = rustix::process::waitid(
            rustix::process::WaitId::Pid(pid),
            rustix::process::WaitIdOptions::EXITED
                | rustix::process::WaitIdOptions::NOHANG
                | rustix::process::WaitIdOptions::NOWAIT,
        )
        .map(|s| s.and_then(|s| ExitInfo::from_status(s.exit_status(), s.terminating_signal())));
        #[cfg(not(target_os = "linux"))]
        let r = {
            let mut out = None;
            leader.reap(|| {
                let r = waitpid(Some(pid), WaitOptions::NOHANG);
                let done = !matches!(r, Ok(None) | Err(Errno::INTR));
                out = Some(r);
                done.then_some(())
            });
            match out {
                Some(r) => r.map(|s| {
                    s.and_then(|(_, s)| {
                        ExitInfo::from_status(s.exit_status(), s.terminating_signal())
                    })
                }),
                None => return Some(ExitInfo::Code(-1)),
            }
        };
        return match r {
            Ok(exit) => exit,
            Err(Errno::INTR) => continue,
            // ECHILD: someone else reaped it (should not happen); report it as gone.
            Err(Errno::CHILD) => Some(ExitInfo::Code(-1)),
            Err(_) => None,
        };
    }
}

/// Reaps the exited child (Linux; elsewhere [`exited`] already did) under the leader's lock.
pub(super) fn reap(leader: &Leader) {
    #[cfg(target_os = "linux")]
    {
        // A pid out of range is no child of ours (and `None` would wait for any child).
        let Some(pid) = pid(leader.pid) else {
            return;
        };
        leader.reap(|| {
            loop {
                match waitpid(Some(pid), WaitOptions::empty()) {
                    Err(Errno::INTR) => continue,
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
    rustix::process::pidfd_open(self::pid(pid)?, rustix::process::PidfdFlags::empty()).ok()
}

#[cfg(not(target_os = "linux"))]
pub(super) fn pidfd_open(_pid: u32) -> Option<OwnedFd> {
    None
}

/// Writes as much of `data` as the terminal takes without blocking.
pub(crate) fn write_some(master: &OwnedFd, data: &[u8]) -> std::io::Result<usize> {
    loop {
        match rustix::io::write(master, data) {
            Ok(n) => return Ok(n),
            Err(Errno::AGAIN) => return Ok(0),
            Err(Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// Whether the terminal echoes input (the ECHO flag of its line discipline).
pub(crate) fn echoes(master: &OwnedFd) -> bool {
    rustix::termios::tcgetattr(master).is_ok_and(|t| t.local_modes.contains(LocalModes::ECHO))
}

/// The handle writes and resizes go through: the PTY master.
pub(crate) type Master = OwnedFd;

/// The terminal's foreground process group, whether the terminal echoes input and whether it
/// is in canonical (line) mode; `None` when it cannot be told.
pub(crate) fn foreground(master: &OwnedFd) -> Option<(u32, bool, bool)> {
    let modes = rustix::termios::tcgetattr(master).ok()?.local_modes;
    // No foreground group (0) is an error here.
    let pgrp = rustix::termios::tcgetpgrp(master).ok()?;
    Some((
        pgrp.as_raw_nonzero().get().unsigned_abs(),
        modes.contains(LocalModes::ECHO),
        modes.contains(LocalModes::ICANON),
    ))
}
