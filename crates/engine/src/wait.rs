//! Server-side waits: block until a job exits, prints a pattern, goes quiet, or opens a port —
//! so an agent needs one call instead of a polling loop. Also the transcript search.

use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use regex::Regex;
use serde::Serialize;

use crate::error::Result;
use crate::job::{JobId, JobInfo};
use crate::manager::{Found, JobManager};
use crate::output::OutputSlice;
use crate::output::window::Start;
use crate::search::{self, SearchResult};
use crate::sync::lock;

/// How often a port is probed.
const PORT_PROBE: Duration = Duration::from_millis(100);
/// How often progress is reported.
const TICK: Duration = Duration::from_secs(1);
/// Lines of tail returned with every wait.
const TAIL_LINES: usize = 10;

/// What to wait for; the first condition met ends the wait. Exit always ends it.
#[derive(Debug, Clone, Default)]
pub struct WaitSpec {
    /// End when a transcript line matches.
    pub pattern: Option<Regex>,
    /// Also match lines printed before the wait began (default: only new ones).
    pub from_start: bool,
    /// End when the job printed nothing for this long.
    pub idle: Option<Duration>,
    /// End when a TCP connection to this port on localhost succeeds.
    pub port: Option<u16>,
    /// End as soon as the job waits for input (see [`crate::InputWait`]); at once if it
    /// already does.
    pub input: bool,
    /// End after this long (capped by the manager's `max_wait`).
    pub timeout: Option<Duration>,
}

/// Which condition ended a wait. Wire names `exited`, `matched`, `idle`, `port_open`,
/// `input_wanted`, `timeout`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WaitReason {
    /// The job ended.
    Exited,
    /// A line matched the pattern.
    Matched,
    /// The job printed nothing for the idle period.
    Idle,
    /// The port accepted a connection.
    PortOpen,
    /// The job waits for input (see [`WaitOutcome::input`]).
    InputWanted,
    /// The timeout passed first.
    Timeout,
}

/// The result of a wait.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WaitOutcome {
    /// Which condition ended the wait.
    pub reason: WaitReason,
    /// The line that matched, for `matched`.
    pub matched_line: Option<String>,
    /// Its absolute line number.
    pub line_number: Option<u64>,
    /// For `input_wanted`: the prompt and whether the terminal echoes, as seen when the wait
    /// ended (the job's `info.input` may already have moved on).
    pub input: Option<crate::InputWait>,
    /// True when the requested timeout was longer than the cap and the cap was used instead:
    /// call again to keep waiting.
    pub capped: bool,
    /// How long the wait took.
    pub waited_ms: u64,
    /// The job now.
    pub info: JobInfo,
    /// The last lines of output.
    pub tail: OutputSlice,
}

/// Progress of a wait, reported about once a second.
#[derive(Debug, Clone, Copy)]
pub struct WaitProgress {
    /// Time waited so far.
    pub elapsed: Duration,
    /// The wait's deadline, from its start.
    pub total: Duration,
    /// Bytes the job has printed so far.
    pub bytes: u64,
}

async fn port_open(port: u16) -> bool {
    let probe = async {
        tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
            || tokio::net::TcpStream::connect(("::1", port)).await.is_ok()
    };
    tokio::time::timeout(Duration::from_millis(500), probe)
        .await
        .unwrap_or(false)
}

impl JobManager {
    /// Waits server-side until the first of `spec`'s conditions, the job's exit, or the
    /// (capped) timeout. `progress` is called about once a second. Dropping the future cancels
    /// the wait at once, with no effect on the job.
    ///
    /// # Errors
    /// [`crate::Error::JobNotFound`].
    pub async fn wait_for(
        &self,
        id: JobId,
        spec: &WaitSpec,
        mut progress: impl FnMut(WaitProgress),
    ) -> Result<WaitOutcome> {
        let max = self.inner.config.max_wait;
        let requested = spec.timeout.unwrap_or(max);
        let capped = requested > max;
        let total = requested.min(max);
        let start = Instant::now();
        let job = match self.inner.find(id)? {
            Found::Live(job) => job,
            // A job of an earlier run, or another server's: only its end can be watched,
            // through its record.
            Found::Stored(_) => {
                let info = self.wait(id, Some(total)).await?;
                let reason = if info.status.is_final() {
                    WaitReason::Exited
                } else {
                    WaitReason::Timeout
                };
                return self.outcome(id, reason, None, capped, start);
            }
        };
        let deadline = start + total;
        let mut rx = job.events.subscribe();
        let mut input_rx = job.waiting.subscribe();
        // Lines before `scan_from` were already searched (or are too old to count).
        let mut scan_from = if spec.from_start {
            0
        } else {
            lock(&job.state).term.cursor_line()
        };
        let mut last_output = start;
        let mut last_bytes = rx.borrow().bytes;
        let mut next_probe = start;
        // A wait for input probes the job itself, more often than a long-quiet job's reader.
        let mut next_input_probe = start;
        let mut input_probe: Option<tokio::task::JoinHandle<()>> = None;
        let mut next_tick = start + TICK;
        let reason = loop {
            let ev = *rx.borrow_and_update();
            let now = Instant::now();
            if ev.bytes != last_bytes {
                last_bytes = ev.bytes;
                last_output = now;
            }
            if let Some(re) = &spec.pattern {
                let s = lock(&job.state);
                let mut found = None;
                s.term.visit_lines(scan_from, |n, line| {
                    if re.is_match(line) {
                        found = Some((n, line.to_owned()));
                        return ControlFlow::Break(());
                    }
                    ControlFlow::Continue(())
                });
                if let Some((n, line)) = found {
                    drop(s);
                    return self.outcome(id, WaitReason::Matched, Some((n, line)), capped, start);
                }
                // Final lines never change: search only the unfinished ones again.
                scan_from = scan_from.max(s.term.final_end());
            }
            if ev.finished {
                break WaitReason::Exited;
            }
            input_rx.borrow_and_update();
            if spec.input
                && let Some(wait) = job.waiting.current()
                && !lock(&job.state).is_final()
            {
                let mut out = self.outcome(id, WaitReason::InputWanted, None, capped, start)?;
                out.input = Some(wait);
                return Ok(out);
            }
            if let Some(idle) = spec.idle
                && now >= last_output + idle
            {
                break WaitReason::Idle;
            }
            if spec.input
                && now >= next_input_probe
                && input_probe.as_ref().is_none_or(|h| h.is_finished())
            {
                let job = job.clone();
                input_probe = Some(tokio::task::spawn_blocking(move || {
                    crate::input::probe_if_quiet(&*job);
                }));
                next_input_probe = now + crate::input::WAIT_PROBE;
            }
            if let Some(port) = spec.port
                && now >= next_probe
            {
                if port_open(port).await {
                    break WaitReason::PortOpen;
                }
                next_probe = Instant::now() + PORT_PROBE;
            }
            if now >= next_tick {
                progress(WaitProgress {
                    elapsed: now - start,
                    total,
                    bytes: ev.bytes,
                });
                next_tick = now + TICK;
            }
            if now >= deadline {
                // A job that ended right at the deadline reports its exit, not a timeout.
                if lock(&job.state).is_final() {
                    break WaitReason::Exited;
                }
                break WaitReason::Timeout;
            }
            let mut wake = deadline.min(next_tick);
            if let Some(idle) = spec.idle {
                wake = wake.min(last_output + idle);
            }
            if spec.port.is_some() {
                wake = wake.min(next_probe);
            }
            if spec.input {
                wake = wake.min(next_input_probe);
            }
            let changed = async {
                tokio::select! {
                    _ = rx.changed() => {}
                    _ = input_rx.changed(), if spec.input => {}
                }
            };
            let _ = tokio::time::timeout_at(wake.into(), changed).await;
        };
        self.outcome(id, reason, None, capped, start)
    }

    fn outcome(
        &self,
        id: JobId,
        reason: WaitReason,
        matched: Option<(u64, String)>,
        capped: bool,
        start: Instant,
    ) -> Result<WaitOutcome> {
        let (line_number, matched_line) = matched.map_or((None, None), |(n, l)| (Some(n), Some(l)));
        Ok(WaitOutcome {
            reason,
            matched_line,
            line_number,
            input: None,
            capped: capped && reason == WaitReason::Timeout,
            waited_ms: u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX),
            info: self.status(id)?,
            tail: self.tail_within(id, TAIL_LINES, usize::MAX)?,
        })
    }

    /// Searches the job's held transcript for `pattern`, returning at most `max_matches`
    /// matches with `context` lines around each, and the count of all matches. The lines are
    /// those a read from the first held line covers (the one visit of `reads.rs`): a job in
    /// memory's held lines, a stored job's log (streamed: bounded memory) and saved screen.
    ///
    /// # Errors
    /// [`crate::Error::JobNotFound`]; [`crate::Error::Io`] when a disk log cannot be read.
    pub fn search(
        &self,
        id: JobId,
        pattern: &Regex,
        context: usize,
        max_matches: usize,
    ) -> Result<SearchResult> {
        search::search_lines(
            |f| Ok(self.visit(id, Start::Offset(None), f)?.status),
            pattern,
            context,
            max_matches,
        )
    }
}
