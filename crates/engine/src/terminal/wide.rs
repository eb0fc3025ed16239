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
        let Ok(text) = std::str::from_utf8(bytes) else {
            self.parser.process(bytes);
            return;
        };
        if text.is_ascii() {
            self.parser.process(bytes);
            return;
        }
        let mut start = 0;
        for (i, c) in text.char_indices() {
            // vt100 draws a character as wide when its width is 2 or more.
            if c.width().unwrap_or(1) < 2 {
                continue;
            }
            // The margin is only known once everything before this character is drawn.
            self.parser.process(&bytes[start..i]);
            start = i;
            if self.at_margin() {
                let mut marker = [0u8; 4];
                self.parser
                    .process(MARGIN.encode_utf8(&mut marker).as_bytes());
            }
        }
        self.parser.process(&bytes[start..]);
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
