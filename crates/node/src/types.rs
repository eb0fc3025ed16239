//! The plain result objects that cross the boundary, their conversions from the engine's
//! types, and the number checks shared with the options (`options.rs`).
//!
//! Numbers: line numbers, counts and durations are JS numbers (exact up to 2^53). Dates are ISO
//! 8601 strings in UTC with milliseconds (`2025-01-02T03:04:05.678Z`): `new Date(info.started)`
//! parses them.

use chrono::{DateTime, SecondsFormat, Utc};
use napi_derive::napi;
use ptyjobs_engine as engine;

pub use crate::numbers::{MAX_SAFE, count, dimension, millis, whole};
use crate::ports::ports;
pub use crate::ports::{Port, PortHolder};

/// Which condition ended a `wait` with a condition.
#[napi(string_enum = "snake_case")]
#[derive(Debug, PartialEq, Eq)]
pub enum WaitReason {
    /// The job ended (also when it ended right at the deadline).
    Exited,
    /// A line matched `pattern`.
    Matched,
    /// The job printed nothing for `idleMs`.
    Idle,
    /// The job itself listens on `port`.
    PortOpen,
    /// Another process listens on `port`: see `holder`.
    PortTaken,
    /// The job listens (`listening: true`): see `ports` and `urls`.
    Listening,
    /// `url` answered: see `httpStatus`.
    HttpReady,
    /// The job waits for input (`input: true`): see `prompt` and `echo`.
    InputWanted,
    /// `timeoutMs` (or `maxWaitMs`) passed first.
    Timeout,
}

impl From<engine::WaitReason> for WaitReason {
    fn from(r: engine::WaitReason) -> Self {
        match r {
            engine::WaitReason::Exited => Self::Exited,
            engine::WaitReason::Matched => Self::Matched,
            engine::WaitReason::Idle => Self::Idle,
            engine::WaitReason::PortOpen => Self::PortOpen,
            engine::WaitReason::PortTaken => Self::PortTaken,
            engine::WaitReason::Listening => Self::Listening,
            engine::WaitReason::HttpReady => Self::HttpReady,
            engine::WaitReason::InputWanted => Self::InputWanted,
            engine::WaitReason::Timeout => Self::Timeout,
        }
    }
}

/// A job's state.
#[napi(string_enum = "lowercase")]
#[derive(Debug, PartialEq, Eq)]
pub enum JobStatus {
    /// The job's process is alive (or its last output is being drained).
    Running,
    /// The command exited with status 0.
    Completed,
    /// Non-zero exit, death by a signal ptyjobs did not send, or a failed start.
    Failed,
    /// Ended by `kill`, its timeout, or `close()`.
    Killed,
}

impl From<engine::JobStatus> for JobStatus {
    fn from(s: engine::JobStatus) -> Self {
        match s {
            engine::JobStatus::Running => Self::Running,
            engine::JobStatus::Completed => Self::Completed,
            engine::JobStatus::Failed => Self::Failed,
            engine::JobStatus::Killed => Self::Killed,
        }
    }
}

/// How a program waiting for input reads its terminal.
#[napi(string_enum = "lowercase")]
#[derive(Debug, PartialEq, Eq)]
pub enum InputMode {
    /// Canonical mode: the terminal edits a line and hands it over at Enter.
    Line,
    /// Every key goes to the program at once, which draws the echo itself (REPLs, menus).
    Raw,
}

impl From<engine::InputMode> for InputMode {
    fn from(m: engine::InputMode) -> Self {
        match m {
            engine::InputMode::Line => Self::Line,
            engine::InputMode::Raw => Self::Raw,
        }
    }
}

/// What `kill` ended in.
#[napi(string_enum = "snake_case")]
#[derive(Debug, PartialEq, Eq)]
pub enum KillResult {
    /// The job was running and no process of it remains.
    Killed,
    /// The job had already ended.
    AlreadyTerminated,
    /// No job with this id is known.
    NotFound,
}

impl From<engine::KillOutcome> for KillResult {
    fn from(k: engine::KillOutcome) -> Self {
        match k {
            engine::KillOutcome::Killed => Self::Killed,
            engine::KillOutcome::AlreadyTerminated => Self::AlreadyTerminated,
            engine::KillOutcome::NotFound => Self::NotFound,
        }
    }
}

/// What a kill verified (`kill` resolves it), as MCP's `kill_job` answers: how the kill ended,
/// and the job's processes that outlived it.
#[napi(object)]
pub struct KillReport {
    /// `'killed'`, `'already_terminated'` (it had ended) or `'not_found'`: what `kill`
    /// resolved before it resolved a report.
    pub outcome: KillResult,
    /// Pids of the job's processes still alive after SIGKILL and a 5 s check (normally
    /// empty): named, never hidden.
    pub survivors: Vec<u32>,
}

impl From<engine::KillReport> for KillReport {
    fn from(r: engine::KillReport) -> Self {
        Self {
            outcome: r.outcome.into(),
            survivors: r.survivors,
        }
    }
}

/// A snapshot of one job. Fields that do not apply yet are absent (`undefined`).
#[napi(object)]
pub struct JobInfo {
    /// The job's id (a UUID): pass it to every other method.
    pub job_id: String,
    /// The name given at start, if any.
    pub name: Option<String>,
    /// The command line as given.
    pub command: String,
    /// The working directory the job started in.
    pub cwd: String,
    /// Process id of the job's shell (also its process-group and session id).
    pub pid: u32,
    /// `running`, `completed`, `failed` or `killed`.
    pub status: JobStatus,
    /// Exit code, once the job exited normally.
    pub exit_code: Option<i32>,
    /// Name of the signal that ended the job (`SIGTERM`, ...), if one did.
    pub signal: Option<String>,
    /// When the job started (ISO 8601, UTC, milliseconds).
    pub started: String,
    /// When the job became final (ISO 8601, UTC, milliseconds).
    pub finished: Option<String>,
    /// Milliseconds from start to finish, or to now while running.
    pub duration_ms: f64,
    /// Why the job was killed or failed, in a few words (`timeout`, `exited with code 3`, ...).
    pub reason: Option<String>,
    /// Terminal width.
    pub cols: u32,
    /// Terminal height.
    pub rows: u32,
    /// Whether this manager started the job. False for jobs read from the state directory
    /// (with persistence): those of earlier managers and runs, which have ended, and those a
    /// live process sharing the directory runs, controlled through that process (its attach
    /// socket).
    pub this_server: bool,
    /// True while the job waits for input: its foreground process is blocked reading the
    /// terminal and its output has been quiet for a moment (a `Password:` or `[y/N]` prompt,
    /// a REPL). Linux only (always false elsewhere); see docs/TERMINAL.md for when it can be wrong.
    pub waiting_for_input: bool,
    /// While `waitingForInput`: false only for a password (line mode with echo off), which
    /// then never appears in the output.
    pub echo: Option<bool>,
    /// While `waitingForInput`: `line` (Enter sends a line) or `raw` (every key goes to the
    /// program: a menu, a REPL, an editor).
    pub mode: Option<InputMode>,
    /// While `waitingForInput`: the question on screen (the cursor's line, or the line above
    /// that asks), then a visible menu's choices, one a line.
    pub prompt: Option<String>,
    /// The job this one replaced, when `restart` started it.
    pub replaces: Option<String>,
    /// Set (true) by `execute` with `ensure` when it returned the job already running.
    pub reused: Option<bool>,
    /// While running: the TCP listeners of the job's own processes (its session's, and those
    /// that left it but carry its job marker).
    pub ports: Vec<Port>,
    /// The port `autoPort` picked (also the job's `PORT`).
    pub port: Option<u32>,
    /// True for a kept job (`execute` with `keep`): the state directory's keeper runs it and
    /// it outlives this process.
    pub kept: bool,
    /// When a kept job's TTL ends (ISO 8601); absent: kept until killed.
    pub keep_until: Option<String>,
    /// With a `policy`: the job's profile, what is enforced and what is not.
    pub policy: Option<crate::policy::JobPolicy>,
}

fn iso(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// A u64 count as a JS number (exact below 2^53, which no count here reaches).
#[allow(clippy::cast_precision_loss)]
fn num(v: u64) -> f64 {
    v as f64
}

impl From<engine::JobInfo> for JobInfo {
    fn from(i: engine::JobInfo) -> Self {
        Self {
            job_id: i.id.to_string(),
            name: i.name,
            command: i.command,
            cwd: i.cwd.to_string_lossy().into_owned(),
            pid: i.pid,
            status: i.status.into(),
            exit_code: i.exit_code,
            signal: i.signal,
            started: iso(i.started),
            finished: i.finished.map(iso),
            duration_ms: num(i.duration_ms),
            reason: i.reason,
            cols: u32::from(i.size.0),
            rows: u32::from(i.size.1),
            this_server: i.this_server,
            waiting_for_input: i.input.is_some(),
            echo: i.input.as_ref().map(|w| w.echo),
            mode: i.input.as_ref().map(|w| w.mode.into()),
            prompt: i.input.map(|w| w.prompt),
            replaces: i.replaces.map(|r| r.to_string()),
            reused: None,
            ports: ports(i.ports),
            port: i.port.map(u32::from),
            kept: i.kept,
            keep_until: i.keep_until.map(iso),
            policy: i.policy.map(Into::into),
        }
    }
}

/// A read of a job's clean transcript.
#[napi(object)]
pub struct Output {
    /// The lines, joined with `\n` (no trailing newline). Colours and escapes are gone, `\r`
    /// rewrites collapsed to their final state.
    pub output: String,
    /// Absolute number of the first line returned (equal to `nextOffset` when none is).
    pub first_line: f64,
    /// How many lines were returned.
    pub line_count: f64,
    /// Absolute number of the line after the last one returned: pass it as the next `offset`
    /// to read only what is new.
    pub next_offset: f64,
    /// Lines the job has printed so far, the unfinished ones on screen included.
    pub total_lines: f64,
    /// Lines evicted from the front of the transcript to respect `transcriptBytes`.
    pub dropped_lines: f64,
    /// Absolute number below which every line is final: it scrolled off the screen (or was
    /// cleared) and will never change. Lines from here on are still on screen and may change
    /// while the job runs (once it has ended, none does).
    pub final_lines: f64,
    /// True when this is not the whole requested range (evicted lines, or `limit`).
    pub truncated: bool,
    /// Bytes (UTF-8) of `output`.
    pub bytes: f64,
    /// Lines left out of the middle of `output` to respect `maxBytes` (a marker line stands in
    /// their place); 0 when nothing was.
    pub omitted_lines: f64,
    /// Bytes left out of the middle of `output` to respect `maxBytes`.
    pub omitted_bytes: f64,
    /// Set when a read from an offset at the end (the last `nextOffset`) or a tail starts
    /// earlier, here (= `firstLine`): lines above were redrawn since a read showed them (a
    /// menu replaced by the next question), so nothing on screen is missed.
    pub rewritten_from: Option<f64>,
    /// The job's status at the time of the read.
    pub status: JobStatus,
}

impl From<engine::OutputSlice> for Output {
    fn from(s: engine::OutputSlice) -> Self {
        Self {
            output: s.output,
            first_line: num(s.first_line),
            line_count: num(s.line_count),
            next_offset: num(s.next_offset),
            total_lines: num(s.total_lines),
            dropped_lines: num(s.dropped_lines),
            final_lines: num(s.final_lines),
            truncated: s.truncated,
            bytes: num(s.bytes),
            omitted_lines: num(s.omitted_lines),
            omitted_bytes: num(s.omitted_bytes),
            rewritten_from: s.rewritten_from.map(num),
            status: s.status.into(),
        }
    }
}

/// What ended a `wait` with a `pattern`, `idleMs` or `port` condition, and the job then.
#[napi(object)]
pub struct WaitResult {
    /// `exited`, `matched`, `idle`, `port_open`, `port_taken`, `listening`, `http_ready`,
    /// `input_wanted` or `timeout`.
    pub reason: WaitReason,
    /// The line that matched, for `matched`.
    pub matched_line: Option<String>,
    /// Its absolute line number (usable as `output()`'s `offset`), for `matched`.
    pub line_number: Option<f64>,
    /// The question on screen (and a visible menu's choices), for `input_wanted`.
    pub prompt: Option<String>,
    /// For `input_wanted`: false only for a password (line mode, echo off).
    pub echo: Option<bool>,
    /// For `port_open`, `listening` and `http_ready`: the job's listeners.
    pub ports: Vec<Port>,
    /// A URL per port (`http://localhost:5174/`).
    pub urls: Vec<String>,
    /// For `port_taken`: the process that holds the port.
    pub holder: Option<PortHolder>,
    /// For `http_ready`: the status the URL answered.
    pub http_status: Option<u32>,
    /// For `input_wanted`: `line` or `raw` (every key goes to the program).
    pub mode: Option<InputMode>,
    /// True when the requested `timeoutMs` was longer than `maxWaitMs`, which ended the wait
    /// instead: call again to keep waiting.
    pub capped: bool,
    /// Milliseconds the wait took.
    pub waited_ms: f64,
    /// The job now.
    pub info: JobInfo,
    /// The job's last 10 lines now.
    pub tail: Output,
}

impl From<engine::WaitOutcome> for WaitResult {
    fn from(w: engine::WaitOutcome) -> Self {
        Self {
            reason: w.reason.into(),
            matched_line: w.matched_line,
            line_number: w.line_number.map(num),
            prompt: w.input.as_ref().map(|i| i.prompt.clone()),
            ports: ports(w.ports),
            urls: w.urls,
            holder: w.holder.map(PortHolder::from),
            http_status: w.http_status.map(u32::from),
            echo: w.input.as_ref().map(|i| i.echo),
            mode: w.input.map(|i| i.mode.into()),
            capped: w.capped,
            waited_ms: num(w.waited_ms),
            info: w.info.into(),
            tail: w.tail.into(),
        }
    }
}

/// The visible screen of a job's terminal: what a person looking at it sees now (a full-screen
/// program's view included, which never enters the transcript).
#[napi(object)]
pub struct ScreenSnapshot {
    /// Every visible row as text (trailing blanks trimmed), top to bottom.
    pub rows: Vec<String>,
    /// Cursor row, 0-based.
    pub cursor_row: u32,
    /// Cursor column, 0-based.
    pub cursor_col: u32,
    /// Terminal width.
    pub cols: u32,
    /// Terminal height (the length of `rows`).
    pub height: u32,
    /// Whether a full-screen program switched to the alternate screen (`vim`, `less`, `top`).
    pub alternate_screen: bool,
    /// The window title the program set (OSC 0/2), if any.
    pub title: Option<String>,
}

impl From<engine::ScreenSnapshot> for ScreenSnapshot {
    fn from(s: engine::ScreenSnapshot) -> Self {
        Self {
            rows: s.rows,
            cursor_row: u32::from(s.cursor_row),
            cursor_col: u32::from(s.cursor_col),
            cols: u32::from(s.cols),
            height: u32::from(s.height),
            alternate_screen: s.alternate_screen,
            title: s.title,
        }
    }
}

/// One line that matched a `search`, with its context.
#[napi(object)]
pub struct SearchMatch {
    /// Absolute line number (usable as `output()`'s `offset`).
    pub line: f64,
    /// The matching line.
    pub text: String,
    /// Up to `context` lines before it, oldest first.
    pub before: Vec<String>,
    /// Up to `context` lines after it.
    pub after: Vec<String>,
}

/// The result of a `search`.
#[napi(object)]
pub struct SearchResult {
    /// The first `maxMatches` matches, in line order.
    pub matches: Vec<SearchMatch>,
    /// Every match in the held transcript, those not returned included.
    pub total_matches: f64,
    /// First line searched (the first line still held).
    pub first_line: f64,
    /// One past the last line searched: pass it as `output()`'s `offset` to read what is new.
    pub next_offset: f64,
    /// The job's status at the time of the search.
    pub status: JobStatus,
}

impl From<engine::SearchResult> for SearchResult {
    fn from(r: engine::SearchResult) -> Self {
        Self {
            matches: r
                .matches
                .into_iter()
                .map(|m| SearchMatch {
                    line: num(m.line),
                    text: m.text,
                    before: m.before,
                    after: m.after,
                })
                .collect(),
            total_matches: num(r.total_matches),
            first_line: num(r.first_line),
            next_offset: num(r.next_offset),
            status: r.status.into(),
        }
    }
}

/// Fits `slice` into `max_bytes` when a budget was given.
pub fn fitted(mut slice: engine::OutputSlice, max_bytes: Option<usize>) -> Output {
    if let Some(max) = max_bytes {
        slice.fit(max);
    }
    slice.into()
}
