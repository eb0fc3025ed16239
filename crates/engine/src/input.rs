//! Input awareness: whether a job is waiting for someone to type.
//!
//! A job is *waiting for input* when its output has been quiet for [`QUIET`] and a process of
//! its terminal's foreground process group is asleep in a system call that waits for the
//! terminal to become readable. What is looked at (Linux, all of it read-only):
//!
//! - the terminal's line discipline through the PTY master: `tcgetattr` (on Linux the master
//!   reports the slave's settings) gives `ECHO` — off while a password is typed — and
//!   `tcgetpgrp` gives the foreground process group;
//! - the members of that group: its leader and the leader's descendants in the same group
//!   (`/proc/<pid>/task/<tid>/children`), or a scan of `/proc` when the leader is gone;
//! - for each of their threads asleep (`S` in `/proc/<pid>/task/<tid>/stat`), the system call
//!   it sleeps in (`/proc/<pid>/task/<tid>/syscall`): a `read`/`readv`/`pread64` of a file
//!   descriptor that is the job's terminal (or `/dev/tty`); an `epoll_wait` whose interest
//!   list (`/proc/<pid>/fdinfo/<epfd>`) holds the terminal; a `poll`/`ppoll`/`select`/
//!   `pselect6` whose descriptor set (read from `/proc/<pid>/mem`) holds the terminal for
//!   reading.
//!
//! The probe runs on the job's reader thread while output is quiet (at [`QUIET`], then every
//! [`RECHECK`], every [`RECHECK_SLOW`] once the job has been quiet for [`SLOW_AFTER`]), never
//! on an async worker; readers only copy its last result. New output, or input written to the
//! job, clears the state at once until the next probe.
//!
//! When it can be wrong is stated on [`InputWait`].

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Mutex;
use std::time::Duration;

use serde::Serialize;
use tokio::sync::watch;

use crate::manager::{Job, lock};

/// How long output must be quiet before a job can count as waiting for input.
pub(crate) const QUIET: Duration = Duration::from_millis(150);
/// How often a quiet job is probed again.
const RECHECK: Duration = Duration::from_millis(250);
/// ... once it has been quiet for [`SLOW_AFTER`].
const RECHECK_SLOW: Duration = Duration::from_secs(1);
/// When probing slows down.
const SLOW_AFTER: Duration = Duration::from_secs(3);

/// A job waiting for input: what the person at its terminal would see.
///
/// A running job waits for input when its output has been quiet for 150 ms and a process of
/// its terminal's foreground process group is asleep waiting for the terminal: in a `read` of
/// it, or in a `poll`/`select`/`epoll_wait` whose set holds it. Looked at on the job's reader
/// thread while output is quiet (at 150 ms, every 250 ms, every second after 3 s); new output
/// or input written to the job clears it until the next look.
///
/// When it can be wrong:
/// - **Late**: a job that starts reading without printing anything first is seen at the next
///   probe (at most [`RECHECK_SLOW`] later).
/// - **Polling programs**: a program that waits on the terminal *and* other descriptors with
///   `poll`/`select`/`epoll` (a full-screen program such as `top` between redraws, a REPL with
///   timers) counts as waiting whenever it is quiet, because it does accept keys then. A
///   program that polls the terminal with a zero timeout in a busy loop is not seen. A descriptor set that cannot be read
///   (`/proc/<pid>/mem` refused, e.g. a setuid program) counts as not waiting.
/// - **Quiet readers of other things**: a process blocked reading a pipe or a socket is never
///   waiting for input, even if a person would call it so (`cat | sort` waits on `cat`, which
///   does read the terminal, and is reported).
/// - **Background groups**: only the foreground process group counts. A process of a
///   background group that reads the terminal is stopped by `SIGTTIN` and is not reported; a
///   job that made itself a new session (`setsid`) has left the terminal and is not seen.
/// - **Not Linux**: there is no `/proc`; `waiting_for_input` is always false.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InputWait {
    /// Whether the terminal echoes what is typed; false for passwords (the input never
    /// appears in the output then).
    pub echo: bool,
    /// The text of the line the cursor is on (trailing blanks trimmed): the prompt, such as
    /// `Password:` or `Continue? [y/N]`.
    pub prompt: String,
    /// The process that waits (a member of the terminal's foreground process group).
    pub pid: u32,
}

/// A job's input state, written by its reader thread and read by everyone else.
#[derive(Debug, Default)]
pub(crate) struct InputWatch {
    state: Mutex<Watched>,
    /// Bumped whenever the state changes, for waits.
    changed: watch::Sender<u64>,
}

#[derive(Debug, Default)]
struct Watched {
    /// Bumped by every clear: a probe begun before it must not publish.
    generation: u64,
    wait: Option<InputWait>,
}

impl InputWatch {
    /// The job's input state as of the last probe.
    pub(crate) fn current(&self) -> Option<InputWait> {
        lock(&self.state).wait.clone()
    }

    /// Output arrived or input was written: the job is not known to wait any more.
    pub(crate) fn clear(&self) {
        let had = {
            let mut s = lock(&self.state);
            s.generation += 1;
            s.wait.take().is_some()
        };
        if had {
            self.changed.send_modify(|n| *n += 1);
        }
    }

    /// A receiver that sees every change of the state.
    pub(crate) fn subscribe(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    fn generation(&self) -> u64 {
        lock(&self.state).generation
    }

    /// Stores a probe's result, unless a clear happened since the probe began.
    fn publish(&self, generation: u64, wait: Option<InputWait>) {
        let changed = {
            let mut s = lock(&self.state);
            if s.generation != generation || s.wait == wait {
                return;
            }
            s.wait = wait;
            true
        };
        if changed {
            self.changed.send_modify(|n| *n += 1);
        }
    }
}

/// Called on the job's reader thread while output has been quiet for `quiet`: probes when it
/// is time and returns how long until the next call (`None`: not before new output).
pub(crate) fn on_quiet(job: &Job, quiet: Duration) -> Option<Duration> {
    if quiet < QUIET {
        return Some(QUIET - quiet);
    }
    let generation = job.input.generation();
    let Ok(master) = job.master() else {
        return None;
    };
    let wait = probe(&master).map(|(pid, echo)| InputWait {
        echo,
        prompt: prompt_of(job),
        pid,
    });
    job.input.publish(generation, wait);
    Some(if quiet < SLOW_AFTER {
        RECHECK
    } else {
        RECHECK_SLOW
    })
}

/// The text of the cursor's row on the job's screen.
fn prompt_of(job: &Job) -> String {
    let screen = lock(&job.state).term.screen();
    screen
        .rows
        .get(usize::from(screen.cursor_row))
        .map(|r| r.trim_end().to_owned())
        .unwrap_or_default()
}

/// The process of the terminal's foreground group that waits for input, and whether the
/// terminal echoes; `None` when none waits (or it cannot be told).
fn probe(master: &OwnedFd) -> Option<(u32, bool)> {
    use nix::sys::termios::{LocalFlags, tcgetattr};
    let echo = tcgetattr(master)
        .ok()?
        .local_flags
        .contains(LocalFlags::ECHO);
    // SAFETY: tcgetpgrp only reads the descriptor's terminal; the fd is open for the call.
    let pgrp = unsafe { libc::tcgetpgrp(master.as_raw_fd()) };
    if pgrp <= 0 {
        return None;
    }
    sys::reader_in_group(pgrp.unsigned_abs()).map(|pid| (pid, echo))
}

#[cfg(not(target_os = "linux"))]
mod sys {
    /// Without `/proc` nothing can be told.
    pub(super) fn reader_in_group(_pgrp: u32) -> Option<u32> {
        None
    }
}

#[cfg(target_os = "linux")]
mod sys {
    use std::fs;
    use std::os::unix::fs::{FileExt, FileTypeExt, MetadataExt};

    /// `/dev/tty` (major 5, minor 0): whatever the process's controlling terminal is.
    const DEV_TTY: u64 = 5 << 8;
    /// Most descriptors of a poll or select set looked at.
    const MAX_FDS: u64 = 4096;

    /// Fields of a `stat` file after the command name (which may hold spaces and parens).
    struct Stat {
        state: char,
        pgrp: u32,
        tty: u64,
    }

    fn stat(path: &str) -> Option<Stat> {
        let text = fs::read_to_string(path).ok()?;
        let rest = &text[text.rfind(')')? + 1..];
        let f: Vec<&str> = rest.split_whitespace().collect();
        Some(Stat {
            state: f.first()?.chars().next()?,
            pgrp: f.get(2)?.parse().ok()?,
            tty: f.get(4)?.parse::<i64>().ok()?.try_into().ok()?,
        })
    }

    fn tasks(pid: u32) -> Vec<u32> {
        fs::read_dir(format!("/proc/{pid}/task"))
            .map(|d| {
                d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The processes of group `pgrp` with their terminal: the leader and its descendants in
    /// the group, or (leader gone) every process in it.
    fn members(pgrp: u32) -> Vec<(u32, u64)> {
        let leader = stat(&format!("/proc/{pgrp}/stat")).filter(|s| s.pgrp == pgrp);
        let Some(leader) = leader else {
            return scan(pgrp);
        };
        let mut out = vec![(pgrp, leader.tty)];
        let mut i = 0;
        while i < out.len() && out.len() < 1024 {
            let pid = out[i].0;
            i += 1;
            for tid in tasks(pid) {
                let Ok(kids) = fs::read_to_string(format!("/proc/{pid}/task/{tid}/children"))
                else {
                    continue;
                };
                for kid in kids
                    .split_whitespace()
                    .filter_map(|k| k.parse::<u32>().ok())
                {
                    if let Some(s) = stat(&format!("/proc/{kid}/stat"))
                        && s.pgrp == pgrp
                    {
                        out.push((kid, s.tty));
                    }
                }
            }
        }
        out
    }

    fn scan(pgrp: u32) -> Vec<(u32, u64)> {
        let Ok(dir) = fs::read_dir("/proc") else {
            return Vec::new();
        };
        dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
            .filter_map(|pid| {
                let s = stat(&format!("/proc/{pid}/stat"))?;
                (s.pgrp == pgrp).then_some((pid, s.tty))
            })
            .collect()
    }

    /// The first process of group `pgrp` with a thread asleep waiting for its terminal.
    pub(super) fn reader_in_group(pgrp: u32) -> Option<u32> {
        members(pgrp).into_iter().find_map(|(pid, tty)| {
            (tty != 0
                && tasks(pid)
                    .into_iter()
                    .any(|tid| waits_on_tty(pid, tid, tty)))
            .then_some(pid)
        })
    }

    /// Whether descriptor `fd` of `pid` is the terminal `tty` (or `/dev/tty`).
    fn is_tty(pid: u32, fd: u64, tty: u64) -> bool {
        fs::metadata(format!("/proc/{pid}/fd/{fd}")).is_ok_and(|m| {
            m.file_type().is_char_device() && (m.rdev() == tty || m.rdev() == DEV_TTY)
        })
    }

    /// The system call thread `tid` of `pid` sleeps in: its number and arguments.
    fn syscall(pid: u32, tid: u32) -> Option<(i64, Vec<u64>)> {
        let st = stat(&format!("/proc/{pid}/task/{tid}/stat"))?;
        // Only an interruptible sleep: a stopped thread (SIGTTIN) may still show its read.
        if st.state != 'S' {
            return None;
        }
        let text = fs::read_to_string(format!("/proc/{pid}/task/{tid}/syscall")).ok()?;
        let mut it = text.split_whitespace();
        let nr: i64 = it.next()?.parse().ok()?;
        let args = it
            .take(6)
            .filter_map(|a| u64::from_str_radix(a.trim_start_matches("0x"), 16).ok())
            .collect::<Vec<_>>();
        (args.len() == 6).then_some((nr, args))
    }

    fn waits_on_tty(pid: u32, tid: u32, tty: u64) -> bool {
        let Some((nr, a)) = syscall(pid, tid) else {
            return false;
        };
        match Call::of(nr) {
            Some(Call::Read) => is_tty(pid, a[0], tty),
            Some(Call::Epoll) => epoll_has_tty(pid, a[0], tty),
            Some(Call::Poll) => poll_has_tty(pid, a[0], a[1], tty),
            Some(Call::Select) => select_has_tty(pid, a[0], a[1], tty),
            None => false,
        }
    }

    enum Call {
        Read,
        Epoll,
        Poll,
        Select,
    }

    impl Call {
        fn of(nr: i64) -> Option<Self> {
            use libc::*;
            let read = [SYS_read, SYS_readv, SYS_pread64];
            let epoll = [SYS_epoll_pwait, SYS_epoll_pwait2];
            #[cfg(target_arch = "x86_64")]
            let (poll, select, epoll_old) = (
                [SYS_poll, SYS_ppoll],
                [SYS_select, SYS_pselect6],
                SYS_epoll_wait,
            );
            #[cfg(not(target_arch = "x86_64"))]
            let (poll, select, epoll_old) = (
                [SYS_ppoll, SYS_ppoll],
                [SYS_pselect6, SYS_pselect6],
                SYS_epoll_pwait,
            );
            if read.contains(&nr) {
                Some(Self::Read)
            } else if epoll.contains(&nr) || nr == epoll_old {
                Some(Self::Epoll)
            } else if poll.contains(&nr) {
                Some(Self::Poll)
            } else if select.contains(&nr) {
                Some(Self::Select)
            } else {
                None
            }
        }
    }

    /// Whether the interest list of epoll descriptor `epfd` holds the terminal.
    fn epoll_has_tty(pid: u32, epfd: u64, tty: u64) -> bool {
        let Ok(info) = fs::read_to_string(format!("/proc/{pid}/fdinfo/{epfd}")) else {
            return false;
        };
        info.lines()
            .filter_map(|l| {
                l.strip_prefix("tfd:")?
                    .split_whitespace()
                    .next()?
                    .parse()
                    .ok()
            })
            .any(|fd: u64| is_tty(pid, fd, tty))
    }

    fn read_mem(pid: u32, addr: u64, len: u64) -> Option<Vec<u8>> {
        let mem = fs::File::open(format!("/proc/{pid}/mem")).ok()?;
        let mut buf = vec![0u8; usize::try_from(len).ok()?];
        mem.read_exact_at(&mut buf, addr).ok()?;
        Some(buf)
    }

    /// Whether the `poll` set at `addr` (`n` entries) waits for the terminal to be readable.
    fn poll_has_tty(pid: u32, addr: u64, n: u64, tty: u64) -> bool {
        if n == 0 || n > MAX_FDS {
            return false;
        }
        let Some(buf) = read_mem(pid, addr, n * 8) else {
            return false;
        };
        // struct pollfd { int fd; short events; short revents; }
        buf.chunks_exact(8).any(|p| {
            let fd = i32::from_ne_bytes([p[0], p[1], p[2], p[3]]);
            let events = i16::from_ne_bytes([p[4], p[5]]);
            fd >= 0 && events & libc::POLLIN != 0 && is_tty(pid, fd.unsigned_abs().into(), tty)
        })
    }

    /// Whether the `select` read set at `addr` (descriptors below `nfds`) holds the terminal.
    fn select_has_tty(pid: u32, nfds: u64, addr: u64, tty: u64) -> bool {
        if nfds == 0 || nfds > MAX_FDS || addr == 0 {
            return false;
        }
        let Some(buf) = read_mem(pid, addr, nfds.div_ceil(64) * 8) else {
            return false;
        };
        // An fd_set is an array of longs, bit `fd % 64` of long `fd / 64` (little- or
        // big-endian longs alike).
        (0..nfds).any(|fd| {
            let word = usize::try_from(fd / 64).unwrap_or(usize::MAX) * 8;
            let Some(bytes) = buf.get(word..word + 8) else {
                return false;
            };
            let mut w = [0u8; 8];
            w.copy_from_slice(bytes);
            u64::from_ne_bytes(w) >> (fd % 64) & 1 == 1 && is_tty(pid, fd, tty)
        })
    }
}
