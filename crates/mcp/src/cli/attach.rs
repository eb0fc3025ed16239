//! `ptyjobs attach <id>`: a person's terminal connected to a running job of a live server on
//! the same state directory — the job's screen first, then its live output; what the person
//! types goes to the job. `Ctrl-]` detaches: the job keeps running and the agent keeps working
//! with it.
//!
//! The connection is the server's Unix socket in the state directory (private directory,
//! socket 0600, peer uid checked by the server); the protocol is documented on
//! [`ptyjobs_engine::AttachServer`]. The person's terminal is put in raw mode while attached
//! and restored when the command ends, on every path out (a guard restores it on drop).

use std::io::{Read, Write};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use ptyjobs_engine::{
    ATTACH_VERSION, AttachHello, AttachReply, Store, attach_keys_frame, attach_resize_frame,
    attach_socket_path,
};
use rustix::event::{PollFd, PollFlags, Timespec, poll};
use rustix::io::Errno;
use rustix::termios::{OptionalActions, Termios, tcgetattr, tcgetwinsize, tcsetattr};

use super::{CmdResult, Failure};

/// The detach key: `Ctrl-]` (GS), as in telnet.
const DETACH: u8 = 0x1d;
/// Resets a terminal the job may have left in a special state: attributes, hidden cursor,
/// bracketed paste, application cursor keys and keypad.
const RESET: &[u8] = b"\x1b[0m\x1b[?25h\x1b[?2004l\x1b[?1l\x1b>";

/// Set by SIGTERM, SIGHUP or SIGQUIT while attached: leave (restoring the terminal) instead of
/// dying in raw mode.
static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

/// Set by SIGWINCH: the person's terminal changed size; the job is told at the next turn.
static WINCH: AtomicBool = AtomicBool::new(false);

extern "C" fn on_winch(_: libc::c_int) {
    WINCH.store(true, Ordering::SeqCst);
}

/// Installs `handler` for `sig` with no flags (so no `SA_RESTART`: a blocking poll returns
/// `EINTR`) and an empty mask. Raw `libc`: rustix has no API to install a signal handler (its
/// `kernel_sigaction` is a Linux-only runtime internal), and the one in the tree,
/// signal-hook-registry (through tokio), always installs with `SA_RESTART`.
fn install(sig: libc::c_int, handler: extern "C" fn(libc::c_int)) {
    // SAFETY: `sigaction` is plain data; all-zero is a valid value (no flags, no restorer),
    // and every field that matters is set below.
    let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
    action.sa_sigaction = handler as *const () as libc::sighandler_t;
    // SAFETY: `sa_mask` is a live `sigset_t` owned by `action`.
    unsafe { libc::sigemptyset(&mut action.sa_mask) };
    // SAFETY: `action` is fully initialised and outlives the call; the handler only stores to
    // an atomic, which is async-signal-safe; the old action is not asked for (null).
    unsafe { libc::sigaction(sig, &action, std::ptr::null_mut()) };
}

/// Catches SIGWINCH (without `SA_RESTART`, like [`catch_signals`]) so that a resize of the
/// person's terminal reaches the job.
fn catch_resizes() {
    install(libc::SIGWINCH, on_winch);
}

/// Catches the signals that would end the command, without `SA_RESTART`: the poll returns
/// `EINTR` and the loop sees [`STOP`].
fn catch_signals() {
    for sig in [libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT] {
        install(sig, on_signal);
    }
}

/// The person's terminal in raw mode; its settings come back when this is dropped.
struct RawMode<'a> {
    fd: BorrowedFd<'a>,
    saved: Termios,
}

impl<'a> RawMode<'a> {
    /// Raw mode on `fd` if it is a terminal; `None` (nothing changed) if it is not.
    fn enter(fd: BorrowedFd<'a>) -> Result<Option<Self>, Failure> {
        let Ok(saved) = tcgetattr(fd) else {
            return Ok(None);
        };
        let mut raw = saved.clone();
        raw.make_raw();
        tcsetattr(fd, OptionalActions::Now, &raw)
            .map_err(|e| Failure::msg(format!("cannot put the terminal in raw mode: {e}")))?;
        Ok(Some(Self { fd, saved }))
    }
}

impl Drop for RawMode<'_> {
    fn drop(&mut self) {
        let _ = tcsetattr(self.fd, OptionalActions::Now, &self.saved);
    }
}

/// The size of the terminal on `fd`, or 80×24.
fn size_of(fd: BorrowedFd<'_>) -> (u16, u16) {
    match tcgetwinsize(fd) {
        Ok(ws) if ws.ws_col > 0 && ws.ws_row > 0 => (ws.ws_col, ws.ws_row),
        _ => (80, 24),
    }
}

/// Reads the server's one-line reply, byte by byte (what follows it is the job's screen).
fn read_reply(sock: &mut UnixStream) -> Result<AttachReply, Failure> {
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    while line.len() < 4096 {
        match sock.read(&mut byte) {
            Ok(0) => break,
            Ok(_) if byte[0] == b'\n' => {
                return serde_json::from_slice(&line)
                    .map_err(|e| Failure::msg(format!("the server's answer is not valid: {e}")));
            }
            Ok(_) => line.push(byte[0]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Failure::msg(format!("reading the server's answer: {e}"))),
        }
    }
    Err(Failure::msg(
        "the server closed the connection without an answer",
    ))
}

/// How an attachment ended.
enum End {
    /// The person pressed the detach key (or their input ended).
    Detached,
    /// The server closed the connection: the job ended (its last line says how) or the server
    /// stopped.
    Closed,
}

/// Attaches to the job `prefix` names; returns when the person detaches or the job ends.
pub(crate) fn run(store: &Store, prefix: &str, cwd: Option<&Path>) -> CmdResult {
    let id = store.resolve_job(prefix, cwd)?;
    let job = store.load(id)?;
    let record = &job.record;
    if record.status.is_final() {
        return Err(Failure::msg(format!(
            "job {id} is not running (status: {}): nothing to attach to; see `ptyjobs logs {id}`",
            record.status
        )));
    }
    if !job.owner_alive {
        return Err(Failure::msg(format!(
            "the server that ran job {id} is gone; the job ended with it"
        )));
    }
    let path = attach_socket_path(&store.config().dir, &record.server.instance);
    let mut sock = UnixStream::connect(&path).map_err(|e| {
        Failure::msg(format!(
            "cannot reach the server of job {id} at {}: {e} (a Node.js manager closed or of a \
             version without attach, such a server, or one that cannot listen there has no \
             socket)",
            path.display()
        ))
    })?;
    let stdin = std::io::stdin();
    let input = stdin.as_fd();
    let (cols, rows) = size_of(input);
    let hello = AttachHello {
        version: ATTACH_VERSION,
        job_id: id.to_string(),
        cols,
        rows,
        restart: None,
        start: None,
        control: None,
        keep_open: false,
    };
    let mut line = serde_json::to_vec(&hello).map_err(|e| Failure::msg(e.to_string()))?;
    line.push(b'\n');
    sock.write_all(&line)
        .map_err(|e| Failure::msg(format!("cannot talk to the server: {e}")))?;
    let reply = read_reply(&mut sock)?;
    if !reply.ok {
        return Err(Failure::msg(
            reply.error.unwrap_or_else(|| "the server refused".into()),
        ));
    }
    catch_signals();
    catch_resizes();
    let end = {
        let _raw = RawMode::enter(input)?;
        // After raw mode: what the person types from now on goes to the job as typed.
        eprint!(
            "[attached to job {id}: {}; press Ctrl-] to detach]\r\n",
            record.command
        );
        pump(&mut sock, input)?
    };
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(RESET);
    let _ = out.flush();
    if let End::Detached = end {
        let _ = sock.shutdown(std::net::Shutdown::Both);
        eprint!(
            "\r\n[detached from job {id}: it keeps running; `ptyjobs attach {}` comes back]\r\n",
            &id.to_string()[..8]
        );
    }
    Ok(())
}

/// Copies the socket to stdout and stdin to the socket until the detach key, the end of
/// stdin, or the server's close.
fn pump(sock: &mut UnixStream, input: BorrowedFd<'_>) -> Result<End, Failure> {
    let mut out = std::io::stdout().lock();
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        if STOP.load(Ordering::SeqCst) {
            return Ok(End::Detached);
        }
        if WINCH.swap(false, Ordering::SeqCst) {
            let (cols, rows) = size_of(input);
            if sock.write_all(&attach_resize_frame(cols, rows)).is_err() {
                return Ok(End::Closed);
            }
        }
        let (sock_ready, input_ready) = {
            let mut fds = [
                PollFd::from_borrowed_fd(sock.as_fd(), PollFlags::IN),
                PollFd::from_borrowed_fd(input, PollFlags::IN),
            ];
            // A bounded poll: a signal that came just before it is seen within half a second.
            let half_second = Timespec {
                tv_sec: 0,
                tv_nsec: 500_000_000,
            };
            match poll(&mut fds, Some(&half_second)) {
                Ok(_) => {}
                Err(Errno::INTR) => continue,
                Err(e) => return Err(Failure::msg(format!("poll: {e}"))),
            }
            let ready = |f: &PollFd<'_>| {
                f.revents()
                    .intersects(PollFlags::IN | PollFlags::HUP | PollFlags::ERR)
            };
            (ready(&fds[0]), ready(&fds[1]))
        };
        if sock_ready {
            match sock.read(&mut buf) {
                Ok(0) => return Ok(End::Closed),
                Ok(n) => {
                    out.write_all(&buf[..n])?;
                    out.flush()?;
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => return Ok(End::Closed),
            }
        }
        if input_ready {
            let n = match rustix::io::read(input, &mut buf[..]) {
                Ok(0) => return Ok(End::Detached),
                Ok(n) => n,
                Err(Errno::INTR | Errno::AGAIN) => continue,
                Err(e) => return Err(Failure::msg(format!("reading the terminal: {e}"))),
            };
            let keys = &buf[..n];
            let (send, detach) = match keys.iter().position(|&b| b == DETACH) {
                Some(at) => (&keys[..at], true),
                None => (keys, false),
            };
            if !send.is_empty() && sock.write_all(&attach_keys_frame(send)).is_err() {
                return Ok(End::Closed);
            }
            if detach {
                return Ok(End::Detached);
            }
        }
    }
}
