//! The client end of the attach socket on Unix, for control requests (one line out, one line
//! back; see `crate::control`). The socket is another server's: before anything is sent, its
//! path is checked without following it (`lstat`: a socket owned by this user), and after the
//! connect the listening peer's uid is checked too (`SO_PEERCRED` on Linux, `getpeereid`
//! elsewhere), as the server checks its clients.

use std::fs;
use std::io::{self, BufRead, BufReader, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};

use super::attach::my_uid;

/// Control requests are offered here.
pub(crate) const SUPPORTED: bool = true;

/// Connects to the socket at `path`: it must be a socket (never followed if it is a link) owned
/// by this user, and whoever listens on it must run as this user.
///
/// # Errors
/// `NotFound` when nothing is there, `ConnectionRefused` when nobody listens (its server is
/// gone), `PermissionDenied` (with what was found) for anything else at the path or a peer of
/// another user; nothing was sent then.
fn connect(path: &Path) -> io::Result<UnixStream> {
    let m = fs::symlink_metadata(path)?;
    let kind = m.file_type();
    let what = if kind.is_symlink() {
        Some("a symbolic link".to_owned())
    } else if !kind.is_socket() {
        Some("not a socket".to_owned())
    } else if m.uid() != my_uid() {
        Some(format!("a socket of another user (uid {})", m.uid()))
    } else {
        None
    };
    if let Some(what) = what {
        return Err(refused(path, &what));
    }
    let stream = UnixStream::connect(path)?;
    // The path may have changed between the look and the connect: the peer is what counts.
    let peer = peer_uid(&stream)?;
    if peer != my_uid() {
        return Err(refused(
            path,
            &format!("served by a process of another user (uid {peer})"),
        ));
    }
    Ok(stream)
}

fn refused(path: &Path, what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::PermissionDenied,
        format!(
            "refused the control socket {}: {what}, not a socket of this user (nothing was sent)",
            path.display()
        ),
    )
}

/// The uid of the process at the other end of `stream`, as the kernel reports it.
#[cfg(target_os = "linux")]
fn peer_uid(stream: &UnixStream) -> io::Result<u32> {
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: the fd is a live socket; `cred` and `len` are valid for writes of their sizes.
    let r = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&raw mut cred).cast(),
            &raw mut len,
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(cred.uid)
}

/// The uid of the process at the other end of `stream`, as the kernel reports it.
#[cfg(not(target_os = "linux"))]
fn peer_uid(stream: &UnixStream) -> io::Result<u32> {
    let (mut uid, mut gid) = (0, 0);
    // SAFETY: the fd is a live socket; the pointers are valid for writes.
    let r = unsafe { libc::getpeereid(stream.as_raw_fd(), &raw mut uid, &raw mut gid) };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(uid)
}

fn timed_out(within: Duration) -> io::Error {
    io::Error::new(
        io::ErrorKind::TimedOut,
        format!("no answer within {} ms", within.as_millis()),
    )
}

fn closed() -> io::Error {
    io::Error::new(
        io::ErrorKind::UnexpectedEof,
        "the connection closed before an answer",
    )
}

/// A connection to an owner, after its answer: kept for the next request to the same socket
/// when that answer said the owner keeps it open ([`keep`]).
pub(crate) struct Conn(UnixStream);

/// Idle connections kept for reuse: the socket's path, since when idle, the stream.
static IDLE: Mutex<Vec<(PathBuf, Instant, UnixStream)>> = Mutex::new(Vec::new());
/// At most this many idle connections are kept (the oldest goes first).
const IDLE_MAX: usize = 8;
/// An idle connection is used again only this soon (its owner closes it after 30 s).
const IDLE_FOR: Duration = Duration::from_secs(5);

/// Keeps `conn` to `path` for the next request (its owner said it keeps it open).
pub(crate) fn keep(path: &Path, conn: Conn) {
    let mut idle = crate::sync::lock(&IDLE);
    if idle.len() >= IDLE_MAX {
        idle.remove(0);
    }
    idle.push((path.to_path_buf(), Instant::now(), conn.0));
}

/// An idle connection to `path`, still open at both ends, if one is kept.
fn take_idle(path: &Path) -> Option<UnixStream> {
    let mut idle = crate::sync::lock(&IDLE);
    let now = Instant::now();
    idle.retain(|(_, since, _)| now.duration_since(*since) < IDLE_FOR);
    while let Some(i) = idle.iter().position(|(p, ..)| p == path) {
        let (.., stream) = idle.remove(i);
        if nothing_to_read(&stream) {
            return Some(stream);
        }
    }
    None
}

/// Whether `stream` has nothing to read and is not at its end: an idle connection its owner
/// has not closed (a closed one reads as its end at once).
fn nothing_to_read(stream: &UnixStream) -> bool {
    let mut byte = 0u8;
    // SAFETY: recv peeks at most one byte into a local, without waiting.
    let r = unsafe {
        libc::recv(
            stream.as_raw_fd(),
            (&raw mut byte).cast(),
            1,
            libc::MSG_PEEK | libc::MSG_DONTWAIT,
        )
    };
    r < 0 && io::Error::last_os_error().kind() == io::ErrorKind::WouldBlock
}

/// Sends `line` (one line of JSON, with its newline) to the socket at `path` and returns the
/// one line it answers (without the newline), at most `max` bytes, within `within`, with the
/// connection. With `reuse`, an idle connection to `path` kept by [`keep`] is used if there is
/// one; one its owner closed meanwhile (it read nothing of the request: it closes only idle
/// connections) is replaced by a new one. Dropping the future closes the connection (the
/// server cancels what it was doing for it).
pub(crate) async fn ask(
    path: &Path,
    line: &[u8],
    within: Duration,
    max: u64,
    reuse: bool,
) -> io::Result<(Vec<u8>, Conn)> {
    if let Some(stream) = reuse.then(|| take_idle(path)).flatten() {
        match exchange(stream, line, within, max).await {
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::UnexpectedEof
                        | io::ErrorKind::ConnectionReset
                        | io::ErrorKind::BrokenPipe
                ) => {}
            done => return done,
        }
    }
    exchange(connect(path)?, line, within, max).await
}

/// One request and its answer on `stream`.
async fn exchange(
    stream: UnixStream,
    line: &[u8],
    within: Duration,
    max: u64,
) -> io::Result<(Vec<u8>, Conn)> {
    stream.set_nonblocking(true)?;
    let mut stream = tokio::net::UnixStream::from_std(stream)?;
    let exchange = async {
        stream.write_all(line).await?;
        let mut answer = Vec::new();
        // The owner sends nothing after its answer line until the next request.
        let mut rd = tokio::io::BufReader::new(&mut stream).take(max);
        rd.read_until(b'\n', &mut answer).await?;
        if answer.pop() != Some(b'\n') {
            return Err(closed());
        }
        Ok(answer)
    };
    let answer = tokio::time::timeout(within, exchange)
        .await
        .map_err(|_| timed_out(within))??;
    Ok((answer, Conn(stream.into_std()?)))
}

/// [`ask`], blocking the calling thread (for callers outside an async runtime).
pub(crate) fn ask_blocking(
    path: &Path,
    line: &[u8],
    within: Duration,
    max: u64,
) -> io::Result<Vec<u8>> {
    let deadline = Instant::now() + within;
    let mut stream = connect(path)?;
    let left = || {
        deadline
            .checked_duration_since(Instant::now())
            .filter(|d| !d.is_zero())
            .ok_or_else(|| timed_out(within))
    };
    stream.set_write_timeout(Some(left()?))?;
    stream.write_all(line)?;
    let mut rd = BufReader::new(stream);
    let mut answer = Vec::new();
    loop {
        rd.get_ref().set_read_timeout(Some(left()?))?;
        let buf = match rd.fill_buf() {
            Ok(buf) => buf,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                return Err(timed_out(within));
            }
            Err(e) => return Err(e),
        };
        if buf.is_empty() {
            return Err(closed());
        }
        if let Some(end) = memchr::memchr(b'\n', buf) {
            answer.extend_from_slice(&buf[..end]);
            return Ok(answer);
        }
        answer.extend_from_slice(buf);
        let n = buf.len();
        rd.consume(n);
        if answer.len() as u64 > max {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("the answer is longer than {max} bytes"),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_not_our_socket_is_refused_without_being_followed() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("file.sock");
        fs::write(&file, b"x").unwrap();
        let e = connect(&file).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::PermissionDenied, "{e}");
        assert!(e.to_string().contains("not a socket"), "{e}");
        // A link to a real socket of ours is still refused: links are never followed.
        let real = tmp.path().join("real.sock");
        let _listener = std::os::unix::net::UnixListener::bind(&real).unwrap();
        let link = tmp.path().join("link.sock");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let e = connect(&link).unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        assert!(connect(&real).is_ok());
        let e = connect(&tmp.path().join("none.sock")).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
    }

    /// A stand-in owner at `path`: answers each request line with `answer` (a JSON line),
    /// closing each connection after `per_conn` answers; counts its accepts.
    fn owner(
        path: &Path,
        answer: &'static str,
        per_conn: usize,
    ) -> std::sync::Arc<std::sync::atomic::AtomicUsize> {
        use std::sync::atomic::Ordering;
        let listener = std::os::unix::net::UnixListener::bind(path).unwrap();
        let accepts = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = std::sync::Arc::clone(&accepts);
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { return };
                counted.fetch_add(1, Ordering::SeqCst);
                std::thread::spawn(move || {
                    let mut wr = conn.try_clone().unwrap();
                    let mut rd = BufReader::new(conn);
                    for _ in 0..per_conn {
                        let mut line = String::new();
                        if rd.read_line(&mut line).unwrap_or(0) == 0 {
                            break;
                        }
                        if wr.write_all(format!("{answer}\n").as_bytes()).is_err() {
                            break;
                        }
                    }
                });
            }
        });
        accepts
    }

    /// A connection the owner keeps open serves the next request (one accept for two); one
    /// the owner closed meanwhile is replaced without the request failing.
    #[tokio::test]
    async fn a_kept_connection_is_used_again_and_a_closed_one_replaced() {
        use std::sync::atomic::Ordering;
        let tmp = tempfile::tempdir().unwrap();
        let within = Duration::from_secs(5);
        let open = tmp.path().join("open.sock");
        let accepts = owner(&open, r#"{"ok":true,"open":true,"answer":1}"#, usize::MAX);
        for _ in 0..3 {
            let (answer, conn) = ask(&open, b"{}\n", within, 1024, true).await.unwrap();
            assert_eq!(answer, br#"{"ok":true,"open":true,"answer":1}"#);
            keep(&open, conn);
        }
        assert_eq!(accepts.load(Ordering::SeqCst), 1);
        // Without `reuse` (a wait), a connection of its own.
        ask(&open, b"{}\n", within, 1024, false).await.unwrap();
        assert_eq!(accepts.load(Ordering::SeqCst), 2);

        // An owner that closes after each answer: every request still answered.
        let once = tmp.path().join("once.sock");
        let accepts = owner(&once, r#"{"ok":true,"answer":2}"#, 1);
        for _ in 0..3 {
            let (answer, conn) = ask(&once, b"{}\n", within, 1024, true).await.unwrap();
            assert_eq!(answer, br#"{"ok":true,"answer":2}"#);
            // Kept anyway, to prove a closed connection is never used for a request.
            keep(&once, conn);
        }
        assert_eq!(accepts.load(Ordering::SeqCst), 3);
    }
}
