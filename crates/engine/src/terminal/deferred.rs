//! The screen a bulk path left without drawing it into the emulator (see
//! [`Terminal::deferred`]): one long line, or a run of short lines. The emulator is only drawn
//! when something needs it ([`Terminal::materialize`]); until then rows scrolling off go to the
//! transcript as the text the fast path already knows, and the views read the held rows.

use super::Terminal;
use super::capture::Capture;
use crate::fastpath::{LineModel, draw_row, row_text};

/// A screen not drawn into the emulator yet.
pub(super) enum Deferred {
    /// One long line: printable ASCII drawn from the top-left corner of a blank screen —
    /// `rows - 1` full (wrapped) rows and part of the bottom row, which the model holds too.
    /// Meanwhile the emulator shows that blank screen with its cursor at home.
    Wrapped(Vec<u8>),
    /// A run of short lines: the rows above the bottom one, each a line of its own (not
    /// wrapped); the bottom row is the model's. Meanwhile the emulator shows a blank screen
    /// with its cursor at the start of the bottom row.
    Lines(Rows),
}

/// The `rows - 1` finished rows above the bottom row, oldest first, in a ring of fixed slots
/// (cells as the line model holds them: 0 is a blank cell, trailing blanks cut).
pub(super) struct Rows {
    cols: usize,
    cells: Vec<u8>,
    lens: Vec<usize>,
    /// The slot of the oldest row.
    head: usize,
}

impl Rows {
    /// `slots` rows, the last `slots` of the `finished` rows (there are at least that many).
    pub(super) fn new(slots: usize, cols: usize, finished: &Finished<'_>) -> Self {
        let mut rows = Self {
            cols,
            cells: vec![0; slots * cols],
            lens: vec![0; slots],
            head: 0,
        };
        let first = finished.len() - slots;
        for slot in 0..slots {
            rows.put(slot, finished.row(first + slot));
        }
        rows
    }

    /// Rows of `cols` cells one after another in `cells` (0 is a blank cell), oldest first,
    /// each `lens` long.
    pub(super) fn from_cells(cols: usize, cells: Vec<u8>, lens: Vec<usize>) -> Self {
        debug_assert_eq!(cells.len(), cols * lens.len());
        Self {
            cols,
            cells,
            lens,
            head: 0,
        }
    }

    fn put(&mut self, slot: usize, row: &[u8]) {
        let row = &row[..row.len().min(self.cols)];
        self.cells[slot * self.cols..slot * self.cols + row.len()].copy_from_slice(row);
        self.lens[slot] = row.len();
    }

    fn slot(&self, slot: usize) -> &[u8] {
        &self.cells[slot * self.cols..slot * self.cols + self.lens[slot]]
    }

    /// The rows, oldest (top) first.
    pub(super) fn iter(&self) -> impl Iterator<Item = &[u8]> {
        let n = self.lens.len();
        (0..n).map(move |i| self.slot((self.head + i) % n))
    }

    /// The `finished` rows (in order) enter at the bottom: as many rows scroll off the top
    /// into the transcript, as the emulator's scrolling would put them there, and rows that
    /// would scroll off before the screen ever showed them go there directly.
    pub(super) fn scroll_in(&mut self, finished: &Finished<'_>, capture: &mut Capture) {
        let n = self.lens.len();
        let kept = finished.len().min(n);
        for i in 0..kept {
            push_row(capture, self.slot((self.head + i) % n));
        }
        let gone = finished.len() - kept;
        for i in 0..gone {
            finished.push(i, capture);
        }
        for i in 0..kept {
            self.put((self.head + i) % n, finished.row(gone + i));
        }
        if n > 0 {
            self.head = (self.head + kept) % n;
        }
    }
}

/// Rows the line model finished, one after another in one buffer, and where each ends.
pub(super) struct Finished<'a> {
    flat: &'a [u8],
    ends: &'a [usize],
    /// `flat` as text when no row has a blank cell: checked once for the whole run, not per
    /// line (the cells are printable ASCII or blank).
    text: Option<&'a str>,
}

impl<'a> Finished<'a> {
    pub(super) fn new(flat: &'a [u8], ends: &'a [usize]) -> Self {
        let text = match memchr::memchr(0, flat) {
            None => std::str::from_utf8(flat).ok(),
            Some(_) => None,
        };
        Self { flat, ends, text }
    }

    pub(super) fn len(&self) -> usize {
        self.ends.len()
    }

    fn bounds(&self, i: usize) -> (usize, usize) {
        (if i == 0 { 0 } else { self.ends[i - 1] }, self.ends[i])
    }

    /// Row `i`'s cells.
    pub(super) fn row(&self, i: usize) -> &'a [u8] {
        let (start, end) = self.bounds(i);
        &self.flat[start..end]
    }

    /// Row `i` into the transcript as the line it is.
    pub(super) fn push(&self, i: usize, capture: &mut Capture) {
        let (start, end) = self.bounds(i);
        match self.text.and_then(|t| t.get(start..end)) {
            Some(line) => capture.push_text(line, true),
            None => push_row(capture, self.row(i)),
        }
    }
}

/// A finished row into the transcript as the line it is.
pub(super) fn push_row(capture: &mut Capture, row: &[u8]) {
    if row.contains(&0) {
        capture.push_text(&row_text(row), true);
    } else {
        capture.push_text(std::str::from_utf8(row).unwrap_or_default(), true);
    }
}

impl Terminal {
    /// Draws the deferred screen into the emulator: afterwards it is exactly what drawing every
    /// character would have made it, and the model describes its bottom row as before.
    pub(super) fn materialize(&mut self) {
        match self.deferred.take() {
            None => {}
            Some(Deferred::Wrapped(screen)) => {
                let mut out = self.model.as_ref().map_or_else(Vec::new, |m| m.sgr.clone());
                out.extend_from_slice(&screen);
                self.draw(&out);
            }
            Some(Deferred::Lines(rows)) => {
                // From the top of the blank screen down to the bottom row: nothing scrolls.
                let mut out = b"\x1b[0m\x1b[H".to_vec();
                for row in rows.iter() {
                    draw_row(row, &mut out);
                    out.extend_from_slice(b"\r\n");
                }
                self.draw(&out);
                debug_assert!(self.model.is_some(), "deferred lines without their model");
                self.sync();
            }
        }
    }

    /// Whether a run of short lines is deferred.
    pub(super) fn lines_deferred(&self) -> bool {
        matches!(self.deferred, Some(Deferred::Lines(_)))
    }

    /// The rows of the deferred screen as [`super::scan::screen_rows`] reads them from the
    /// emulator once drawn, and the cursor (row, column); `None` when nothing is deferred.
    pub(super) fn deferred_rows(
        &self,
        cols: usize,
        height: u16,
    ) -> Option<(Vec<String>, u16, u16)> {
        match self.deferred.as_ref()? {
            Deferred::Wrapped(screen) => {
                // Printable ASCII, every cell printed: each row reads as its characters.
                let rows: Vec<String> = screen
                    .chunks(cols)
                    .map(|row| String::from_utf8_lossy(row).into_owned())
                    .collect();
                let col = u16::try_from(rows.last().map_or(0, String::len)).unwrap_or(0);
                Some((rows, height - 1, col))
            }
            Deferred::Lines(rows) => {
                let model = self.model.as_ref()?;
                let mut out: Vec<String> = rows.iter().map(row_text).collect();
                out.push(row_text(model.row_slice()));
                let col = u16::try_from(model.cursor).unwrap_or(0);
                Some((out, height - 1, col))
            }
        }
    }

    /// The deferred screen's text as [`super::scan::screen_text`] reads the emulator once
    /// drawn (lines separated by `\n`, trailing empty lines dropped); `None` when nothing is
    /// deferred.
    pub(super) fn deferred_text(&self) -> Option<String> {
        match self.deferred.as_ref()? {
            // One line, wrapped over the whole screen.
            Deferred::Wrapped(screen) => Some(String::from_utf8_lossy(screen).into_owned()),
            Deferred::Lines(rows) => {
                let model = self.model.as_ref().map(LineModel::row_slice);
                let mut text = String::new();
                for row in rows.iter().chain(model) {
                    text.push_str(&row_text(row));
                    text.push('\n');
                }
                let kept = text.trim_end_matches('\n').len();
                text.truncate(kept);
                Some(text)
            }
        }
    }
}
