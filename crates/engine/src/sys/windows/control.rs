//! The client end of the attach socket on Windows: not offered (there is no attach socket
//! here), so a job of another server answers as before (only its own server controls it).

use std::io;
use std::path::Path;
use std::time::Duration;

/// Control requests are not offered here.
pub(crate) const SUPPORTED: bool = false;

fn unsupported() -> io::Error {
    io::Error::new(
        io::ErrorKind::Unsupported,
        "control of another server's job is not offered on this platform",
    )
}

/// A connection to an owner (none here).
pub(crate) struct Conn;

/// Nothing to keep here.
pub(crate) fn keep(_path: &Path, _conn: Conn) {}

/// Always `Unsupported`.
pub(crate) async fn ask(
    _path: &Path,
    _line: &[u8],
    _within: Duration,
    _max: u64,
    _reuse: bool,
) -> io::Result<(Vec<u8>, Conn)> {
    Err(unsupported())
}

/// Always `Unsupported`.
pub(crate) fn ask_blocking(
    _path: &Path,
    _line: &[u8],
    _within: Duration,
    _max: u64,
) -> io::Result<Vec<u8>> {
    Err(unsupported())
}
