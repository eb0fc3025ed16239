//! The PTY side of a job: open the pair, read the master until EOF, reap the child, write.
//! Starting the child on it is in [`super::spawn`].

use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::fcntl::{FcntlArg, OFlag, fcntl};
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid;

use crate::error::{Error, Result};
use crate::job::JobId;
use crate::kill::{self, Leader, Target};
use std::sync::Arc;

pub(crate) use crate::sys::{ExitInfo, IDLE, Sink};

/// The handle writes and resizes go through: the PTY master.
pub(crate) type Master = OwnedFd;

/// Reads are this large; a PTY read returns at most a few KiB, but a big buffer lets one
/// read take whatever the kernel has.
const READ_BUF: usize = 64 * 1024;

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

/// Starts the reader thread of a job: reads the master until EOF, reaps the child, and after
/// the child exits keeps draining for at most `drain` while some other process still holds the
/// terminal open, then kills (through the kill path) what is left of the job.
pub(crate) fn start_reader(
    leader: Arc<Leader>,
    id: JobId,
    master: OwnedFd,
    drain: Duration,
    sink: impl Sink,
) -> Result<()> {
    std::thread::Builder::new()
        .name(format!("ptyjobs-job-{}", leader.pid))
        .stack_size(256 * 1024)
        .spawn(move || read_loop(&leader, id, &master, drain, &sink))?;
    Ok(())
}

fn exit_info(status: WaitStatus) -> Option<ExitInfo> {
    match status {
        WaitStatus::Exited(_, code) => Some(ExitInfo::Code(code)),
        WaitStatus::Signaled(_, sig, _) => Some(ExitInfo::Signal(sig as i32)),
        _ => None,
    }
}

/// The child's exit, if it has exited (waiting for it with `block`). On Linux the child is
/// left unreaped (a zombie): while it is, its pid — and so the job's process group and
/// session id — cannot be reused, which is what lets the drain timeout signal the session.
/// Elsewhere it is reaped here, under the leader's lock.
fn exited(leader: &Leader, block: bool) -> Option<ExitInfo> {
    let pid = Pid::from_raw(libc::pid_t::try_from(leader.pid).unwrap_or(0));
    let mut flags = WaitPidFlag::WEXITED;
    if !block {
        flags |= WaitPidFlag::WNOHANG;
    }
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
                Some(Ok(WaitStatus::StillAlive)) if block => {
                    std::thread::sleep(Duration::from_millis(20));
                    continue;
                }
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
fn reap(leader: &Leader) {
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
fn pidfd_open(pid: u32) -> Option<OwnedFd> {
    use std::os::fd::FromRawFd;
    // SAFETY: pidfd_open takes a pid and flags and returns a new fd or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
    // SAFETY: a non-negative return is a fresh fd that we now own.
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

#[cfg(not(target_os = "linux"))]
fn pidfd_open(_pid: u32) -> Option<OwnedFd> {
    None
}

fn read_loop(leader: &Arc<Leader>, id: JobId, master: &OwnedFd, drain: Duration, sink: &impl Sink) {
    sink.start();
    let pidfd = pidfd_open(leader.pid);
    let mut buf = vec![0u8; READ_BUF];
    let mut eof = false;
    let mut exit: Option<ExitInfo> = None;
    let mut drain_until: Option<Instant> = None;
    let mut killed_leftovers = false;
    // When output last arrived, while `Sink::idle` is owed for it.
    let mut last_data: Option<Instant> = None;
    // Since when output is quiet, and when `Sink::quiet` is due next.
    let mut quiet_since = Instant::now();
    let mut quiet_due = Some(quiet_since);
    loop {
        if exit.is_none() {
            exit = exited(leader, false);
            if exit.is_some() {
                drain_until = Some(Instant::now() + drain);
            }
        }
        if eof && exit.is_some() {
            break;
        }
        if let (Some(until), false) = (drain_until, eof)
            && Instant::now() >= until
        {
            if killed_leftovers {
                break; // give up on a terminal that never closes
            }
            // A background process still holds the terminal: the job is over.
            kill::signal_now(&[Target::own(id, leader)], libc::SIGKILL);
            killed_leftovers = true;
            drain_until = Some(Instant::now() + Duration::from_secs(1));
        }
        // What to wait on: the master while it is open, the child until it is reaped.
        let mut fds = Vec::with_capacity(2);
        if !eof {
            fds.push(PollFd::new(master.as_fd(), PollFlags::POLLIN));
        }
        let watch_pid = exit.is_none() && pidfd.is_some();
        if let (true, Some(p)) = (watch_pid, pidfd.as_ref()) {
            fds.push(PollFd::new(p.as_fd(), PollFlags::POLLIN));
        }
        let timeout = match (drain_until, watch_pid || exit.is_some()) {
            (Some(until), _) => until.saturating_duration_since(Instant::now()),
            // Without a pidfd, look at the child every 50 ms.
            (None, false) => Duration::from_millis(50),
            (None, true) => Duration::from_secs(3600),
        };
        let timeout = match last_data {
            Some(at) => timeout.min((at + IDLE).saturating_duration_since(Instant::now())),
            None => timeout,
        };
        if eof || exit.is_some() {
            quiet_due = None; // nobody waits for input any more
        }
        let timeout = match quiet_due {
            Some(at) => timeout.min(at.saturating_duration_since(Instant::now())),
            None => timeout,
        };
        let ms = u16::try_from(timeout.as_millis().max(1)).unwrap_or(u16::MAX);
        match poll(&mut fds, PollTimeout::from(ms)) {
            Ok(_) | Err(Errno::EINTR) => {}
            Err(_) => std::thread::sleep(Duration::from_millis(10)),
        }
        if !eof {
            let got;
            (eof, got) = drain_master(master, &mut buf, sink);
            if got {
                last_data = Some(Instant::now());
                quiet_since = Instant::now();
                quiet_due = Some(quiet_since);
            }
        }
        if let Some(at) = quiet_due
            && !eof
            && Instant::now() >= at
        {
            quiet_due = sink
                .quiet(quiet_since.elapsed())
                .map(|d| Instant::now() + d);
        }
        if let Some(at) = last_data
            && !eof
            && at.elapsed() >= IDLE
        {
            last_data = None;
            sink.idle();
        }
    }
    // Without the lock: the terminal closed before the child exited (it redirected its
    // output), and a kill must be able to reach it while this waits.
    let exit = exit
        .or_else(|| exited(leader, true))
        .unwrap_or(ExitInfo::Code(-1));
    reap(leader);
    sink.exited(exit);
}

/// Reads everything the master has now. Returns whether it reached EOF (EIO: no process holds
/// the terminal any more) and whether it read anything.
///
/// One PTY read returns at most a few KiB. While a producer is streaming (the last read filled
/// a whole PTY chunk), reads are gathered for up to [`COALESCE`] into the whole buffer before
/// the sink sees them: large batches let the fast path skip the emulator for most lines and
/// save a wake-up per chunk. Small output (a prompt, an echo) is delivered at once.
fn drain_master(master: &OwnedFd, buf: &mut [u8], sink: &impl Sink) -> (bool, bool) {
    let mut filled = 0;
    let mut got = false;
    let mut streaming_until: Option<Instant> = None;
    let eof = loop {
        if filled == buf.len() {
            sink.data(&buf[..filled]);
            filled = 0;
        }
        match nix::unistd::read(master, &mut buf[filled..]) {
            Ok(0) => break true,
            Ok(n) => {
                filled += n;
                got = true;
                if n >= PTY_CHUNK && streaming_until.is_none() {
                    streaming_until = Some(Instant::now() + COALESCE);
                }
            }
            Err(Errno::EAGAIN) => {
                let Some(until) = streaming_until else {
                    break false;
                };
                let left = until.saturating_duration_since(Instant::now());
                if left.is_zero() || !readable_within(master, left) {
                    break false;
                }
            }
            Err(Errno::EINTR) => continue,
            Err(_) => break true, // EIO
        }
    };
    if filled > 0 {
        sink.data(&buf[..filled]);
    }
    (eof, got)
}

/// A read at least this large suggests a producer that is streaming: more is on its way.
const PTY_CHUNK: usize = 1024;
/// How long reads of a streaming producer are gathered into one batch.
const COALESCE: Duration = Duration::from_millis(2);

/// Whether the master becomes readable within `wait`.
fn readable_within(master: &OwnedFd, wait: Duration) -> bool {
    let mut fds = [PollFd::new(master.as_fd(), PollFlags::POLLIN)];
    let ms = u16::try_from(wait.as_millis().max(1)).unwrap_or(u16::MAX);
    matches!(poll(&mut fds, PollTimeout::from(ms)), Ok(n) if n > 0)
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
