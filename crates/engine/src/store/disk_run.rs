//! A range of a job's disk log read within a byte budget: only the bytes a bounded read keeps
//! (see [`crate::output::window`]) are read, with positional reads found through the log's
//! sparse index.

use std::fs::File;

use super::log::LogIndex;
use crate::output::window::{LineRun, ceil_boundary, floor_boundary};

/// Lines `from..to` of an indexed log as a [`LineRun`]: reads only the bytes a bounded read
/// keeps (positional reads; the file's offset is not used).
pub(crate) struct DiskRun<'a> {
    file: &'a File,
    index: &'a LogIndex,
    from: u64,
    to: u64,
    /// Byte offsets of `from` and `to`, once looked up.
    span: Option<(u64, u64)>,
}

impl<'a> DiskRun<'a> {
    /// Lines `from..to`, clamped to the lines indexed.
    pub(crate) fn new(file: &'a File, index: &'a LogIndex, from: u64, to: u64) -> Self {
        let to = to.min(index.lines());
        Self {
            file,
            index,
            from: from.min(to),
            to,
            span: None,
        }
    }

    fn span(&mut self) -> std::io::Result<(u64, u64)> {
        if let Some(span) = self.span {
            return Ok(span);
        }
        let span = (
            self.index.offset_of(self.file, self.from)?,
            self.index.offset_of(self.file, self.to)?,
        );
        self.span = Some(span);
        Ok(span)
    }

    /// Bytes `at..at+len` of the log.
    fn read_at(&self, at: u64, len: u64) -> std::io::Result<Vec<u8>> {
        let mut buf = vec![0; usize::try_from(len).unwrap_or(0)];
        crate::sys::fs::read_exact_at(self.file, &mut buf, at)?;
        Ok(buf)
    }
}

/// The `\n`-terminated lines of `bytes` (a trailing unterminated piece is dropped).
fn split_lines(bytes: &[u8]) -> Vec<String> {
    let mut out = Vec::new();
    let mut start = 0;
    for i in memchr::memchr_iter(b'\n', bytes) {
        out.push(String::from_utf8_lossy(&bytes[start..i]).into_owned());
        start = i + 1;
    }
    out
}

impl LineRun for DiskRun<'_> {
    fn lines(&self) -> u64 {
        self.to - self.from
    }

    fn bytes(&mut self) -> std::io::Result<u64> {
        let (s, e) = self.span()?;
        Ok(e - s)
    }

    fn front(&mut self, budget: u64) -> std::io::Result<Vec<String>> {
        let (s, e) = self.span()?;
        Ok(split_lines(&self.read_at(s, budget.min(e - s))?))
    }

    fn back(&mut self, budget: u64) -> std::io::Result<Vec<String>> {
        let (s, e) = self.span()?;
        let want = budget.min(e - s);
        if want == e - s {
            return Ok(split_lines(&self.read_at(s, want)?));
        }
        // One byte more, to see whether the block starts a line.
        let block = self.read_at(e - want - 1, want + 1)?;
        let first = memchr::memchr(b'\n', &block).map_or(block.len(), |i| i + 1);
        Ok(split_lines(&block[first..]))
    }

    fn first_head(&mut self, n: usize) -> std::io::Result<String> {
        let (s, e) = self.span()?;
        let block = self.read_at(s, (n as u64).min(e - s))?;
        let line = memchr::memchr(b'\n', &block).map_or(&block[..], |i| &block[..i]);
        let text = String::from_utf8_lossy(line);
        Ok(text[..floor_boundary(&text, n)].to_owned())
    }

    fn last_tail(&mut self, n: usize) -> std::io::Result<String> {
        let (s, e) = self.span()?;
        // The last line ends with the newline at `e - 1`.
        let end = e.saturating_sub(1).max(s);
        let start = end.saturating_sub(n as u64).max(s);
        let block = self.read_at(start, end - start)?;
        let line = memchr::memrchr(b'\n', &block).map_or(&block[..], |i| &block[i + 1..]);
        let text = String::from_utf8_lossy(line);
        Ok(text[ceil_boundary(&text, text.len().saturating_sub(n))..].to_owned())
    }
}
