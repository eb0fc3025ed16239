//! The parse side of a job's output, shared by every platform: bytes a reader took from a job's
//! terminal wait in the job's [`Lane`] until one of a small, fixed pool of workers feeds them to
//! the job's [`Sink`] (the terminal model, the transcript, the log).
//!
//! The seam between a platform's readers and the parse side is the lane: a reader (on Unix the
//! one I/O reactor, `sys::unix::reactor`; elsewhere a thread per job) hands it bytes, "output
//! paused", "quiet for this long" and, last, the exit. The reader never parses, so a terminal is
//! drained while a batch is being parsed; a worker never reads.
//!
//! Rules:
//! - **In order, one worker at a time**: a lane is in the run queue at most once (its
//!   `scheduled` flag); the worker that runs it takes everything queued and feeds it in order.
//!   A busy lane goes to the back of the queue after each batch, so one stream cannot starve
//!   the others.
//! - **Back-pressure**: [`Lane::push`] says when the lane holds [`LANE_CAP`] unparsed bytes; the
//!   reader then stops reading that terminal (the producer blocks, as on a real terminal) until
//!   the lane's [`Notice::Resume`]. A job's unparsed bytes never exceed twice the cap (the batch
//!   being parsed plus the next one filling).
//! - **Exit last**: [`Sink::exited`] runs after every byte pushed before the exit was parsed.
//! - **Gate**: a lane is created closed; nothing is parsed (so nothing can end the job) until
//!   the starter opens it ([`Lane::open`]), once the job is complete in the table.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::Duration;

use crate::error::{Error, Result};
use crate::sync::lock;

/// How the job's shell ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ExitInfo {
    /// Exited with this code.
    Code(i32),
    /// Died of this signal.
    Signal(i32),
}

impl ExitInfo {
    /// An exit status as a reader got it: its code, or the signal that ended it (`None`: it
    /// has not ended). Platforms without signals pass `None` for `signal`.
    pub(crate) fn from_status(code: Option<i32>, signal: Option<i32>) -> Option<Self> {
        code.map(Self::Code).or(signal.map(Self::Signal))
    }
}

/// How long output must pause before [`Sink::idle`] is called.
pub(crate) const IDLE: Duration = Duration::from_millis(200);

/// Unparsed bytes a lane holds before its reader stops reading the terminal. 1 MiB is 10–40 ms
/// of parsing: enough that a worker busy elsewhere (or descheduled on a loaded machine) rarely
/// makes a fast producer wait, while a job's memory stays bounded (at most twice this: one batch
/// being parsed, one filling).
pub(crate) const LANE_CAP: usize = 1 << 20;

/// A batch is fed to the sink in pieces of at most this many bytes: the sink holds the job's
/// lock while it parses a piece, and readers of the job must not wait long for it (a few ms for
/// plain text). Large pieces matter for speed: the terminal's fast paths pay about a screenful
/// of emulation per piece (measured, one 50 MB line: 15 MB/s in 4 KiB pieces, 94 in 64 KiB,
/// 109 in 256 KiB).
const FEED_PIECE: usize = 256 * 1024;

/// A batch's buffer up to this size is given back to the reader for its next reads (see
/// [`Lane::push_held`]); a larger one (grown while the lane was full) is let go.
const KEEP_BUFFER: usize = 512 * 1024;

/// Where a job's output goes: runs on a parse worker, in order, one call at a time.
pub(crate) trait Sink: Send + Sync + 'static {
    /// Bytes read from the terminal, in order.
    fn data(&self, bytes: &[u8]);
    /// Output has paused for [`IDLE`] after some arrived (a prompt, a server that is up).
    fn idle(&self) {}
    /// How long after output stops (or the job starts) the first [`Sink::quiet`] call is due;
    /// `None`: never.
    fn quiet_delay(&self) -> Option<Duration> {
        None
    }
    /// Output has been quiet for the given time (since the last byte, or the start); returns
    /// how long until the next call (`None`: not until output arrives again).
    fn quiet(&self, _quiet: Duration) -> Option<Duration> {
        None
    }
    /// The child was reaped and the output drained; called exactly once, last.
    fn exited(&self, exit: ExitInfo);
    /// The reader's drain timeout: the job's shell has exited, but some other process (a
    /// background grandchild) still holds the terminal open after the drain timeout, or the
    /// reader failed on the job and gives it up. What is left of the job must end now, before
    /// the reader reaps the shell (while its pid still proves its process group). Unlike the
    /// calls above, this one runs at once on the reader's thread, not queued for a worker: the
    /// platform layer reports, the parse side decides (it ends the job through the kill path).
    fn drain_timeout(&self);
}

/// What a lane tells its reader (see [`Lane::set_notify`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Notice {
    /// The lane has room again: read the terminal again.
    Resume,
    /// The answer to a [`Lane::quiet`] request: when the next one is due.
    Quiet(Option<Duration>),
}

type Notify = Box<dyn Fn(Notice) + Send + Sync>;

/// One job's queue between its reader and the parse workers.
pub(crate) struct Lane {
    state: Mutex<Queued>,
    sink: Box<dyn Sink>,
    notify: OnceLock<Notify>,
}

#[derive(Default)]
struct Queued {
    bytes: Vec<u8>,
    /// The buffer of the last batch parsed, emptied, for the reader (see [`Lane::push_held`]).
    spare: Vec<u8>,
    idle: bool,
    quiet: Option<Duration>,
    exit: Option<ExitInfo>,
    open: bool,
    /// In the run queue or being run by a worker.
    scheduled: bool,
    /// The reader was told the lane is full and waits for [`Notice::Resume`].
    full: bool,
    done: bool,
}

impl Queued {
    fn has_work(&self) -> bool {
        self.open
            && !self.done
            && (!self.bytes.is_empty() || self.idle || self.quiet.is_some() || self.exit.is_some())
    }
}

impl Lane {
    /// A closed lane feeding `sink`.
    pub(crate) fn new(sink: impl Sink) -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(Queued::default()),
            sink: Box::new(sink),
            notify: OnceLock::new(),
        })
    }

    /// Sets how the lane reaches its reader (once).
    pub(crate) fn set_notify(&self, notify: impl Fn(Notice) + Send + Sync + 'static) {
        let _ = self.notify.set(Box::new(notify));
    }

    fn tell(&self, notice: Notice) {
        if let Some(notify) = self.notify.get() {
            notify(notice);
        }
    }

    /// See [`Sink::quiet_delay`].
    pub(crate) fn quiet_delay(&self) -> Option<Duration> {
        self.sink.quiet_delay()
    }

    /// Lets the workers parse what is queued (and what comes).
    pub(crate) fn open(self: &Arc<Self>) {
        self.update(|q| q.open = true);
    }

    /// Queues bytes read from the terminal. Returns false when the lane is full: the reader
    /// must stop reading until [`Notice::Resume`].
    #[cfg(any(windows, test))]
    pub(crate) fn push(self: &Arc<Self>, bytes: &[u8]) -> bool {
        let mut room = true;
        self.update(|q| {
            q.bytes.extend_from_slice(bytes);
            if q.bytes.len() >= LANE_CAP {
                q.full = true;
                room = false;
            }
        });
        room
    }

    /// [`Self::push`] of a reader's buffer, without copying it when the lane holds nothing (the
    /// usual case: the workers keep up): the lane takes the buffer and `held` gets, empty, the
    /// one a worker last finished with, so a streaming job is read into the same two buffers
    /// over and over — no copy and no allocation per batch (a fresh buffer of this size is an
    /// `mmap` and its page faults under musl's allocator). `held` is empty afterwards.
    #[cfg(any(unix, test))]
    pub(crate) fn push_held(self: &Arc<Self>, held: &mut Vec<u8>) -> bool {
        let mut room = true;
        self.update(|q| {
            if q.bytes.is_empty() {
                std::mem::swap(&mut q.bytes, held);
                if held.capacity() == 0 {
                    std::mem::swap(&mut q.spare, held);
                }
            } else {
                q.bytes.extend_from_slice(held);
                held.clear();
            }
            if q.bytes.len() >= LANE_CAP {
                q.full = true;
                room = false;
            }
        });
        room
    }

    /// Output paused for [`IDLE`].
    pub(crate) fn idle(self: &Arc<Self>) {
        self.update(|q| q.idle = true);
    }

    /// Output has been quiet for `quiet`; the answer comes as [`Notice::Quiet`].
    pub(crate) fn quiet(self: &Arc<Self>, quiet: Duration) {
        self.update(|q| q.quiet = Some(quiet));
    }

    /// Reports the drain timeout to the sink, at once and on this thread (see
    /// [`Sink::drain_timeout`]).
    pub(crate) fn drain_timeout(&self) {
        self.sink.drain_timeout();
    }

    /// The job ended and its terminal is drained: nothing is pushed after this.
    pub(crate) fn exit(self: &Arc<Self>, exit: ExitInfo) {
        self.update(|q| q.exit = Some(exit));
    }

    /// Changes the queue and schedules the lane when it has work and is not scheduled yet.
    fn update(self: &Arc<Self>, change: impl FnOnce(&mut Queued)) {
        let schedule = {
            let mut q = lock(&self.state);
            change(&mut q);
            let go = !q.scheduled && q.has_work();
            q.scheduled |= go;
            go
        };
        if schedule {
            pool().submit(Arc::clone(self));
        }
    }

    /// Runs one batch (a worker): everything queued now, in order. Returns whether the lane
    /// has more work and stays scheduled.
    fn run(self: &Arc<Self>) -> bool {
        let (bytes, idle, quiet, exit, resume) = {
            let mut q = lock(&self.state);
            if !q.has_work() {
                q.scheduled = false;
                return false;
            }
            let resume = std::mem::take(&mut q.full);
            (
                std::mem::take(&mut q.bytes),
                std::mem::take(&mut q.idle),
                q.quiet.take(),
                q.exit.take(),
                resume,
            )
        };
        if resume {
            self.tell(Notice::Resume);
        }
        for piece in bytes.chunks(FEED_PIECE) {
            self.sink.data(piece);
        }
        let mut bytes = bytes;
        bytes.clear();
        if idle {
            self.sink.idle();
        }
        if let Some(quiet) = quiet {
            let next = self.sink.quiet(quiet);
            self.tell(Notice::Quiet(next));
        }
        if let Some(exit) = exit {
            self.sink.exited(exit);
            let mut q = lock(&self.state);
            q.done = true;
            q.bytes = Vec::new();
        }
        let mut q = lock(&self.state);
        // The buffer goes back to the reader while output streams; a job gone idle keeps none.
        if idle || q.done {
            q.spare = Vec::new();
        } else if bytes.capacity() <= KEEP_BUFFER && bytes.capacity() > q.spare.capacity() {
            q.spare = bytes;
        }
        let more = q.has_work();
        q.scheduled = more;
        more
    }
}

/// The parse workers and their run queue: process-wide, like the reactor, because jobs outlive
/// the manager that started them. Started by the first job.
struct Pool {
    queue: Mutex<VecDeque<Arc<Lane>>>,
    ready: Condvar,
}

static POOL: OnceLock<Pool> = OnceLock::new();
/// Whether the workers are running (starting them can fail for want of threads: retried).
static STARTED: Mutex<bool> = Mutex::new(false);

fn pool() -> &'static Pool {
    POOL.get_or_init(|| Pool {
        queue: Mutex::new(VecDeque::new()),
        ready: Condvar::new(),
    })
}

/// How many parse workers run: one per core, at least two (one job's long batch must not hold
/// up every other job) and at most eight (the thread count stays fixed and small).
pub(crate) fn worker_count() -> usize {
    std::thread::available_parallelism()
        .map_or(2, usize::from)
        .clamp(2, 8)
}

/// Starts the parse workers if they are not running yet.
///
/// # Errors
/// [`Error::LimitReached`] when no thread can be started.
pub(crate) fn start_workers() -> Result<()> {
    let mut started = lock(&STARTED);
    if *started {
        return Ok(());
    }
    let pool = pool();
    for n in 0..worker_count() {
        std::thread::Builder::new()
            .name(format!("ptyjobs-parse-{n}"))
            .spawn(move || pool.work())
            .map_err(|e| {
                Error::LimitReached(format!("cannot start a parse worker ({e}); try again"))
            })?;
    }
    *started = true;
    Ok(())
}

impl Pool {
    fn submit(&self, lane: Arc<Lane>) {
        lock(&self.queue).push_back(lane);
        self.ready.notify_one();
    }

    fn work(&self) {
        loop {
            let lane = {
                let mut q = lock(&self.queue);
                loop {
                    if let Some(lane) = q.pop_front() {
                        break lane;
                    }
                    q = self
                        .ready
                        .wait(q)
                        .unwrap_or_else(std::sync::PoisonError::into_inner);
                }
            };
            // A panic in a sink must not take a worker (and every job behind it) down.
            let more = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| lane.run()))
                .unwrap_or_else(|_| {
                    tracing::error!("a job's output sink panicked; its output is dropped");
                    let mut q = lock(&lane.state);
                    q.done = true;
                    q.scheduled = false;
                    q.bytes = Vec::new();
                    drop(q);
                    lane.tell(Notice::Resume);
                    false
                });
            if more {
                self.submit(lane);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Instant;

    #[derive(Default)]
    struct Record {
        seen: Mutex<Vec<u8>>,
        exits: AtomicUsize,
        exit_after: Mutex<Option<usize>>,
        slow: bool,
    }

    struct Shared(Arc<Record>);

    impl Sink for Shared {
        fn data(&self, bytes: &[u8]) {
            if self.0.slow {
                std::thread::sleep(Duration::from_millis(1));
            }
            lock(&self.0.seen).extend_from_slice(bytes);
        }
        fn exited(&self, _exit: ExitInfo) {
            self.0.exits.fetch_add(1, Ordering::SeqCst);
            *lock(&self.0.exit_after) = Some(lock(&self.0.seen).len());
        }
        fn drain_timeout(&self) {}
    }

    fn wait_for(cond: impl Fn() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while !cond() {
            assert!(Instant::now() < deadline, "timed out");
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    #[test]
    fn bytes_arrive_in_order_and_exit_comes_once_after_the_last() {
        start_workers().expect("workers");
        let rec = Arc::new(Record {
            slow: true,
            ..Record::default()
        });
        let lane = Lane::new(Shared(rec.clone()));
        let mut expected = Vec::new();
        for i in 0..2000u32 {
            let piece = format!("{i}\n");
            expected.extend_from_slice(piece.as_bytes());
            assert!(lane.push(piece.as_bytes()), "far below the cap");
            if i == 10 {
                assert!(lock(&rec.seen).is_empty(), "nothing is parsed while closed");
                lane.open();
            }
        }
        lane.exit(ExitInfo::Code(0));
        lane.exit(ExitInfo::Code(0)); // ignored: the lane is done or holds one exit
        wait_for(|| rec.exits.load(Ordering::SeqCst) > 0);
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(rec.exits.load(Ordering::SeqCst), 1);
        assert_eq!(*lock(&rec.seen), expected);
        assert_eq!(*lock(&rec.exit_after), Some(expected.len()));
    }

    #[test]
    fn a_readers_buffer_is_taken_without_a_copy_and_given_back_until_output_idles() {
        start_workers().expect("workers");
        let rec = Arc::new(Record::default());
        let lane = Lane::new(Shared(rec.clone()));
        lane.open();
        let settled = || {
            let q = lock(&lane.state);
            !q.scheduled && q.bytes.is_empty()
        };
        let mut held = Vec::with_capacity(4096);
        held.extend_from_slice(b"first ");
        let first = held.as_ptr();
        assert!(lane.push_held(&mut held));
        assert!(held.is_empty());
        wait_for(|| lock(&rec.seen).len() == 6 && settled());
        // The next push hands over a new buffer and gets the first one back, emptied.
        held = Vec::with_capacity(4096);
        held.extend_from_slice(b"second");
        assert!(lane.push_held(&mut held));
        assert_eq!(held.as_ptr(), first, "the parsed batch's buffer came back");
        assert!(held.is_empty() && held.capacity() >= 4096);
        wait_for(|| lock(&rec.seen).len() == 12 && settled());
        assert_eq!(*lock(&rec.seen), b"first second");
        assert!(
            lock(&lane.state).spare.capacity() > 0,
            "kept while output streams"
        );
        // Output paused: the lane lets its buffer go.
        lane.idle();
        wait_for(|| {
            let q = lock(&lane.state);
            !q.scheduled && !q.idle
        });
        assert_eq!(
            lock(&lane.state).spare.capacity(),
            0,
            "an idle job keeps no buffer"
        );
        // While a batch waits, a push appends to it (a copy) and leaves the reader's buffer.
        let gate = Lane::new(Shared(Arc::new(Record::default())));
        let mut a = b"a".to_vec();
        let mut b = Vec::with_capacity(64);
        b.extend_from_slice(b"b");
        assert!(gate.push_held(&mut a) && gate.push_held(&mut b));
        assert!(b.is_empty() && b.capacity() >= 64);
        assert_eq!(lock(&gate.state).bytes, b"ab");
    }

    #[test]
    fn a_full_lane_says_so_and_resumes_its_reader_once_parsed() {
        start_workers().expect("workers");
        let rec = Arc::new(Record::default());
        let lane = Lane::new(Shared(rec.clone()));
        let resumed = Arc::new(AtomicUsize::new(0));
        let r = resumed.clone();
        lane.set_notify(move |n| {
            if n == Notice::Resume {
                r.fetch_add(1, Ordering::SeqCst);
            }
        });
        let chunk = vec![b'x'; 64 * 1024];
        let mut pushed = 0;
        while lane.push(&chunk) {
            pushed += chunk.len();
        }
        pushed += chunk.len();
        assert_eq!(pushed, LANE_CAP, "full exactly at the cap while closed");
        lane.open();
        wait_for(|| resumed.load(Ordering::SeqCst) == 1);
        wait_for(|| lock(&rec.seen).len() == pushed);
    }
}
