//! The attach socket on Unix: where it lives, the checks on its directory and its peers, and
//! listening on it (see [`AttachServer`] for the contract).

use std::fs;
use std::io;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::sync::watch;

use super::{AttachServer, attach_socket_path, session};
use crate::error::{Error, Result};
use crate::manager::JobManager;

impl Drop for AttachServer {
    fn drop(&mut self) {
        self.stop.send_replace(true);
        if is_own_socket(&self.path) {
            let _ = fs::remove_file(&self.path);
        }
    }
}

pub(super) fn my_uid() -> u32 {
    // SAFETY: geteuid has no arguments and cannot fail.
    unsafe { libc::geteuid() }
}

/// Whether `path` (not followed) is a socket owned by this user.
fn is_own_socket(path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_socket() && m.uid() == my_uid())
}

/// Creates (0700) and checks the socket directory: a real directory, ours, private.
fn socket_dir(state_dir: &Path) -> io::Result<PathBuf> {
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

/// Removes the sockets in `dir` that nobody listens on any more (their server is gone).
fn sweep(dir: &Path, keep: &Path) {
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

/// Whether a peer with `peer_uid` may attach to a server running as `own_uid`.
pub(crate) fn peer_allowed(peer_uid: u32, own_uid: u32) -> bool {
    peer_uid == own_uid
}

impl JobManager {
    /// Starts listening for `ptyjobs attach` clients on this manager's socket (see
    /// [`AttachServer`] for the path, the checks and the protocol). Serves
    /// on the manager's runtime until the returned guard is dropped.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] without a state directory; [`Error::Io`] when the socket
    /// directory is not private or the socket cannot be made.
    pub fn serve_attach(&self) -> Result<AttachServer> {
        let store = self
            .store()
            .ok_or_else(|| Error::InvalidArgument("attaching needs a state directory".into()))?;
        let instance = store
            .instance()
            .ok_or_else(|| Error::InvalidArgument("a reader's store cannot serve".into()))?;
        let dir = socket_dir(&store.config().dir)?;
        let path = attach_socket_path(&store.config().dir, instance);
        if fs::symlink_metadata(&path).is_ok() {
            if !is_own_socket(&path) {
                return Err(Error::Io(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    format!("{} exists and is not our socket", path.display()),
                )));
            }
            fs::remove_file(&path)?;
        }
        let std_listener = std::os::unix::net::UnixListener::bind(&path)?;
        fs::set_permissions(&path, fs::Permissions::from_mode(0o600))?;
        std_listener.set_nonblocking(true)?;
        let listener = {
            let _enter = self.inner.runtime.enter();
            tokio::net::UnixListener::from_std(std_listener)?
        };
        let (stop, stopped) = watch::channel(false);
        let keep = path.clone();
        self.inner
            .runtime
            .spawn_blocking(move || sweep(&dir, &keep));
        self.inner.runtime.spawn(session::accept_loop(
            Arc::downgrade(&self.inner),
            listener,
            stopped,
        ));
        Ok(AttachServer { path, stop })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_socket_path_is_short_and_cannot_leave_its_directory() {
        let p = attach_socket_path(Path::new("/s"), "0f3a9c1e-8b7d-4e2f-a1b2-c3d4e5f60718");
        assert_eq!(p, Path::new("/s/sock/0f3a9c1e8b7d4e2f.sock"));
        let evil = attach_socket_path(Path::new("/s"), "../../etc/x");
        assert_eq!(evil, Path::new("/s/sock/ec.sock"));
    }

    #[test]
    fn only_the_same_uid_may_attach() {
        let me = my_uid();
        assert!(peer_allowed(me, me));
        assert!(!peer_allowed(me.wrapping_add(1), me));
        assert!(!peer_allowed(65534, 0));
    }

    #[tokio::test]
    async fn the_peer_uid_comes_from_the_kernel() {
        // What the accept loop reads: SO_PEERCRED of a connected pair is this process's uid.
        let (a, _b) = tokio::net::UnixStream::pair().unwrap();
        let uid = a.peer_cred().unwrap().uid();
        assert!(peer_allowed(uid, my_uid()));
        assert!(!peer_allowed(uid, my_uid().wrapping_add(1)));
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
