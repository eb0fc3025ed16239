//! The attach socket's platform part on Unix: a Unix socket in a private directory, peers
//! told by their kernel-checked uid (`SO_PEERCRED`). The contract is on
//! `crate::attach::AttachServer`; what this module may and may not do is said there.

use std::fs;
use std::io;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Attaching is offered here.
pub(crate) fn supported() -> io::Result<()> {
    Ok(())
}

/// The effective uid of this process.
pub(crate) fn my_uid() -> u32 {
    // SAFETY: geteuid has no arguments and cannot fail.
    unsafe { libc::geteuid() }
}

/// Whether `path` (not followed) is a socket owned by this user.
pub(crate) fn is_own_socket(path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_socket() && m.uid() == my_uid())
}

/// Creates (0700) and checks the socket directory `<state_dir>/sock`: a real directory, ours,
/// private.
pub(crate) fn socket_dir(state_dir: &Path) -> io::Result<PathBuf> {
    let dir = state_dir.join("sock");
    match fs::DirBuilder::new().mode(0o700).create(&dir) {
        Err(e) if e.kind() != io::ErrorKind::AlreadyExists => return Err(e),
        _ => {}
    }
    let m = fs::symlink_metadata(&dir)?;
    if !m.file_type().is_dir() || m.uid() != my_uid() || m.mode() & 0o077 != 0 {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{} is not a private directory of this user (mode 0700): not listening there",
                dir.display()
            ),
        ));
    }
    Ok(dir)
}

/// Removes the sockets in `dir` that nobody listens on any more (their server is gone), but
/// never `keep`.
pub(crate) fn sweep(dir: &Path, keep: &Path) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for path in entries.filter_map(|e| Some(e.ok()?.path())) {
        if path == keep || path.extension().is_none_or(|x| x != "sock") || !is_own_socket(&path) {
            continue;
        }
        if let Err(e) = std::os::unix::net::UnixStream::connect(&path)
            && e.kind() == io::ErrorKind::ConnectionRefused
        {
            let _ = fs::remove_file(&path);
        }
    }
}

/// The listening socket.
pub(crate) struct Listener(tokio::net::UnixListener);

/// What a connected client reads from.
pub(crate) type PeerReader = tokio::net::unix::OwnedReadHalf;
/// What a connected client is written to.
pub(crate) type PeerWriter = tokio::net::unix::OwnedWriteHalf;

/// One connected client: its uid as the kernel reports it (`None` when it cannot be read),
/// what it sends and where to answer.
pub(crate) type Peer = (Option<u32>, PeerReader, PeerWriter);

impl Listener {
    /// Binds a socket at `path` (nothing may be there), makes it 0600 and registers it with
    /// the current tokio runtime (call inside one).
    pub(crate) fn bind(path: &Path) -> io::Result<Self> {
        let listener = std::os::unix::net::UnixListener::bind(path)?;
        fs::set_permissions(path, fs::Permissions::from_mode(0o600))?;
        listener.set_nonblocking(true)?;
        Ok(Self(tokio::net::UnixListener::from_std(listener)?))
    }

    /// The next client.
    pub(crate) async fn accept(&self) -> io::Result<Peer> {
        let (stream, _) = self.0.accept().await?;
        let uid = stream.peer_cred().ok().map(|c| c.uid());
        let (reader, writer) = stream.into_split();
        Ok((uid, reader, writer))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_peer_uid_comes_from_the_kernel() {
        // What `Listener::accept` reads: SO_PEERCRED of a connected pair is this process's uid.
        let (a, _b) = tokio::net::UnixStream::pair().unwrap();
        assert_eq!(a.peer_cred().unwrap().uid(), my_uid());
    }

    #[test]
    fn a_planted_file_or_a_public_directory_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        // A file where the directory should be.
        fs::write(tmp.path().join("sock"), b"x").unwrap();
        assert!(socket_dir(tmp.path()).is_err());
        fs::remove_file(tmp.path().join("sock")).unwrap();
        // A link to somewhere else.
        let elsewhere = tmp.path().join("elsewhere");
        fs::DirBuilder::new()
            .mode(0o700)
            .create(&elsewhere)
            .unwrap();
        std::os::unix::fs::symlink(&elsewhere, tmp.path().join("sock")).unwrap();
        assert!(socket_dir(tmp.path()).is_err());
        fs::remove_file(tmp.path().join("sock")).unwrap();
        // A directory others may enter.
        fs::DirBuilder::new()
            .mode(0o755)
            .create(tmp.path().join("sock"))
            .unwrap();
        fs::set_permissions(tmp.path().join("sock"), fs::Permissions::from_mode(0o755)).unwrap();
        assert!(socket_dir(tmp.path()).is_err());
        fs::set_permissions(tmp.path().join("sock"), fs::Permissions::from_mode(0o700)).unwrap();
        assert!(socket_dir(tmp.path()).is_ok());
        // A regular file at a socket's path is not ours to remove.
        let planted = tmp.path().join("sock").join("x.sock");
        fs::write(&planted, b"x").unwrap();
        assert!(!is_own_socket(&planted));
    }
}
