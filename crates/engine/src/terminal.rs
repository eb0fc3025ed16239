//! The vt100 wrapper: bytes in; the transcript (log view) and the screen view out.
//!
//! Rules of the transcript:
//! - rows that scroll off the top of the main screen are final and appended as lines (rows the
//!   terminal wrapped are joined again);
//! - rows wiped by a full clear (`ESC[2J`, `ESC c`, or `ESC[J` with the cursor at home) are
//!   appended before the clear takes effect, so a test watcher's previous run is not lost;
//! - what is drawn on the alternate screen never enters the transcript;
//! - the rows still on the main screen are appended at read time (they may still change).
//!
//! The result never depends on how the bytes were split across [`Terminal::feed`] calls: a mirror
//! of the emulator's parser ([`parse`]) knows at every byte whether the emulator is drawing text,
//! inside a control sequence or inside a string, and strings (OSC, DCS, SOS, PM, APC) are bounded
//! before anything buffers them.
//!
//! The terminal does no I/O: every final line is an event ([`Terminal::take_final_lines`]) that
//! its owner hands to the other sinks of the job (the disk log), as alacritty's
//! `Term<T: EventListener>` does; the in-memory transcript is the one sink it keeps itself.
//!
//! Queries a program writes (cursor position, status, device attributes, size, colours, modes,
//! version) are answered from the emulator's state at that point; the answers are queued as
//! reply bytes ([`Terminal::take_replies`]) for the owner to write to the program's input. They
//! never enter the transcript.

use serde::{Deserialize, Serialize};

use crate::fastpath::LineModel;
use crate::job::JobStatus;
use crate::output::OutputSlice;

mod adopt;
mod capture;
pub(crate) use capture::FinalLines;
mod deferred;
mod fast;
mod feed;
mod formatted;
mod parse;
mod replies;
mod scan;
mod shown;
mod wide;

use capture::Capture;
use deferred::Deferred;
use parse::{Mirror, State};
use scan::{REPLACEMENT, Watched, sanitize_utf8, screen_rows, screen_text};

/// What a person looking at the terminal sees right now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScreenSnapshot {
    /// Every visible row as text (trailing blanks trimmed), top to bottom.
    pub rows: Vec<String>,
    /// Cursor row, 0-based.
    pub cursor_row: u16,
    /// Cursor column, 0-based.
    pub cursor_col: u16,
    /// Terminal width.
    pub cols: u16,
    /// Terminal height.
    pub height: u16,
    /// Whether a full-screen program switched to the alternate screen.
    pub alternate_screen: bool,
    /// The window title the program set (OSC 0/2), if any.
    pub title: Option<String>,
}

fn nonzero(v: u16) -> std::num::NonZeroU16 {
    std::num::NonZeroU16::new(v).unwrap_or(std::num::NonZeroU16::MIN)
}

/// One job's terminal model: the emulator, the transcript, and what is held between chunks.
pub struct Terminal {
    parser: vt100::Parser<Capture>,
    /// The state of the emulator's parser, with the sequence or string being read.
    mirror: Mirror,
    /// Answers to queries, not yet taken by the owner.
    replies: Vec<u8>,
    /// The last character printed, which `CSI b` repeats (the emulator's own memory of it
    /// misses what the line model printed).
    last_printed: Option<char>,
    /// Raw bytes of a UTF-8 character cut off at the end of the last chunk.
    utf8_tail: Vec<u8>,
    /// The main screen's lines, saved when a program switched to the alternate screen (vt100
    /// shows only the active screen).
    saved_main: Vec<String>,
    /// Whether the fast path may be used (tests turn it off to compare with the emulator).
    fast: bool,
    /// The fast path's model of the bottom row, while it is valid (see [`crate::fastpath`]).
    model: Option<LineModel>,
    /// The screen a long line or a run of short lines left, not drawn into the emulator yet
    /// (see [`Deferred`]): anything that draws, or reads the emulator, draws it first
    /// ([`Self::materialize`]), and the views ([`Self::screen`], [`Self::screen_lines`]) read
    /// it as the screen it stands for. While it is held, the model is too.
    deferred: Option<Deferred>,
    /// A scroll region or insert mode is set: the fast path's picture of the screen is wrong.
    unusual_modes: (bool, bool),
    /// The last screen, once the job ended and the emulator was dropped ([`Self::finish`]).
    frozen: Option<ScreenSnapshot>,
    /// The size (cols, rows) while nothing was fed: the emulator is then a 1×1 stand-in, and
    /// its grid (32 bytes a cell, ~150 KB at 120×40) is allocated by the first output. A job
    /// that never prints (a server started in the background, `sleep`) costs little.
    unborn: Option<(u16, u16)>,
    /// What reads showed of the lines that may still change (see [`shown`]).
    shown: shown::Shown,
    /// When the screen is looked at for taking over (see [`Self::adopt_lines`]).
    adopt: adopt::Adopt,
}

impl std::fmt::Debug for Terminal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Terminal")
            .field("size", &self.screen_size())
            .finish()
    }
}

impl Terminal {
    /// A blank terminal of `cols` × `rows` whose transcript holds at most `transcript_bytes`
    /// and splits lines longer than `max_line_bytes`.
    pub fn new(cols: u16, rows: u16, transcript_bytes: usize, max_line_bytes: usize) -> Self {
        let capture = Capture::new(transcript_bytes, max_line_bytes);
        let one = nonzero(1);
        Self {
            parser: vt100::Parser::new_with_callbacks(one, one, 0, capture),
            mirror: Mirror::default(),
            replies: Vec::new(),
            last_printed: None,
            utf8_tail: Vec::new(),
            saved_main: Vec::new(),
            fast: true,
            model: None,
            deferred: None,
            unusual_modes: (false, false),
            frozen: None,
            unborn: Some((cols, rows)),
            shown: shown::Shown::default(),
            adopt: adopt::Adopt::default(),
        }
    }

    /// Makes the real emulator, if it was not yet: exactly what a new one would be.
    fn birth(&mut self) {
        if let Some((cols, rows)) = self.unborn.take() {
            let capture = std::mem::replace(self.parser.callbacks_mut(), Capture::new(0, 1));
            self.parser =
                vt100::Parser::new_with_callbacks(nonzero(rows), nonzero(cols), 0, capture);
        }
    }

    /// The same terminal without the fast path: every byte goes through the emulator. The
    /// reference the fast path is tested against.
    pub fn emulator_only(
        cols: u16,
        rows: u16,
        transcript_bytes: usize,
        max_line_bytes: usize,
    ) -> Self {
        Self {
            fast: false,
            ..Self::new(cols, rows, transcript_bytes, max_line_bytes)
        }
    }

    /// Feeds bytes from the PTY.
    pub fn feed(&mut self, input: &[u8]) {
        if input.is_empty() {
            return;
        }
        self.birth();
        let clean = sanitize_utf8(&mut self.utf8_tail, input);
        self.feed_clean(&clean);
    }

    /// Takes the answers to the queries fed so far, in order: bytes for the program's input.
    pub fn take_replies(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.replies)
    }

    /// Feeds whatever was held back; call once the PTY reached EOF. Then everything is final:
    /// the lines still on screen join the transcript, and the emulator (a screenful of cells,
    /// most of a finished job's memory) gives way to a snapshot of its rows, which
    /// [`Self::screen`] keeps returning.
    pub fn finish(&mut self) {
        if !self.utf8_tail.is_empty() {
            self.utf8_tail.clear();
            if self.mirror.state == State::Ground {
                self.process(REPLACEMENT);
            }
        }
        // A sequence or string cut off by the end is never dispatched.
        self.mirror = Mirror::default();
        self.materialize();
        self.model = None;
        if self.frozen.is_some() {
            return;
        }
        let snapshot = self.screen();
        let lines = self.screen_lines();
        let one = nonzero(1);
        let mut capture = std::mem::replace(self.parser.callbacks_mut(), Capture::new(0, 1));
        capture.pending.clear();
        for line in lines {
            capture.push_text(&line, true);
        }
        self.parser = vt100::Parser::new_with_callbacks(one, one, 0, capture);
        self.saved_main = Vec::new();
        self.frozen = Some(snapshot);
    }

    /// Acts on a watched sequence before the emulator applies it.
    fn before(&mut self, what: Watched) {
        match what {
            Watched::ScrollRegion(on) => self.unusual_modes.0 = on,
            Watched::InsertMode(on) => self.unusual_modes.1 = on,
            Watched::Reset => self.unusual_modes = (false, false),
            _ => {}
        }
        let screen = self.parser.screen();
        if screen.alternate_screen() {
            return;
        }
        match what {
            Watched::Clear | Watched::Reset => self.commit_screen(),
            Watched::ClearBelow if screen.cursor_position() == (0, 0) => self.commit_screen(),
            Watched::ClearBelow => {}
            Watched::EnterAlternate => self.saved_main = self.screen_lines(),
            Watched::ScrollRegion(_) | Watched::InsertMode(_) => {}
        }
    }

    /// Moves the main screen's lines into the transcript (they are about to be wiped).
    fn commit_screen(&mut self) {
        let text = screen_text(self.parser.screen());
        if text.is_empty() && self.parser.callbacks().pending.is_empty() {
            return;
        }
        let capture = self.parser.callbacks_mut();
        for line in text.split('\n') {
            capture.push_text(line, true);
        }
    }

    /// From now on, keeps every line that becomes final for [`Self::take_final_lines`].
    pub(crate) fn emit_final_lines(&mut self) {
        self.parser
            .callbacks_mut()
            .emitted
            .get_or_insert_with(capture::FinalLines::default);
    }

    /// The lines that became final since the last call, in order (empty unless
    /// [`Self::emit_final_lines`] was called): for the job's other sinks, such as the disk log.
    #[cfg(test)]
    pub(crate) fn take_final_lines(&mut self) -> capture::FinalLines {
        self.parser
            .callbacks_mut()
            .emitted
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// Hands the lines that became final since the last call to `sink`, in order, then forgets
    /// them (nothing happens unless [`Self::emit_final_lines`] was called). The buffer's room
    /// is kept for the next batch.
    pub(crate) fn drain_final_lines(&mut self, sink: impl FnOnce(&capture::FinalLines)) {
        if let Some(lines) = self.parser.callbacks_mut().emitted.as_mut()
            && !lines.is_empty()
        {
            sink(lines);
            lines.clear();
        }
    }

    /// The main screen's lines as they would enter the transcript now (the unfinished scrolled
    /// line first), without trailing blank lines.
    pub(crate) fn screen_lines(&self) -> Vec<String> {
        if self.frozen.is_some() {
            return Vec::new();
        }
        let screen = self.parser.screen();
        if screen.alternate_screen() {
            return self.saved_main.clone();
        }
        let pending = &self.parser.callbacks().pending;
        let text = self.deferred_text().unwrap_or_else(|| screen_text(screen));
        if text.is_empty() && pending.is_empty() {
            return Vec::new();
        }
        let mut lines: Vec<String> = text.split('\n').map(str::to_owned).collect();
        if !pending.is_empty() {
            lines[0].insert_str(0, pending);
        }
        lines
    }

    /// Resizes the emulator (rows pushed off the top enter the transcript).
    pub fn resize(&mut self, cols: u16, rows: u16) {
        if self.unborn.is_some() {
            self.unborn = Some((cols, rows));
            return;
        }
        self.materialize();
        self.model = None;
        self.parser.set_size(nonzero(rows), nonzero(cols));
    }

    /// Lines printed so far, the unfinished ones on screen included.
    pub fn total_lines(&self) -> u64 {
        self.parser.callbacks().transcript.end_line() + self.screen_lines().len() as u64
    }

    /// Absolute number of the line the cursor is on: where the program's next output goes
    /// (the prompt's line while a program waits at a prompt).
    pub fn cursor_line(&self) -> u64 {
        let total = self.total_lines();
        let col = match (&self.deferred, &self.model) {
            (Some(Deferred::Wrapped(_)), _) => 1,
            (Some(Deferred::Lines(_)), Some(model)) => model.cursor,
            _ => usize::from(self.parser.screen().cursor_position().1),
        };
        if col > 0 {
            total.saturating_sub(1)
        } else {
            total
        }
    }

    /// Number one past the last final line (lines before it no longer change).
    pub fn final_end(&self) -> u64 {
        self.parser.callbacks().transcript.end_line()
    }

    /// Calls `f` with each held line numbered `from` or later, in order, until it breaks.
    pub fn visit_lines(
        &self,
        from: u64,
        mut f: impl FnMut(u64, &str) -> std::ops::ControlFlow<()>,
    ) {
        let transcript = &self.parser.callbacks().transcript;
        let start = from.max(transcript.first_line());
        let live = self.screen_lines();
        let live_skip = usize::try_from(start.saturating_sub(transcript.end_line())).unwrap_or(0);
        let lines = transcript
            .iter_from(start)
            .chain(live.iter().skip(live_skip).map(String::as_str));
        for (n, line) in (start..).zip(lines) {
            if f(n, line).is_break() {
                return;
            }
        }
    }

    /// Reads lines `offset..offset+limit` (absolute numbers; `offset` defaults to the first
    /// held line, `limit` to everything).
    pub fn slice(
        &self,
        offset: Option<u64>,
        limit: Option<usize>,
        status: JobStatus,
    ) -> OutputSlice {
        let transcript = &self.parser.callbacks().transcript;
        let live = self.screen_lines();
        let end = transcript.end_line() + live.len() as u64;
        let dropped = transcript.first_line();
        let requested = offset.unwrap_or(dropped).min(end);
        let from = requested.max(dropped);
        let available = usize::try_from(end - from).unwrap_or(usize::MAX);
        let count = limit.map_or(available, |l| l.min(available));
        let live_skip = usize::try_from(from.saturating_sub(transcript.end_line())).unwrap_or(0);
        let lines = transcript
            .iter_from(from)
            .chain(live.iter().skip(live_skip).map(String::as_str))
            .take(count);
        let mut output = String::new();
        for (i, line) in lines.enumerate() {
            if i > 0 {
                output.push('\n');
            }
            output.push_str(line);
        }
        let bytes = output.len() as u64;
        OutputSlice {
            output,
            first_line: from,
            line_count: count as u64,
            next_offset: from + count as u64,
            total_lines: end,
            dropped_lines: dropped,
            final_lines: transcript.end_line(),
            truncated: from > requested || count < available,
            bytes,
            omitted_lines: 0,
            omitted_bytes: 0,
            omitted_from: None,
            rewritten_from: None,
            status,
        }
    }

    /// The last `n` lines (the unfinished ones on screen included).
    pub fn tail(&self, n: usize, status: JobStatus) -> OutputSlice {
        let end = self.total_lines();
        let from = end.saturating_sub(n as u64);
        let mut slice = self.slice(Some(from), None, status);
        slice.truncated = false;
        slice
    }

    /// The visible screen right now.
    pub fn screen(&self) -> ScreenSnapshot {
        if let Some(frozen) = &self.frozen {
            return frozen.clone();
        }
        if let Some((cols, rows)) = self.unborn {
            return ScreenSnapshot {
                rows: vec![String::new(); usize::from(rows.max(1))],
                cursor_row: 0,
                cursor_col: 0,
                cols: cols.max(1),
                height: rows.max(1),
                alternate_screen: false,
                title: None,
            };
        }
        let screen = self.parser.screen();
        let (height, cols) = screen.size();
        let (mut cursor_row, mut cursor_col) = screen.cursor_position();
        let rows = match self.deferred_rows(usize::from(cols.get()), height.get()) {
            Some((rows, row, col)) => {
                (cursor_row, cursor_col) = (row, col);
                rows
            }
            None => screen_rows(screen),
        };
        ScreenSnapshot {
            rows,
            cursor_row,
            cursor_col,
            cols: cols.get(),
            height: height.get(),
            alternate_screen: screen.alternate_screen(),
            title: self.parser.callbacks().title.clone(),
        }
    }

    /// (cols, rows) of the screen.
    fn screen_size(&self) -> (u16, u16) {
        self.unborn.unwrap_or_else(|| {
            let (rows, cols) = self.parser.screen().size();
            (cols.get(), rows.get())
        })
    }

    /// Whether the program asked for application cursor keys (`ESC[?1h`).
    pub fn application_cursor(&self) -> bool {
        self.parser.screen().application_cursor()
    }

    /// Whether the program enabled bracketed paste (`ESC[?2004h`).
    pub fn bracketed_paste(&self) -> bool {
        self.parser.screen().bracketed_paste()
    }

    /// The whole text as one string (every held line), for tests and debugging.
    pub fn text(&self) -> String {
        self.slice(None, None, JobStatus::Running).output
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod fast_tests;

#[cfg(test)]
mod shown_tests;
