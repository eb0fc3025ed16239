//! Double-width characters at the right margin.
//!
//! When a double-width character is printed with the cursor in the last column, it cannot fit
//! and moves to the next row. A terminal marks that row as wrapped, like any row the text ran
//! past; vt100 does not (it wraps only a row whose last cell holds something), so the line would
//! be split in two and how a line is split would depend on the widths of its characters. Before
//! such a character reaches the emulator, the margin cell gets the [`MARGIN`] marker: the row
//! now wraps, and the marker reads as the blank it stands for.

use unicode_width::UnicodeWidthChar;

use super::Terminal;
use super::scan::MARGIN;

impl Terminal {
    /// Gives the emulator text in its ground state (complete sequences may be inside), placing
    /// the margin marker before every double-width character that would not fit.
    pub(super) fn emulate(&mut self, bytes: &[u8]) {
        let cols = self.parser.screen().size().1.get();
        if let Some(c) = last_printed(bytes, cols) {
            self.last_printed = Some(c);
        }
        let Ok(text) = std::str::from_utf8(bytes) else {
            self.draw(bytes);
            return;
        };
        if text.is_ascii() {
            self.draw(bytes);
            return;
        }
        let mut start = 0;
        for (i, c) in text.char_indices() {
            // vt100 draws a character as wide when its width is 2 or more.
            let width = c.width().unwrap_or(1);
            if width == 0 && !c.is_control() {
                // A combining character may widen the cell in the last column.
                self.draw(&bytes[start..i]);
                start = i + c.len_utf8();
                self.draw(&bytes[i..start]);
                self.repair_widened();
                continue;
            }
            if width < 2 {
                continue;
            }
            // The margin is only known once everything before this character is drawn.
            self.draw(&bytes[start..i]);
            start = i;
            if self.at_margin() {
                let mut marker = [0u8; 4];
                self.draw(MARGIN.encode_utf8(&mut marker).as_bytes());
            }
        }
        self.draw(&bytes[start..]);
    }

    /// vt100 0.18 mishandles a character in the bottom-right corner that a combining character
    /// widens: it should move to the start of the next row, but when the screen scrolls, vt100
    /// leaves it as a double-width cell in the last column of the row above (and later panics
    /// when that cell is overwritten). Moves it where it belongs.
    fn repair_widened(&mut self) {
        let screen = self.parser.screen();
        let cols = screen.size().1.get();
        let (row, col) = screen.cursor_position();
        if row == 0 || col >= cols {
            return;
        }
        let Some(cell) = screen.cell(row - 1, cols - 1).filter(|c| c.is_wide()) else {
            return;
        };
        let contents = cell.contents().to_owned();
        let start = screen.cell(row, 0).is_some_and(|c| !c.has_contents());
        let mut out = format!("\x1b[{row};{cols}H\x1b[X");
        if start && col == 2 {
            // The cell vt100 meant to move it to is still blank: draw it there.
            out.push_str(&format!("\x1b[{};1H{contents}", row + 1));
        }
        out.push_str(&format!("\x1b[{};{}H", row + 1, col + 1));
        self.draw(out.as_bytes());
    }

    /// Hands text to the emulator, surviving its panics. vt100 0.18 can reach a state where a
    /// double-width cell sits in the last column (a character in the bottom-right corner widened
    /// by a variation selector is left there when the screen scrolls), and then panics when that
    /// cell or the one before it is overwritten. A job's
    /// output must never take the reader down: the grid is rebuilt from the rows it showed, and
    /// the transcript (kept outside the grid) loses nothing.
    pub(super) fn draw(&mut self, bytes: &[u8]) {
        // Whatever is drawn comes after the screen the bulk path deferred.
        self.materialize();
        let parser = &mut self.parser;
        let drawn =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| parser.process(bytes)));
        if drawn.is_err() {
            tracing::warn!(
                "the terminal emulator failed on a job's output; its screen was redrawn"
            );
            self.rebuild();
        }
    }

    /// A fresh emulator showing the rows and cursor of the current one.
    fn rebuild(&mut self) {
        let screen = self.parser.screen();
        let (rows, cols) = screen.size();
        let (row, col) = screen.cursor_position();
        let alternate = screen.alternate_screen();
        let shown: Vec<String> = screen.rows(0, cols.get()).collect();
        let capture = std::mem::replace(self.parser.callbacks_mut(), super::Capture::new(0, 1));
        self.parser = vt100::Parser::new_with_callbacks(rows, cols, 0, capture);
        self.model = None;
        self.last_printed = None;
        let mut out = Vec::new();
        if alternate {
            out.extend_from_slice(b"\x1b[?1049h");
        }
        for (i, text) in shown.iter().enumerate() {
            out.extend_from_slice(format!("\x1b[{};1H", i + 1).as_bytes());
            // A double-width character that does not fit before the margin is left out: the
            // redraw itself must not reach the bad state again.
            let mut at = 0;
            for c in text.chars() {
                let width = c.width().unwrap_or(1).min(2);
                if c.is_control() || at + width > usize::from(cols.get()) {
                    continue;
                }
                at += width;
                out.extend_from_slice(c.to_string().as_bytes());
            }
        }
        let col = col.min(cols.get() - 1);
        out.extend_from_slice(format!("\x1b[{};{}H", row + 1, col + 1).as_bytes());
        let parser = &mut self.parser;
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| parser.process(&out)));
    }

    /// Whether a double-width character printed now would move to the next row without the
    /// row being marked as wrapped.
    fn at_margin(&self) -> bool {
        let screen = self.parser.screen();
        let cols = screen.size().1.get();
        let (row, col) = screen.cursor_position();
        if cols < 3 || col != cols - 1 {
            return false;
        }
        let Some(last) = screen.cell(row, cols - 1) else {
            return false;
        };
        if last.has_contents() || last.is_wide_continuation() {
            return false;
        }
        // Only after text that runs up to the margin: a gap before it means the program moved
        // there on purpose, and a space was typed, not wrapped onto.
        screen
            .cell(row, cols - 2)
            .is_some_and(|c| c.is_wide_continuation() || (c.has_contents() && c.contents() != " "))
    }
}

/// The last character of `bytes` (text in the ground state with complete sequences inside) that
/// vt100 prints, i.e. what it would repeat for `CSI b`: a character it draws with a width.
fn last_printed(bytes: &[u8], cols: u16) -> Option<char> {
    let text = std::str::from_utf8(bytes).ok()?;
    let mut last = None;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            // Skip the (complete) sequence: CSI up to its final byte, ESC to its final byte.
            let csi = chars.clone().next() == Some('[');
            if csi {
                chars.next();
            }
            for f in chars.by_ref() {
                let end = if csi {
                    '\x40'..='\x7e'
                } else {
                    '\x30'..='\x7e'
                };
                if end.contains(&f) {
                    break;
                }
            }
            continue;
        }
        if c < ' ' || ('\u{7f}'..'\u{a0}').contains(&c) || c == '\u{fffd}' {
            continue;
        }
        let width = match c.width() {
            None if u32::from(c) < 256 => continue,
            w => w.unwrap_or(1).min(2),
        };
        if width > 0 && width <= usize::from(cols) {
            last = Some(c);
        }
    }
    last
}
