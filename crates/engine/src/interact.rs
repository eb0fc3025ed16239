//! Talking to a running job: writes, interactions, keys, resizes. Everything written goes
//! through the job's input queue ([`crate::input_queue`]), in order with the terminal's replies.
//! A running job of another live server sharing the state directory is talked to by that
//! server, asked over its attach socket ([`crate::control`]): its queue, its terminal's modes.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::control::{ControlBytes, ControlOp, SLACK};
use crate::error::Result;
use crate::job::{JobId, JobStatus};
use crate::keys::encode_keys;
use crate::manager::{Controlled, JobManager, check_size};
use crate::sync::lock;
use crate::sys::pty;

/// How long after the last output an interaction counts as answered.
const INTERACT_IDLE: Duration = Duration::from_millis(300);
/// How long a key press may wait for room in the terminal's input buffer.
const WRITE_DEADLINE: Duration = Duration::from_secs(2);
/// Input longer than this, or spanning lines, is sent as a bracketed paste when the program
/// enabled bracketed paste, so an editor or REPL takes it as text rather than as keystrokes.
const PASTE_MIN: usize = 256;

/// The final Enter of `input`, as typed (`\r`) or as given (`\n`).
fn strip_enter(input: &[u8]) -> Option<&[u8]> {
    input
        .strip_suffix(b"\r")
        .or_else(|| input.strip_suffix(b"\n"))
}

fn is_paste(input: &[u8]) -> bool {
    let body = strip_enter(input).unwrap_or(input);
    body.len() >= PASTE_MIN || body.iter().any(|&b| b == b'\n' || b == b'\r')
}

/// `text` as a terminal sends it when it is typed: each line ends with Enter, a carriage
/// return (`\r`), whether it was given as `\n` or `\r\n`; with `enter`, Enter is also pressed
/// after the last line (unless the text already ends a line). A raw-mode program (a prompt
/// library, a REPL) sees exactly the keys a person would press; a line-mode one gets its lines
/// as before (the terminal turns `\r` into `\n`).
pub fn typed_input(text: &str, enter: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len() + 1);
    let mut bytes = text.bytes().peekable();
    while let Some(b) = bytes.next() {
        match b {
            b'\r' if bytes.peek() == Some(&b'\n') => {}
            b'\n' => out.push(b'\r'),
            b => out.push(b),
        }
    }
    if enter && !out.ends_with(b"\r") {
        out.push(b'\r');
    }
    out
}

/// What an interaction with a job produced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Interaction {
    /// The text from the line the input went to (a prompt's line) to the end: the echo of the
    /// input and the job's response. When the program redrew lines above that line (a menu
    /// replaced by the next question), from the first line that changed: see
    /// `slice.rewritten_from`.
    pub output: String,
    /// Bytes of input the terminal accepted.
    pub bytes_written: usize,
    /// The job's status after the response.
    pub status: JobStatus,
    /// Absolute line number where `output` starts.
    pub first_line: u64,
    /// Absolute line number after the end of `output`.
    pub next_offset: u64,
    /// The same lines as an output slice read at the same moment (counts, `final_lines`,
    /// status), for a face to fit into its budget without reading the transcript again.
    pub slice: crate::output::OutputSlice,
}

impl JobManager {
    /// Writes what the terminal takes now, without blocking; returns the bytes written.
    ///
    /// # Errors
    /// [`crate::Error::JobNotFound`], [`crate::Error::NotRunning`].
    pub fn write(&self, id: JobId, data: &[u8]) -> Result<usize> {
        let job = match self.inner.controlled_input(id)? {
            Controlled::Own(job) => job,
            Controlled::Remote(r) => {
                let data = ControlBytes(data.to_vec());
                return r.ask_blocking(&ControlOp::Write { data }, SLACK);
            }
        };
        let master = job.master()?;
        // Another caller's write is under way: nothing can be written now without cutting it.
        let Some(_turn) = job.input.try_turn(&master) else {
            return Ok(0);
        };
        job.waiting.clear(); // the input may answer the prompt
        Ok(pty::write_some(&master, data)?)
    }

    /// Writes `data`, waiting while the terminal's input buffer is full, for at most
    /// `deadline`; returns the bytes written (fewer than `data.len()` if the job does not read).
    ///
    /// # Errors
    /// [`crate::Error::JobNotFound`], [`crate::Error::NotRunning`].
    pub async fn write_all(&self, id: JobId, data: &[u8], deadline: Duration) -> Result<usize> {
        let job = match self.inner.controlled_input(id)? {
            Controlled::Own(job) => job,
            Controlled::Remote(r) => {
                let op = ControlOp::WriteAll {
                    data: ControlBytes(data.to_vec()),
                    deadline_ms: millis(deadline),
                };
                return r.ask(&op, deadline.saturating_add(SLACK)).await;
            }
        };
        let master = job.master()?;
        job.waiting.clear(); // the input may answer the prompt
        let until = Instant::now() + deadline;
        let Some(_turn) = job.input.turn(&master, until).await else {
            return Ok(0);
        };
        let mut written = 0;
        while written < data.len() {
            match pty::write_some(&master, &data[written..]) {
                Ok(0) => {
                    if Instant::now() >= until || lock(&job.state).is_final() {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                Ok(n) => written += n,
                Err(_) if written > 0 => break,
                Err(e) => return Err(e.into()),
            }
        }
        // Replies that queued behind this input follow it now, while the turn is still held
        // (nothing else would retry them if the program's input queue is full right now).
        while !job.input.flush(&master) && Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        Ok(written)
    }

    /// Sends `input` and returns the job's response: as soon as output has been quiet for a
    /// short while after the response began (the echo of the input does not count), or the job
    /// ended, and never later than `wait`.
    ///
    /// # Errors
    /// [`crate::Error::JobNotFound`], [`crate::Error::NotRunning`].
    pub async fn interact(&self, id: JobId, input: &[u8], wait: Duration) -> Result<Interaction> {
        self.interact_with(id, input, &[] as &[&str], wait).await
    }

    /// [`Self::interact`] with named keys pressed after `input` (see [`crate::encode_keys`]),
    /// encoded for the program's cursor mode; the response to both is awaited together.
    ///
    /// # Errors
    /// [`crate::Error::InvalidArgument`] for an unknown key (nothing is written then),
    /// [`crate::Error::JobNotFound`], [`crate::Error::NotRunning`].
    pub async fn interact_with<S: AsRef<str>>(
        &self,
        id: JobId,
        input: &[u8],
        keys: &[S],
        wait: Duration,
    ) -> Result<Interaction> {
        let job = match self.inner.controlled_input(id)? {
            Controlled::Own(job) => job,
            Controlled::Remote(r) => {
                let op = ControlOp::Interact {
                    input: ControlBytes(input.to_vec()),
                    keys: keys.iter().map(|k| k.as_ref().to_owned()).collect(),
                    wait_ms: millis(wait),
                };
                return r.ask(&op, wait.saturating_add(SLACK)).await;
            }
        };
        let master = job.master()?;
        let start = Instant::now();
        let deadline = start + wait;
        let (mark, bytes_before, paste, pressed) = {
            let mut s = lock(&job.state);
            // The screen as the caller finds it: what changes from here on is its response.
            s.term.remember_screen();
            let paste = s.term.bracketed_paste() && is_paste(input);
            let pressed = encode_keys(keys, s.term.application_cursor())?;
            (
                s.term.cursor_line(),
                job.events.borrow().bytes,
                paste,
                pressed,
            )
        };
        let wrapped;
        let input = if paste {
            // The text goes inside the paste brackets; a final newline becomes Enter after it.
            let (body, enter): (&[u8], &[u8]) = match strip_enter(input) {
                Some(body) => (body, b"\r"),
                None => (input, b""),
            };
            wrapped = [b"\x1b[200~", body, b"\x1b[201~", enter].concat();
            &wrapped[..]
        } else {
            input
        };
        let echo = if pty::echoes(&master) {
            // A line-mode terminal echoes Enter as CR LF.
            input.len() + input.iter().filter(|&&b| b == b'\n' || b == b'\r').count()
        } else {
            0
        };
        let joined;
        let input = if pressed.is_empty() {
            input
        } else {
            joined = [input, &pressed].concat();
            &joined[..]
        };
        let mut rx = job.events.subscribe();
        let bytes_written = self.write_all(id, input, wait).await?;
        let mut last_change = Instant::now();
        loop {
            let ev = *rx.borrow_and_update();
            if ev.finished {
                break;
            }
            let responded = ev.bytes.saturating_sub(bytes_before) > echo as u64;
            let wake = if responded {
                (last_change + INTERACT_IDLE).min(deadline)
            } else {
                deadline
            };
            if Instant::now() >= wake {
                break;
            }
            match tokio::time::timeout_at(wake.into(), rx.changed()).await {
                Ok(Ok(())) => last_change = Instant::now(),
                Ok(Err(_)) => break,
                Err(_) => {}
            }
        }
        let mut s = lock(&job.state);
        let status = s.status();
        let slice = s.term.since(mark, status);
        Ok(Interaction {
            output: slice.output.clone(),
            bytes_written,
            status,
            first_line: slice.first_line,
            next_offset: slice.next_offset,
            slice,
        })
    }

    /// Sends named keys and chords (`Enter`, `C-c`, `Up`, ...; see [`crate::encode_keys`]),
    /// encoded for the program's current cursor mode. Returns the bytes written.
    ///
    /// # Errors
    /// [`crate::Error::InvalidArgument`] for an unknown key, [`crate::Error::JobNotFound`],
    /// [`crate::Error::NotRunning`].
    pub async fn send_keys<S: AsRef<str>>(&self, id: JobId, keys: &[S]) -> Result<usize> {
        let job = match self.inner.controlled_input(id)? {
            Controlled::Own(job) => job,
            Controlled::Remote(r) => {
                let keys = keys.iter().map(|k| k.as_ref().to_owned()).collect();
                let op = ControlOp::Keys { keys };
                return r.ask(&op, WRITE_DEADLINE.saturating_add(SLACK)).await;
            }
        };
        let app_cursor = lock(&job.state).term.application_cursor();
        let bytes = encode_keys(keys, app_cursor)?;
        self.write_all(id, &bytes, WRITE_DEADLINE).await
    }

    /// Resizes the job's terminal (the program gets SIGWINCH). Returns false, changing
    /// nothing, when the job has already ended.
    ///
    /// # Errors
    /// [`crate::Error::JobNotFound`], [`crate::Error::InvalidArgument`] for a size outside 1..=1000.
    pub fn resize(&self, id: JobId, cols: u16, rows: u16) -> Result<bool> {
        let (cols, rows) = (check_size("cols", cols)?, check_size("rows", rows)?);
        let job = match self.inner.controlled(id)? {
            Controlled::Own(job) => job,
            Controlled::Remote(r) => {
                return r.ask_blocking(&ControlOp::Resize { cols, rows }, SLACK);
            }
        };
        let mut s = lock(&job.state);
        let Some(master) = s.master() else {
            return Ok(false);
        };
        s.term.resize(cols, rows);
        s.size = (cols, rows);
        pty::set_size(&master, cols, rows)?;
        Ok(true)
    }

    /// [`Self::resize`] for a caller on an async runtime: a job of another server is resized
    /// by that server without blocking the caller's worker.
    ///
    /// # Errors
    /// As [`Self::resize`].
    pub async fn resize_async(&self, id: JobId, cols: u16, rows: u16) -> Result<bool> {
        let (cols, rows) = (check_size("cols", cols)?, check_size("rows", rows)?);
        match self.inner.controlled(id)? {
            Controlled::Own(_) => self.resize(id, cols, rows),
            Controlled::Remote(r) => r.ask(&ControlOp::Resize { cols, rows }, SLACK).await,
        }
    }
}

/// `d` in whole milliseconds, saturated.
fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_text_ends_each_line_with_a_carriage_return() {
        assert_eq!(typed_input("abc", true), b"abc\r");
        assert_eq!(typed_input("a\nb\r\nc", true), b"a\rb\rc\r");
        assert_eq!(typed_input("a\n", true), b"a\r", "one Enter, not two");
        assert_eq!(typed_input("a\nb", false), b"a\rb");
        assert_eq!(typed_input("", true), b"\r");
    }

    #[test]
    fn a_paste_is_told_by_its_body() {
        assert!(!is_paste(b"abc\r"));
        assert!(is_paste(b"a\rb\r"));
        assert!(is_paste(&[b'x'; PASTE_MIN]));
        assert_eq!(strip_enter(b"ab\r"), Some(&b"ab"[..]));
    }
}
