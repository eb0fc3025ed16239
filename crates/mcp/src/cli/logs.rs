//! `ptyjobs logs`: a job's clean output, whole, its tail, or followed as it grows.
//!
//! A job's transcript is its disk log (`output.log`, final lines) followed by the lines still
//! on its screen. Once its server has finished it, the log holds everything. While it runs, or
//! when its server died, the lines last saved from its screen follow the log.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::time::Duration;

use ptyjobs_engine::{Error, JobId, Store, StoredJob};

use super::out::Out;
use super::{CmdResult, Failure};

/// Most lines read from the log at once: memory stays bounded whatever the log's size.
const CHUNK: usize = 4096;
/// How often `--follow` looks for new lines.
const POLL: Duration = Duration::from_millis(100);

/// Prints the job's transcript (its last `tail` lines when given). With `follow`, on a running
/// job: prints lines as they become final, and when the job ends (or its server dies) the rest,
/// so every line is printed exactly once; then returns.
pub(crate) fn run(
    store: &Store,
    id: &str,
    cwd: Option<&Path>,
    tail: Option<usize>,
    follow: bool,
) -> CmdResult {
    let id = store.resolve_job(id, cwd)?;
    let job = store.load(id)?;
    let mut out = Out::new();
    if follow && !job.record.status.is_final() {
        return follow_job(store, id, tail, &mut out);
    }
    let total = total_lines(store, &job)?;
    let from = tail.map_or(0, |n| total.saturating_sub(n as u64));
    print_from(store, &job, from, &mut out)?;
    out.flush()?;
    Ok(())
}

/// Whether the log alone holds the job's whole transcript: its server finished it (the final
/// record carries the final screen, and the saved screen lines are stale or already gone).
fn log_is_complete(job: &StoredJob) -> bool {
    job.record.status.is_final() && job.record.screen.is_some()
}

/// Complete lines in the job's log (none while it has no log).
fn log_len(store: &Store, id: JobId) -> Result<u64, Failure> {
    match store.log_lines(id) {
        Ok(n) => Ok(n),
        Err(Error::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => Ok(0),
        Err(e) => Err(e.into()),
    }
}

/// Lines of the transcript as this command prints it.
pub(crate) fn total_lines(store: &Store, job: &StoredJob) -> Result<u64, Failure> {
    if log_is_complete(job) {
        log_len(store, job.record.id)
    } else {
        Ok(store.output(job, None, Some(0))?.total_lines)
    }
}

/// Prints the transcript from line `from` to its end; returns the number after the last line
/// printed.
fn print_from(store: &Store, job: &StoredJob, from: u64, out: &mut Out) -> Result<u64, Failure> {
    let id = job.record.id;
    let at = print_log(store, id, from, log_len(store, id)?, out)?;
    if log_is_complete(job) {
        return Ok(at);
    }
    let rest = store.output(job, Some(at), None)?;
    if rest.line_count > 0 {
        for line in rest.output.split('\n') {
            out.output_line(line)?;
        }
    }
    Ok(rest.next_offset)
}

/// Prints log lines `from..end` in chunks; returns the number after the last line printed.
fn print_log(store: &Store, id: JobId, from: u64, end: u64, out: &mut Out) -> Result<u64, Failure> {
    let mut at = from;
    while at < end {
        let want = usize::try_from(end - at).unwrap_or(CHUNK).min(CHUNK);
        let lines = store.read_log(id, at, want)?;
        if lines.is_empty() {
            break;
        }
        for line in &lines {
            out.output_line(line)?;
        }
        at += lines.len() as u64;
    }
    Ok(at)
}

/// `--follow` on a running job: the engine's [`Store::follow`] hands out the final lines (and,
/// once the job has ended or its server died, the rest), looked at every [`POLL`].
///
/// Lines print as soon as they are known complete: final ones from the follow, and, when the
/// job goes quiet, those above the cursor on its saved screen (a server's "listening on :3000"
/// shows at once, not when it scrolls off). A line printed early that becomes final with other
/// text (a program redrew it) is printed again as it ended; an identical one is not.
fn follow_job(store: &Store, id: JobId, tail: Option<usize>, out: &mut Out) -> CmdResult {
    let at = match tail {
        Some(n) => log_len(store, id)?.saturating_sub(n as u64),
        None => 0,
    };
    let mut lines = store.follow(id, Some(at))?;
    let mut follow = Follow {
        at,
        early: BTreeMap::new(),
    };
    loop {
        while let Some(chunk) = lines.try_next()? {
            let text = match chunk.text.strip_suffix('\n') {
                Some(text) if !chunk.last => text,
                _ => &chunk.text,
            };
            for (n, line) in (chunk.first_line..).zip(text.split('\n')) {
                follow.emit(n, line, out)?;
            }
        }
        if lines.ended() {
            out.flush()?;
            return Ok(());
        }
        if let Some(screen) = store.saved_screen(&store.load(id)?) {
            for (n, line) in (screen.first_line..screen.cursor_line).zip(&screen.lines) {
                if n >= follow.at {
                    follow.emit(n, line, out)?;
                    follow.early.insert(n, line.clone());
                }
            }
        }
        out.flush()?;
        if out.reader_gone() {
            return Err(Failure::Gone);
        }
        std::thread::sleep(POLL);
    }
}

/// What `--follow` printed so far.
struct Follow {
    /// Number of the next line never printed.
    at: u64,
    /// Lines printed from the saved screen that the log has not confirmed yet, by number.
    early: BTreeMap<u64, String>,
}

impl Follow {
    /// Prints line `n` unless it was printed already with this very text.
    fn emit(&mut self, n: u64, line: &str, out: &mut Out) -> Result<(), Failure> {
        if n < self.at {
            match self.early.remove(&n) {
                Some(printed) if printed != line => out.output_line(line)?,
                _ => {}
            }
            return Ok(());
        }
        out.output_line(line)?;
        self.at = n + 1;
        Ok(())
    }
}
