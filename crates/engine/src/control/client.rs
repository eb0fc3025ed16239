//! The client of a control request: what a verb uses in place of answering "another server
//! owns this job" (see the module's docs for the checks).

use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::{ATTACH_CONTROL_VERSION, ControlOp, ControlReply, attach_socket_path};
use crate::error::{Error, Result};
use crate::job::JobId;
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
}

/// A running job of another live server, and where to reach that server.
#[derive(Debug, Clone)]
pub(crate) struct Remote {
    pub(crate) id: JobId,
    pub(crate) server_pid: u32,
    socket: PathBuf,
}

impl Remote {
    /// Job `id` of the server `instance` (pid `server_pid`) of the state directory `state_dir`.
    pub(crate) fn new(state_dir: &Path, instance: &str, id: JobId, server_pid: u32) -> Self {
        Self {
            id,
            server_pid,
            socket: attach_socket_path(state_dir, instance),
        }
    }

    fn line(&self, op: &ControlOp) -> Result<Vec<u8>> {
        let hello = Hello {
            version: ATTACH_CONTROL_VERSION,
            job_id: self.id.to_string(),
            cols: 0,
            rows: 0,
            control: op,
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
        let line = self.line(op)?;
        self.answer(sys::ask(&self.socket, &line, within, ANSWER_MAX).await)
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
        let line = self.line(op)?;
        self.answer(sys::ask_blocking(&self.socket, &line, within, ANSWER_MAX))
    }

    fn not_owner(&self) -> Error {
        Error::NotOwner {
            id: self.id,
            server_pid: self.server_pid,
        }
    }

    fn answer<T: DeserializeOwned>(&self, got: io::Result<Vec<u8>>) -> Result<T> {
        let line = match got {
            Ok(line) => line,
            // Nobody serves control requests there (a manager that does not listen, or one that
            // has just ended): as before, only the owner controls the job.
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::NotFound | io::ErrorKind::ConnectionRefused
                ) =>
            {
                return Err(self.not_owner());
            }
            Err(e) if e.kind() == io::ErrorKind::PermissionDenied => return Err(Error::Io(e)),
            Err(e) => {
                return Err(Error::Io(io::Error::new(
                    e.kind(),
                    format!(
                        "job {} is run by another ptyjobs server (pid {}), which did not \
                         answer at {}: {e}",
                        self.id,
                        self.server_pid,
                        self.socket.display()
                    ),
                )));
            }
        };
        let reply: ControlReply<T> = serde_json::from_slice(&line).map_err(|e| {
            Error::Io(io::Error::other(format!(
                "the answer of ptyjobs server pid {} is not valid: {e}",
                self.server_pid
            )))
        })?;
        match reply {
            ControlReply {
                ok: true,
                answer: Some(answer),
                ..
            } => Ok(answer),
            ControlReply {
                fault: Some(fault), ..
            } => Err(fault.into()),
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
