//! The line model that lets streaming output bypass the emulator cell by cell.
//!
//! vt100 costs a few hundred instructions per byte, several times slower than a PTY delivers
//! text. But most output of busy jobs is "simple lines" written on the bottom row of the main
//! screen: printable ASCII, colours (SGR), `\r` redraws and erase-in-line, ended by a newline.
//! For such a line the resulting row is known without the emulator: an array of cells and a
//! cursor. The terminal feeds vt100 only the collapsed row (a progress bar's hundred redraws
//! become one), and a long run of lines that scroll straight off the top goes into the
//! transcript directly; only the last screenful is drawn. The transcript and the screen come
//! out exactly as the emulator alone would make them: the tests compare both on the same bytes,
//! split at every byte.
//!
//! The model is valid only while the emulator's cursor sits on the bottom row of a screen with
//! no scroll region, that row holds exactly the model's cells (with default attributes where
//! blank), and everything written since the model was set up went through it. Any other byte
//! ends it: the model is written back into the emulator and the slow path takes over.

mod words;
pub(crate) use words::find_byte;

/// What a line ended with.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// The line ended with a newline after this many bytes; its row is final.
    Line(usize),
    /// All bytes were simple but the line is not finished.
    Partial,
    /// Byte `n` is not simple: the model describes the row up to it.
    Stop(usize),
}

/// The bottom row as the fast path sees it.
#[derive(Debug, Clone)]
pub(crate) struct LineModel {
    /// One byte per column; 0 is a blank cell.
    pub cells: Vec<u8>,
    /// No cell at or past this column holds anything: what a new row clears and where the
    /// row's end is looked for (a short line on a wide row costs its own length, not the
    /// row's). Whoever writes `cells` directly raises it.
    pub extent: usize,
    pub cursor: usize,
    /// Whether the current attributes are the defaults (no SGR since the last reset).
    pub attrs_default: bool,
    /// SGR sequences since the attributes were last reset, to replay into the emulator.
    pub sgr: Vec<u8>,
    /// The last character printed through the model, not yet reported (the emulator repeats
    /// the last printed character for `CSI b`, and never saw it).
    pub last: Option<u8>,
}

impl LineModel {
    pub fn new(cols: u16) -> Self {
        Self {
            cells: vec![0; usize::from(cols)],
            extent: 0,
            cursor: 0,
            attrs_default: true,
            sgr: Vec::new(),
            last: None,
        }
    }

    /// Whether the row is blank with the cursor at its start.
    pub fn is_fresh(&self) -> bool {
        self.cursor == 0 && self.cells[..self.extent].iter().all(|&c| c == 0)
    }

    /// Starts a new row (after a newline on the bottom row, the screen scrolled).
    pub fn next_row(&mut self) {
        self.cells[..self.extent].fill(0);
        self.extent = 0;
        self.cursor = 0;
    }

    /// Starts a new row holding `text` (printable ASCII, shorter than the row), the cursor
    /// after it.
    pub fn start_row(&mut self, text: &[u8]) {
        self.next_row();
        self.cells[..text.len()].copy_from_slice(text);
        self.cursor = text.len();
        self.extent = text.len();
    }

    /// The row's cells up to the last non-blank one (0 = blank).
    pub fn row(&self) -> Vec<u8> {
        self.row_slice().to_vec()
    }

    /// [`Self::row`] without a copy. The row's end is looked for back from its extent: a
    /// short line on a wide row costs a compare or two, not one per column.
    pub fn row_slice(&self) -> &[u8] {
        let end = self.cells[..self.extent]
            .iter()
            .rposition(|&c| c != 0)
            .map_or(0, |i| i + 1);
        &self.cells[..end]
    }

    /// The row's text as the emulator would report it.
    #[cfg(test)]
    pub fn text(&self) -> String {
        row_text(&self.row())
    }

    /// Appends the bytes that draw this row (see [`draw_row`]).
    pub fn draw(&self, out: &mut Vec<u8>) {
        draw_row(&self.row(), out);
    }

    /// Runs the line discipline of a simple line over `buf`, from the model's current state.
    pub fn advance(&mut self, buf: &[u8]) -> Step {
        let cols = self.cells.len();
        let mut i = 0;
        while i < buf.len() {
            match buf[i] {
                0x20..=0x7e => {
                    // A run of printable bytes is copied at once. It never reaches the last
                    // column: the emulator's pending-wrap state there is more than a cursor
                    // position, so that is left to the emulator.
                    let len = printable_run(&buf[i..]);
                    let room = cols.saturating_sub(1).saturating_sub(self.cursor);
                    let take = len.min(room);
                    self.cells[self.cursor..self.cursor + take].copy_from_slice(&buf[i..i + take]);
                    self.cursor += take;
                    self.extent = self.extent.max(self.cursor);
                    if take > 0 {
                        self.last = Some(buf[i + take - 1]);
                    }
                    if take < len {
                        return Step::Stop(i + take);
                    }
                    i += len;
                    continue;
                }
                b'\r' => self.cursor = 0,
                b'\n' if self.cursor == 0 => return Step::Line(i + 1),
                0x07 => {}
                0x1b => match self.escape(&buf[i..]) {
                    Some(len) => {
                        i += len;
                        continue;
                    }
                    None => return Step::Stop(i),
                },
                _ => return Step::Stop(i),
            }
            i += 1;
        }
        Step::Partial
    }

    /// Applies the SGR or erase-in-line sequence at the start of `seq`; returns its length, or
    /// `None` when it is anything else (or would erase with non-default attributes, which
    /// leaves coloured blanks that the emulator reports differently).
    fn escape(&mut self, seq: &[u8]) -> Option<usize> {
        if seq.get(1) != Some(&b'[') {
            return None;
        }
        let mut j = 2;
        while seq.get(j).is_some_and(|b| b.is_ascii_digit() || *b == b';') {
            j += 1;
        }
        let params = &seq[2..j];
        match seq.get(j)? {
            b'm' => {
                if params.is_empty() || params == b"0" {
                    self.sgr.clear();
                    self.attrs_default = true;
                } else {
                    self.sgr.extend_from_slice(&seq[..=j]);
                    self.attrs_default = false;
                }
            }
            b'K' if self.attrs_default => {
                let cursor = self.cursor.min(self.cells.len());
                let last = self.cells.len() - 1;
                match params {
                    b"" | b"0" => {
                        if cursor < self.extent {
                            self.cells[cursor..self.extent].fill(0);
                            self.extent = cursor;
                        }
                    }
                    b"1" => self.cells[..=cursor.min(last)].fill(0),
                    b"2" => {
                        self.cells[..self.extent].fill(0);
                        self.extent = 0;
                    }
                    _ => return None,
                }
            }
            _ => return None,
        }
        Some(j + 1)
    }
}

/// How many bytes at the start of `buf` are printable ASCII (`0x20..=0x7e`): the bulk paths'
/// scan, 16 bytes at a time (a loop the compiler turns into vector compares) while the run goes
/// on, and the block that ends it 8 bytes at a time (a coloured line's runs are short: a byte at
/// a time cost more than the rest of the line's handling).
pub(crate) fn printable_run(buf: &[u8]) -> usize {
    let mut i = 0;
    for chunk in buf.chunks_exact(16) {
        let mut bad = 0u8;
        for &b in chunk {
            bad |= u8::from(b.wrapping_sub(0x20) > 0x5e);
        }
        if bad != 0 {
            break;
        }
        i += 16;
    }
    words::run(buf, i, not_printable, is_printable)
}

fn is_printable(b: u8) -> bool {
    (0x20..=0x7e).contains(&b)
}

/// Marks the bytes of a word that are not printable ASCII (see [`words::run`]).
fn not_printable(word: u64) -> u64 {
    !words::in_range(word, 0x20, 0x7e)
}

/// The text the emulator reports for a row of cells: blanks before content become spaces.
pub(crate) fn row_text(row: &[u8]) -> String {
    let bytes: Vec<u8> = row.iter().map(|&c| if c == 0 { b' ' } else { c }).collect();
    // Cells hold printable ASCII only.
    String::from_utf8(bytes).unwrap_or_default()
}

/// Appends to `out` the bytes that draw `row` on a blank row whose cursor is at column 0:
/// runs of text, with cursor-forward over the blank gaps.
pub(crate) fn draw_row(row: &[u8], out: &mut Vec<u8>) {
    let mut col = 0;
    let mut i = 0;
    while i < row.len() {
        if row[i] == 0 {
            i += 1;
            continue;
        }
        if i > col {
            out.extend_from_slice(format!("\x1b[{}C", i - col).as_bytes());
        }
        let start = i;
        while i < row.len() && row[i] != 0 {
            i += 1;
        }
        out.extend_from_slice(&row[start..i]);
        col = i;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_redraws_collapse_to_the_last_state() {
        let mut m = LineModel::new(40);
        assert_eq!(m.advance(b"10%\r50%\r100%\r\n"), Step::Line(14));
        assert_eq!(m.text(), "100%");
        m.next_row();
        assert_eq!(m.advance(b"[####    ]\r\x1b[K[##"), Step::Partial);
        assert_eq!((m.text().as_str(), m.cursor), ("[##", 3));
    }

    #[test]
    fn colours_are_remembered_for_replay_until_a_reset() {
        let mut m = LineModel::new(40);
        m.advance(b"\x1b[32mgreen\x1b[1m");
        assert_eq!(m.sgr, b"\x1b[32m\x1b[1m");
        assert!(!m.attrs_default);
        // Erasing with colours on is left to the emulator.
        assert_eq!(m.advance(b"\x1b[K"), Step::Stop(0));
        m.advance(b"\x1b[0m");
        assert!(m.sgr.is_empty() && m.attrs_default);
    }

    #[test]
    fn anything_else_stops_the_model_where_it_starts() {
        for (input, at) in [
            (&b"ab\tc"[..], 2),
            (b"ab\x1b[2Jc", 2),
            (b"caf\xc3\xa9", 3),
            (b"x\ny", 1),
            (b"ab\x1b[", 2),
        ] {
            let mut m = LineModel::new(40);
            assert_eq!(m.advance(input), Step::Stop(at), "{input:?}");
        }
        let mut m = LineModel::new(4);
        assert_eq!(
            m.advance(b"abcd"),
            Step::Stop(3),
            "the last column is left to the emulator"
        );
    }

    #[test]
    fn the_printable_scan_stops_at_the_first_other_byte() {
        for len in 0..40 {
            for bad in [0x00u8, 0x1b, 0x1f, 0x7f, 0x80, 0x9f, 0xa0, 0xff] {
                let mut buf = vec![b'a'; len];
                assert_eq!(printable_run(&buf), len);
                buf.push(bad);
                buf.extend_from_slice(b"xyz");
                assert_eq!(printable_run(&buf), len, "{len} {bad:#x}");
            }
        }
        assert_eq!(printable_run(b" ~"), 2);
        // Every byte value, at every place in a word.
        for bad in 0..=255u8 {
            for at in 0..17 {
                let mut buf = vec![b'~'; 24];
                buf[at] = bad;
                let want = if (0x20..=0x7e).contains(&bad) { 24 } else { at };
                assert_eq!(printable_run(&buf), want, "{bad:#x} at {at}");
            }
        }
    }

    #[test]
    fn drawing_skips_blank_gaps() {
        let mut m = LineModel::new(20);
        m.advance(b"abcdef\r\x1b[K\x1b[4Cxy");
        // \x1b[4C is not simple: the model stops there
        let mut m2 = LineModel::new(20);
        m2.cells[0] = b'a';
        m2.cells[5] = b'b';
        m2.extent = 6;
        let mut out = Vec::new();
        m2.draw(&mut out);
        assert_eq!(out, b"a\x1b[4Cb");
        assert_eq!(m2.text(), "a    b");
        assert_eq!(m.cursor, 0);
    }
}
