//! Open a PTY, spawn the child as a session leader on it, read it, reap it.
//!
//! Why not portable-pty on Unix: it silently runs a bad `cwd` in `$HOME`, cannot set
//! `PR_SET_PDEATHSIG`, signals only the leader, blocks on kill, and its writer sends `\n` + ^D
//! when dropped. This module does the few syscalls directly.
//!
//! Every spawn happens on one dedicated thread that lives as long as the manager: on Linux the
//! child's `PR_SET_PDEATHSIG` fires when the *thread* that forked it ends, so forking from a
//! short-lived runtime thread would kill jobs at random. When the manager is dropped, the thread
//! ends and the jobs' shells get SIGKILL, as they should.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fs::File;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::fcntl::{FcntlArg, OFlag, fcntl};
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid;

use crate::error::{Error, Result};

/// Reads are this large; a PTY read returns at most a few KiB, but a big buffer lets one
/// read take whatever the kernel has.
const READ_BUF: usize = 64 * 1024;

/// Everything needed to start one job's process.
#[derive(Debug, Clone)]
pub(crate) struct SpawnSpec {
    pub shell: PathBuf,
    pub command: String,
    pub cwd: PathBuf,
    pub env: BTreeMap<String, String>,
    pub cols: u16,
    pub rows: u16,
}

/// A started child: its pid (= process group = session id) and the PTY master.
pub(crate) struct Spawned {
    pub pid: u32,
    pub master: OwnedFd,
}

/// How the job's shell ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ExitInfo {
    /// Exited with this code.
    Code(i32),
    /// Died of this signal.
    Signal(i32),
}

/// Where the reader delivers what it sees. Called from the job's reader thread.
pub(crate) trait Sink: Send + 'static {
    /// Bytes read from the PTY, in order.
    fn data(&self, bytes: &[u8]);
    /// The child was reaped and the output drained; called exactly once, last.
    fn exited(&self, exit: ExitInfo);
}

type Request = (SpawnSpec, mpsc::Sender<Result<Spawned>>);

/// The dedicated spawning thread (see the module docs for why).
pub(crate) struct Spawner {
    tx: mpsc::Sender<Request>,
}

impl Spawner {
    pub fn new() -> Result<Self> {
        let (tx, rx) = mpsc::channel::<Request>();
        std::thread::Builder::new()
            .name("ptyjobs-spawner".into())
            .stack_size(256 * 1024)
            .spawn(move || {
                for (spec, reply) in rx {
                    let _ = reply.send(spawn(&spec));
                }
            })?;
        Ok(Self { tx })
    }

    /// Starts a child; blocks the caller for the spawn itself (about a millisecond).
    pub fn spawn(&self, spec: SpawnSpec) -> Result<Spawned> {
        let (reply_tx, reply_rx) = mpsc::channel();
        self.tx
            .send((spec, reply_tx))
            .map_err(|_| Error::Spawn("the spawner thread is gone".into()))?;
        reply_rx
            .recv()
            .map_err(|_| Error::Spawn("the spawner thread is gone".into()))?
    }
}

fn errno_io(e: Errno) -> std::io::Error {
    std::io::Error::from_raw_os_error(e as i32)
}

/// Opens a PTY pair, both ends close-on-exec so no other child inherits them.
fn open_pty(cols: u16, rows: u16) -> Result<(OwnedFd, File)> {
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
    let slave = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags_noctty()
        .open(&name)
        .map_err(|e| Error::Spawn(format!("opening {name}: {e}")))?;
    set_size(&master, cols, rows)?;
    Ok((master, slave))
}

#[cfg(target_os = "linux")]
fn pts_name(master: &nix::pty::PtyMaster) -> Result<String> {
    nix::pty::ptsname_r(master).map_err(|e| Error::Spawn(format!("ptsname: {e}")))
}

#[cfg(not(target_os = "linux"))]
fn pts_name(master: &nix::pty::PtyMaster) -> Result<String> {
    // SAFETY: ptsname is not thread-safe, but every spawn runs on the one spawner thread.
    unsafe { nix::pty::ptsname(master) }.map_err(|e| Error::Spawn(format!("ptsname: {e}")))
}

trait NoCtty {
    fn custom_flags_noctty(&mut self) -> &mut Self;
}

impl NoCtty for std::fs::OpenOptions {
    fn custom_flags_noctty(&mut self) -> &mut Self {
        use std::os::unix::fs::OpenOptionsExt;
        self.custom_flags(libc::O_NOCTTY | libc::O_CLOEXEC)
    }
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

/// The environment every job gets on top of the server's: a capable terminal and no pager.
fn job_env(extra: &BTreeMap<String, String>) -> Vec<(OsString, OsString)> {
    let mut env: BTreeMap<OsString, OsString> = std::env::vars_os()
        .filter(|(k, _)| k != "COLUMNS" && k != "LINES")
        .collect();
    for (k, v) in [
        ("TERM", "xterm-256color"),
        ("COLORTERM", "truecolor"),
        ("PAGER", "cat"),
        ("GIT_PAGER", "cat"),
    ] {
        env.insert(k.into(), v.into());
    }
    for (k, v) in extra {
        env.insert(k.into(), v.into());
    }
    env.into_iter().collect()
}

fn spawn(spec: &SpawnSpec) -> Result<Spawned> {
    let (master, slave) = open_pty(spec.cols, spec.rows)?;
    let mut cmd = Command::new(&spec.shell);
    cmd.arg("-c")
        .arg(&spec.command)
        .current_dir(&spec.cwd)
        .env_clear()
        .envs(job_env(&spec.env))
        .stdin(Stdio::from(slave.try_clone()?))
        .stdout(Stdio::from(slave.try_clone()?))
        .stderr(Stdio::from(slave));
    #[cfg(target_os = "linux")]
    // SAFETY: getpid is async-signal-safe; read before fork for the check in the child.
    let parent = unsafe { libc::getpid() };
    // SAFETY: the closure runs between fork and exec and calls only async-signal-safe functions
    // (setsid, ioctl, prctl, getppid, _exit) on values prepared before the fork.
    unsafe {
        cmd.pre_exec(move || {
            if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            // stdin is the slave: make it this new session's controlling terminal.
            if libc::ioctl(0, libc::TIOCSCTTY as _, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            #[cfg(target_os = "linux")]
            {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                if libc::getppid() != parent {
                    libc::_exit(1);
                }
            }
            Ok(())
        });
    }
    let child = cmd
        .spawn()
        .map_err(|e| Error::Spawn(format!("{}: {e}", spec.shell.display())))?;
    // The parent's slave copies were dropped with `cmd`'s stdio when `spawn` returned: from now
    // on only the job holds the slave open, so EOF on the master means the job let go of it.
    drop(cmd);
    let flags = fcntl(&master, FcntlArg::F_GETFL).map_err(errno_io)?;
    fcntl(
        &master,
        FcntlArg::F_SETFL(OFlag::from_bits_truncate(flags) | OFlag::O_NONBLOCK),
    )
    .map_err(errno_io)?;
    Ok(Spawned {
        pid: child.id(),
        master,
    })
}

/// Starts the reader thread of a job: reads the master until EOF, reaps the child, and after
/// the child exits keeps draining for at most `drain` while some other process still holds the
/// terminal open, then kills that process's group and session.
pub(crate) fn start_reader(
    pid: u32,
    master: OwnedFd,
    drain: Duration,
    sink: impl Sink,
) -> Result<()> {
    std::thread::Builder::new()
        .name(format!("ptyjobs-job-{pid}"))
        .stack_size(256 * 1024)
        .spawn(move || read_loop(pid, &master, drain, &sink))?;
    Ok(())
}

/// The child's exit, if it has exited; reaps it.
fn try_reap(pid: Pid) -> Option<ExitInfo> {
    match waitpid(pid, Some(WaitPidFlag::WNOHANG)) {
        Ok(WaitStatus::Exited(_, code)) => Some(ExitInfo::Code(code)),
        Ok(WaitStatus::Signaled(_, sig, _)) => Some(ExitInfo::Signal(sig as i32)),
        Ok(_) => None,
        // ECHILD: someone else reaped it (should not happen); report it as gone.
        Err(Errno::ECHILD) => Some(ExitInfo::Code(-1)),
        Err(_) => None,
    }
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

fn read_loop(pid: u32, master: &OwnedFd, drain: Duration, sink: &impl Sink) {
    let child = Pid::from_raw(pid as i32);
    let pidfd = pidfd_open(pid);
    let mut buf = vec![0u8; READ_BUF];
    let mut eof = false;
    let mut exit: Option<ExitInfo> = None;
    let mut drain_until: Option<Instant> = None;
    let mut killed_leftovers = false;
    loop {
        if exit.is_none() {
            exit = try_reap(child);
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
            crate::signal::kill_job_processes(pid, libc::SIGKILL);
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
        let ms = u16::try_from(timeout.as_millis().max(1)).unwrap_or(u16::MAX);
        match poll(&mut fds, PollTimeout::from(ms)) {
            Ok(_) | Err(Errno::EINTR) => {}
            Err(_) => std::thread::sleep(Duration::from_millis(10)),
        }
        if !eof {
            eof = drain_master(master, &mut buf, sink);
        }
    }
    let exit = exit.unwrap_or_else(|| {
        // The terminal closed before the child exited (it redirected its output): wait for it.
        loop {
            match waitpid(child, None) {
                Ok(WaitStatus::Exited(_, code)) => break ExitInfo::Code(code),
                Ok(WaitStatus::Signaled(_, sig, _)) => break ExitInfo::Signal(sig as i32),
                Ok(_) | Err(Errno::EINTR) => continue,
                Err(_) => break ExitInfo::Code(-1),
            }
        }
    });
    sink.exited(exit);
}

/// Reads everything the master has now. Returns true at EOF (EIO: no process holds the
/// terminal any more). One PTY read returns at most a few KiB; reads are gathered into the
/// whole buffer before the sink sees them, so a fast producer is parsed in large batches.
fn drain_master(master: &OwnedFd, buf: &mut [u8], sink: &impl Sink) -> bool {
    let mut filled = 0;
    let eof = loop {
        if filled == buf.len() {
            sink.data(&buf[..filled]);
            filled = 0;
        }
        match nix::unistd::read(master, &mut buf[filled..]) {
            Ok(0) => break true,
            Ok(n) => filled += n,
            Err(Errno::EAGAIN) => break false,
            Err(Errno::EINTR) => continue,
            Err(_) => break true, // EIO
        }
    };
    if filled > 0 {
        sink.data(&buf[..filled]);
    }
    eof
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
