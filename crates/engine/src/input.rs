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

use crate::sys::pty::Master;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputWait {
    /// Whether the terminal echoes what is typed; false for passwords (the input never
    /// appears in the output then).
    pub echo: bool,
    /// The text of the line the cursor is on (trailing blanks trimmed): the prompt, such as
    /// `Password:` or `Continue? [y/N]`. When that line is blank (a question printed with a
    /// newline after it), the last non-blank line above it; empty on a blank screen.
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
    /// What the job's record on disk says about input (see [`persist`]).
    pub(crate) pace: Mutex<persist::Pace>,
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
            pace: Mutex::default(),
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

/// How long after output stops the first [`on_quiet`] call is due (`None`: never, where
/// nothing can be looked at).
#[cfg_attr(windows, allow(dead_code))] // the Windows reader asks for no quiet probes
pub(crate) fn quiet_delay() -> Option<Duration> {
    cfg!(target_os = "linux").then_some(QUIET)
}

/// Called on a parse worker while output has been quiet for `quiet`: probes when it
/// is time and returns how long until the next call (`None`: not before new output).
pub(crate) fn on_quiet(job: &Job, quiet: Duration) -> Option<Duration> {
    if !cfg!(target_os = "linux") {
        return None; // nothing to look at: no wake-ups for it either
    }
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
    if job.waiting.quiet_for() >= QUIET {
        probe_job(job);
    }
}

/// Probes and publishes; `None` when the job has no terminal any more.
fn probe_job(job: &Job) -> Option<()> {
    let generation = job.waiting.generation();
    let master = job.master().ok()?;
    let wait = probe(&master).map(|(pid, echo)| InputWait {
        echo,
        prompt: prompt_of(job),
        pid,
    });
    job.waiting.publish(generation, wait);
    Some(())
}

/// The text of the cursor's row on the job's screen; when that row is blank (a question
/// printed with a newline after it), the last non-blank row above it.
fn prompt_of(job: &Job) -> String {
    let screen = lock(&job.state).term.screen();
    screen
        .rows
        .iter()
        .take(usize::from(screen.cursor_row) + 1)
        .rev()
        .map(|r| r.trim_end())
        .find(|r| !r.is_empty())
        .unwrap_or_default()
        .to_owned()
}

/// The process of the terminal's foreground group that waits for input, and whether the
/// terminal echoes; `None` when none waits (or it cannot be told).
fn probe(master: &Master) -> Option<(u32, bool)> {
    let (pgrp, echo) = crate::sys::pty::foreground(master)?;
    sys::reader_in_group(pgrp).map(|pid| (pid, echo))
}

mod persist;
pub(crate) use persist::persist;

#[cfg(not(target_os = "linux"))]
mod sys {
    /// Without `/proc` nothing can be told.
    pub(super) fn reader_in_group(_pgrp: u32) -> Option<u32> {
        None
    }
}

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
use linux as sys;
