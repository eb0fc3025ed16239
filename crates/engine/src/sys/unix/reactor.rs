//! The one I/O reactor of the process: a thread that polls every job's PTY master and pidfd,
//! drains each master into the job's [`Lane`] and reaps each child. It never parses (the lane's
//! workers do), so no terminal waits while a batch is parsed, and the thread count does not
//! grow with the number of jobs.
//!
//! Polling is `mio` (epoll on Linux, kqueue on macOS and the BSDs): already compiled in through
//! tokio, maintained with it, and it takes raw descriptors (`SourceFd`), which is all a PTY master
//! and a pidfd are. Its readiness is edge-triggered: a descriptor is read until `EAGAIN` (or
//! until its lane is full; it is then read again on [`Notice::Resume`] without waiting for a new
//! edge).
//!
//! Per job, the rules of the reader thread it replaces:
//! - Linux: the child is watched through a pidfd and left unreaped (`WNOWAIT`) until its output
//!   is drained to EOF, so its pid — the job's process group and session id — cannot be reused
//!   while the drain timeout may still signal the session. Without a pidfd (other systems, or
//!   when none can be opened) the child is looked at every [`EXIT_POLL`] on the timer.
//! - After the child exits, the master is drained for at most the job's drain timeout while
//!   some other process still holds the terminal open; then the drain timeout is reported to
//!   the lane (whose sink ends what is left of the job through the kill path), and after one
//!   more second the terminal is given up. Time spent
//!   paused by back-pressure does not count: those bytes are the job's and are read.
//! - [`IDLE`] after the last output the lane gets `idle`; `quiet` is asked on the sink's own
//!   schedule; `exit` comes last, once, after EOF and the reap.
//!
//! Timers (idle, quiet, drain deadlines, exit polls) are one heap, not a thread per job.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Registry, Token, Waker};
use rustix::buffer::spare_capacity;
use rustix::io::Errno;

use super::pty::{exited, pidfd_open, reap};
use crate::error::{Error, Result};
use crate::pipeline::{ExitInfo, IDLE, Lane, Notice};
use crate::sync::lock;
use crate::sys::Leader;

/// Without a pidfd, how often a running child is looked at.
const EXIT_POLL: Duration = Duration::from_millis(50);
/// Room for one read of the master (a PTY read returns at most a few KiB whatever the size).
const READ_BUF: usize = 64 * 1024;
/// At most this much is read from one master per round before the others get their turn.
const ROUND_BUDGET: usize = 256 * 1024;
/// A read at least this large suggests a producer that is streaming: more is on its way.
const PTY_CHUNK: usize = 1024;
/// How long reads of a streaming producer are held to be handed on as one piece.
const COALESCE: Duration = Duration::from_millis(2);
/// ... and how much at most.
const HOLD: usize = 256 * 1024;
/// After the leftovers of an exited job were killed, how long the terminal may still take to
/// close before it is given up.
const AFTER_KILL: Duration = Duration::from_secs(1);

const WAKE: Token = Token(usize::MAX);

/// The reactor's handle: registers jobs and passes notices to its thread.
pub(crate) struct Reactor {
    registry: Registry,
    waker: Waker,
    commands: Mutex<Vec<Command>>,
    next_key: AtomicUsize,
}

enum Command {
    Add(Box<Entry>),
    Notice(usize, Notice),
}

/// The reactor, started on first use; a failure to start (no descriptor or thread left) is
/// retried by the next job.
static REACTOR: Mutex<Option<Arc<Reactor>>> = Mutex::new(None);

fn reactor() -> Result<Arc<Reactor>> {
    let mut slot = lock(&REACTOR);
    if let Some(r) = slot.as_ref() {
        return Ok(Arc::clone(r));
    }
    let limit = |e: std::io::Error| match e.raw_os_error() {
        Some(libc::EMFILE | libc::ENFILE | libc::EAGAIN | libc::ENOMEM) => Error::LimitReached(
            format!("cannot start the I/O reactor ({e}); kill or wait for some jobs"),
        ),
        _ => Error::Io(e),
    };
    let poll = Poll::new().map_err(limit)?;
    let registry = poll.registry().try_clone().map_err(limit)?;
    let waker = Waker::new(poll.registry(), WAKE).map_err(limit)?;
    let r = Arc::new(Reactor {
        registry,
        waker,
        commands: Mutex::new(Vec::new()),
        next_key: AtomicUsize::new(0),
    });
    let handle = Arc::clone(&r);
    std::thread::Builder::new()
        .name("ptyjobs-reactor".into())
        .spawn(move || Loop::new(poll, handle).run())
        .map_err(limit)?;
    *slot = Some(Arc::clone(&r));
    Ok(r)
}

impl Reactor {
    fn send(&self, command: Command) {
        lock(&self.commands).push(command);
        // A failed wake (it cannot fail short of a broken epoll) would only delay the command
        // to the next event or timer.
        let _ = self.waker.wake();
    }
}

/// Starts reading a job: registers its master (and a pidfd for its child) with the reactor.
/// From then on the reactor owns the child: it reaps it and hands the lane its exit.
///
/// # Errors
/// [`Error::LimitReached`] or [`Error::Io`] when the reactor, the parse workers or the
/// registration cannot be had; nothing was registered then.
pub(crate) fn add(
    leader: Arc<Leader>,
    master: Arc<OwnedFd>,
    drain: Duration,
    lane: Arc<Lane>,
) -> Result<()> {
    crate::pipeline::start_workers()?;
    let r = reactor()?;
    let key = r.next_key.fetch_add(1, Ordering::Relaxed);
    r.registry
        .register(
            &mut SourceFd(&master.as_raw_fd()),
            Token(key * 2),
            Interest::READABLE,
        )
        .map_err(Error::Io)?;
    let pidfd = pidfd_open(leader.pid).filter(|p| {
        r.registry
            .register(
                &mut SourceFd(&p.as_raw_fd()),
                Token(key * 2 + 1),
                Interest::READABLE,
            )
            .is_ok()
    });
    let weak = Arc::downgrade(&r);
    lane.set_notify(move |n| {
        if let Some(r) = weak.upgrade() {
            r.send(Command::Notice(key, n));
        }
    });
    let now = Instant::now();
    let quiet_first = lane.quiet_delay();
    r.send(Command::Add(Box::new(Entry {
        key,
        leader,
        lane,
        master: Some(master),
        pidfd,
        drain,
        exit: None,
        drain_until: None,
        killed_leftovers: false,
        paused_at: None,
        last_data: None,
        quiet_first,
        quiet_since: now,
        quiet_due: quiet_first.map(|d| now + d),
        quiet_asked: false,
        quiet_stale: false,
        exit_poll_at: None,
        held: Vec::new(),
        flush_at: None,
        armed: None,
    })));
    Ok(())
}

/// One job as the reactor sees it.
struct Entry {
    key: usize,
    leader: Arc<Leader>,
    lane: Arc<Lane>,
    /// `None` once EOF was read (deregistered and released).
    master: Option<Arc<OwnedFd>>,
    /// `None` without one, or once the child exited (deregistered and closed).
    pidfd: Option<OwnedFd>,
    drain: Duration,
    exit: Option<ExitInfo>,
    drain_until: Option<Instant>,
    killed_leftovers: bool,
    /// Since when the master is not read because the lane is full.
    paused_at: Option<Instant>,
    /// When output last arrived, while `idle` is owed for it.
    last_data: Option<Instant>,
    quiet_first: Option<Duration>,
    quiet_since: Instant,
    quiet_due: Option<Instant>,
    /// A `quiet` request is with the lane; its answer is awaited before another is made.
    quiet_asked: bool,
    /// Output arrived since that request: its answer no longer applies.
    quiet_stale: bool,
    exit_poll_at: Option<Instant>,
    /// Bytes read and not yet handed to the lane (see [`read_round`]), and when they are due.
    held: Vec<u8>,
    flush_at: Option<Instant>,
    /// The earliest time this entry has in the timer heap.
    armed: Option<Instant>,
}

/// What woke an entry up.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Why {
    Added,
    Readable,
    ChildExited,
    Timer,
    Resume,
    Quiet,
}

struct Loop {
    poll: Poll,
    reactor: Arc<Reactor>,
    entries: HashMap<usize, Entry>,
    timers: BinaryHeap<Reverse<(Instant, usize)>>,
    /// Entries whose master had more to read when their round's budget ran out.
    again: Vec<usize>,
    /// Where a job without a read buffer reads (see [`read_round`]).
    scratch: Vec<u8>,
}

impl Loop {
    fn new(poll: Poll, reactor: Arc<Reactor>) -> Self {
        Self {
            poll,
            reactor,
            entries: HashMap::new(),
            timers: BinaryHeap::new(),
            again: Vec::new(),
            scratch: vec![0; READ_BUF],
        }
    }

    fn run(mut self) {
        let mut events = Events::with_capacity(1024);
        loop {
            let timeout = if self.again.is_empty() {
                self.timers
                    .peek()
                    .map(|Reverse((at, _))| at.saturating_duration_since(Instant::now()))
            } else {
                Some(Duration::ZERO)
            };
            if let Err(e) = self.poll.poll(&mut events, timeout)
                && e.kind() != std::io::ErrorKind::Interrupted
            {
                tracing::error!("the I/O reactor cannot poll: {e}");
                std::thread::sleep(Duration::from_millis(10));
            }
            // Commands first: an entry's first events may have come before its `Add`.
            let commands = std::mem::take(&mut *lock(&self.reactor.commands));
            for command in commands {
                match command {
                    Command::Add(entry) => {
                        let key = entry.key;
                        self.entries.insert(key, *entry);
                        self.service(key, Why::Added);
                    }
                    Command::Notice(key, Notice::Resume) => self.service(key, Why::Resume),
                    Command::Notice(key, Notice::Quiet(next)) => {
                        if let Some(e) = self.entries.get_mut(&key) {
                            e.quiet_asked = false;
                            if !std::mem::take(&mut e.quiet_stale) {
                                e.quiet_due = next.map(|d| Instant::now() + d);
                            }
                        }
                        self.service(key, Why::Quiet);
                    }
                }
            }
            for event in events.iter() {
                let Token(t) = event.token();
                if event.token() == WAKE {
                    continue;
                }
                let why = if t % 2 == 0 {
                    Why::Readable
                } else {
                    Why::ChildExited
                };
                self.service(t / 2, why);
            }
            for key in std::mem::take(&mut self.again) {
                self.service(key, Why::Readable);
            }
            let now = Instant::now();
            while let Some(&Reverse((at, key))) = self.timers.peek() {
                if at > now {
                    break;
                }
                self.timers.pop();
                if let Some(e) = self.entries.get_mut(&key)
                    && e.armed == Some(at)
                {
                    e.armed = None;
                    self.service(key, Why::Timer);
                }
            }
        }
    }

    /// [`Self::update`], guarded: a bug met by one job must not stop the reading of every
    /// other. The job is then dropped from the reactor (its output ends there; it is reaped and
    /// ended as exited with code -1, so nothing waits forever).
    fn service(&mut self, key: usize, why: Why) {
        let done = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.update(key, why)));
        if done.is_err() {
            tracing::error!("the I/O reactor failed on a job; that job's output ends here");
            if let Some(mut e) = self.entries.remove(&key) {
                close_master(&mut e, &self.reactor.registry);
                if let Some(pidfd) = e.pidfd.take() {
                    let _ = self
                        .reactor
                        .registry
                        .deregister(&mut SourceFd(&pidfd.as_raw_fd()));
                }
                // As at a drain timeout: what is left of the job ends before the reap.
                e.lane.drain_timeout();
                reap(&e.leader);
                e.lane.exit(e.exit.unwrap_or(ExitInfo::Code(-1)));
            }
        }
    }

    /// Brings one entry up to date: its child, its master, its deadlines; finishes it when
    /// both EOF and the exit are in, and arms its next timer otherwise.
    fn update(&mut self, key: usize, why: Why) {
        let Some(e) = self.entries.get_mut(&key) else {
            return; // finished, or not added yet (its `Add` reads and checks it)
        };
        let now = Instant::now();
        if why == Why::Resume
            && let Some(at) = e.paused_at.take()
            && let Some(until) = e.drain_until.as_mut()
        {
            *until += now.saturating_duration_since(at);
        }
        let poll_due = e.exit_poll_at.is_some_and(|at| at <= now);
        if e.exit.is_none() && (matches!(why, Why::Added | Why::ChildExited) || poll_due) {
            e.exit = exited(&e.leader);
            e.exit_poll_at = None;
            if e.exit.is_some() {
                e.drain_until = Some(now + e.drain);
                if let Some(pidfd) = e.pidfd.take() {
                    let _ = self
                        .reactor
                        .registry
                        .deregister(&mut SourceFd(&pidfd.as_raw_fd()));
                }
            }
        }
        if e.paused_at.is_none() && e.master.is_some() {
            let more = read_round(e, &mut self.scratch, &self.reactor.registry);
            if more {
                self.again.push(key);
            }
        }
        if e.paused_at.is_none() && e.flush_at.is_some_and(|at| at <= Instant::now()) {
            flush(e);
        }
        let now = Instant::now();
        let eof = e.master.is_none();
        if let (Some(until), false, None) = (e.drain_until, eof, e.paused_at)
            && now >= until
        {
            if e.killed_leftovers {
                // Give up on a terminal that never closes.
                close_master(e, &self.reactor.registry);
            } else {
                // A background process still holds the terminal: the job is over, and the
                // lane's sink ends what is left of it (the kill path is above this layer).
                e.lane.drain_timeout();
                e.killed_leftovers = true;
                e.drain_until = Some(now + AFTER_KILL);
            }
        }
        let eof = e.master.is_none();
        if eof || e.exit.is_some() {
            e.quiet_due = None; // nobody waits for input any more
        }
        if !eof {
            if let Some(at) = e.last_data
                && now.saturating_duration_since(at) >= IDLE
            {
                e.last_data = None;
                e.lane.idle();
                if e.held.is_empty() {
                    e.held = Vec::new(); // an idle job keeps no read buffer
                }
            }
            if let Some(at) = e.quiet_due
                && at <= now
                && !e.quiet_asked
            {
                e.quiet_due = None;
                e.quiet_asked = true;
                e.lane.quiet(now.saturating_duration_since(e.quiet_since));
            }
        }
        // Without a pidfd the child is looked at on the timer, also after EOF (a child that
        // redirected its output closes the terminal before it exits).
        if e.exit.is_none() && e.pidfd.is_none() && e.exit_poll_at.is_none() {
            e.exit_poll_at = Some(now + EXIT_POLL);
        }
        if let (true, Some(exit)) = (eof, e.exit) {
            if !e.held.is_empty() {
                // Held by back-pressure: the lane takes it (it holds at most twice its cap).
                e.lane.push_held(&mut e.held);
            }
            reap(&e.leader);
            e.lane.exit(exit);
            self.entries.remove(&key);
            return;
        }
        let next = [
            e.drain_until.filter(|_| !eof && e.paused_at.is_none()),
            e.last_data.map(|at| at + IDLE).filter(|_| !eof),
            e.quiet_due.filter(|_| !e.quiet_asked),
            e.exit_poll_at,
            e.flush_at.filter(|_| e.paused_at.is_none()),
        ]
        .into_iter()
        .flatten()
        .min();
        if let Some(at) = next
            && e.armed.is_none_or(|armed| at < armed)
        {
            e.armed = Some(at);
            self.timers.push(Reverse((at, key)));
        }
    }
}

/// Reads the entry's master until it has nothing more, reaches EOF, fills the lane, or the
/// round's budget is spent; returns true in the last case (read again soon).
///
/// One PTY read returns at most a few KiB. While a producer is streaming (the last read was a
/// whole PTY chunk), reads are held for up to [`COALESCE`] (or until [`HOLD`] bytes) before the
/// lane gets them: the terminal pays about a screenful of emulation per piece it is fed, so
/// large pieces are what lets the parse keep up with the PTY. Small output (a prompt, an echo)
/// goes on at once.
///
/// Reads go straight into the held buffer, which the lane takes without a copy (see
/// [`Lane::push_held`]); a buffer that must grow gets room for a whole [`HOLD`] at once (so it
/// grows once, and is reused after).
fn read_round(e: &mut Entry, scratch: &mut [u8], registry: &Registry) -> bool {
    let Some(master) = e.master.clone() else {
        return false;
    };
    let mut total = 0;
    let mut eof = false;
    let mut more = false;
    let mut last = 0;
    loop {
        if total >= ROUND_BUDGET {
            more = true;
            break;
        }
        let got = if e.held.capacity() == 0 {
            // No buffer yet: a job with nothing to say must not hold one (a thousand idle
            // jobs), so this read goes to the reactor's own and is copied (a stream gets the
            // lane's spare buffer at its first hand-over and reads into it from then on).
            rustix::io::read(&*master, &mut *scratch).inspect(|&n| {
                e.held.extend_from_slice(&scratch[..n]);
            })
        } else {
            if e.held.capacity() - e.held.len() < READ_BUF {
                e.held.reserve_exact(HOLD + READ_BUF);
            }
            rustix::io::read(&*master, spare_capacity(&mut e.held))
        };
        match got {
            Ok(0) => {
                eof = true;
                break;
            }
            Ok(n) => {
                total += n;
                last = n;
                if e.held.len() >= HOLD && !flush(e) {
                    break; // the lane is full
                }
            }
            Err(Errno::AGAIN) => break,
            Err(Errno::INTR) => continue,
            Err(_) => {
                eof = true; // EIO: no process holds the terminal any more
                break;
            }
        }
    }
    let now = Instant::now();
    if total > 0 {
        e.last_data = Some(now);
        e.quiet_since = now;
        e.quiet_due = e.quiet_first.map(|d| now + d);
        e.quiet_stale = e.quiet_asked;
    }
    if e.paused_at.is_none() && !e.held.is_empty() {
        if eof || last < PTY_CHUNK {
            flush(e);
        } else if e.flush_at.is_none() {
            e.flush_at = Some(now + COALESCE);
        }
    }
    if e.paused_at.is_some() {
        more = false; // read again on `Resume`
    }
    if eof {
        close_master(e, registry);
        more = false;
    }
    more
}

/// Hands the held bytes to the lane; false (and the master paused) when the lane is full.
fn flush(e: &mut Entry) -> bool {
    e.flush_at = None;
    if e.held.is_empty() {
        return true;
    }
    let room = e.lane.push_held(&mut e.held);
    if e.held.capacity() > 2 * (HOLD + READ_BUF) {
        e.held = Vec::new();
    }
    if !room {
        e.paused_at = Some(Instant::now());
    }
    room
}

/// Stops watching the master and lets go of the reactor's share of it.
fn close_master(e: &mut Entry, registry: &Registry) {
    if let Some(master) = e.master.take() {
        let _ = registry.deregister(&mut SourceFd(&master.as_raw_fd()));
    }
}
