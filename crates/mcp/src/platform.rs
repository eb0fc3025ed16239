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
        use std::os::fd::AsFd;
        let ws = rustix::termios::tcgetwinsize(std::io::stdout().as_fd()).ok()?;
        (ws.ws_col > 0).then_some(usize::from(ws.ws_col))
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
        use rustix::event::{PollFd, PollFlags, Timespec, poll};
        let stdout = std::io::stdout();
        let mut fds = [PollFd::new(&stdout, PollFlags::empty())];
        // No wait: a zero timeout only looks.
        let now = Timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        poll(&mut fds, Some(&now)).is_ok_and(|n| n > 0)
            && fds[0].revents().intersects(PollFlags::ERR | PollFlags::HUP)
    }
    #[cfg(windows)]
    {
        false
    }
}
