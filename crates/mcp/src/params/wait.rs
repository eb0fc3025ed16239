//! wait_for_job.

use ptyjobs_engine::{WaitOutcome, WaitReason};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Accounting, Holder, Port, Status, ports};
use crate::budget::{WAIT_LINE_BYTES, WAIT_TAIL_BYTES, shorten};

/// Input of wait_for_job.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct WaitParams {
    #[serde(flatten)]
    pub job: super::JobIdParams,
    /// Regular expression matched against each line of clean output, e.g.
    /// `"Listening on|ready in"`. Only lines printed after this call began count, unless
    /// `from_start` is true.
    #[serde(default)]
    pub pattern: Option<String>,
    /// Let `pattern` match lines printed before this call too. Default false.
    #[serde(default)]
    pub from_start: Option<bool>,
    /// Return once the job has printed nothing for this many milliseconds.
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub idle_ms: Option<u64>,
    /// Return once the job's own process listens on this port (port_taken if another holds it).
    #[serde(default)]
    #[schemars(range(min = 1, max = 65535))]
    pub port: Option<u16>,
    /// Return once the job listens on any TCP port (reason listening, with ports and urls).
    #[serde(default)]
    pub listening: bool,
    /// Return once GET of this http://localhost:PORT/ URL on a job's port answers < 500.
    #[serde(default)]
    pub url: Option<String>,
    /// With url: the status that counts as ready.
    #[serde(default)]
    pub expect_status: Option<u16>,
    /// Return once the job waits for input (blocked reading its terminal, output quiet), with
    /// the prompt; at once if it already does.
    #[serde(default)]
    pub input: bool,
    /// Longest wait in seconds. Default and maximum 50 (a capped wait says so).
    #[serde(default)]
    pub timeout_secs: Option<f64>,
}

/// Which condition ended a wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// The job ended (see status and exit_code).
    Exited,
    /// A line matched `pattern` (see matched_line).
    Matched,
    /// The job printed nothing for `idle_ms`.
    Idle,
    /// The job listens on `port`.
    PortOpen,
    /// Another process holds `port` (see holder).
    PortTaken,
    /// The job listens (see ports, urls).
    Listening,
    /// `url` answered (see http_status).
    HttpReady,
    /// The job waits for input (see prompt and echo).
    InputWanted,
    /// The timeout passed first.
    Timeout,
}

impl From<WaitReason> for Reason {
    fn from(r: WaitReason) -> Self {
        match r {
            WaitReason::Exited => Self::Exited,
            WaitReason::Matched => Self::Matched,
            WaitReason::Idle => Self::Idle,
            WaitReason::PortOpen => Self::PortOpen,
            WaitReason::PortTaken => Self::PortTaken,
            WaitReason::Listening => Self::Listening,
            WaitReason::HttpReady => Self::HttpReady,
            WaitReason::InputWanted => Self::InputWanted,
            WaitReason::Timeout => Self::Timeout,
        }
    }
}

/// Result of wait_for_job.
#[derive(Debug, Serialize, JsonSchema)]
pub struct WaitResult {
    /// Why the wait ended: exited, matched, idle, port_open, port_taken, listening, http_ready,
    /// input_wanted or timeout.
    pub reason: Reason,
    /// The line that matched `pattern`, for `matched`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub matched_line: Option<String>,
    /// Absolute line number of matched_line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line_number: Option<u64>,
    /// For input_wanted: the question on screen (e.g. `Password:`), then a visible menu's
    /// choices, one a line.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub prompt: Option<String>,
    /// For input_wanted: false for a password or secret (line mode, echo off): ask the user
    /// for it; it will not appear in the output.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "bool")]
    pub echo: Option<bool>,
    /// The job's TCP listeners, for port_open, listening and http_ready.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ports: Vec<Port>,
    /// A URL per port, e.g. `http://localhost:5174/`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub urls: Vec<String>,
    /// For port_taken: the process that holds the port (and its job, if it is one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub holder: Option<Holder>,
    /// For http_ready: the status the URL answered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http_status: Option<u16>,
    /// For input_wanted: `line` (Enter sends a line) or `raw` (every key goes to the program).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub mode: Option<&'static str>,
    /// True when the wait stopped at the server's cap rather than at `timeout_secs`: call
    /// wait_for_job again to keep waiting.
    pub capped: bool,
    /// What to do next, when the wait timed out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// How long the wait took, in ms.
    pub waited_ms: u64,
    /// The job's status now.
    pub status: Status,
    /// Exit code once the job exited normally, else absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// Signal that ended the job (e.g. `SIGINT`), else absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signal: Option<String>,
    /// The last lines of output (clean text).
    pub tail: String,
    /// Lines the job has printed so far.
    pub total_lines: u64,
    /// Lines and bytes of `tail`, what was left out, and `next_offset`.
    #[serde(flatten)]
    pub read: Accounting,
}

impl From<WaitOutcome> for WaitResult {
    fn from(w: WaitOutcome) -> Self {
        let mut tail = w.tail;
        let read = Accounting::fit(&mut tail, WAIT_TAIL_BYTES);
        let total = w.waited_ms / 1000;
        let message = match w.reason {
            WaitReason::Timeout if w.capped => Some(format!(
                "Nothing happened yet; the wait stopped at the server's cap after {total} s. \
                 Call wait_for_job again to keep waiting."
            )),
            WaitReason::Timeout => Some(
                "None of the conditions was met before timeout_secs; the job is still running."
                    .to_owned(),
            ),
            _ => None,
        };
        Self {
            reason: w.reason.into(),
            // A matched line may be as long as a transcript line (64 KiB): the answer stays
            // within its budget.
            matched_line: w.matched_line.map(|l| shorten(l, WAIT_LINE_BYTES)),
            line_number: w.line_number,
            echo: w.input.as_ref().map(|i| i.echo),
            mode: w.input.as_ref().map(|i| i.mode.as_str()),
            prompt: w.input.map(|i| shorten(i.prompt, WAIT_LINE_BYTES)),
            ports: ports(w.ports),
            urls: w.urls,
            holder: w.holder.map(Holder::from),
            http_status: w.http_status,
            capped: w.capped,
            message,
            waited_ms: w.waited_ms,
            status: w.info.status.into(),
            exit_code: w.info.exit_code,
            signal: w.info.signal,
            total_lines: tail.total_lines,
            tail: tail.output,
            read,
        }
    }
}
