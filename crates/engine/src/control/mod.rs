//! Control of a running job of another live ptyjobs server sharing the state directory (a
//! second MCP client, a Node program, the keeper of kept jobs): the request goes to the job's
//! own server over its attach socket, and that server does it through its own paths (its input
//! queue, its kill path, its terminal model). One request, one answer line; the connection
//! then closes, or (`keep_open`, answered `open`) carries the client's next request, so a run
//! of calls pays one connect. The server side is `crate::attach` (protocol on [`crate::AttachServer`]); this part
//! is the wire format and the client, below the verbs that use it.
//!
//! Safety is the attach socket's: the socket is found from the job's record, checked without
//! following it (a socket of this user, never a link or a planted file), and the peer's uid is
//! checked after the connect. An owner that dies mid-request ends the request with an error;
//! every request has a deadline.

mod client;
mod wire;
mod wire_error;

use std::path::{Path, PathBuf};

pub(crate) use client::{Remote, SLACK, known, remember, unreachable};
pub use wire::{ControlBytes, ControlOp, ControlWait};
pub(crate) use wire::{ControlReply, reply_line};
pub(crate) use wire_error::ControlError;

/// The protocol version of a control request ([`crate::AttachHello::control`]): servers that
/// predate it refuse it as an unknown version instead of taking it for an attach.
pub const ATTACH_CONTROL_VERSION: u32 = 4;

/// The socket of the server `instance` in the state directory `state_dir`:
/// `<state_dir>/sock/<the first 16 hex digits of instance>.sock`. Short, because a socket's
/// path must fit in ~104 bytes; hex digits only, because the instance is read from a record on
/// disk and must never make a path of its own.
pub fn attach_socket_path(state_dir: &Path, instance: &str) -> PathBuf {
    let name: String = instance
        .chars()
        .filter(char::is_ascii_hexdigit)
        .take(16)
        .collect();
    state_dir.join("sock").join(format!("{name}.sock"))
}
