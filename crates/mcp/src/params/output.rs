//! get_job_output, tail_job_output, search_job_output.

use ptyjobs_engine::{OutputSlice, SearchMatch};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::Status;
use crate::budget;

/// Lines `get_job_output` returns when no `limit` is given: enough for most logs, small enough
/// that one call cannot flood the model's context with the whole multi-MiB transcript.
pub const DEFAULT_OUTPUT_LIMIT: usize = 1000;
/// `tail_job_output` default.
pub const DEFAULT_TAIL_LINES: usize = 50;
/// `tail_job_output` upper bound.
pub const MAX_TAIL_LINES: usize = 1000;
/// `search_job_output` default context.
pub const DEFAULT_CONTEXT: usize = 2;
/// `search_job_output` upper bound on `context`.
pub const MAX_CONTEXT: usize = 50;
/// `search_job_output` default `max_matches`.
pub const DEFAULT_MAX_MATCHES: usize = 20;
/// `search_job_output` upper bound on `max_matches`.
pub const MAX_MATCHES: usize = 500;
/// A search answer shortens lines longer than this many bytes.
pub const SEARCH_LINE_BYTES: usize = 2000;

/// How much of the text a read covered was actually sent, and where to continue.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Accounting {
    /// Absolute number of the first line covered.
    pub first_line: u64,
    /// Lines covered (including any left out of the middle, see `omitted_lines`).
    pub line_count: u64,
    /// Bytes of text returned.
    pub bytes: u64,
    /// Lines left out of the middle to fit `max_bytes` (a marker line stands in their place).
    pub omitted_lines: u64,
    /// Bytes left out of the middle to fit `max_bytes`.
    pub omitted_bytes: u64,
    /// Absolute number of the first line left out (read them with get_job_output
    /// `offset=omitted_from`, `limit=omitted_lines`); absent when nothing was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub omitted_from: Option<u64>,
    /// Absolute line number after the last line covered: pass it as get_job_output's
    /// `offset` to read only what comes after.
    pub next_offset: u64,
    /// Set when lines above where this read was asked to start were redrawn since a read
    /// showed them (a menu replaced by the next question): the read starts here instead
    /// (= first_line), so nothing on screen is missed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rewritten_from: Option<u64>,
}

impl Accounting {
    /// Fits `slice` into `max_bytes` and accounts for it.
    pub fn fit(slice: &mut OutputSlice, max_bytes: usize) -> Self {
        let omitted_from = budget::fit(slice, max_bytes);
        Self {
            first_line: slice.first_line,
            line_count: slice.line_count,
            bytes: slice.output.len() as u64,
            omitted_lines: slice.omitted_lines,
            omitted_bytes: slice.omitted_bytes,
            omitted_from,
            next_offset: slice.next_offset,
            rewritten_from: slice.rewritten_from,
        }
    }
}

/// Input of get_job_output.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct OutputParams {
    #[serde(flatten)]
    pub job: super::JobIdParams,
    /// Absolute line number to start from (0 = the job's first line). Pass the previous
    /// call's `next_offset` to read only new lines (and lines redrawn above it: see
    /// rewritten_from). Default: the oldest line still held.
    #[serde(default)]
    pub offset: Option<u64>,
    /// Most lines to return, at least 1. Default 1000.
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub limit: Option<i64>,
    /// Most bytes of text to return, 256-65536 (default and maximum 65536). A longer read
    /// keeps its first and last lines and puts a marker line in the middle.
    #[serde(default)]
    pub max_bytes: Option<u64>,
}

/// Result of get_job_output: clean text as a person would have seen it scroll by (no colours
/// or escape codes, progress bars at their final state, wrapped lines joined).
#[derive(Debug, Serialize, JsonSchema)]
pub struct OutputResult {
    /// The lines, joined with newlines.
    pub output: String,
    /// Lines, bytes, what was left out, and `next_offset`.
    #[serde(flatten)]
    pub read: Accounting,
    /// Lines the job has printed so far.
    pub total_lines: u64,
    /// Lines after `next_offset` not returned (because of `limit`).
    pub remaining_lines: u64,
    /// Oldest lines no longer held (the per-job memory cap evicts them).
    pub dropped_lines: u64,
    /// True when lines of the requested range were evicted, `limit` cut it short, or lines
    /// were left out to fit `max_bytes`.
    pub truncated: bool,
    /// The job's status at the time of the read.
    pub status: Status,
}

impl OutputResult {
    /// `slice` fitted into `max_bytes`.
    pub fn new(mut slice: OutputSlice, max_bytes: usize) -> Self {
        let read = Accounting::fit(&mut slice, max_bytes);
        Self {
            truncated: slice.truncated || read.omitted_lines > 0 || read.omitted_bytes > 0,
            remaining_lines: slice.total_lines.saturating_sub(slice.next_offset),
            output: slice.output,
            read,
            total_lines: slice.total_lines,
            dropped_lines: slice.dropped_lines,
            status: slice.status.into(),
        }
    }
}

/// Input of tail_job_output.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct TailParams {
    #[serde(flatten)]
    pub job: super::JobIdParams,
    /// How many of the last lines to return, 1-1000. Default 50.
    #[serde(default)]
    #[schemars(range(min = 1, max = 1000))]
    pub lines: Option<i64>,
    /// Most bytes of text to return, 256-65536 (default and maximum 65536). A longer tail
    /// keeps its first and last lines and puts a marker line in the middle.
    #[serde(default)]
    pub max_bytes: Option<u64>,
}

/// Result of tail_job_output.
#[derive(Debug, Serialize, JsonSchema)]
pub struct TailResult {
    /// The last lines, clean text, joined with newlines. Includes an unfinished last line such
    /// as a prompt waiting for input.
    pub output: String,
    /// Lines the job has printed so far.
    pub total_lines: u64,
    /// The job's status at the time of the read.
    pub status: Status,
    /// Lines, bytes, what was left out, and `next_offset`.
    #[serde(flatten)]
    pub read: Accounting,
    /// True when lines were left out to fit `max_bytes`.
    pub truncated: bool,
}

impl TailResult {
    /// `slice` fitted into `max_bytes`.
    pub fn new(mut slice: OutputSlice, max_bytes: usize) -> Self {
        let read = Accounting::fit(&mut slice, max_bytes);
        Self {
            truncated: read.omitted_lines > 0 || read.omitted_bytes > 0,
            output: slice.output,
            total_lines: slice.total_lines,
            status: slice.status.into(),
            read,
        }
    }
}

/// Input of search_job_output.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SearchParams {
    #[serde(flatten)]
    pub job: super::JobIdParams,
    /// Regular expression (Rust regex syntax) matched against each line of clean output,
    /// e.g. `"(?i)error|panic"`.
    pub pattern: String,
    /// Lines of context to return before and after each match, 0-50. Default 2.
    #[serde(default)]
    #[schemars(range(min = 0, max = 50))]
    pub context: Option<i64>,
    /// Most matches to return, 1-500. Default 20. `total_matches` counts them all.
    #[serde(default)]
    #[schemars(range(min = 1, max = 500))]
    pub max_matches: Option<i64>,
}

/// One matching line.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Match {
    /// Absolute line number (usable as get_job_output's `offset`).
    pub line: u64,
    /// The matching line.
    pub text: String,
    /// Up to `context` lines before it, oldest first.
    pub before: Vec<String>,
    /// Up to `context` lines after it.
    pub after: Vec<String>,
}

/// Result of search_job_output.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SearchResult {
    /// The first matches, in line order.
    pub matches: Vec<Match>,
    /// How many matches are returned.
    pub returned: u64,
    /// Matches in all of the held output, including those not returned.
    pub total_matches: u64,
    /// Matches not returned (beyond `max_matches` or the 64 KiB answer budget).
    pub omitted_matches: u64,
    /// First line searched (the oldest line still held).
    pub first_line: u64,
    /// One past the last line searched: pass it as get_job_output's `offset` to read what
    /// comes after.
    pub next_offset: u64,
    /// Bytes of text in the returned matches and their context.
    pub bytes: u64,
    /// The job's status at the time of the search.
    pub status: Status,
}

/// `line`, shortened to [`SEARCH_LINE_BYTES`] with a note of how much was cut.
fn shorten(mut line: String) -> String {
    if line.len() > SEARCH_LINE_BYTES {
        let cut = line.len();
        let mut end = SEARCH_LINE_BYTES;
        while !line.is_char_boundary(end) {
            end -= 1;
        }
        line.truncate(end);
        line.push_str(&format!(" [... {} bytes cut]", cut - end));
    }
    line
}

impl From<ptyjobs_engine::SearchResult> for SearchResult {
    fn from(r: ptyjobs_engine::SearchResult) -> Self {
        let mut bytes = 0u64;
        let mut matches = Vec::new();
        for SearchMatch {
            line,
            text,
            before,
            after,
        } in r.matches
        {
            let m = Match {
                line,
                text: shorten(text),
                before: before.into_iter().map(shorten).collect(),
                after: after.into_iter().map(shorten).collect(),
            };
            let size: u64 = [&m.text]
                .into_iter()
                .chain(&m.before)
                .chain(&m.after)
                .map(|l| l.len() as u64 + 1)
                .sum();
            if !matches.is_empty() && bytes + size > budget::OUTPUT_BUDGET as u64 {
                break;
            }
            bytes += size;
            matches.push(m);
        }
        let returned = matches.len() as u64;
        Self {
            matches,
            returned,
            total_matches: r.total_matches,
            omitted_matches: r.total_matches.saturating_sub(returned),
            first_line: r.first_line,
            next_offset: r.next_offset,
            bytes,
            status: r.status.into(),
        }
    }
}
