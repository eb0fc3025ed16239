//! Output fed in pieces smaller than a screenful: the lines the model finishes are drawn into
//! the emulator one by one, and each row scrolling off its top is read back from it — several
//! hundred instructions a byte. Once the screen above the bottom row shows only plain lines
//! (what those drawings leave), it is taken over as a deferred run of lines (see
//! [`Deferred::Lines`]), which later pieces scroll on without the emulator.

use super::Terminal;
use super::deferred::{Deferred, Rows};
use super::fast::plain_ascii;

/// The longest wait between two takeovers, in screenfuls of lines.
const MAX_WAIT: usize = 64;

/// When the screen is looked at for taking over.
#[derive(Debug, Default)]
pub(super) struct Adopt {
    /// Lines to draw before the next look.
    left: usize,
    /// The wait after the last takeover's screen was drawn again.
    wait: usize,
    /// Lines that went through the screen taken over last, while it is held or until the
    /// next look.
    pub(super) held: Option<usize>,
}

impl Terminal {
    /// Takes the emulator's screen over as a deferred run of lines, before `lines` more lines
    /// finished by the model are drawn, if every row above the bottom row is a line of its own
    /// (not wrapped) made of plain ASCII cells with default attributes or blanks; the bottom
    /// row is the model's. The emulator is cleared without scrolling (its rows are now held,
    /// and enter the transcript when they scroll off, as they would have). Returns whether it
    /// did.
    ///
    /// Looking costs a read of every cell, and a screen taken over is drawn again when something
    /// needs the emulator: a screen that could not be taken over is looked at again after a
    /// screenful of lines was drawn, and one that was drawn again before a screenful of lines
    /// went through it after twice the last wait (see [`Adopt`]), so that output needing the
    /// emulator every few lines costs little more than drawing its lines.
    pub(super) fn adopt_lines(&mut self, lines: usize) -> bool {
        if self.deferred.is_some() || self.model.is_none() || self.unusual_modes != (false, false) {
            return false;
        }
        let screenful = usize::from(self.parser.screen().size().0.get());
        if let Some(held) = self.adopt.held.take() {
            // The screen taken over last was drawn again: after a screenful of lines held, or
            // sooner (output that needs the emulator every few lines), then the wait doubles.
            self.adopt.wait = if held >= screenful {
                screenful
            } else {
                (self.adopt.wait * 2).clamp(screenful, screenful * MAX_WAIT)
            };
            self.adopt.left = self.adopt.wait;
        }
        if self.adopt.left > 0 {
            self.adopt.left = self.adopt.left.saturating_sub(lines);
            return false;
        }
        let (rows, cols) = self.parser.screen().size();
        let Some(held) = self.plain_rows(rows.get(), cols.get()) else {
            self.adopt.left = screenful;
            return false;
        };
        // Cleared without scrolling, the cursor on the bottom row, where a run of lines leaves it.
        self.draw(format!("\x1b[0m\x1b[H\x1b[2J\x1b[{screenful}H").as_bytes());
        self.deferred = Some(Deferred::Lines(held));
        self.adopt.held = Some(0);
        true
    }

    /// The rows above the bottom row as [`Rows`], if each is a line of its own of plain ASCII
    /// cells with default attributes (or blanks), on the main screen with the cursor on the
    /// bottom row.
    fn plain_rows(&self, rows: u16, cols: u16) -> Option<Rows> {
        let screen = self.parser.screen();
        if rows < 2 || screen.alternate_screen() || screen.cursor_position().0 + 1 != rows {
            return None;
        }
        let width = usize::from(cols);
        let mut cells = vec![0u8; usize::from(rows - 1) * width];
        let mut lens = Vec::with_capacity(usize::from(rows - 1));
        for r in 0..rows - 1 {
            if screen.row_wrapped(r) {
                return None;
            }
            let row = &mut cells[usize::from(r) * width..][..width];
            let mut len = 0;
            for c in 0..cols {
                let b = plain_ascii(screen.cell(r, c)?)?;
                if b != 0 {
                    row[usize::from(c)] = b;
                    len = usize::from(c) + 1;
                }
            }
            lens.push(len);
        }
        Some(Rows::from_cells(width, cells, lens))
    }
}
