//! The attach socket: where it lives, who may connect, and listening on it (see
//! [`AttachServer`] for the contract). The platform part (the socket itself, the checks on its
//! directory, the peer's uid) is `crate::sys::attach`; where attaching is not offered, its
//! [`attach::supported`] fails and so does [`JobManager::serve_attach`].

use std::fs;
use std::io;
use std::sync::Arc;

use tokio::sync::watch;

use super::{AttachServer, attach_socket_path, session};
use crate::error::{Error, Result};
use crate::manager::JobManager;
use crate::sys::attach;

impl Drop for AttachServer {
    fn drop(&mut self) {
        self.stop.send_replace(true);
        if attach::is_own_socket(&self.path) {
            let _ = fs::remove_file(&self.path);
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
    /// [`Error::Io`] of kind `Unsupported` where attaching is not offered (it is on Unix only:
    /// a Unix socket with peer credentials); [`Error::InvalidArgument`] without a state
    /// directory; [`Error::Io`] when the socket directory is not private or the socket cannot
    /// be made.
    pub fn serve_attach(&self) -> Result<AttachServer> {
        attach::supported()?;
        let store = self
            .store()
            .ok_or_else(|| Error::InvalidArgument("attaching needs a state directory".into()))?;
        let instance = store
            .instance()
            .ok_or_else(|| Error::InvalidArgument("a reader's store cannot serve".into()))?;
        let dir = attach::socket_dir(&store.config().dir)?;
        let path = attach_socket_path(&store.config().dir, instance);
        if fs::symlink_metadata(&path).is_ok() {
            if !attach::is_own_socket(&path) {
                return Err(Error::Io(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    format!("{} exists and is not our socket", path.display()),
                )));
            }
            fs::remove_file(&path)?;
        }
        let listener = {
            let _enter = self.inner.runtime.enter();
            attach::Listener::bind(&path)?
        };
        let (stop, stopped) = watch::channel(false);
        let keep = path.clone();
        self.inner
            .runtime
            .spawn_blocking(move || attach::sweep(&dir, &keep));
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
    use std::path::Path;

    #[test]
    fn the_socket_path_is_short_and_cannot_leave_its_directory() {
        let p = attach_socket_path(Path::new("/s"), "0f3a9c1e-8b7d-4e2f-a1b2-c3d4e5f60718");
        assert_eq!(p, Path::new("/s/sock/0f3a9c1e8b7d4e2f.sock"));
        let evil = attach_socket_path(Path::new("/s"), "../../etc/x");
        assert_eq!(evil, Path::new("/s/sock/ec.sock"));
    }

    #[test]
    fn only_the_same_uid_may_attach() {
        let me = attach::my_uid();
        assert!(peer_allowed(me, me));
        assert!(!peer_allowed(me.wrapping_add(1), me));
        assert!(!peer_allowed(65534, 0));
    }
}
