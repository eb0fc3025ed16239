//! The synchronous reads: `status`, `list`, `output`, `tail`, `screen`, `search`, and the
//! argument parsing they share with their Promise forms in `async_reads`.

use napi_derive::napi;
use ptyjobs_engine::{self as engine, JobId};

use super::{JobManager, named, resolve_id};
use crate::error::{Result, from_engine};
use crate::options::{NameOptions, OutputOptions, SearchOptions, TailOptions};
use crate::types::{JobInfo, MAX_SAFE, Output, ScreenSnapshot, SearchResult, count, fitted, whole};

/// Lines `tail` returns when not told.
const DEFAULT_TAIL: usize = 50;

#[napi]
impl JobManager {
    /// A snapshot of one job (with persistence, also of a job of an earlier run or of another
    /// process sharing the state directory).
    ///
    /// @throws `INVALID_JOB_ID`, `JOB_NOT_FOUND`.
    #[napi(catch_unwind)]
    pub fn status(&self, job_id: String, options: Option<NameOptions>) -> Result<JobInfo> {
        self.jobs
            .status(named(&self.jobs, &job_id, options.as_ref())?)
            .map(JobInfo::from)
            .map_err(from_engine)
    }

    /// Every known job, newest first (finished jobs too, up to the engine's cap). With
    /// persistence, also the jobs in the state directory: earlier runs' and those of other
    /// processes sharing it (`thisServer: false`).
    #[napi(catch_unwind)]
    pub fn list(&self) -> Vec<JobInfo> {
        self.jobs.list().into_iter().map(JobInfo::from).collect()
    }

    /// Lines `offset .. offset + limit` of the job's clean transcript, at most `maxBytes` of
    /// them. Line numbers are absolute and stable: pass the returned `nextOffset` as `offset`
    /// to read only new lines (lines from `finalLines` on may still change on screen).
    /// With persistence, an `offset` below the lines memory still holds reads them from the
    /// job's transcript on disk, and jobs of earlier runs are read from there.
    ///
    /// @throws `INVALID_JOB_ID`, `JOB_NOT_FOUND`, `INVALID_ARGUMENT`, `IO_ERROR` (a transcript
    /// on disk that cannot be read).
    #[napi(catch_unwind)]
    pub fn output(&self, job_id: String, options: Option<OutputOptions>) -> Result<Output> {
        let (id, offset, limit, max_bytes) = output_args(&self.jobs, &job_id, options)?;
        // Clamped to the budget before reading (a huge `limit` costs `maxBytes`, not the log).
        self.jobs
            .output_within(id, offset, limit, max_bytes.unwrap_or(usize::MAX))
            .map(|s| fitted(s, max_bytes))
            .map_err(from_engine)
    }

    /// The last `lines` lines (default 50) of the job's clean transcript, the unfinished ones on
    /// screen included: what a person would see at the bottom of the terminal. At most
    /// `maxBytes` of them, as in `output()`.
    ///
    /// @throws `INVALID_JOB_ID`, `JOB_NOT_FOUND`, `INVALID_ARGUMENT`, `IO_ERROR`.
    #[napi(catch_unwind)]
    pub fn tail(
        &self,
        job_id: String,
        lines: Option<f64>,
        options: Option<TailOptions>,
    ) -> Result<Output> {
        let (id, n, max_bytes) = tail_args(&self.jobs, &job_id, lines, options)?;
        self.jobs
            .tail_within(id, n, max_bytes.unwrap_or(usize::MAX))
            .map(|s| fitted(s, max_bytes))
            .map_err(from_engine)
    }

    /// The visible screen of the job's terminal now: rows as text, cursor, size, whether a
    /// full-screen program is on the alternate screen, the window title. What a person sees
    /// looking at `top`, `vim` or a test watcher's interactive view (drawings on the alternate
    /// screen never enter the transcript). For a job of an earlier run, its last screen.
    ///
    /// @throws `INVALID_JOB_ID`, `JOB_NOT_FOUND`.
    #[napi(catch_unwind)]
    pub fn screen(&self, job_id: String, options: Option<NameOptions>) -> Result<ScreenSnapshot> {
        self.jobs
            .screen(named(&self.jobs, &job_id, options.as_ref())?)
            .map(ScreenSnapshot::from)
            .map_err(from_engine)
    }

    /// Searches the job's whole held transcript (non-destructively) for lines matching
    /// `pattern`, a regular expression in Rust `regex` syntax (`(?i)error|panic`; no
    /// slashes, flags inline). Returns the first `maxMatches` matches with their absolute line
    /// numbers and `context` lines around each, and the count of all matches. A job read from
    /// the state directory (`thisServer: false`) is searched in its transcript on disk.
    ///
    /// @throws `INVALID_JOB_ID`, `JOB_NOT_FOUND`, `INVALID_ARGUMENT` (bad pattern or option),
    /// `IO_ERROR`.
    #[napi(catch_unwind)]
    pub fn search(
        &self,
        job_id: String,
        pattern: String,
        options: Option<SearchOptions>,
    ) -> Result<SearchResult> {
        let (id, re, context, max) = search_args(&self.jobs, &job_id, &pattern, options)?;
        self.jobs
            .search(id, &re, context, max)
            .map(SearchResult::from)
            .map_err(from_engine)
    }
}

/// The arguments of `output` and `outputAsync`: the job, `offset`, `limit`, `maxBytes`.
pub(super) type OutputArgs = (JobId, Option<u64>, Option<usize>, Option<usize>);

pub(super) fn output_args(
    jobs: &engine::JobManager,
    job_id: &str,
    options: Option<OutputOptions>,
) -> Result<OutputArgs> {
    let o = options.unwrap_or_default();
    let id = resolve_id(jobs, job_id, o.cwd.as_deref())?;
    let offset = o
        .offset
        .map(|v| whole("offset", v, 0, MAX_SAFE))
        .transpose()?;
    let limit = o.limit.map(|v| count("limit", v)).transpose()?;
    let max_bytes = o.max_bytes.map(|v| count("maxBytes", v)).transpose()?;
    Ok((id, offset, limit, max_bytes))
}

/// The arguments of `tail` and `tailAsync`: the job, the lines, `maxBytes`.
pub(super) fn tail_args(
    jobs: &engine::JobManager,
    job_id: &str,
    lines: Option<f64>,
    options: Option<TailOptions>,
) -> Result<(JobId, usize, Option<usize>)> {
    let o = options.unwrap_or_default();
    let id = resolve_id(jobs, job_id, o.cwd.as_deref())?;
    let n = lines
        .map(|v| count("lines", v))
        .transpose()?
        .unwrap_or(DEFAULT_TAIL);
    let max_bytes = o.max_bytes.map(|v| count("maxBytes", v)).transpose()?;
    Ok((id, n, max_bytes))
}

/// The arguments of `search` and `searchAsync`: the job, the compiled pattern, `context`,
/// `maxMatches`.
pub(super) fn search_args(
    jobs: &engine::JobManager,
    job_id: &str,
    pattern: &str,
    options: Option<SearchOptions>,
) -> Result<(JobId, engine::Regex, usize, usize)> {
    let o = options.unwrap_or_default();
    let id = resolve_id(jobs, job_id, o.cwd.as_deref())?;
    let re = engine::compile_pattern(pattern).map_err(from_engine)?;
    let context = o.context.map(|v| count("context", v)).transpose()?;
    let max = o.max_matches.map(|v| count("maxMatches", v)).transpose()?;
    Ok((id, re, context.unwrap_or(0), max.unwrap_or(usize::MAX)))
}
