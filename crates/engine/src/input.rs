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
//! The probe runs on the job's reader thread while output is quiet (at [`QUIET`], then on the
//! [`SCHEDULE`]), and on a blocking thread every [`WAIT_PROBE`] while a wait for input runs;
//! never on an async worker. Readers only copy its last result. New output, or input written
//! to the job, clears the state at once until the next probe.
//!
//! When it can be wrong is stated on [`InputWait`].

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::Serialize;
use tokio::sync::watch;

use crate::manager::{Job, lock};

/// How long output must be quiet before a job can count as waiting for input.
pub(crate) const QUIET: Duration = Duration::from_millis(150);
/// How often a quiet job is probed again: (quiet for less than this, probe every this).
/// Every probe reads a few `/proc` files (~50 µs each on a loaded VM), so a job that has long
/// been quiet is looked at less often; a wait for input probes it every 250 ms itself.
const SCHEDULE: [(Duration, Duration); 3] = [
    (Duration::from_secs(3), Duration::from_millis(250)),
    (Duration::from_secs(10), Duration::from_secs(1)),
    (Duration::MAX, Duration::from_secs(5)),
];
/// How often a wait for input probes the job itself.
pub(crate) const WAIT_PROBE: Duration = Duration::from_millis(250);

/// A job waiting for input: what the person at its terminal would see.
///
/// A running job waits for input when its output has been quiet for 150 ms and a process of
/// its terminal's foreground process group is asleep waiting for the terminal: in a `read` of
/// it, or in a `poll`/`select`/`epoll_wait` whose set holds it. Looked at on the job's reader
/// thread while output is quiet (at 150 ms, every 250 ms, every second after 3 s, every 5 s
/// after 10 s) and every 250 ms by a wait for input in progress; new output or input written to
/// the job clears it until the next look.
///
/// When it can be wrong:
/// - **Late**: a job that starts reading without printing anything first is seen at the next
///   look: up to 5 s later for a job that has long been quiet, 250 ms for a wait for input.
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

/// A job's input state, written by its reader thread (and by waits for input) and read by
/// everyone else.
#[derive(Debug)]
pub(crate) struct InputWatch {
    state: Mutex<Watched>,
    /// Bumped whenever the state changes, for waits.
    changed: watch::Sender<u64>,
}

impl Default for InputWatch {
    fn default() -> Self {
        Self {
            state: Mutex::new(Watched {
                generation: 0,
                wait: None,
                last_output: Instant::now(),
            }),
            changed: watch::Sender::default(),
        }
    }
}

#[derive(Debug)]
struct Watched {
    /// Bumped by every clear: a probe begun before it must not publish.
    generation: u64,
    wait: Option<InputWait>,
    /// When the job last printed (or started).
    last_output: Instant,
}

impl InputWatch {
    /// The job's input state as of the last probe.
    pub(crate) fn current(&self) -> Option<InputWait> {
        lock(&self.state).wait.clone()
    }

    /// Output arrived: the job is not known to wait any more, and not quiet.
    pub(crate) fn output(&self) {
        self.forget(true);
    }

    /// Input was written: the job is not known to wait any more.
    pub(crate) fn clear(&self) {
        self.forget(false);
    }

    fn forget(&self, output: bool) {
        let had = {
            let mut s = lock(&self.state);
            if output {
                s.last_output = Instant::now();
            }
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

    /// How long the job has printed nothing.
    fn quiet_for(&self) -> Duration {
        lock(&self.state).last_output.elapsed()
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
    probe_job(job)?;
    SCHEDULE
        .iter()
        .find(|(until, _)| quiet < *until)
        .map(|(_, every)| *every)
}

/// Probes `job` now if it has been quiet long enough (blocking: `/proc` reads; run it on a
/// blocking thread). Used by waits for input, which want a fresher answer than the reader
/// thread's schedule gives a long-quiet job.
pub(crate) fn probe_if_quiet(job: &Job) {
    if job.input.quiet_for() >= QUIET {
        probe_job(job);
    }
}

/// Probes and publishes; `None` when the job has no terminal any more.
fn probe_job(job: &Job) -> Option<()> {
    let generation = job.input.generation();
    let master = job.master().ok()?;
    let wait = probe(&master).map(|(pid, echo)| InputWait {
        echo,
        prompt: prompt_of(job),
        pid,
    });
    job.input.publish(generation, wait);
    Some(())
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
        threads: u32,
    }

    fn stat(path: &str) -> Option<Stat> {
        let text = fs::read_to_string(path).ok()?;
        let rest = &text[text.rfind(')')? + 1..];
        let f: Vec<&str> = rest.split_whitespace().collect();
        Some(Stat {
            state: f.first()?.chars().next()?,
            pgrp: f.get(2)?.parse().ok()?,
            tty: f.get(4)?.parse::<i64>().ok()?.try_into().ok()?,
            // Field 20; the fields here start at field 3.
            threads: f.get(17)?.parse().ok()?,
        })
    }

    /// The threads of `pid` (its stat `st` says how many).
    fn threads(pid: u32, st: &Stat) -> Vec<u32> {
        if st.threads <= 1 {
            return vec![pid];
        }
        fs::read_dir(format!("/proc/{pid}/task"))
            .map(|d| {
                d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The children of `pid` that are in group `pgrp`, with their stat.
    fn children(pid: u32, st: &Stat, pgrp: u32) -> Vec<(u32, Stat)> {
        let mut out = Vec::new();
        for tid in threads(pid, st) {
            let Ok(kids) = fs::read_to_string(format!("/proc/{pid}/task/{tid}/children")) else {
                continue;
            };
            for kid in kids
                .split_whitespace()
                .filter_map(|k| k.parse::<u32>().ok())
            {
                if let Some(s) = stat(&format!("/proc/{kid}/stat"))
                    && s.pgrp == pgrp
                {
                    out.push((kid, s));
                }
            }
        }
        out
    }

    /// Every process of group `pgrp` (its leader is gone: a scan of `/proc`).
    fn scan(pgrp: u32) -> Vec<(u32, Stat)> {
        let Ok(dir) = fs::read_dir("/proc") else {
            return Vec::new();
        };
        dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
            .filter_map(|pid| {
                let s = stat(&format!("/proc/{pid}/stat"))?;
                (s.pgrp == pgrp).then_some((pid, s))
            })
            .collect()
    }

    /// The first process of group `pgrp` with a thread asleep waiting for its terminal. The
    /// leader is looked at first, then its descendants in the group, breadth first, each as
    /// it is found: the reader is nearly always the leader or its child, and every `/proc`
    /// read costs tens of microseconds.
    pub(super) fn reader_in_group(pgrp: u32) -> Option<u32> {
        let mut queue: std::collections::VecDeque<(u32, Stat)> =
            match stat(&format!("/proc/{pgrp}/stat")).filter(|s| s.pgrp == pgrp) {
                Some(leader) => [(pgrp, leader)].into(),
                None => scan(pgrp).into(),
            };
        let walk = queue.len() == 1;
        let mut looked = 0;
        while let Some((pid, st)) = queue.pop_front() {
            if st.tty != 0 && waits(pid, &st) {
                return Some(pid);
            }
            looked += 1;
            if walk && looked < 1024 {
                queue.extend(children(pid, &st, pgrp));
            }
        }
        None
    }

    /// Whether a thread of `pid` sleeps waiting for its terminal.
    fn waits(pid: u32, st: &Stat) -> bool {
        if st.threads <= 1 {
            return st.state == 'S' && waits_on_tty(pid, pid, st.tty);
        }
        threads(pid, st).into_iter().any(|tid| {
            stat(&format!("/proc/{pid}/task/{tid}/stat")).is_some_and(|t| t.state == 'S')
                && waits_on_tty(pid, tid, st.tty)
        })
    }

    /// Whether descriptor `fd` of `pid` is the terminal `tty` (or `/dev/tty`).
    fn is_tty(pid: u32, fd: u64, tty: u64) -> bool {
        fs::metadata(format!("/proc/{pid}/fd/{fd}")).is_ok_and(|m| {
            m.file_type().is_char_device() && (m.rdev() == tty || m.rdev() == DEV_TTY)
        })
    }

    /// The system call thread `tid` of `pid` sleeps in: its number and arguments.
    /// (The caller checked that the thread is in an interruptible sleep: a stopped thread —
    /// `SIGTTIN` — may still show the read it was stopped in.)
    fn syscall(pid: u32, tid: u32) -> Option<(i64, Vec<u64>)> {
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
