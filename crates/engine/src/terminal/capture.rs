//! Receives the emulator's events for the transcript: rows that scroll off the main screen
//! become final lines (wrapped rows joined again, long lines cut at the line cap), and the
//! window title is kept.

use super::scan::restore_row;
use crate::output::Transcript;

/// Receives vt100's events: rows scrolling off, the window title.
pub(super) struct Capture {
    pub(super) transcript: Transcript,
    /// The current unfinished line made of wrapped rows that already scrolled off.
    pub(super) pending: String,
    pub(super) max_line_bytes: usize,
    pub(super) title: Option<String>,
    /// Rows scrolling off that the fast path already put into the transcript itself.
    pub(super) discard: usize,
    /// Final lines not yet taken by the owner, while it listens ([`Terminal::emit_final_lines`]).
    pub(super) emitted: Option<FinalLines>,
}

impl Capture {
    pub(super) fn new(transcript_bytes: usize, max_line_bytes: usize) -> Self {
        Self {
            transcript: Transcript::new(transcript_bytes),
            pending: String::new(),
            max_line_bytes: max_line_bytes.max(1),
            title: None,
            discard: 0,
            emitted: None,
        }
    }

    pub(super) fn push_text(&mut self, text: &str, line_ends: bool) {
        if line_ends && self.pending.is_empty() && text.len() <= self.max_line_bytes {
            // A whole line (the common case): straight into the transcript, no copy of its own.
            final_line(&mut self.transcript, &mut self.emitted, text);
            return;
        }
        self.pending.push_str(text);
        // Pieces of at most `max_line_bytes` are cut from the front, and the rest is moved
        // once: a long line costs time in proportion to its length.
        let mut start = 0;
        while self.pending.len() - start > self.max_line_bytes {
            let mut cut = self.max_line_bytes;
            while !self.pending.is_char_boundary(start + cut) {
                cut -= 1;
            }
            let end = start + cut.max(1);
            final_line(
                &mut self.transcript,
                &mut self.emitted,
                &self.pending[start..end],
            );
            start = end;
        }
        if start > 0 {
            self.pending.drain(..start);
        }
        if line_ends {
            final_line(&mut self.transcript, &mut self.emitted, &self.pending);
            if self.pending.capacity() > 4096 {
                // A long line's room is not kept by a job that may print nothing more.
                self.pending = String::new();
            } else {
                self.pending.clear();
            }
        }
    }
}

/// A line is final: into the transcript, and out as an event if the owner listens.
fn final_line(transcript: &mut Transcript, emitted: &mut Option<FinalLines>, line: &str) {
    if let Some(emitted) = emitted {
        emitted.push(line);
    }
    transcript.push_str(line);
}

/// Lines that became final, in order, for the job's other sinks (the disk log): their text one
/// after another in one buffer, each ended by `\n` as the log stores it, not a `String` per
/// line — so a batch goes to the log in one write, with no copy of its own.
#[derive(Debug, Default)]
pub(crate) struct FinalLines {
    text: String,
    /// Where each line's `\n` is.
    ends: Vec<usize>,
}

/// The room a job keeps for its next batch; a bigger buffer (one huge batch) is let go.
const KEPT_ROOM: usize = 1 << 20;

impl FinalLines {
    fn push(&mut self, line: &str) {
        self.text.push_str(line);
        self.ends.push(self.text.len());
        self.text.push('\n');
    }

    /// A batch of `lines` (for tests of its sinks).
    #[cfg(test)]
    pub(crate) fn of(lines: &[&str]) -> Self {
        let mut batch = Self::default();
        for line in lines {
            batch.push(line);
        }
        batch
    }

    /// Whether there is no line.
    pub(crate) fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// How many lines there are.
    pub(crate) fn len(&self) -> usize {
        self.ends.len()
    }

    /// Every line, each followed by `\n`.
    pub(crate) fn text(&self) -> &str {
        &self.text
    }

    /// The lines, in order (without their `\n`).
    pub(crate) fn iter(&self) -> impl Iterator<Item = &str> {
        let mut at = 0;
        self.ends.iter().map(move |&end| {
            let line = self.text.get(at..end).unwrap_or_default();
            at = end + 1;
            line
        })
    }

    /// Empties it, keeping its room for the next batch unless that room is large.
    pub(crate) fn clear(&mut self) {
        if self.text.capacity() > KEPT_ROOM {
            *self = Self::default();
        } else {
            self.text.clear();
            self.ends.clear();
        }
    }
}

impl<'a> IntoIterator for &'a FinalLines {
    type Item = &'a str;
    type IntoIter = Box<dyn Iterator<Item = &'a str> + 'a>;

    fn into_iter(self) -> Self::IntoIter {
        Box::new(self.iter())
    }
}

#[cfg(test)]
impl IntoIterator for FinalLines {
    type Item = String;
    type IntoIter = std::vec::IntoIter<String>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
            .map(str::to_owned)
            .collect::<Vec<_>>()
            .into_iter()
    }
}

impl vt100::Callbacks for Capture {
    fn on_scroll(&mut self, row: vt100::capture::RowContents<'_>, alternate_screen: bool) {
        if alternate_screen {
            return;
        }
        if self.discard > 0 {
            self.discard -= 1;
            return;
        }
        let mut formatted = String::new();
        let mut state = vt100::capture::BasicFormattedCaptureState::new();
        let _ = row.write_formatted_basic(&mut formatted, &mut state);
        let wrapped = !ends_line(&row, &state);
        let mut text = String::with_capacity(formatted.len());
        for piece in vt100::capture::basic_formatted_to_plain(&formatted) {
            text.push_str(piece);
        }
        self.push_text(&restore_row(text), !wrapped);
    }
}

/// Whether the row just written with `state` ended its line (was not wrapped): vt100 keeps that
/// in the capture state as "a newline is pending", which a second write reveals by starting
/// with `\n`. The probe writer stops that second write at its first character.
fn ends_line(
    row: &vt100::capture::RowContents<'_>,
    state: &vt100::capture::BasicFormattedCaptureState,
) -> bool {
    struct FirstChar(Option<char>);
    impl std::fmt::Write for FirstChar {
        fn write_str(&mut self, s: &str) -> std::fmt::Result {
            self.0 = s.chars().next();
            Err(std::fmt::Error)
        }
    }
    let mut probe = FirstChar(None);
    let _ = row.write_formatted_basic(&mut probe, &mut state.clone());
    probe.0 == Some('\n')
}
