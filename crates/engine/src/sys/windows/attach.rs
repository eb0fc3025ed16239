//! The attach socket's platform part on Windows: not offered (the Unix version is a Unix
//! socket whose peers are told by their kernel-checked uid; nothing here checks a peer yet).
//! Every entry point fails or finds nothing, so the platform-neutral attach code above compiles
//! unchanged and `serve_attach` fails at once.

use std::io;
use std::path::{Path, PathBuf};

fn unsupported() -> io::Error {
    io::Error::new(
        io::ErrorKind::Unsupported,
        "attaching to a job (ptyjobs attach) is not offered on this platform",
    )
}

/// Attaching is not offered here: always `Unsupported`.
pub(crate) fn supported() -> io::Result<()> {
    Err(unsupported())
}

/// No user id to tell: a value no peer has (peers are never accepted here anyway).
pub(crate) fn my_uid() -> u32 {
    u32::MAX
}

/// No socket is ever made here: `false`.
pub(crate) fn is_own_socket(_path: &Path) -> bool {
    false
}

/// Always `Unsupported`.
pub(crate) fn socket_dir(_state_dir: &Path) -> io::Result<PathBuf> {
    Err(unsupported())
}

/// Nothing to sweep.
pub(crate) fn sweep(_dir: &Path, _keep: &Path) {}

/// A listener that cannot exist here.
pub(crate) enum Listener {}

/// What a connected client would be read from (none connects here).
pub(crate) type PeerReader = tokio::io::Empty;
/// What a connected client would be written to (none connects here).
pub(crate) type PeerWriter = tokio::io::Sink;

/// One connected client (none connects here): its uid, what it sends, where to answer.
pub(crate) type Peer = (Option<u32>, PeerReader, PeerWriter);

impl Listener {
    /// Always `Unsupported`.
    pub(crate) fn bind(_path: &Path) -> io::Result<Self> {
        Err(unsupported())
    }

    /// Never called: no listener exists.
    pub(crate) async fn accept(&self) -> io::Result<Peer> {
        match *self {}
    }
}
