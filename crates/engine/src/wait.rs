//! Server-side waits: block until a job exits, prints a pattern, goes quiet, or opens a port —
//! so an agent needs one call instead of a polling loop. Also the transcript search.

use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use regex::Regex;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::job::{JobId, JobInfo, Listener};
use crate::manager::{Found, JobManager};
use crate::output::OutputSlice;
use crate::output::window::Start;
use crate::ports::{PortHolder, url_of};
use crate::readiness::{self, Probe, Seen, Want};
use crate::search::{self, SearchResult};
use crate::sync::lock;

mod remote;
use remote::{needs_owner, wait_remote};

/// A URL per port of `listeners` (an address family's second listener on a port adds none).
fn urls(listeners: &[crate::Listener]) -> Vec<String> {
    let mut ports: Vec<u16> = listeners.iter().map(|l| l.port).collect();
    ports.dedup();
    ports.into_iter().map(url_of).collect()
}

/// How often a wait on a job of another server looks at its record and listeners.
const STORED_POLL: Duration = Duration::from_millis(100);
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
    /// End when one of the job's own processes listens on this TCP port (any address); end at
    /// once with [`WaitReason::PortTaken`] when another process holds it.
    pub port: Option<u16>,
    /// End when the job listens on any TCP port ([`WaitReason::Listening`]); for a job started
    /// with `auto_port`, only on its port.
    pub listening: bool,
    /// End when an HTTP GET of this `http://localhost:PORT/...` URL, on a port the job listens
    /// on, answers below 500 (or [`Self::expect_status`]); redirects are not followed. Each
    /// request may take up to 2 s; one that gets no answer is tried again.
    pub url: Option<String>,
    /// With `url`: the exact status that counts as ready.
    pub expect_status: Option<u16>,
    /// End as soon as the job waits for input (see [`crate::InputWait`]); at once if it
    /// already does.
    pub input: bool,
    /// End after this long (capped by the manager's `max_wait`).
    pub timeout: Option<Duration>,
}

/// Which condition ended a wait. Wire names `exited`, `matched`, `idle`, `port_open`,
/// `port_taken`, `listening`, `http_ready`, `input_wanted`, `timeout`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WaitReason {
    /// The job ended.
    Exited,
    /// A line matched the pattern.
    Matched,
    /// The job printed nothing for the idle period.
    Idle,
    /// The job listens on the port asked for.
    PortOpen,
    /// Another process (see [`WaitOutcome::holder`]) listens on the port the job was to open.
    PortTaken,
    /// The job listens (see [`WaitOutcome::ports`] and [`WaitOutcome::urls`]).
    Listening,
    /// The readiness URL answered (see [`WaitOutcome::http_status`]).
    HttpReady,
    /// The job waits for input (see [`WaitOutcome::input`]).
    InputWanted,
    /// The timeout passed first.
    Timeout,
}

/// The result of a wait.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
    /// For `port_open`, `listening` and `http_ready`: the job's listeners when the wait ended.
    pub ports: Vec<Listener>,
    /// A URL per port of [`Self::ports`] (`http://localhost:PORT/`).
    pub urls: Vec<String>,
    /// For `port_taken`: the process that holds the port.
    pub holder: Option<PortHolder>,
    /// For `http_ready`: the status the URL answered.
    pub http_status: Option<u16>,
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

/// Which readiness condition a probe serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Port,
    Listening,
    Url,
}

/// One readiness condition of a wait in progress.
struct Ready {
    kind: Kind,
    probe: Option<Probe>,
    /// The last look saw the job listening on the URL's port.
    owned: bool,
}

/// A readiness HTTP request in flight.
type Request = tokio::task::JoinHandle<Option<u16>>;

/// What a readiness condition ended the wait with.
struct Readied {
    reason: WaitReason,
    ports: Vec<Listener>,
    holder: Option<PortHolder>,
    http_status: Option<u16>,
}

/// The readiness conditions of `spec` for `job` (checked: a bad URL is an error).
fn readiness(spec: &WaitSpec, job: &crate::manager::Job) -> Result<Vec<Ready>> {
    if spec.expect_status.is_some() && spec.url.is_none() {
        return Err(Error::InvalidArgument(
            "expect_status needs a url to check".into(),
        ));
    }
    if let Some(s) = spec.expect_status
        && !(100..=599).contains(&s)
    {
        return Err(Error::InvalidArgument(format!(
            "expect_status {s} is not an HTTP status (100..=599)"
        )));
    }
    let mut out = Vec::new();
    let mut add = |kind, want| {
        out.push(Ready {
            kind,
            probe: Some(Probe::new(job.target(), want)),
            owned: false,
        });
    };
    if let Some(p) = spec.port {
        add(Kind::Port, Want::Port(p));
    }
    if spec.listening {
        add(Kind::Listening, Want::Listening(job.port));
    }
    if let Some(url) = &spec.url {
        add(Kind::Url, Want::Port(readiness::url_port(url)?));
    }
    Ok(out)
}

/// One look of each probe of `ready` (on the blocking pool): what ended the wait, if anything.
/// A URL whose port the job owns gets a request in `request` when none is in flight.
async fn look(
    ready: &mut [Ready],
    spec: &WaitSpec,
    request: &mut Option<Request>,
    next_request: Instant,
    deadline: Instant,
) -> Result<Option<Readied>> {
    for r in ready.iter_mut() {
        let Some(mut probe) = r.probe.take() else {
            continue;
        };
        let (probe, seen) = tokio::task::spawn_blocking(move || {
            let seen = probe.look();
            (probe, seen)
        })
        .await
        .map_err(|e| Error::Io(std::io::Error::other(format!("port probe failed: {e}"))))?;
        r.probe = Some(probe);
        match seen {
            Seen::Taken(holders) => {
                return Ok(Some(Readied {
                    reason: WaitReason::PortTaken,
                    ports: Vec::new(),
                    holder: holders.into_iter().next(),
                    http_status: None,
                }));
            }
            Seen::Ready(ports) if r.kind != Kind::Url => {
                let reason = if r.kind == Kind::Port {
                    WaitReason::PortOpen
                } else {
                    WaitReason::Listening
                };
                return Ok(Some(Readied {
                    reason,
                    ports,
                    holder: None,
                    http_status: None,
                }));
            }
            Seen::Ready(_) => r.owned = true,
            Seen::No => r.owned = false,
        }
    }
    let url_owned = ready.iter().any(|r| r.kind == Kind::Url && r.owned);
    if url_owned
        && request.is_none()
        && Instant::now() >= next_request
        && let Some(url) = spec.url.clone()
    {
        let left = deadline.saturating_duration_since(Instant::now());
        let timeout = readiness::HTTP_TIMEOUT
            .min(left)
            .max(Duration::from_millis(1));
        *request = Some(tokio::task::spawn_blocking(move || {
            readiness::http_status(&url, timeout)
        }));
    }
    Ok(None)
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
            // A job of an earlier run, or another live server's: its end through its record,
            // and `port` / `listening` through its processes' listeners.
            Found::Stored(job) => {
                // Another live server's running job: what its record cannot tell exactly (a
                // pattern, quiet, input, a URL) is waited for by that server.
                if needs_owner(spec)
                    && let Some(remote) = self.inner.remote(&job)
                {
                    match wait_remote(&remote, spec, total, capped, start, &mut progress).await {
                        // Its server went away meanwhile: the job's end from its record.
                        Err(e) if crate::control::unreachable(&e) => {}
                        done => return done,
                    }
                }
                return self.wait_stored(id, spec, total, capped, start).await;
            }
        };
        let deadline = start + total;
        let mut ready = readiness(spec, &job)?;
        let mut request: Option<Request> = None;
        let mut next_request = start;
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
            if let Some(h) = request.as_ref()
                && h.is_finished()
                && let Some(h) = request.take()
            {
                let status = h.await.ok().flatten();
                if let Some(code) = status
                    && readiness::status_ready(code, spec.expect_status)
                {
                    let ports = self.status(id).map(|i| i.ports).unwrap_or_default();
                    return self.readied(
                        id,
                        Readied {
                            reason: WaitReason::HttpReady,
                            ports,
                            holder: None,
                            http_status: Some(code),
                        },
                        capped,
                        start,
                    );
                }
                next_request = Instant::now() + readiness::HTTP_RETRY;
            }
            if !ready.is_empty() && now >= next_probe {
                if let Some(done) =
                    look(&mut ready, spec, &mut request, next_request, deadline).await?
                {
                    return self.readied(id, done, capped, start);
                }
                next_probe = Instant::now() + readiness::LOOK_EVERY;
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
            if !ready.is_empty() {
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

    /// The processes that listen on TCP `port` now (any address), each with its command line,
    /// working directory and, when it is a ptyjobs job, that job's id and name; empty when the
    /// port is free. Blocking (a look at every process's descriptors on Linux): call it off the
    /// async runtime. For a restart: the old job's ports are free once this is empty for each.
    pub fn port_holders(&self, port: u16) -> Vec<PortHolder> {
        let look = crate::sys::net::listening();
        if crate::ports::in_use(&look, port) == Some(false) {
            return Vec::new();
        }
        let mut holders = crate::ports::holders(&look, port);
        for h in &mut holders {
            if let Some(job) = h.job_id {
                h.job_name = self.status(job).ok().and_then(|i| i.name);
            }
        }
        holders
    }

    /// The outcome of a wait that a readiness condition ended.
    fn readied(
        &self,
        id: JobId,
        done: Readied,
        capped: bool,
        start: Instant,
    ) -> Result<WaitOutcome> {
        let mut out = self.outcome(id, done.reason, None, capped, start)?;
        let mut holder = done.holder;
        if let Some(h) = holder.as_mut()
            && let Some(job) = h.job_id
        {
            h.job_name = self.status(job).ok().and_then(|i| i.name);
        }
        out.holder = holder;
        out.http_status = done.http_status;
        if !done.ports.is_empty() {
            out.ports = done.ports;
        }
        out.urls = urls(&out.ports);
        Ok(out)
    }

    /// [`Self::wait_for`] of a job this manager does not run (another live server's, or an
    /// earlier run's): its end from its record, and `port` / `listening` from the listeners of
    /// its processes (its record proves which they are), looked at every [`STORED_POLL`].
    /// Other conditions (pattern, idle, url, input) need the job's own server: they are
    /// waited for by it while it runs (`wait_remote`); here a caller gets the job's end or the
    /// timeout.
    async fn wait_stored(
        &self,
        id: JobId,
        spec: &WaitSpec,
        total: Duration,
        capped: bool,
        start: Instant,
    ) -> Result<WaitOutcome> {
        let deadline = start + total;
        let ports_wanted = spec.listening || spec.port.is_some();
        let reason = loop {
            let info = self.status_async(id).await?;
            if info.status.is_final() {
                break WaitReason::Exited;
            }
            if ports_wanted {
                let mine: Vec<_> = match spec.port {
                    Some(port) => info
                        .ports
                        .iter()
                        .filter(|l| l.port == port)
                        .cloned()
                        .collect(),
                    None => info.ports.clone(),
                };
                if !mine.is_empty() {
                    let reason = if spec.port.is_some() {
                        WaitReason::PortOpen
                    } else {
                        WaitReason::Listening
                    };
                    let mut out = self.outcome(id, reason, None, capped, start)?;
                    out.urls = urls(&mine);
                    out.ports = mine;
                    return Ok(out);
                }
            }
            let now = Instant::now();
            if now >= deadline {
                break WaitReason::Timeout;
            }
            tokio::time::sleep(STORED_POLL.min(deadline - now)).await;
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
            ports: Vec::new(),
            urls: Vec::new(),
            holder: None,
            http_status: None,
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
