//! The keeper's platform part on Unix: its rendezvous file opened without following links,
//! and the keeper started detached from whoever starts it (see `crate::keep`).

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};

/// Opens (creating it 0600) the file at `path` for reading and writing, never through a
/// link, and checks it is a regular file of this user: a planted link, directory, FIFO or
/// another user's file is refused.
pub(crate) fn open_private(path: &Path, append: bool) -> io::Result<File> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .append(append)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| {
            io::Error::new(
                e.kind(),
                format!(
                    "cannot open {} (a link is never followed): {e}",
                    path.display()
                ),
            )
        })?;
    let m = file.metadata()?;
    if !m.file_type().is_file() || m.uid() != super::attach::my_uid() || m.mode() & 0o022 != 0 {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{} is not a private regular file of this user: refused",
                path.display()
            ),
        ));
    }
    Ok(file)
}

/// Starts `command` fully detached: a new session (no controlling terminal, no signal from
/// the starter's terminal), and not the starter's child (it forks once more and the middle
/// process exits, so the starter reaps at once and never holds a zombie; the keeper is
/// adopted by init). stdin and stdout are /dev/null, stderr is `log`.
pub(crate) fn spawn_detached(command: &mut Command, log: File) -> io::Result<()> {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(log));
    // SAFETY: between fork and exec only async-signal-safe calls: setsid, fork, _exit.
    unsafe {
        command.pre_exec(|| {
            if libc::setsid() < 0 {
                return Err(io::Error::last_os_error());
            }
            match libc::fork() {
                -1 => Err(io::Error::last_os_error()),
                0 => Ok(()),
                _ => libc::_exit(0),
            }
        });
    }
    let mut child = command.spawn()?;
    child.wait()?;
    Ok(())
}

/// Connects to the keeper's socket at `path` (checked by the caller: this user's socket in
/// the private socket directory).
pub(crate) fn connect(path: &Path) -> io::Result<std::os::unix::net::UnixStream> {
    std::os::unix::net::UnixStream::connect(path)
}

/// Creates the state directory `dir` (0700) when it does not exist yet; the store checks it.
pub(crate) fn make_dir(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// Tries to lock `file` (`flock`, exclusive or `shared`) without waiting: `Ok(false)` when
/// another open file description holds a conflicting lock.
pub(crate) fn try_lock(file: &File, shared: bool) -> io::Result<bool> {
    use rustix::fs::FlockOperation as Op;
    let op = if shared {
        Op::NonBlockingLockShared
    } else {
        Op::NonBlockingLockExclusive
    };
    match rustix::fs::flock(file, op) {
        Ok(()) => Ok(true),
        Err(rustix::io::Errno::WOULDBLOCK) => Ok(false),
        Err(e) => Err(e.into()),
    }
}
