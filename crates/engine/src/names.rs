//! Names as keys: what a valid name is, when two working directories are the same, the lock
//! that makes "is this name free? then start" one step across every process sharing a state
//! directory, and how a name picks one job out of a list.
//!
//! A part below the verbs: it knows jobs only as [`JobInfo`] snapshots, never the manager.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use crate::error::{Error, NameTaken, Result};
use crate::job::{JobId, JobInfo, JobStatus};
use crate::store::Store;
use crate::sync::lock;

/// Longest name accepted, in bytes: a label a person types, not a document.
pub const MAX_NAME_BYTES: usize = 256;

/// How many live names an "unknown name" error lists at most.
const MAX_LISTED: usize = 20;

/// The lock file in the state directory, held around check → spawn → record write.
const LOCK_FILE: &str = "names.lock";

/// Checks a job name: not empty, at most [`MAX_NAME_BYTES`], no control characters (a name
/// is printed in listings and error messages, where a newline or an escape would forge text).
///
/// # Errors
/// [`Error::InvalidArgument`] saying what is wrong.
pub(crate) fn check(name: &str) -> Result<()> {
    if name.trim().is_empty() {
        return Err(Error::InvalidArgument(
            "name is empty: give a short label such as \"dev\"".into(),
        ));
    }
    if name.len() > MAX_NAME_BYTES {
        return Err(Error::InvalidArgument(format!(
            "name is {} bytes long: at most {MAX_NAME_BYTES} bytes",
            name.len()
        )));
    }
    if let Some(c) = name.chars().find(|&c| c.is_control() || is_bidi_control(c)) {
        return Err(Error::InvalidArgument(format!(
            "name contains the control character {c:?}: use printable characters only"
        )));
    }
    Ok(())
}

/// The invisible characters that reorder the text around them (a name shown as `txt.exe`
/// that is `exe.txt`).
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `dir` with its links and `..` resolved, so that two spellings of one directory are one key;
/// as given when it cannot be resolved (gone, unreadable).
pub(crate) fn canonical(dir: &Path) -> PathBuf {
    std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf())
}

/// Whether `job` runs in the directory whose canonical form is `dir`.
fn in_dir(job: &JobInfo, dir: &Path) -> bool {
    job.cwd == dir || canonical(&job.cwd) == dir
}

/// Whether `job` is live and holds `name` in the directory whose canonical form is `dir`.
pub(crate) fn holds(job: &JobInfo, name: &str, dir: &Path) -> bool {
    job.status == JobStatus::Running && job.name.as_deref() == Some(name) && in_dir(job, dir)
}

/// The error for a start refused because `job` holds the name (`wanted`: the command an
/// ensure asked for, when it differs from the running one).
pub(crate) fn taken(job: JobInfo, wanted: Option<String>) -> Error {
    Error::NameTaken(Box::new(NameTaken {
        name: job.name.clone().unwrap_or_default(),
        job,
        wanted,
    }))
}

/// Serialises name checks with the starts they allow: in this process (a mutex), and with a
/// state directory across every process that shares it (an exclusive lock on a file in it).
/// Held from the check to the new job's record on disk; released when dropped.
pub(crate) struct NameLock {
    /// Closing the file releases its lock.
    _file: Option<File>,
    _here: MutexGuard<'static, ()>,
}

/// The in-process half of [`NameLock`]: taken before any other lock of the engine and only
/// by a thread that holds none (it is the outermost lock; see [`crate::sync`]).
static HERE: Mutex<()> = Mutex::new(());

impl NameLock {
    /// Waits for the name lock of `store`'s directory (of this process alone without one).
    ///
    /// # Errors
    /// [`Error::Io`] when the lock file cannot be opened or locked.
    pub(crate) fn take(store: Option<&Store>) -> Result<Self> {
        let here = lock(&HERE);
        let file = match store {
            None => None,
            Some(store) => {
                let path = store.config().dir.join(LOCK_FILE);
                let file = std::fs::OpenOptions::new()
                    .create(true)
                    .truncate(false)
                    .write(true)
                    .open(&path)
                    .map_err(|e| {
                        Error::Io(std::io::Error::new(
                            e.kind(),
                            format!("cannot open the name lock {}: {e}", path.display()),
                        ))
                    })?;
                crate::sys::fs::lock_exclusive(&file)?;
                Some(file)
            }
        };
        Ok(Self {
            _file: file,
            _here: here,
        })
    }
}

/// The one job `name` stands for among `jobs` (newest first): the live one (in `cwd` when
/// given; when several directories have one, the only one this server runs), else the newest
/// ended one.
///
/// # Errors
/// [`Error::InvalidArgument`] when several live jobs in different directories have the name
/// and no `cwd` says which (the message lists them); [`Error::UnknownName`] when none has it.
pub(crate) fn pick(jobs: &[JobInfo], name: &str, cwd: Option<&Path>) -> Result<JobId> {
    let dir = cwd.map(canonical);
    let named = |j: &&JobInfo| {
        j.name.as_deref() == Some(name) && dir.as_deref().is_none_or(|d| in_dir(j, d))
    };
    let live: Vec<&JobInfo> = jobs
        .iter()
        .filter(named)
        .filter(|j| j.status == JobStatus::Running)
        .collect();
    // Among several, the caller's own (this server's) job is the one meant: two agents in
    // two worktrees sharing a state directory each find their own "dev".
    let own: Vec<&JobInfo> = live.iter().copied().filter(|j| j.this_server).collect();
    if let ([one], true) = (own.as_slice(), live.len() > 1) {
        return Ok(one.id);
    }
    match live.as_slice() {
        [one] => return Ok(one.id),
        [] => {}
        many => {
            let list: Vec<String> = many
                .iter()
                .take(MAX_LISTED)
                .map(|j| {
                    format!(
                        "{} in {} ({})",
                        j.id,
                        j.cwd.display(),
                        crate::error::short(&j.command)
                    )
                })
                .collect();
            return Err(Error::InvalidArgument(format!(
                "name {name:?} is live in {} directories; give the job id or the directory \
                 (cwd): {}",
                many.len(),
                list.join("; ")
            )));
        }
    }
    if let Some(ended) = jobs.iter().find(named) {
        return Ok(ended.id);
    }
    let mut live: Vec<String> = jobs
        .iter()
        .filter(|j| j.status == JobStatus::Running)
        .filter_map(|j| j.name.clone())
        .collect();
    live.sort();
    live.dedup();
    let more = live.len().saturating_sub(MAX_LISTED);
    live.truncate(MAX_LISTED);
    Err(Error::UnknownName {
        name: name.to_owned(),
        cwd: dir,
        live,
        more,
    })
}

/// What a job reference given by a person or a model stands for: a full job id is that job;
/// anything else is a name (see [`pick`]).
///
/// # Errors
/// As [`pick`].
pub(crate) fn refer(
    text: &str,
    cwd: Option<&Path>,
    jobs: impl FnOnce() -> Vec<JobInfo>,
) -> Result<JobId> {
    if let Ok(id) = text.parse::<JobId>() {
        return Ok(id);
    }
    pick(&jobs(), text, cwd)
}

impl Store {
    /// The job `text` stands for, for readers of the state directory (the CLI): a full job
    /// id; else a job name (the live job with it, in `cwd` when given — without `cwd`, when
    /// several directories have one, the one in the current directory — else the newest ended
    /// one); else a unique id prefix, like git.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when nothing or several jobs match (the message lists them).
    pub fn resolve_job(&self, text: &str, cwd: Option<&Path>) -> Result<JobId> {
        if text.parse::<JobId>().is_ok() {
            return self.resolve(text);
        }
        let jobs: Vec<JobInfo> = self
            .records()
            .iter()
            .map(|j| j.info(self.instance()))
            .collect();
        // A person at a terminal means the job of the directory they are in when the name is
        // live in several (a server means its own, see `pick`).
        let here = std::env::current_dir().ok();
        let picked = match pick(&jobs, text, cwd) {
            Err(Error::InvalidArgument(several)) if cwd.is_none() => here
                .as_deref()
                .and_then(|here| pick(&jobs, text, Some(here)).ok())
                .ok_or(Error::InvalidArgument(several)),
            other => other,
        };
        match picked {
            // Not a name: an id prefix, else both errors in one.
            Err(unknown @ Error::UnknownName { .. }) => self.resolve(text).map_err(|e| match e {
                Error::InvalidArgument(m) if m.starts_with("no job id starts") => {
                    Error::InvalidArgument(format!("{m}, and {unknown}"))
                }
                e => e,
            }),
            other => other,
        }
    }
}
