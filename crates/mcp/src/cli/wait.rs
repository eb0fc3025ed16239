//! `ptyjobs wait`: blocks until a job of any server on the state directory meets a condition,
//! then prints one JSON line. Made for agents whose client can run a shell command in the
//! background and wake them when it exits: no polling calls, no context spent.
//!
//! The job belongs to another process (a live server), so the wait watches what that server
//! writes to the state directory, looked at every [`POLL`] (as `logs --follow` does; the
//! state directory offers no change notification, and a look costs a few small reads):
//! the record (its end, its `input` state), the final lines of the disk log and the lines
//! saved from the job's screen whenever its output pauses (a `--pattern`, output silence),
//! and the job's TCP listeners (`--port`, `--listening`).

use std::process::ExitCode;
use std::time::{Duration, Instant};

use ptyjobs_engine::{
    Error, Follow, InputWait, JobId, Listener, Regex, SavedScreen, Store, StoreConfig, StoredJob,
    compile_pattern,
};
use serde::Serialize;

use super::Failure;
use super::format::{json_safe, one_line};
use super::out::Out;

/// How often the state directory is looked at: the rhythm of `logs --follow`.
const POLL: Duration = Duration::from_millis(100);
/// Lines of the job's output in the answer.
const LAST_LINES: usize = 10;

/// Exit code when `--timeout` passed first (as timeout(1)).
const TIMED_OUT: u8 = 124;
/// Exit code of an error (an unknown job, a pattern that does not compile).
const ERROR: u8 = 2;

/// The long help's tail: the answer, exit codes, what is watched.
pub(crate) const AFTER_HELP: &str = "\
With no condition, waits for the job's end (as --exit). With several, the first met ends the
wait. The job is named by its name (a running job of that name first, then the newest) or by
its id or a unique prefix of it.

Prints one JSON line:
  {\"reason\": \"matched\", \"job_id\": \"…\", \"name\": \"dev\", \"status\": \"running\",
   \"exit_code\": null, \"signal\": null, \"matched_line\": \"ready on :3000\", \"line_number\": 4,
   \"input\": null, \"ports\": [{\"address\": \"127.0.0.1\", \"port\": 3000, \"pid\": 123}],
   \"last_lines\": [\"…\"], \"waited_ms\": 850}
reason is one of exited, matched, idle, port_open, listening, input_wanted, timeout.

Exit codes: 0 the condition was met (with --exit, the job's end is the condition: its own
exit code is in exit_code); 1 the job ended without meeting it; 2 an error (no such job or
name, a pattern that does not compile; a message on stderr, nothing on stdout); 124 the
--timeout passed first. No limit of its own: without --timeout it waits as long as the job
runs. A signal (Ctrl-C, SIGTERM) ends it at once; it leaves nothing behind.

What it sees: the files the job's server writes, looked at every 100 ms. --pattern is matched
against every line of the job's output from its first (lines printed before the wait count
too): lines the server has flushed to the disk log and the lines it saved from the job's
screen, which it does whenever output pauses for 200 ms. So a line is seen once it scrolled
off the screen or output paused: usually within about 300 ms of being printed. --idle-ms counts from the start of the wait
or the last change seen in those files, so it ends up to about 300 ms late. --input follows
the record, which its server updates at most once a second. --port N: a process of the job
listens on N (as wait_for_job's port: another program's listener never counts); --listening:
one listens on any port.

It reads the state directory of the job's server: give it the server's --state-dir (or
PTYJOBS_STATE_DIR) if that server has one.

For an agent, started as a background command of its client, which wakes it when it exits:
  npx -y ptyjobs wait dev --port 3000 --timeout 120
  npx -y ptyjobs wait 4f2a --exit";

/// `ptyjobs wait`'s arguments.
#[derive(Debug, clap::Args)]
pub struct WaitArgs {
    /// The job's name, or its id or a unique prefix of it.
    #[arg(value_name = "ID|NAME")]
    key: String,
    /// Which directory, for a name live in several.
    #[arg(long)]
    cwd: Option<std::path::PathBuf>,
    /// Until the job ends; then exit code 0 whatever the job's own exit code.
    #[arg(long)]
    exit: bool,
    /// Until a process of the job listens on TCP port N (another program's listener never counts).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    port: Option<u16>,
    /// Until a process of the job listens on a TCP port.
    #[arg(long)]
    listening: bool,
    /// Until a line of the job's output matches this regular expression.
    #[arg(long, value_name = "RE")]
    pattern: Option<String>,
    /// Until the job waits for input (a prompt).
    #[arg(long)]
    input: bool,
    /// Until the job has printed nothing for N milliseconds.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    idle_ms: Option<u64>,
    /// Give up after S seconds (fractions allowed): exit code 124. Default: no limit.
    #[arg(long, value_name = "S", value_parser = seconds)]
    timeout: Option<Duration>,
}

impl WaitArgs {
    /// Whether the job's end is the condition: `--exit`, or no condition at all.
    fn waits_for_exit(&self) -> bool {
        self.exit
            || (self.pattern.is_none()
                && self.port.is_none()
                && !self.listening
                && !self.input
                && self.idle_ms.is_none())
    }
}

/// A `--timeout` value: seconds, fractions allowed, more than zero.
fn seconds(text: &str) -> Result<Duration, String> {
    let secs: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a number of seconds"))?;
    // NaN is not more than zero either.
    if secs.is_nan() || secs <= 0.0 {
        return Err(format!("{text:?}: the timeout must be more than 0 seconds"));
    }
    Duration::try_from_secs_f64(secs).map_err(|_| format!("{text:?}: too long a timeout"))
}

/// Which condition ended the wait (the MCP wait's words, plus `listening`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
enum Reason {
    Exited,
    Matched,
    Idle,
    PortOpen,
    Listening,
    InputWanted,
    Timeout,
}

/// The JSON line printed at the end. Every field is always there (`null` when it does not
/// apply).
#[derive(Debug, Serialize)]
struct Answer {
    reason: Reason,
    /// The full job id.
    job_id: String,
    name: Option<String>,
    /// `running`, `completed`, `failed` or `killed`, when the wait ended.
    status: &'static str,
    exit_code: Option<i32>,
    signal: Option<String>,
    /// For `matched`: the line and its absolute number (from 0, as `get_job_output`'s).
    matched_line: Option<String>,
    line_number: Option<u64>,
    /// For `input_wanted`: the prompt, whether the terminal echoes, the process that waits.
    input: Option<InputWait>,
    /// The job's TCP listeners when the wait ended.
    ports: Vec<Listener>,
    /// The job's last lines of output.
    last_lines: Vec<String>,
    waited_ms: u64,
}

/// Runs `ptyjobs wait`: the answer on stdout and the exit code (see [`AFTER_HELP`]).
pub(crate) fn run(args: &WaitArgs, store: Result<StoreConfig, String>) -> ExitCode {
    let outcome = store
        .map_err(Failure::Message)
        .and_then(|cfg| Store::open_reader(cfg).map_err(Failure::from))
        .and_then(|store| wait(&store, args).map(|answer| (store, answer)));
    let (_store, answer) = match outcome {
        Ok(done) => done,
        Err(Failure::Message(m)) => {
            eprintln!("ptyjobs: {}", one_line(&m));
            return ExitCode::from(ERROR);
        }
        Err(Failure::Reported | Failure::Gone) => return ExitCode::from(ERROR),
    };
    let code = match answer.reason {
        Reason::Timeout => TIMED_OUT,
        Reason::Exited if !args.waits_for_exit() => 1,
        _ => 0,
    };
    // A reader gone away cannot be told; the exit code still says how the wait ended.
    let _ = print(&answer);
    ExitCode::from(code)
}

fn print(answer: &Answer) -> Result<(), Failure> {
    let text = serde_json::to_string(answer)
        .map_err(|e| Failure::msg(format!("cannot encode the answer as JSON: {e}")))?;
    let mut out = Out::new();
    out.line(&json_safe(&text))?;
    std::io::Write::flush(&mut out)?;
    Ok(())
}

/// What the wait watches, and what it saw so far.
struct Watch<'a> {
    store: &'a Store,
    id: JobId,
    pattern: Option<(Regex, Lines<'a>)>,
    /// Output silence: when output last changed (the wait's start at first), and what the
    /// files said then.
    idle: Option<(Duration, Instant, Seen)>,
}

/// The final lines of a job, followed, and how far they were matched.
struct Lines<'a> {
    follow: Follow<'a>,
    /// Number of the first final line not matched yet.
    next: u64,
}

/// What the files say of the job's output: a change is output.
#[derive(Debug, PartialEq)]
struct Seen {
    log_lines: u64,
    screen: Option<SavedScreen>,
}

/// Waits as `args` say; the answer, or why there is none.
fn wait(store: &Store, args: &WaitArgs) -> Result<Answer, Failure> {
    let start = Instant::now();
    let deadline = args.timeout.map(|t| start + t);
    // The pattern is compiled before the job is looked up: a bad one is an error either way.
    let re = args
        .pattern
        .as_deref()
        .map(compile_pattern)
        .transpose()
        .map_err(Failure::from)?;
    let id = store.resolve_job(&args.key, args.cwd.as_deref())?;
    let pattern = match re {
        Some(re) => Some((
            re,
            Lines {
                follow: store.follow(id, Some(0))?,
                next: 0,
            },
        )),
        None => None,
    };
    let mut watch = Watch {
        store,
        id,
        pattern,
        idle: None,
    };
    if let Some(ms) = args.idle_ms {
        let seen = watch.seen(&store.load(id)?)?;
        watch.idle = Some((Duration::from_millis(ms), start, seen));
    }
    loop {
        // The record first: once it is final, the follow below hands out every line left.
        let job = store.load(id)?;
        let now = Instant::now();
        if let Some(found) = watch.matched(&job)? {
            return watch.answer(Reason::Matched, Some(found), None, start);
        }
        if job.record.status.is_final() {
            return watch.answer(Reason::Exited, None, None, start);
        }
        if args.input
            && let Some(wait) = job.info(None).input
        {
            return watch.answer(Reason::InputWanted, None, Some(wait), start);
        }
        if watch.idle_for(&job, now)? {
            return watch.answer(Reason::Idle, None, None, start);
        }
        if args.port.is_some() || args.listening {
            let ports = listeners(&job);
            if args.listening && !ports.is_empty() {
                return watch.answer(Reason::Listening, None, None, start);
            }
            if let Some(port) = args.port
                && ports.iter().any(|l| l.port == port)
            {
                return watch.answer(Reason::PortOpen, None, None, start);
            }
        }
        let now = Instant::now();
        if deadline.is_some_and(|d| now >= d) {
            // A job that ended right at the deadline reports its end, as wait_for_job does.
            let reason = if store.load(id)?.record.status.is_final() {
                Reason::Exited
            } else {
                Reason::Timeout
            };
            return watch.answer(reason, None, None, start);
        }
        let mut wake = now + POLL;
        if let Some(d) = deadline {
            wake = wake.min(d);
        }
        if let Some((idle, since, _)) = &watch.idle {
            wake = wake.min(*since + *idle).max(now);
        }
        std::thread::sleep(wake.saturating_duration_since(now));
    }
}

impl Watch<'_> {
    /// The first line matching the pattern not matched before: final lines (each looked at
    /// once), then the lines saved from the job's screen (looked at again while they may
    /// still change). Once the job has ended, every line left.
    fn matched(&mut self, job: &StoredJob) -> Result<Option<(u64, String)>, Failure> {
        let Some((re, lines)) = &mut self.pattern else {
            return Ok(None);
        };
        while let Some(chunk) = lines.follow.try_next()? {
            let text = match chunk.text.strip_suffix('\n') {
                Some(text) if !chunk.last => text,
                _ => &chunk.text,
            };
            for (n, line) in (chunk.first_line..).zip(text.split('\n')) {
                if re.is_match(line) {
                    return Ok(Some((n, line.to_owned())));
                }
            }
            lines.next = chunk.first_line + chunk.line_count;
        }
        if lines.follow.ended() {
            return Ok(None);
        }
        let Some(screen) = self.store.saved_screen(job) else {
            return Ok(None);
        };
        Ok((screen.first_line..)
            .zip(screen.lines)
            .filter(|(n, _)| *n >= lines.next)
            .find(|(_, line)| re.is_match(line)))
    }

    /// What the files say of the job's output now.
    fn seen(&self, job: &StoredJob) -> Result<Seen, Failure> {
        let log_lines = match self.store.log_lines(self.id) {
            Ok(n) => n,
            Err(Error::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => 0,
            Err(e) => return Err(e.into()),
        };
        Ok(Seen {
            log_lines,
            screen: self.store.saved_screen(job),
        })
    }

    /// Whether the job has printed nothing for the idle period (a change in its files
    /// restarts the count).
    fn idle_for(&mut self, job: &StoredJob, now: Instant) -> Result<bool, Failure> {
        let Some((idle, since, seen)) = &self.idle else {
            return Ok(false);
        };
        let (idle, since) = (*idle, *since);
        let fresh = self.seen(job)?;
        if &fresh != seen {
            self.idle = Some((idle, now, fresh));
            return Ok(false);
        }
        Ok(now >= since + idle)
    }

    /// The answer for `reason`, with the job as it is now.
    fn answer(
        &self,
        reason: Reason,
        found: Option<(u64, String)>,
        input: Option<InputWait>,
        start: Instant,
    ) -> Result<Answer, Failure> {
        let job = self.store.load(self.id)?;
        let info = job.info(None);
        let tail = self.store.tail(&job, LAST_LINES)?;
        let last_lines = if tail.line_count == 0 {
            Vec::new()
        } else {
            tail.output.split('\n').map(str::to_owned).collect()
        };
        let ports = if info.status.is_final() {
            Vec::new()
        } else {
            listeners(&job)
        };
        let (line_number, matched_line) = found.unzip();
        Ok(Answer {
            reason,
            job_id: info.id.to_string(),
            name: info.name,
            status: info.status.as_str(),
            exit_code: info.exit_code,
            signal: info.signal,
            matched_line,
            line_number,
            input,
            ports,
            last_lines,
            waited_ms: u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX),
        })
    }
}

/// The TCP listeners of the job's processes (its session's, and escapees carrying its
/// marker): what `--port` and `--listening` count, so another program's socket never does.
fn listeners(job: &StoredJob) -> Vec<Listener> {
    Store::ports_of(std::slice::from_ref(job))
        .pop()
        .unwrap_or_default()
}
