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

use crate::sys::input_probe;
use crate::sys::pty::Master;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::watch;

use crate::job::{InputMode, InputWait};
use crate::sync::lock;
use crate::terminal::ScreenSnapshot;

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

/// A job's input state, written by its reader thread (and by waits for input) and read by
/// everyone else.
#[derive(Debug)]
pub(crate) struct InputWatch {
    state: Mutex<Watched>,
    /// Bumped whenever the state changes, for waits.
    changed: watch::Sender<u64>,
    /// What the job's record on disk says about input (see [`Pace`]).
    pub(crate) pace: Mutex<Pace>,
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

/// A job as the probe sees it (the manager's job is one): its input watch, its terminal while it
/// runs, and its screen.
pub(crate) trait Probed {
    /// The job's input state.
    fn watch(&self) -> &InputWatch;
    /// The job's terminal; `None` once the job is final.
    fn terminal(&self) -> Option<Arc<Master>>;
    /// The job's screen now.
    fn screen(&self) -> ScreenSnapshot;
}

/// How long after output stops the first [`on_quiet`] call is due (`None`: never, where
/// nothing can be looked at).
pub(crate) fn quiet_delay() -> Option<Duration> {
    input_probe::AVAILABLE.then_some(QUIET)
}

/// Called on a parse worker while output has been quiet for `quiet`: probes when it
/// is time and returns how long until the next call (`None`: not before new output).
pub(crate) fn on_quiet(job: &impl Probed, quiet: Duration) -> Option<Duration> {
    if !input_probe::AVAILABLE {
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
pub(crate) fn probe_if_quiet(job: &impl Probed) {
    if job.watch().quiet_for() >= QUIET {
        probe_job(job);
    }
}

/// Probes and publishes; `None` when the job has no terminal any more.
fn probe_job(job: &impl Probed) -> Option<()> {
    let generation = job.watch().generation();
    let master = job.terminal()?;
    let wait = probe(&master).map(|(pid, echo, canonical)| InputWait {
        // A password only in line mode: a raw-mode program turns ECHO off to draw the echo
        // itself (REPLs, menus), and what is typed there does appear.
        echo: echo || !canonical,
        mode: if canonical {
            InputMode::Line
        } else {
            InputMode::Raw
        },
        prompt: prompt::question(&job.screen()),
        pid,
    });
    job.watch().publish(generation, wait);
    Some(())
}

/// The process of the terminal's foreground group that waits for input, whether the terminal
/// echoes and whether it is in line mode; `None` when none waits (or it cannot be told).
fn probe(master: &Master) -> Option<(u32, bool, bool)> {
    let (pgrp, echo, canonical) = crate::sys::pty::foreground(master)?;
    input_probe::reader_in_group(pgrp).map(|pid| (pid, echo, canonical))
}

mod pace;
mod prompt;
pub(crate) use pace::Pace;
