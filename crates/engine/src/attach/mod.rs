//! Attaching a person's terminal to a running job (`ptyjobs attach <id>`), over a Unix socket
//! the server owns in its state directory. Nothing listens on the network.
//!
//! The socket's place and checks, and the protocol, are documented on [`AttachServer`].

mod session;

use std::fs;
use std::io;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use tokio::sync::{broadcast, watch};

use crate::error::{Error, Result};
use crate::manager::{JobManager, lock};

/// The protocol version this engine speaks.
pub const ATTACH_VERSION: u32 = 1;

/// The first line a client sends.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttachHello {
    /// [`ATTACH_VERSION`].
    pub version: u32,
    /// The job to attach to (its full id).
    pub job_id: String,
    /// The person's terminal width (informative).
    pub cols: u16,
    /// The person's terminal height (informative).
    pub rows: u16,
}

/// The server's answer to the hello.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttachReply {
    /// Whether the raw byte streams follow.
    pub ok: bool,
    /// Why not, when `ok` is false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The job's terminal size `(cols, rows)`, when `ok`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<(u16, u16)>,
}

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

/// The raw output of a job, for attached clients. Nothing is allocated until someone attaches.
#[derive(Default)]
pub(crate) struct Tap(Mutex<Option<broadcast::Sender<Arc<[u8]>>>>);

/// Output batches an attached client may lag behind before it is sent the screen again.
const TAP_BATCHES: usize = 64;

impl Tap {
    /// Hands `bytes` to the attached clients, if any. Called with the job's state locked, right
    /// after the bytes were fed to its terminal: a client that subscribed under the same lock
    /// sees each byte either in its first screen or in the stream, never in both.
    pub(crate) fn send(&self, bytes: &[u8]) {
        let tap = lock(&self.0);
        if let Some(tx) = tap.as_ref()
            && tx.receiver_count() > 0
        {
            let _ = tx.send(Arc::from(bytes));
        }
    }

    /// A receiver of the output from now on (call with the job's state locked).
    pub(crate) fn subscribe(&self) -> broadcast::Receiver<Arc<[u8]>> {
        lock(&self.0)
            .get_or_insert_with(|| broadcast::channel(TAP_BATCHES).0)
            .subscribe()
    }
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
/// # Protocol (version 1)
/// 1. The client sends one line of JSON: [`AttachHello`], e.g.
///    `{"version":1,"job_id":"…","cols":120,"rows":40}\n`.
/// 2. The server answers one line of JSON: [`AttachReply`]. With `ok: false` (unknown job, a
///    job that is not running or not this server's, another uid, a bad hello) it closes.
/// 3. Then raw bytes both ways, until either side closes:
///    - server → client: what the person's terminal should receive. First the job's screen
///      now (clear, its rows, the cursor put where the job's is), then the job's output bytes
///      exactly as the job wrote them. When the job ends, a last line in brackets says so and
///      the server closes. A client too slow to keep up gets the screen again instead of the
///      bytes it missed.
///    - client → server: keystrokes, written to the job's terminal as they are. The detach key
///      is the client's business: it never sends it, it closes the connection.
///
/// The job keeps its own terminal size (an agent may be reading its screen); the client's
/// size in the hello is informative only.
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

impl Drop for AttachServer {
    fn drop(&mut self) {
        self.stop.send_replace(true);
        if is_own_socket(&self.path) {
            let _ = fs::remove_file(&self.path);
        }
    }
}

fn my_uid() -> u32 {
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
