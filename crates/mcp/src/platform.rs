//! What the face needs from the OS beyond the engine: termination requests, the local time
//! zone, and the terminal on stdout. The one file of this crate that knows the platform.

/// The requests to shut down: SIGTERM and SIGINT on Unix, Ctrl-C / Ctrl-Break on Windows.
pub(crate) struct Termination {
    #[cfg(unix)]
    term: tokio::signal::unix::Signal,
    #[cfg(unix)]
    int: tokio::signal::unix::Signal,
    #[cfg(windows)]
    ctrl_c: tokio::signal::windows::CtrlC,
    #[cfg(windows)]
    ctrl_break: tokio::signal::windows::CtrlBreak,
}

impl Termination {
    /// Starts listening (call inside the runtime).
    pub(crate) fn new() -> Result<Self, String> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Ok(Self {
                term: signal(SignalKind::terminate()).map_err(|e| format!("SIGTERM: {e}"))?,
                int: signal(SignalKind::interrupt()).map_err(|e| format!("SIGINT: {e}"))?,
            })
        }
        #[cfg(windows)]
        {
            use tokio::signal::windows::{ctrl_break, ctrl_c};
            Ok(Self {
                ctrl_c: ctrl_c().map_err(|e| format!("Ctrl-C: {e}"))?,
                ctrl_break: ctrl_break().map_err(|e| format!("Ctrl-Break: {e}"))?,
            })
        }
    }

    /// Waits for the next request; returns its name.
    pub(crate) async fn recv(&mut self) -> &'static str {
        #[cfg(unix)]
        {
            tokio::select! {
                _ = self.term.recv() => "SIGTERM",
                _ = self.int.recv() => "SIGINT",
            }
        }
        #[cfg(windows)]
        {
            tokio::select! {
                _ = self.ctrl_c.recv() => "Ctrl-C",
                _ = self.ctrl_break.recv() => "Ctrl-Break",
            }
        }
    }
}

/// Columns of the terminal on stdout, asked of the terminal itself (Unix); `None` elsewhere.
pub(crate) fn terminal_width() -> Option<usize> {
    #[cfg(unix)]
    {
        // SAFETY: `winsize` is plain integers, zero is a valid value; TIOCGWINSZ only writes it.
        let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
        // SAFETY: fd 1 is ours to query; the pointer is to a live `winsize`.
        let r = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut ws) };
        (r == 0 && ws.ws_col > 0).then_some(usize::from(ws.ws_col))
    }
    #[cfg(windows)]
    {
        None
    }
}

/// Whether the reader of stdout has gone away (a pipe whose read end is closed), checked
/// without writing (Unix; on Windows a write finds out).
pub(crate) fn stdout_reader_gone() -> bool {
    #[cfg(unix)]
    {
        let mut fd = libc::pollfd {
            fd: libc::STDOUT_FILENO,
            events: 0,
            revents: 0,
        };
        // SAFETY: one valid `pollfd`, no wait; poll only writes `revents`.
        let r = unsafe { libc::poll(&mut fd, 1, 0) };
        r > 0 && fd.revents & (libc::POLLERR | libc::POLLHUP) != 0
    }
    #[cfg(windows)]
    {
        false
    }
}
