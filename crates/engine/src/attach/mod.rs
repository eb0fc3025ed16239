//! Attaching a person's terminal to a running job (`ptyjobs attach <id>`), over a Unix socket
//! the server owns in its state directory. Nothing listens on the network.
//!
//! The socket's place and checks, and the protocol, are documented on [`AttachServer`].
//! Attaching is offered on Unix only (a Unix socket with peer credentials); elsewhere
//! [`JobManager::serve_attach`](crate::JobManager::serve_attach) fails with an `Unsupported`
//! I/O error. This module is the same on every platform: the socket itself is `sys::attach`.

mod control;
mod frames;
mod restart;
mod session;
mod size;
mod socket;
pub(crate) mod start;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use tokio::sync::watch;

/// The newest protocol version this engine speaks (it also serves version 1 clients).
pub const ATTACH_VERSION: u32 = 2;

/// The protocol version of a restart request ([`AttachHello::restart`]): servers that predate
/// it refuse it as an unknown version instead of taking it for an attach.
pub const ATTACH_RESTART_VERSION: u32 = 3;

/// The protocol version of a start request ([`AttachHello::start`], answered by a keeper).
pub const ATTACH_START_VERSION: u32 = 5;

pub use crate::control::{ATTACH_CONTROL_VERSION, attach_socket_path};
pub use frames::{attach_keys_frame, attach_resize_frame};
pub use start::{AttachStart, StartReply};

/// The first line a client sends.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttachHello {
    /// [`ATTACH_VERSION`].
    pub version: u32,
    /// The job to attach to (its full id).
    pub job_id: String,
    /// The person's terminal width (version 2: the job takes it while attached; version 1:
    /// informative).
    pub cols: u16,
    /// The person's terminal height (as `cols`).
    pub rows: u16,
    /// Instead of attaching, restart the job (version [`ATTACH_RESTART_VERSION`] only): the
    /// server answers one [`AttachReply`] with the new job and closes. How `ptyjobs restart`
    /// has the job's live server (which outlives the CLI) start the new job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restart: Option<AttachRestart>,
    /// Instead of attaching, have the server do one thing to its job (version
    /// [`ATTACH_CONTROL_VERSION`] only): the server answers one line and closes (unless
    /// `keep_open`). How another
    /// server (or a Node program, or the CLI) controls a job this server runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control: Option<crate::control::ControlOp>,
    /// With `control`: the client may send further control requests (a hello line each) on
    /// this connection once answered. A server that keeps it open says `"open": true` in its
    /// answer; without it (older servers, a wait) the connection closes after the answer.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub keep_open: bool,
    /// Instead of attaching, start a kept job (version [`ATTACH_START_VERSION`] only; a
    /// keeper alone accepts it): the keeper answers one [`StartReply`] and closes. How a
    /// server, the CLI or a Node program has the state directory's keeper run a kept job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<Box<AttachStart>>,
}

/// What a restart request changes ([`crate::JobManager::restart`]'s `command` and `env`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttachRestart {
    /// A new command line, else the job's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// New extra environment variables, else the job's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<std::collections::BTreeMap<String, String>>,
}

/// The server's answer to the hello.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttachReply {
    /// Whether the raw byte streams follow.
    pub ok: bool,
    /// Why not, when `ok` is false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The job's terminal size `(cols, rows)`, when `ok`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<(u16, u16)>,
    /// For a restart request: the new job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<Box<crate::job::JobInfo>>,
}

/// The attach socket of a manager ([`JobManager::serve_attach`]); dropping it stops listening
/// and removes the socket.
///
/// # Where the socket is, and why it is safe
/// `<state>/sock/<server instance>.sock` ([`attach_socket_path`]), one per server (a job's record names its server's
/// instance, so a client finds the socket from the job id). The `sock` directory is created
/// 0700 and then checked without following links (`lstat`): it must be a directory owned by
/// this user with no permission for group or others, else attaching is refused. A file already
/// at the socket's path is removed only when it is a socket owned by this user; anything else
/// (a planted file or link) makes the bind fail. The socket is made 0600. Every connection is
/// checked with the peer's credentials (`SO_PEERCRED`): a peer whose uid differs from the
/// server's is refused. Sockets left by servers that are gone (a connect is refused) are swept
/// when a server starts listening; a server's own socket is removed when it stops
/// ([`AttachServer`] dropped).
///
/// # Protocol (version 2; version 1 is still served; 3 restarts, 4 controls)
/// 1. The client sends one line of JSON: [`AttachHello`], e.g.
///    `{"version":2,"job_id":"…","cols":120,"rows":40}\n`.
///
///    A hello of version [`ATTACH_RESTART_VERSION`] with `restart` asks the server to restart
///    the job (any job of the state directory; the new job is the server's) instead: it
///    answers one [`AttachReply`] carrying the new job (`job`) or the error, and closes.
///
///    A hello of version [`ATTACH_CONTROL_VERSION`] with `control` (a
///    [`ControlOp`](crate::ControlOp), tagged by its `op` field: `write`, `write_all`,
///    `interact`, `keys`, `resize`, `kill`, `screen`, `wait`) asks the server to do one thing
///    to a job it runs, through its own paths (its input queue, its kill path, its terminal
///    model), e.g. `{"version":4,"job_id":"…","cols":0,"rows":0,"control":{"op":"kill",
///    "signal":15}}`. It answers one line and closes — or, when the hello says
///    `"keep_open":true` and the request is not a `wait`, answers `"open":true` and reads the
///    next control hello on the same connection (closed after 30 s idle): `{"ok":true,"answer":…}` (the method's
///    result as JSON: a number of bytes, a bool, an `Interaction`, a `KillReport`,
///    `[screen, status]`, a `WaitOutcome`) or `{"ok":false,"error":"…","fault":{"code":
///    "not_running",…}}` (the engine error's variant and data, rebuilt by the client as the
///    same [`Error`](crate::Error)). A job this server does not run is refused, never asked of
///    a third server. A `wait` is bounded by its `timeout_ms` (capped by this server's
///    limit) and cancelled when the client closes the connection. The client is
///    `crate::control` (every control verb of [`JobManager`](crate::JobManager) uses it for
///    another live server's running job): it checks the socket before it sends (`lstat`: a
///    socket of this user, never a link or a planted file) and the peer's uid after the
///    connect, and reads the answer with a deadline.
///
///    A hello of version [`ATTACH_START_VERSION`] with `start` asks a keeper (see
///    `crate::keep`) to start a kept job ([`AttachStart`]): it answers one [`StartReply`]
///    (the job, or the error, or `closing` when the keeper is leaving) and closes; a server
///    that is not a keeper refuses it.
/// 2. The server answers one line of JSON: [`AttachReply`]. With `ok: false` (unknown job, a
///    job that is not running or not this server's, another uid, a bad hello) it closes.
/// 3. Then raw bytes both ways, until either side closes:
///    - server → client: what the person's terminal should receive. First the job's screen
///      now (clear, its rows with their colours and attributes, the cursor put where the
///      job's is), then the job's output bytes
///      exactly as the job wrote them. When the job ends, a last line in brackets says so and
///      the server closes. A client too slow to keep up gets the screen again instead of the
///      bytes it missed.
///    - client → server, version 2: frames (see `frames.rs`: a kind byte, a big-endian `u16`
///      length, the payload): keystrokes, written to the job's terminal as they are, and the
///      person's terminal size whenever it changes. Version 1: raw keystrokes only. The detach
///      key is the client's business: it never sends it, it closes the connection.
///
/// Size (version 2): the job's terminal takes the person's size at attach and at every resize
/// (the job gets `SIGWINCH` and redraws for every viewer; with several people attached the
/// latest size wins, and the others are sent the job's screen again at that size). When the
/// last person leaves, the job gets back the size it had before the first one attached, unless
/// someone else (an agent's `resize_job`) resized it meanwhile. Version 1 clients leave the
/// job's size alone.
#[derive(Debug)]
pub struct AttachServer {
    path: PathBuf,
    stop: watch::Sender<bool>,
}

impl AttachServer {
    /// Where the socket is.
    pub fn path(&self) -> &Path {
        &self.path
    }
}
