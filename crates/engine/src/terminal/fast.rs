//! How the terminal uses the fast path's line model (see [`crate::fastpath`]).

use vt100::Color;

use super::Terminal;
use super::deferred::{Deferred, Finished, Rows};
use crate::fastpath::{LineModel, Step, draw_row, row_text};

impl Terminal {
    /// Gives bytes (valid UTF-8, no watched sequence inside) to the emulator, through the line
    /// model where it applies. On return the emulator shows exactly what it would have shown had
    /// it seen every byte itself.
    pub(super) fn process(&mut self, mut bytes: &[u8]) {
        if !self.fast {
            self.emulate(bytes);
            return;
        }
        let mut touched = false;
        while !bytes.is_empty() {
            if matches!(self.deferred, Some(Deferred::Wrapped(_))) {
                // A long line goes on: no emulator at all while it is printable text.
                bytes = &bytes[self.extend_deferred(bytes)..];
                if bytes.is_empty() {
                    break;
                }
                self.materialize();
            }
            if self.model.is_none() {
                self.model = self.establish();
            }
            if self.model.is_some() {
                let used = self.run_model(bytes);
                // A deferred run of lines is not in the emulator: nothing to write back yet.
                touched = (touched || used > 0) && !self.lines_deferred();
                bytes = &bytes[used..];
                if bytes.is_empty() {
                    break;
                }
                // Something the model does not cover: the emulator must show the screen.
                if self.lines_deferred() {
                    self.materialize();
                }
                // Text running past the margin: a long line, wrapped in bulk.
                let wrapped = self.wrap_run(bytes);
                if wrapped > 0 {
                    bytes = &bytes[wrapped..];
                    touched = false; // the emulator shows the model now
                    continue;
                }
                // A shorter run on a screen the same line already fills: deferred as well.
                if (0x20..=0x7e).contains(&bytes[0]) && self.defer_screen() {
                    let used = self.extend_deferred(bytes);
                    if used > 0 {
                        bytes = &bytes[used..];
                        touched = false;
                        continue;
                    }
                    // Nothing it can take (one character into the last column): drawn back.
                    self.materialize();
                }
                // A byte the model does not cover: hand the row back to the emulator.
                self.sync();
                touched = false;
                self.model = None;
            }
            // The emulator takes the rest of this line; the model may apply again after it.
            // At a pending wrap on the bottom row (a long line's piece ended in the last
            // column), one character is enough: it wraps, and the model takes the row again.
            let n = if self.at_bottom_margin() && (0x20..=0x7e).contains(&bytes[0]) {
                1
            } else {
                memchr::memchr(b'\n', bytes).map_or(bytes.len(), |i| i + 1)
            };
            self.emulate(&bytes[..n]);
            bytes = &bytes[n..];
        }
        if touched {
            self.sync();
        }
    }

    /// Runs the line model, while it is in use, over the bytes at the start of `bytes` (valid
    /// UTF-8, the parser mirror in the ground state) that it takes, before the feed looks for
    /// sequences in them: it takes only text, `\r`, `\n`, BEL and complete colour and
    /// erase-in-line sequences, none of which the feed acts on, so they would have reached
    /// [`Self::process`] unexamined anyway — a coloured line's sequences are then read once,
    /// not twice. Returns how many bytes it took; afterwards the emulator shows what it would
    /// after [`Self::process`] of them. The model is not set up here: a terminal it does not
    /// describe costs nothing more.
    pub(super) fn process_simple(&mut self, bytes: &[u8]) -> usize {
        if !self.fast || self.model.is_none() || matches!(self.deferred, Some(Deferred::Wrapped(_)))
        {
            return 0;
        }
        let used = self.run_model(bytes);
        // As `process` ends: a deferred run of lines is not in the emulator yet.
        if used > 0 && !self.lines_deferred() {
            self.sync();
        }
        used
    }

    /// The model of the bottom row, if the emulator is in a state the model can describe: the
    /// cursor on the bottom row of the main screen (short of the last column, where a pending
    /// wrap is more than a position), default attributes, and a row of plain ASCII cells with
    /// default attributes (or blanks) and nothing in the last column. A row partly written (a
    /// long line the emulator took a piece of) is taken over as it is.
    fn establish(&self) -> Option<LineModel> {
        if self.unusual_modes != (false, false) {
            return None;
        }
        let screen = self.parser.screen();
        let (rows, cols) = screen.size();
        let bottom = rows.get() - 1;
        let (row, col) = screen.cursor_position();
        if screen.alternate_screen() || row != bottom || col + 1 >= cols.get() {
            return None;
        }
        let pen = [
            screen.bold(),
            screen.dim(),
            screen.italic(),
            screen.underline(),
            screen.inverse(),
        ];
        if !plain_attributes(screen.fgcolor(), screen.bgcolor(), pen) {
            return None;
        }
        let mut model = LineModel::new(cols.get());
        for c in 0..cols.get() {
            let b = plain_ascii(screen.cell(bottom, c)?)?;
            if b != 0 {
                if c + 1 == cols.get() {
                    return None;
                }
                model.cells[usize::from(c)] = b;
            }
        }
        model.extent = model.cells.len();
        // Taken over only as text written from the left up to the cursor, nothing after it
        // (what a long line leaves); other rows keep to the emulator.
        let col = usize::from(col);
        if model.cells[..col].contains(&0) || model.cells[col..].iter().any(|&c| c != 0) {
            return None;
        }
        model.cursor = col;
        Some(model)
    }

    /// Runs the model over as many bytes as it covers; returns how many. Finished lines reach
    /// the emulator collapsed (one drawing per row), and a run of more lines than the screen
    /// holds goes straight into the transcript except for the last screenful.
    fn run_model(&mut self, bytes: &[u8]) -> usize {
        let Some(model) = self.model.as_mut() else {
            return 0;
        };
        let rows = usize::from(self.parser.screen().size().0.get());
        // The emulator's bottom row may already show part of the first line.
        let continued = !model.is_fresh();
        // The finished rows, one after another in one buffer (a run of short lines costs no
        // allocation per line here), and where each ends.
        let mut flat: Vec<u8> = Vec::new();
        let mut ends: Vec<usize> = Vec::new();
        let mut used = 0;
        loop {
            match model.advance(&bytes[used..]) {
                Step::Line(n) => {
                    used += n;
                    flat.extend_from_slice(model.row_slice());
                    ends.push(flat.len());
                    model.next_row();
                }
                Step::Partial => {
                    used = bytes.len();
                    break;
                }
                Step::Stop(n) => {
                    used += n;
                    break;
                }
            }
        }
        if let Some(c) = model.last.take() {
            self.last_printed = Some(char::from(c));
        }
        let finished = Finished::new(&flat, &ends);
        let line = |i: usize| finished.row(i);
        // Fewer lines than a screenful would each be drawn, and scroll rows off through the
        // emulator: the screen is taken over instead when it can be.
        if !ends.is_empty() && ends.len() < rows && self.adopt_lines(ends.len()) {
            debug_assert!(self.lines_deferred());
        }
        if let Some(Deferred::Lines(shown)) = self.deferred.as_mut() {
            // The run goes on below a deferred screen: every finished row (the model's own
            // first) enters it at the bottom, and the emulator is not touched.
            shown.scroll_in(&finished, self.parser.callbacks_mut());
            if let Some(held) = self.adopt.held.as_mut() {
                *held += finished.len();
            }
            return used;
        }
        let mut out = Vec::new();
        let mut from = 0;
        if continued && !ends.is_empty() {
            out.extend_from_slice(b"\x1b[0m\r\x1b[2K");
            draw_row(line(0), &mut out);
            out.extend_from_slice(b"\r\n");
            from = 1;
        }
        if ends.len() - from >= rows {
            // Scroll the old screen off through the emulator (its rows enter the transcript the
            // usual way) and put the lines that would scroll off straight into the transcript.
            out.extend(std::iter::repeat_n(b'\n', rows - 1));
            self.draw(&out);
            out.clear();
            let shown = ends.len() - (rows - 1);
            let capture = self.parser.callbacks_mut();
            for i in from..shown {
                finished.push(i, capture);
            }
            if rows >= 2 {
                // The last screenful is drawn only when something needs the emulator (see
                // [`Self::materialize`]): a run of lines costs a copy per line, not two
                // screenfuls of emulation per piece.
                let cols = usize::from(self.parser.screen().size().1.get());
                let rows = Rows::new(rows - 1, cols, &finished);
                self.deferred = Some(Deferred::Lines(rows));
                return used;
            }
            // (One row: nothing left to draw but blank rows scrolling off.)
            self.parser.callbacks_mut().discard = rows - 1;
            from = shown;
        }
        for i in from..ends.len() {
            draw_row(line(i), &mut out);
            out.extend_from_slice(b"\r\n");
        }
        self.draw(&out);
        debug_assert_eq!(self.parser.callbacks().discard, 0);
        used
    }

    /// A run of printable ASCII at the start of `bytes` that goes past the right margin and
    /// scrolls at least a screenful of wrapped rows: the text of the rows that scroll off goes
    /// into the transcript directly (as the unfinished line they are), and the emulator draws
    /// only the last screenful. Returns how many bytes it took (0: the run is too short; the
    /// emulator takes it).
    ///
    /// The emulator ends exactly as if it had drawn every character: the rows of the old
    /// screen scroll off through it (their own wrap state and text go to the transcript the
    /// usual way), then the screen is drawn from its top-left corner with the run's last
    /// `rows - 1` full rows and its last partial row. The run never ends in the last column (the
    /// emulator's pending-wrap state there is not a cursor position): its last character is
    /// then left for the emulator.
    fn wrap_run(&mut self, bytes: &[u8]) -> usize {
        let Some(model) = self.model.as_ref() else {
            return 0;
        };
        let (rows, cols) = self.parser.screen().size();
        let (rows, cols) = (usize::from(rows.get()), usize::from(cols.get()));
        let c = model.cursor;
        // (vt100 never marks a wrap on a one-row screen.)
        if rows < 2 || cols < 2 || c >= cols {
            return 0;
        }
        let run = crate::fastpath::printable_run(bytes);
        // Characters that fill the model's row, then those after the first wrap.
        let first = cols - c;
        let Some(mut after) = run.checked_sub(first).filter(|&k| k > 0) else {
            return 0;
        };
        if after % cols == 0 {
            after -= 1;
        }
        let last = after % cols; // on the new bottom row, 1..cols-1
        let full = 1 + (after - last) / cols; // rows that wrap, the model's own included
        if after == 0 || full < rows {
            return 0;
        }
        let text = &bytes[..first + after];
        // The model's row on the emulator's bottom row, then the old screen scrolled off.
        self.sync();
        let mut out = vec![b'\n'; rows - 1];
        // The model's row, now on top, is wiped unseen: its text goes in with the run's.
        out.extend_from_slice(b"\x1b[0m\x1b[H\x1b[2K");
        self.draw(&out);
        let gone = first + (full - rows) * cols; // the run's text in rows that scrolled off
        let mut line = row_text(&model_cells(self.model.as_ref(), c));
        line.push_str(std::str::from_utf8(&text[..gone]).unwrap_or_default());
        self.parser.callbacks_mut().push_text(&line, false);
        debug_assert_eq!(self.parser.callbacks().discard, 0);
        // The last screenful is drawn only when something needs the emulator (see
        // [`Self::materialize`]): a line that goes on for megabytes costs a copy, not a
        // screenful of emulation per piece.
        self.deferred = Some(Deferred::Wrapped(text[gone..].to_vec()));
        if let Some(model) = self.model.as_mut() {
            model.start_row(&text[text.len() - last..]);
            model.last = None;
        }
        self.last_printed = text.last().map(|&b| char::from(b));
        text.len()
    }

    /// Continues the deferred screen (see [`Terminal::deferred`]) with the run of printable
    /// ASCII at the start of `bytes`; returns how many bytes it took (0: none, the emulator
    /// must take over). Rows pushed off the top go into the transcript as the unfinished line
    /// they are, exactly as the emulator's scrolling would put them; the run never ends in the
    /// last column (the emulator's pending wrap there is not a cursor position).
    fn extend_deferred(&mut self, bytes: &[u8]) -> usize {
        let (rows, cols) = self.parser.screen().size();
        let (rows, cols) = (usize::from(rows.get()), usize::from(cols.get()));
        let Some(Deferred::Wrapped(screen)) = self.deferred.as_mut() else {
            return 0;
        };
        let mut take = crate::fastpath::printable_run(bytes);
        if (screen.len() + take).is_multiple_of(cols) {
            take = take.saturating_sub(1);
        }
        if take == 0 {
            return 0;
        }
        let text = &bytes[..take];
        let total = screen.len() + take;
        let last = total % cols;
        let gone = total - ((rows - 1) * cols + last);
        let capture = self.parser.callbacks_mut();
        if gone <= screen.len() {
            if gone > 0 {
                capture.push_text(str_of(&screen[..gone]), false);
                screen.drain(..gone);
            }
            screen.extend_from_slice(text);
        } else {
            capture.push_text(str_of(screen), false);
            let from_text = gone - screen.len();
            capture.push_text(str_of(&text[..from_text]), false);
            screen.clear();
            screen.extend_from_slice(&text[from_text..]);
        }
        if let Some(model) = self.model.as_mut() {
            model.start_row(&screen[screen.len() - last..]);
            model.last = None;
        }
        self.last_printed = text.last().map(|&b| char::from(b));
        take
    }

    /// Whether the emulator's cursor is in the last column of the main screen's bottom row.
    fn at_bottom_margin(&self) -> bool {
        let screen = self.parser.screen();
        let (rows, cols) = screen.size();
        let (row, col) = screen.cursor_position();
        !screen.alternate_screen() && row + 1 == rows.get() && col + 1 >= cols.get()
    }

    /// Takes the emulator's screen over as deferred (see [`Terminal::deferred`]) when it shows
    /// one line of printable ASCII wrapped over every row, the bottom row being the model's
    /// (text from the left up to the cursor, nothing after it): a long line fed in pieces
    /// smaller than a screenful. The emulator is cleared (its rows are held in the deferred
    /// screen and enter the transcript when they scroll off, as they would have). Returns
    /// whether it did.
    fn defer_screen(&mut self) -> bool {
        let Some(model) = self.model.as_ref() else {
            return false;
        };
        let screen = self.parser.screen();
        let (rows, cols) = screen.size();
        let (rows, cols) = (rows.get(), cols.get());
        let c = model.cursor;
        if rows < 2
            || c == 0
            || model.cells[..c].contains(&0)
            || model.cells[c..].iter().any(|&b| b != 0)
            || screen.alternate_screen()
            || !(0..rows - 1).all(|r| screen.row_wrapped(r))
        {
            return false;
        }
        let mut text = Vec::with_capacity(usize::from(rows) * usize::from(cols));
        for r in 0..rows - 1 {
            for col in 0..cols {
                let Some(cell) = screen.cell(r, col) else {
                    return false;
                };
                match cell.contents().as_bytes() {
                    &[b] if (0x20..=0x7e).contains(&b) => text.push(b),
                    _ => return false,
                }
            }
        }
        text.extend_from_slice(&model.cells[..c]);
        // Cleared without scrolling: nothing reaches the transcript twice.
        self.draw(b"\x1b[0m\x1b[H\x1b[2J");
        self.deferred = Some(Deferred::Wrapped(text));
        true
    }

    /// Makes the emulator's bottom row, cursor and attributes match the model.
    pub(super) fn sync(&mut self) {
        let Some(model) = &self.model else { return };
        // Always redrawn: a row the model emptied (`\r\x1b[K`) may still show text in the
        // emulator (a row taken over, or left by a bulk wrap).
        let mut out = b"\x1b[0m\r\x1b[2K".to_vec();
        model.draw(&mut out);
        out.push(b'\r');
        if model.cursor > 0 {
            out.extend_from_slice(format!("\x1b[{}C", model.cursor).as_bytes());
        }
        out.extend_from_slice(&model.sgr);
        self.draw(&out);
    }
}

/// Whether colours and attributes (bold, dim, italic, underline, inverse) are the defaults.
fn plain_attributes(fg: Color, bg: Color, flags: [bool; 5]) -> bool {
    fg == Color::Default && bg == Color::Default && flags == [false; 5]
}

/// A cell the line model can hold: default colours and attributes, and blank (`Some(0)`) or
/// one printable ASCII character (`Some` of it); `None` for any other.
pub(super) fn plain_ascii(cell: &vt100::Cell) -> Option<u8> {
    let flags = [
        cell.bold(),
        cell.dim(),
        cell.italic(),
        cell.underline(),
        cell.inverse(),
    ];
    if !plain_attributes(cell.fgcolor(), cell.bgcolor(), flags) {
        return None;
    }
    if !cell.has_contents() {
        return Some(0);
    }
    match *cell.contents().as_bytes() {
        [b] if (0x20..=0x7e).contains(&b) => Some(b),
        _ => None,
    }
}

/// Printable ASCII as text (valid UTF-8 by construction).
fn str_of(b: &[u8]) -> &str {
    std::str::from_utf8(b).unwrap_or_default()
}

/// The model's cells before column `c` (its row as the run found it).
fn model_cells(model: Option<&LineModel>, c: usize) -> Vec<u8> {
    model.map_or_else(Vec::new, |m| m.cells[..c.min(m.cells.len())].to_vec())
}
