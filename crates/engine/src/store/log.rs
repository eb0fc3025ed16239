//! A job's clean transcript on disk: `output.log`, one final line per `\n`-terminated line,
//! numbered from 0 exactly as in memory, appended as lines become final and bounded by a cap.

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Seek, SeekFrom, Write};
use std::path::Path;

use super::private_file;

/// The line that ends a log which reached its cap.
pub(crate) fn cap_marker(cap: u64) -> String {
    format!("[ptyjobs: the disk log reached its cap of {cap} bytes; later lines were not saved]")
}

/// Appends final lines to a job's log. Write errors (a full disk) stop the log with a warning;
/// they never reach the job.
#[derive(Debug)]
pub(crate) struct LogWriter {
    out: Option<BufWriter<File>>,
    /// Lines written, not counting the cap marker.
    lines: u64,
    bytes: u64,
    cap: u64,
    truncated: bool,
    dirty: bool,
}

impl LogWriter {
    /// Creates (or empties) the log at `path`, mode 0600, holding at most `cap` bytes.
    pub(crate) fn create(path: &Path, cap: u64) -> std::io::Result<Self> {
        Ok(Self::with_file(private_file(path)?, cap))
    }

    /// Opens the empty log a spare job directory already holds (cheaper than creating one).
    pub(crate) fn open_existing(path: &Path, cap: u64) -> std::io::Result<Self> {
        let file = std::fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(path)?;
        Ok(Self::with_file(file, cap))
    }

    fn with_file(file: File, cap: u64) -> Self {
        Self {
            out: Some(BufWriter::with_capacity(64 * 1024, file)),
            lines: 0,
            bytes: 0,
            cap,
            truncated: false,
            dirty: false,
        }
    }

    /// Appends one final line. Past the cap, writes the marker once and then nothing.
    pub(crate) fn push(&mut self, line: &str) {
        if self.truncated {
            return;
        }
        let Some(out) = self.out.as_mut() else {
            return;
        };
        let len = line.len() as u64 + 1;
        let result = if self.bytes + len > self.cap {
            self.truncated = true;
            writeln!(out, "{}", cap_marker(self.cap))
        } else {
            self.bytes += len;
            self.lines += 1;
            out.write_all(line.as_bytes())
                .and_then(|()| out.write_all(b"\n"))
        };
        self.dirty = true;
        if let Err(e) = result {
            self.fail(&e);
        }
    }

    /// Hands what is buffered to the kernel, so readers (and a crash) see it.
    pub(crate) fn flush(&mut self) {
        if !self.dirty {
            return;
        }
        self.dirty = false;
        if let Some(Err(e)) = self.out.as_mut().map(Write::flush) {
            self.fail(&e);
        }
    }

    /// Flushes and closes the file (a finished job's log takes no more lines); the counts stay.
    pub(crate) fn close(&mut self) {
        self.flush();
        self.out = None;
    }

    fn fail(&mut self, e: &std::io::Error) {
        tracing::warn!(
            "job log write failed, the rest of this job's output stays in memory only: {e}"
        );
        self.out = None;
        self.truncated = true;
    }

    /// Lines on disk that carry their real numbers (`0..lines()`).
    pub(crate) fn lines(&self) -> u64 {
        self.lines
    }

    /// Whether the cap (or a write error) stopped the log.
    pub(crate) fn truncated(&self) -> bool {
        self.truncated
    }
}

/// Lines per checkpoint of the sparse index.
const STRIDE: u64 = 1024;

/// A sparse line → byte-offset index of one log, extended as the log grows, so reading any
/// range costs a seek plus at most [`STRIDE`] skipped lines, whatever the log's size.
#[derive(Debug, Default)]
pub(crate) struct LogIndex {
    /// Bytes scanned so far (always just after a `\n`).
    scanned: u64,
    /// Complete lines in the scanned bytes.
    lines: u64,
    /// `marks[k]` is the byte offset of line `k * STRIDE`.
    marks: Vec<u64>,
}

impl LogIndex {
    /// Scans what was appended to `file` since the last call; returns the complete lines.
    pub(crate) fn update(&mut self, file: &File) -> std::io::Result<u64> {
        let len = file.metadata()?.len();
        if len < self.scanned {
            *self = Self::default(); // rewritten from scratch: start over
        }
        if len == self.scanned {
            return Ok(self.lines);
        }
        let mut reader = BufReader::with_capacity(256 * 1024, file);
        reader.seek(SeekFrom::Start(self.scanned))?;
        // `pos` is the absolute offset of the buffer's first byte; `line_start` that of the
        // line not yet terminated. A partial last line is scanned again next time.
        let mut pos = self.scanned;
        let mut line_start = self.scanned;
        loop {
            let buf = reader.fill_buf()?;
            if buf.is_empty() {
                break;
            }
            let n = buf.len();
            for i in memchr::memchr_iter(b'\n', buf) {
                if self.lines.is_multiple_of(STRIDE) {
                    self.marks.push(line_start);
                }
                self.lines += 1;
                line_start = pos + i as u64 + 1;
            }
            pos += n as u64;
            reader.consume(n);
        }
        self.scanned = line_start;
        Ok(self.lines)
    }

    /// Lines `from..from+limit` (clamped to the complete lines indexed).
    pub(crate) fn read(
        &self,
        file: &File,
        from: u64,
        limit: usize,
    ) -> std::io::Result<Vec<String>> {
        let end = self.lines.min(from.saturating_add(limit as u64));
        if from >= end {
            return Ok(Vec::new());
        }
        let mark = usize::try_from(from / STRIDE).unwrap_or(usize::MAX);
        let Some(&offset) = self.marks.get(mark) else {
            return Ok(Vec::new());
        };
        let mut reader = BufReader::with_capacity(64 * 1024, file);
        reader.seek(SeekFrom::Start(offset))?;
        let mut line = Vec::new();
        let mut out = Vec::with_capacity(usize::try_from(end - from).unwrap_or(0));
        for n in (from / STRIDE * STRIDE)..end {
            line.clear();
            if reader.read_until(b'\n', &mut line)? == 0 {
                break;
            }
            if n >= from {
                if line.last() == Some(&b'\n') {
                    line.pop();
                }
                out.push(String::from_utf8_lossy(&line).into_owned());
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("ptyjobs-log-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir.join("output.log")
    }

    #[test]
    fn lines_read_back_by_number_across_checkpoints_and_growth() {
        let path = temp("index");
        let mut w = LogWriter::create(&path, u64::MAX).unwrap();
        let mut index = LogIndex::default();
        for i in 0..3000 {
            w.push(&format!("line {i}"));
            if i == 1500 {
                w.flush();
                let f = File::open(&path).unwrap();
                assert_eq!(index.update(&f).unwrap(), 1501);
            }
        }
        w.flush();
        let f = File::open(&path).unwrap();
        assert_eq!(index.update(&f).unwrap(), 3000);
        assert_eq!(index.read(&f, 0, 2).unwrap(), ["line 0", "line 1"]);
        assert_eq!(
            index.read(&f, 2047, 3).unwrap(),
            ["line 2047", "line 2048", "line 2049"]
        );
        assert_eq!(
            index.read(&f, 2998, 10).unwrap(),
            ["line 2998", "line 2999"]
        );
        assert!(index.read(&f, 3000, 10).unwrap().is_empty());
    }

    #[test]
    fn a_partial_last_line_is_not_counted_until_complete_and_long_lines_are_indexed() {
        let path = temp("partial");
        std::fs::write(&path, "a\nbb\nccc").unwrap();
        let mut index = LogIndex::default();
        assert_eq!(index.update(&File::open(&path).unwrap()).unwrap(), 2);
        let long = "x".repeat(600 * 1024);
        std::fs::write(&path, format!("a\nbb\nccc\n{long}\nz\n")).unwrap();
        let f = File::open(&path).unwrap();
        assert_eq!(index.update(&f).unwrap(), 5);
        assert_eq!(
            index.read(&f, 2, 3).unwrap(),
            ["ccc".to_owned(), long, "z".to_owned()]
        );
    }

    #[test]
    fn the_cap_ends_the_log_with_one_marker() {
        let path = temp("cap");
        let mut w = LogWriter::create(&path, 20).unwrap();
        for i in 0..10 {
            w.push(&format!("line {i}"));
        }
        w.flush();
        assert!(w.truncated());
        assert_eq!(w.lines(), 2);
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text, format!("line 0\nline 1\n{}\n", cap_marker(20)));
    }
}
