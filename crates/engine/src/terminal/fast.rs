//! How the terminal uses the fast path's line model (see [`crate::fastpath`]).

use vt100::Color;

use super::Terminal;
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
            if self.model.is_none() {
                self.model = self.establish();
            }
            if self.model.is_some() {
                let used = self.run_model(bytes);
                touched |= used > 0;
                bytes = &bytes[used..];
                if bytes.is_empty() {
                    break;
                }
                // A byte the model does not cover: hand the row back to the emulator.
                self.sync();
                touched = false;
                self.model = None;
            }
            // The emulator takes the rest of this line; the model may apply again after it.
            let n = memchr::memchr(b'\n', bytes).map_or(bytes.len(), |i| i + 1);
            self.emulate(&bytes[..n]);
            bytes = &bytes[n..];
        }
        if touched {
            self.sync();
        }
    }

    /// The model of a blank bottom row, if the emulator is in a state the model can describe.
    fn establish(&self) -> Option<LineModel> {
        if self.unusual_modes != (false, false) {
            return None;
        }
        let screen = self.parser.screen();
        let (rows, cols) = screen.size();
        let bottom = rows.get() - 1;
        if screen.alternate_screen() || screen.cursor_position() != (bottom, 0) {
            return None;
        }
        let plain = |fg: Color, bg: Color, flags: [bool; 5]| {
            fg == Color::Default && bg == Color::Default && flags == [false; 5]
        };
        let flags = [
            screen.bold(),
            screen.dim(),
            screen.italic(),
            screen.underline(),
            screen.inverse(),
        ];
        if !plain(screen.fgcolor(), screen.bgcolor(), flags) {
            return None;
        }
        for col in 0..cols.get() {
            let cell = screen.cell(bottom, col)?;
            let flags = [
                cell.bold(),
                cell.dim(),
                cell.italic(),
                cell.underline(),
                cell.inverse(),
            ];
            if cell.has_contents() || !plain(cell.fgcolor(), cell.bgcolor(), flags) {
                return None;
            }
        }
        Some(LineModel::new(cols.get()))
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
        let mut lines: Vec<Vec<u8>> = Vec::new();
        let mut used = 0;
        loop {
            match model.advance(&bytes[used..]) {
                Step::Line(n) => {
                    used += n;
                    lines.push(model.row());
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
        let mut out = Vec::new();
        let mut rest = &lines[..];
        if continued && let Some((first, tail)) = rest.split_first() {
            out.extend_from_slice(b"\x1b[0m\r\x1b[2K");
            draw_row(first, &mut out);
            out.extend_from_slice(b"\r\n");
            rest = tail;
        }
        if rest.len() >= rows {
            // Scroll the old screen off through the emulator (its rows enter the transcript the
            // usual way), put the lines that would scroll off straight into the transcript, and
            // draw only the last screenful, discarding the blank rows that scroll off meanwhile.
            out.extend(std::iter::repeat_n(b'\n', rows - 1));
            self.draw(&out);
            out.clear();
            let (direct, shown) = rest.split_at(rest.len() - (rows - 1));
            let capture = self.parser.callbacks_mut();
            for line in direct {
                capture.push_text(&row_text(line), true);
            }
            capture.discard = rows - 1;
            rest = shown;
        }
        for line in rest {
            draw_row(line, &mut out);
            out.extend_from_slice(b"\r\n");
        }
        self.draw(&out);
        debug_assert_eq!(self.parser.callbacks().discard, 0);
        used
    }

    /// Makes the emulator's bottom row, cursor and attributes match the model.
    fn sync(&mut self) {
        let Some(model) = &self.model else { return };
        let mut out = b"\x1b[0m".to_vec();
        if !model.is_fresh() {
            out.extend_from_slice(b"\r\x1b[2K");
            model.draw(&mut out);
            out.push(b'\r');
            if model.cursor > 0 {
                out.extend_from_slice(format!("\x1b[{}C", model.cursor).as_bytes());
            }
        }
        out.extend_from_slice(&model.sgr);
        self.draw(&out);
    }
}
