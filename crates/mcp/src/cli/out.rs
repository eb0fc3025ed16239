//! stdout as the subcommands see it: a buffered writer, whether it is a terminal (colour,
//! width), and whether its reader has gone away.

use std::io::{BufWriter, IsTerminal, StdoutLock, Write};

/// Buffered stdout. Writes fail with `BrokenPipe` once the reader is gone (Rust ignores
/// SIGPIPE), which [`super::Failure`] turns into a quiet exit.
pub(crate) struct Out {
    w: BufWriter<StdoutLock<'static>>,
    /// Whether stdout is a terminal.
    pub tty: bool,
}

impl Out {
    pub(crate) fn new() -> Self {
        let stdout = std::io::stdout();
        let tty = stdout.is_terminal();
        Self {
            w: BufWriter::with_capacity(64 * 1024, stdout.lock()),
            tty,
        }
    }

    /// Whether to colour, as anstream decides for stdout: on a terminal that has colours
    /// (`TERM` set and not `dumb`; any Windows console), never when `NO_COLOR` is set
    /// (non-empty) or `CLICOLOR=0`, and even on a pipe with `CLICOLOR_FORCE`.
    pub(crate) fn colour(&self) -> bool {
        anstream::AutoStream::choice(&std::io::stdout()) != anstream::ColorChoice::Never
    }

    /// Columns of the terminal on stdout (`COLUMNS` first), or `None` when it is not one.
    pub(crate) fn width(&self) -> Option<usize> {
        if !self.tty {
            return None;
        }
        if let Some(cols) = std::env::var("COLUMNS")
            .ok()
            .and_then(|c| c.trim().parse::<usize>().ok())
            .filter(|&c| c > 0)
        {
            return Some(cols);
        }
        crate::platform::terminal_width()
    }

    /// Writes `line` and a newline.
    pub(crate) fn line(&mut self, line: &str) -> std::io::Result<()> {
        self.w.write_all(line.as_bytes())?;
        self.w.write_all(b"\n")
    }

    /// Writes a line of a job's output, made safe for a terminal (see
    /// [`super::format::output_line`]), and a newline.
    pub(crate) fn output_line(&mut self, line: &str) -> std::io::Result<()> {
        let line = super::format::output_line(line, self.tty);
        self.line(&line)
    }

    /// Whether the reader of stdout has gone away (a pipe whose read end is closed), checked
    /// without writing: lets `logs --follow` end while the job prints nothing.
    pub(crate) fn reader_gone(&self) -> bool {
        crate::platform::stdout_reader_gone()
    }
}

impl Write for Out {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.w.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.w.flush()
    }
}
