//! The keeper's platform part on Windows: not offered (a keeper serves its jobs over an
//! attach socket, which is Unix-only). Every entry point fails with `Unsupported`.

use std::fs::File;
use std::io;
use std::path::Path;
use std::process::Command;

fn unsupported() -> io::Error {
    io::Error::new(
        io::ErrorKind::Unsupported,
        "keeping a job (keep) is not offered on this platform: a kept job is served over a \
         Unix socket",
    )
}

/// Always `Unsupported`.
pub(crate) fn open_private(_path: &Path, _append: bool) -> io::Result<File> {
    Err(unsupported())
}

/// Always `Unsupported`.
pub(crate) fn spawn_detached(_command: &mut Command, _log: File) -> io::Result<()> {
    Err(unsupported())
}

/// Always `Unsupported`.
pub(crate) fn connect(_path: &Path) -> io::Result<File> {
    Err(unsupported())
}

/// Always `Unsupported`.
pub(crate) fn make_dir(_dir: &Path) -> io::Result<()> {
    Err(unsupported())
}

/// Always `Unsupported`.
pub(crate) fn try_lock(_file: &File, _shared: bool) -> io::Result<bool> {
    Err(unsupported())
}
