//! The engine's one error type.

use std::str::FromStr;

use crate::job::{JobId, JobInfo, JobStatus};

/// Everything that can go wrong in the engine. Callers branch on the variant:
/// the MCP face maps each to a protocol answer, the Node face to a stable `code`.
///
/// Messages say what went wrong in the engine's own words and name no tool, method or
/// command of a face: each face adds its own hint (the MCP server "call list_jobs", the
/// Node binding "call list()").
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No job with this id exists (or it was evicted from the finished-job list).
    #[error("no job with id {0}")]
    JobNotFound(JobId),
    /// The text given as a job id is not a UUID.
    #[error("invalid job id {0:?}: a job id is the UUID its job was started with")]
    InvalidJobId(String),
    /// The job has already finished, so it cannot take input, be resized, etc.
    #[error("job {id} is not running (status: {status}); start a new job instead")]
    NotRunning {
        /// The job.
        id: JobId,
        /// Its final status.
        status: JobStatus,
    },
    /// The job belongs to another live ptyjobs server sharing the state directory: only that
    /// server controls it.
    #[error(
        "job {id} belongs to another ptyjobs server (pid {server_pid}) that is still running: \
         only that server, or `ptyjobs kill` from a terminal, can control it"
    )]
    NotOwner {
        /// The job.
        id: JobId,
        /// The pid of the server that owns it.
        server_pid: u32,
    },
    /// A kill of a job known from its record signalled nothing because no process could be
    /// proven to be the job's on this platform (as opposed to [`Error::NotRunning`]: its
    /// processes are gone). `reason` says what was missing.
    #[error("nothing was signalled for job {id}: {reason}")]
    Unproven {
        /// The job.
        id: JobId,
        /// Why nothing could be proven.
        reason: String,
    },
    /// The job could not be started (PTY allocation, fork/exec, ...).
    #[error("could not start the job: {0}")]
    Spawn(String),
    /// A configured limit (running jobs, PTYs available) was reached.
    #[error("limit reached: {0}")]
    LimitReached(String),
    /// A caller-supplied argument is unusable (empty command, bad size, bad cwd, bad signal...).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// A live job already holds this name in this working directory (names are keys among
    /// the live jobs of a state directory): the message names that job and what to do.
    #[error("{0}")]
    NameTaken(Box<NameTaken>),
    /// No job, live or ended, has this name (in this directory when one was given).
    #[error("{}", unknown_name(name, cwd.as_deref(), live, *more))]
    UnknownName {
        /// The name asked for.
        name: String,
        /// The directory asked for, canonical.
        cwd: Option<std::path::PathBuf>,
        /// Names of live jobs (sorted, at most 20).
        live: Vec<String>,
        /// How many more live names there are.
        more: usize,
    },
    /// An operating-system error outside the cases above.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
}

/// A start refused because a live job holds the name ([`Error::NameTaken`]).
#[derive(Debug, Clone)]
pub struct NameTaken {
    /// The name.
    pub name: String,
    /// The live job that holds it (its ports when known).
    pub job: JobInfo,
    /// The command an ensure asked for, when it differs from the one that runs.
    pub wanted: Option<String>,
}

impl std::fmt::Display for NameTaken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let j = &self.job;
        let ports: Vec<String> = j
            .ports
            .iter()
            .map(|l| format!("{}:{}", l.address, l.port))
            .collect();
        let ports = if ports.is_empty() {
            String::new()
        } else {
            format!(", listening on {}", ports.join(", "))
        };
        let what = format!(
            "job {} (pid {}{ports}) runs {:?} in {}",
            j.id,
            j.pid,
            short(&j.command),
            j.cwd.display()
        );
        match &self.wanted {
            Some(wanted) => write!(
                f,
                "name {:?} runs a different command: {what}, not {:?}; restart that job with \
                 the new command to change it",
                self.name,
                short(wanted)
            ),
            None => write!(
                f,
                "name {:?} is in use: {what}; reuse it (ensure with the same command), restart \
                 it, or kill it first",
                self.name
            ),
        }
    }
}

/// The message of [`Error::UnknownName`].
fn unknown_name(name: &str, cwd: Option<&std::path::Path>, live: &[String], more: usize) -> String {
    // A directory that is not there is the likelier mistake: say so.
    let place = cwd.map_or(String::new(), |d| match d.exists() {
        true => format!(" in {}", d.display()),
        false => format!(" in {} (no such directory)", d.display()),
    });
    let listed = if live.is_empty() {
        "no live job has a name".to_owned()
    } else if more > 0 {
        format!("live names: {} and {more} more", live.join(", "))
    } else {
        format!("live names: {}", live.join(", "))
    };
    format!("no job is named {:?}{place}; {listed}", short(name))
}

/// `text` cut to at most 200 bytes (at a character boundary), with `…` when cut: a command in
/// a message.
pub(crate) fn short(text: &str) -> String {
    const MAX: usize = 200;
    if text.len() <= MAX {
        return text.to_owned();
    }
    let mut end = MAX;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// The engine's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

// Parsing the job's public types fails with an engine error: the impls live here, beside
// `Error`, so that `job` (which `Error` names) needs nothing from this module.

impl FromStr for JobId {
    type Err = Error;

    /// Parses strictly: only the hyphenated 36-character form (any case) is accepted, so a path,
    /// an empty string or a truncated id is an [`Error::InvalidJobId`], never a lookup.
    fn from_str(s: &str) -> Result<Self, Error> {
        let t = s.trim();
        if t.len() != 36 {
            return Err(Error::InvalidJobId(s.to_owned()));
        }
        uuid::Uuid::try_parse(t)
            .map(Self)
            .map_err(|_| Error::InvalidJobId(s.to_owned()))
    }
}

impl FromStr for JobStatus {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        match s {
            "running" => Ok(Self::Running),
            "completed" => Ok(Self::Completed),
            "failed" => Ok(Self::Failed),
            "killed" => Ok(Self::Killed),
            _ => Err(Error::InvalidArgument(format!(
                "unknown status {s:?}: expected running, completed, failed or killed"
            ))),
        }
    }
}
