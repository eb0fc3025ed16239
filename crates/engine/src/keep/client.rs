//! The starter's side: find the state directory's keeper (start one if none runs) and have it
//! start a kept job. Blocking (it may wait for a keeper to come up): faces call it off their
//! async workers.

use std::io::{self, BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use super::rendezvous::{self, Found};
use crate::attach::{ATTACH_START_VERSION, AttachHello, AttachStart, StartReply};
use crate::error::{Error, Result};
use crate::job::{JobInfo, JobSpec};
use crate::manager::JobManager;
use crate::sys::{attach, keeper};

/// How long a starter waits for a keeper to answer (one it started included).
const READY_WITHIN: Duration = Duration::from_secs(15);
/// How often it looks meanwhile.
const LOOK_EVERY: Duration = Duration::from_millis(5);
/// Past this size the keeper's log is emptied when the next keeper starts.
const LOG_CAP: u64 = 1 << 20;
/// Longest answer read (a job's record).
const ANSWER_MAX: u64 = 1 << 20;

/// Has the keeper of `jobs`' state directory start `spec` as a kept job (starting a keeper when
/// none runs), and answers the job (see [`keep_job`]).
///
/// # Errors
/// [`Error::Io`] of kind `Unsupported` where keeping is not offered (Windows);
/// [`Error::InvalidArgument`] without a state directory, or without the `ptyjobs` program to
/// start a keeper with; [`Error::Io`] when `keeper.lock` or the keeper's socket is not this
/// user's (refused), or no keeper answers within 15 s; the keeper's refusal (the engine's
/// message, as [`Error::InvalidArgument`]) when the start itself fails.
pub(crate) fn start_kept(jobs: &JobManager, spec: JobSpec) -> Result<(JobInfo, bool)> {
    let store = jobs.store().ok_or_else(|| {
        Error::InvalidArgument(
            "keep needs a state directory (this server keeps its jobs in memory only)".into(),
        )
    })?;
    keep_job(&store.config().dir, jobs.config().program.as_deref(), &spec)
}

/// Has the keeper of `state_dir` start `spec` as a kept job, starting a keeper with `program`
/// (else `PTYJOBS_BIN`) when none runs: for a process without a job manager (the CLI). The
/// answer is the job and whether an ensure reused it (nothing started). Blocking.
///
/// # Errors
/// As [`JobManager::ensure`] with `keep`.
pub fn keep_job(
    state_dir: &Path,
    program: Option<&Path>,
    spec: &JobSpec,
) -> Result<(JobInfo, bool)> {
    attach::supported().map_err(|_| {
        Error::Io(io::Error::new(
            io::ErrorKind::Unsupported,
            "keep is not offered on this platform: a kept job is served over a Unix socket \
             (Linux and macOS)",
        ))
    })?;
    let cwd = match &spec.cwd {
        Some(d) => d.clone(),
        None => std::env::current_dir()?,
    };
    keeper::make_dir(state_dir)?;
    ask_keeper(state_dir, program, &AttachStart::of(spec, cwd))
}

/// Sends `request` to the keeper of `dir`, starting one with `program` when none runs.
fn ask_keeper(
    dir: &Path,
    program: Option<&Path>,
    request: &AttachStart,
) -> Result<(JobInfo, bool)> {
    let deadline = Instant::now() + READY_WITHIN;
    let mut started_one = false;
    loop {
        match rendezvous::find(dir)? {
            Found::At(path) => {
                if let Ok(stream) = keeper::connect(&path) {
                    let reply = ask(stream, request)?;
                    match reply {
                        StartReply {
                            ok: true,
                            job: Some(job),
                            reused,
                            ..
                        } => {
                            return Ok((*job, reused));
                        }
                        // Leaving: the lock is let go soon, then a new keeper is started.
                        StartReply { closing: true, .. } => started_one = false,
                        StartReply { error, .. } => {
                            return Err(Error::InvalidArgument(
                                error.unwrap_or_else(|| "the keeper refused the job".into()),
                            ));
                        }
                    }
                }
            }
            Found::NotReady => {}
            Found::None if !started_one => {
                start_keeper(dir, program)?;
                started_one = true;
            }
            Found::None => {}
        }
        if Instant::now() >= deadline {
            return Err(Error::Io(io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "no keeper answered within {} s on {} (see {})",
                    READY_WITHIN.as_secs(),
                    dir.display(),
                    dir.join(super::LOG_FILE).display()
                ),
            )));
        }
        std::thread::sleep(LOOK_EVERY);
    }
}

/// The `ptyjobs` executable: the face's, else `PTYJOBS_BIN`.
fn program(given: Option<&Path>) -> Result<PathBuf> {
    given
        .map(Path::to_path_buf)
        .or_else(|| std::env::var_os(super::PROGRAM_ENV).map(PathBuf::from))
        .ok_or_else(|| {
            Error::InvalidArgument(format!(
                "keep needs the ptyjobs program to start a keeper: set {}",
                super::PROGRAM_ENV
            ))
        })
}

/// Starts `ptyjobs keeper --state-dir <dir>`, detached, its stderr appended to the log.
fn start_keeper(dir: &Path, given: Option<&Path>) -> Result<()> {
    let program = program(given)?;
    let log = keeper::open_private(&dir.join(super::LOG_FILE), true)?;
    // Each keeper appends; a log past its cap starts again (the newest keeper's is the one read).
    if log.metadata().is_ok_and(|m| m.len() > LOG_CAP) {
        log.set_len(0)?;
    }
    let mut command = Command::new(&program);
    command
        .arg("keeper")
        .arg("--state-dir")
        .arg(dir)
        .current_dir(dir)
        .env_remove("PTYJOBS_NO_PERSIST")
        // A starter that is itself a job (an agent's `ptyjobs run --keep` inside one) must
        // not hand its job marker down: the kill path would take the keeper, and with it
        // every kept job, for an escapee of that job.
        .env_remove(crate::jobenv::JOB_ID_ENV);
    keeper::spawn_detached(&mut command, log).map_err(|e| {
        Error::Io(io::Error::new(
            e.kind(),
            format!("cannot start the keeper {}: {e}", program.display()),
        ))
    })
}

/// Sends the start request and reads the keeper's one-line answer.
fn ask(mut stream: impl io::Read + Write, request: &AttachStart) -> Result<StartReply> {
    let hello = AttachHello {
        version: ATTACH_START_VERSION,
        job_id: String::new(),
        cols: 0,
        rows: 0,
        restart: None,
        start: Some(Box::new(request.clone())),
        control: None,
        keep_open: false,
    };
    let mut line = serde_json::to_vec(&hello).map_err(io::Error::other)?;
    line.push(b'\n');
    stream.write_all(&line)?;
    let mut answer = Vec::new();
    BufReader::new(io::Read::take(stream, ANSWER_MAX)).read_until(b'\n', &mut answer)?;
    serde_json::from_slice(&answer).map_err(|e| {
        Error::Io(io::Error::other(format!(
            "the keeper's answer is not valid ({e}): is it an older ptyjobs?"
        )))
    })
}
