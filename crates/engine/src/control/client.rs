//! The client of a control request: what a verb uses in place of answering "another server
//! owns this job" (see the module's docs for the checks).

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::{ATTACH_CONTROL_VERSION, ControlOp, ControlReply, attach_socket_path};
use crate::error::{Error, Result};
use crate::job::{JobId, JobStatus};
use crate::store::ProcessRef;
use crate::sys::control as sys;

/// The longest answer read (a screen of 1000 × 1000 cells with a wait's tail fits).
const ANSWER_MAX: u64 = 64 << 20;
/// What a request may take beyond the time its operation is allowed (the owner's own work, a
/// busy machine): a request without a wait of its own gets this much.
pub(crate) const SLACK: Duration = Duration::from_secs(10);

/// The hello of a control request (the shape of [`crate::AttachHello`] with `control`).
#[derive(Serialize)]
struct Hello<'a> {
    version: u32,
    job_id: String,
    cols: u16,
    rows: u16,
    control: &'a ControlOp,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    keep_open: bool,
}

/// A running job of another live server, and where to reach that server.
#[derive(Debug, Clone)]
pub(crate) struct Remote {
    pub(crate) id: JobId,
    pub(crate) server_pid: u32,
    /// The server's process as its record names it (is it still alive?).
    owner: ProcessRef,
    socket: PathBuf,
}

/// What a job's record file looked like when its owner was found: its write time and length.
type Stamp = (SystemTime, u64);

/// The owners of other servers' jobs found lately, each under the stamp of the record it was
/// read from: a control verb on such a job reads its record once, then only looks at the
/// file (unchanged: the job still runs under the same server; the owner is the authority on
/// the rest and answers `NotRunning` for a job that ended). Forgotten when the owner cannot be
/// reached or answers that the job is not, or no longer, its running job.
static KNOWN: Mutex<Option<HashMap<JobId, (Stamp, Remote)>>> = Mutex::new(None);
/// More than this many are forgotten all at once (they are cheap to find again).
const KNOWN_MAX: usize = 256;

/// The owner of job `id` found under the record stamp `stamp`, if its record is unchanged.
pub(crate) fn known(id: JobId, stamp: Stamp) -> Option<Remote> {
    let known = crate::sync::lock(&KNOWN);
    let (seen, remote) = known.as_ref()?.get(&id)?;
    (*seen == stamp).then(|| remote.clone())
}

/// Notes that `remote` owns job `id` while its record has the stamp `stamp`.
pub(crate) fn remember(id: JobId, stamp: Stamp, remote: &Remote) {
    let mut known = crate::sync::lock(&KNOWN);
    let map = known.get_or_insert_with(HashMap::new);
    if map.len() >= KNOWN_MAX {
        map.clear();
    }
    map.insert(id, (stamp, remote.clone()));
}

fn forget(id: JobId) {
    if let Some(map) = crate::sync::lock(&KNOWN).as_mut() {
        map.remove(&id);
    }
}

impl Remote {
    /// Job `id` of the server `instance` (its process `owner`) of the state directory
    /// `state_dir`.
    pub(crate) fn new(state_dir: &Path, instance: &str, id: JobId, owner: ProcessRef) -> Self {
        Self {
            id,
            server_pid: owner.pid,
            owner,
            socket: attach_socket_path(state_dir, instance),
        }
    }

    fn line(&self, op: &ControlOp, keep_open: bool) -> Result<Vec<u8>> {
        let hello = Hello {
            version: ATTACH_CONTROL_VERSION,
            job_id: self.id.to_string(),
            cols: 0,
            rows: 0,
            control: op,
            keep_open,
        };
        let mut line = serde_json::to_vec(&hello).map_err(io::Error::other)?;
        line.push(b'\n');
        Ok(line)
    }

    /// Has the job's server do `op` and returns its answer, within `within` (then an
    /// [`Error::Io`] of kind `TimedOut`). Dropping the future closes the connection, which
    /// cancels a wait at the owner.
    ///
    /// # Errors
    /// The owner's error, rebuilt; [`Error::NotOwner`] where control requests are not
    /// offered or the owner does not serve them (no socket, nobody listening);
    /// [`Error::Io`] of kind `PermissionDenied` when the socket's path holds anything but a
    /// socket of this user (nothing is sent), or when the owner ends the connection first.
    pub(crate) async fn ask<T: DeserializeOwned>(
        &self,
        op: &ControlOp,
        within: Duration,
    ) -> Result<T> {
        if !sys::SUPPORTED {
            return Err(self.not_owner());
        }
        // A connection the owner keeps open serves the next request without a connect (a
        // wait holds its own: its closing is what cancels it at the owner).
        let reuse = !matches!(op, ControlOp::Wait(_));
        let line = self.line(op, reuse)?;
        match sys::ask(&self.socket, &line, within, ANSWER_MAX, reuse).await {
            Ok((line, conn)) => {
                let (answer, open) = self.parse(&line);
                if open {
                    sys::keep(&self.socket, conn);
                }
                answer
            }
            Err(e) => Err(self.failed(e)),
        }
    }

    /// [`Self::ask`], blocking the calling thread.
    ///
    /// # Errors
    /// As [`Self::ask`].
    pub(crate) fn ask_blocking<T: DeserializeOwned>(
        &self,
        op: &ControlOp,
        within: Duration,
    ) -> Result<T> {
        if !sys::SUPPORTED {
            return Err(self.not_owner());
        }
        let line = self.line(op, false)?;
        match sys::ask_blocking(&self.socket, &line, within, ANSWER_MAX) {
            Ok(line) => self.parse(&line).0,
            Err(e) => Err(self.failed(e)),
        }
    }

    fn not_owner(&self) -> Error {
        Error::NotOwner {
            id: self.id,
            server_pid: self.server_pid,
        }
    }

    /// The error of a request that got no answer.
    fn failed(&self, e: io::Error) -> Error {
        match e.kind() {
            // Nobody serves control requests there (a manager that does not listen, or one that
            // has just ended): as before, only the owner controls the job.
            io::ErrorKind::NotFound | io::ErrorKind::ConnectionRefused => {
                forget(self.id);
                // Its server is gone: its record reads `killed` (server stopped) now.
                if !self.owner.is_alive() {
                    return Error::NotRunning {
                        id: self.id,
                        status: JobStatus::Killed,
                    };
                }
                self.not_owner()
            }
            io::ErrorKind::PermissionDenied => Error::Io(e),
            _ => {
                forget(self.id);
                Error::Io(io::Error::new(
                    e.kind(),
                    format!(
                        "job {} is run by another ptyjobs server (pid {}), which did not \
                         answer at {}: {e}",
                        self.id,
                        self.server_pid,
                        self.socket.display()
                    ),
                ))
            }
        }
    }

    /// The answer in `line`, and whether the owner keeps the connection open.
    fn parse<T: DeserializeOwned>(&self, line: &[u8]) -> (Result<T>, bool) {
        let reply: ControlReply<T> = match serde_json::from_slice(line) {
            Ok(reply) => reply,
            Err(e) => {
                let e = Error::Io(io::Error::other(format!(
                    "the answer of ptyjobs server pid {} is not valid: {e}",
                    self.server_pid
                )));
                return (Err(e), false);
            }
        };
        let open = reply.open;
        (self.answer(reply), open)
    }

    fn answer<T>(&self, reply: ControlReply<T>) -> Result<T> {
        match reply {
            ControlReply {
                ok: true,
                answer: Some(answer),
                ..
            } => Ok(answer),
            ControlReply {
                fault: Some(fault), ..
            } => {
                let e = Error::from(fault);
                if matches!(e, Error::NotRunning { .. } | Error::NotOwner { .. }) {
                    forget(self.id);
                }
                Err(e)
            }
            // A refusal before the request was read (an older server: the version).
            ControlReply { error, .. } => Err(Error::Io(io::Error::other(format!(
                "ptyjobs server pid {} refused to control job {}: {}",
                self.server_pid,
                self.id,
                error.unwrap_or_else(|| "no reason given".into())
            )))),
        }
    }
}

/// Whether `e` says the owner could not be reached or went away mid-request (as opposed to an
/// answer, or a refused socket): a read can fall back to the state directory then.
pub(crate) fn unreachable(e: &Error) -> bool {
    match e {
        Error::NotOwner { .. } => true,
        Error::Io(e) => matches!(
            e.kind(),
            io::ErrorKind::UnexpectedEof
                | io::ErrorKind::ConnectionReset
                | io::ErrorKind::BrokenPipe
                | io::ErrorKind::ConnectionAborted
        ),
        _ => false,
    }
}
