//! A job's clean transcript on disk: `output.log`, one final line per `\n`-terminated line,
//! numbered from 0 exactly as in memory, appended as lines become final and bounded by a cap.

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Seek, SeekFrom, Write};
use std::ops::ControlFlow;

use crate::terminal::FinalLines;

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
    /// A writer appending to `file` (new and empty, made by the store), holding at most `cap`
    /// bytes.
    pub(crate) fn new(file: File, cap: u64) -> Self {
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

    /// Appends a batch of final lines: in one write when it fits under the cap (the batch is
    /// already the log's text), line by line up to the cap otherwise.
    pub(crate) fn push_all(&mut self, lines: &FinalLines) {
        let len = lines.text().len() as u64;
        if self.truncated || self.bytes + len > self.cap {
            for line in lines {
                self.push(line);
            }
            return;
        }
        let Some(out) = self.out.as_mut() else {
            return;
        };
        self.bytes += len;
        self.lines += lines.len() as u64;
        self.dirty = true;
        if let Err(e) = out.write_all(lines.text().as_bytes()) {
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
#[derive(Debug, Default, Clone)]
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

/// Longest line a streaming read hands out: the rest of a longer one (only a log written by
/// something else than ptyjobs has one) is skipped, so memory stays bounded.
pub(crate) const STREAM_LINE_CAP: usize = 1 << 20;

impl LogIndex {
    /// Complete lines indexed.
    pub(crate) fn lines(&self) -> u64 {
        self.lines
    }

    /// Byte offset where line `n` starts (`n` up to [`Self::lines`], the end of the indexed
    /// bytes). Costs a scan of at most [`STRIDE`] lines from the nearest checkpoint, without
    /// holding any of them.
    pub(crate) fn offset_of(&self, file: &File, n: u64) -> std::io::Result<u64> {
        if n >= self.lines {
            return Ok(self.scanned);
        }
        let mark = usize::try_from(n / STRIDE).unwrap_or(usize::MAX);
        let Some(&start) = self.marks.get(mark) else {
            return Ok(self.scanned);
        };
        let mut skip = n % STRIDE;
        let mut pos = start;
        if skip == 0 {
            return Ok(pos);
        }
        let mut reader = BufReader::with_capacity(64 * 1024, file);
        reader.seek(SeekFrom::Start(start))?;
        loop {
            let buf = reader.fill_buf()?;
            if buf.is_empty() {
                return Ok(pos);
            }
            let len = buf.len();
            for i in memchr::memchr_iter(b'\n', buf) {
                skip -= 1;
                if skip == 0 {
                    return Ok(pos + i as u64 + 1);
                }
            }
            pos += len as u64;
            reader.consume(len);
        }
    }

    /// Calls `f` with lines `from..to` of the indexed log (those it has), numbered, one at a
    /// time (a line longer than [`STREAM_LINE_CAP`] is cut), until it breaks. Memory stays
    /// bounded whatever the log's size.
    pub(crate) fn visit(
        &self,
        file: &File,
        from: u64,
        to: u64,
        f: &mut dyn FnMut(u64, &str) -> ControlFlow<()>,
    ) -> std::io::Result<ControlFlow<()>> {
        let end = self.scanned;
        let last = self.lines.min(to);
        let mut pos = self.offset_of(file, from)?;
        let mut reader = BufReader::with_capacity(64 * 1024, file);
        reader.seek(SeekFrom::Start(pos))?;
        let mut line = Vec::new();
        let mut n = from;
        while pos < end && n < last {
            line.clear();
            // Read up to the newline, keeping at most the cap.
            loop {
                let buf = reader.fill_buf()?;
                if buf.is_empty() {
                    return Ok(ControlFlow::Continue(()));
                }
                let (chunk, done) = match memchr::memchr(b'\n', buf) {
                    Some(i) => (&buf[..i], i + 1),
                    None => (buf, buf.len()),
                };
                let room = STREAM_LINE_CAP.saturating_sub(line.len());
                line.extend_from_slice(&chunk[..chunk.len().min(room)]);
                let ended = done > chunk.len();
                reader.consume(done);
                pos += done as u64;
                if ended {
                    break;
                }
            }
            if f(n, &String::from_utf8_lossy(&line)).is_break() {
                return Ok(ControlFlow::Break(()));
            }
            n += 1;
        }
        Ok(ControlFlow::Continue(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A log path in a fresh temporary directory, removed when the returned guard drops.
    fn temp(name: &str) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::Builder::new()
            .prefix(&format!("ptyjobs-log-{name}-"))
            .tempdir()
            .unwrap();
        let path = dir.path().join("output.log");
        (dir, path)
    }

    #[test]
    fn lines_read_back_by_number_across_checkpoints_and_growth() {
        let (_dir, path) = temp("index");
        let mut w = LogWriter::new(File::create(&path).unwrap(), u64::MAX);
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
        let (_dir, path) = temp("partial");
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
        let (_dir, path) = temp("cap");
        let mut w = LogWriter::new(File::create(&path).unwrap(), 20);
        for i in 0..10 {
            w.push(&format!("line {i}"));
        }
        w.flush();
        assert!(w.truncated());
        assert_eq!(w.lines(), 2);
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text, format!("line 0\nline 1\n{}\n", cap_marker(20)));
    }

    #[test]
    fn a_batch_is_one_text_and_the_cap_still_cuts_it_line_by_line() {
        let (_dir, path) = temp("batch");
        let batch = |lines: &[&str]| FinalLines::of(lines);
        let mut w = LogWriter::new(File::create(&path).unwrap(), 20);
        w.push_all(&batch(&["line 0", "", "line 2"]));
        w.push_all(&batch(&[]));
        assert_eq!(w.lines(), 3);
        // "line 3\n" would pass the cap: the marker, then nothing more.
        w.push_all(&batch(&["line 3", "line 4"]));
        w.push_all(&batch(&["x"]));
        w.flush();
        assert!(w.truncated());
        assert_eq!(w.lines(), 3);
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text, format!("line 0\n\nline 2\n{}\n", cap_marker(20)));
        let mut index = LogIndex::default();
        assert_eq!(index.update(&File::open(&path).unwrap()).unwrap(), 4);
    }

    #[test]
    fn disk_runs_read_only_what_a_budget_keeps_and_visits_stream() {
        use super::super::disk_run::DiskRun;
        use crate::output::window::read_window;
        let (_dir, path) = temp("window");
        let mut w = LogWriter::new(File::create(&path).unwrap(), u64::MAX);
        for i in 0..5000 {
            w.push(&format!("line {i:04}"));
        }
        w.flush();
        let f = File::open(&path).unwrap();
        let mut index = LogIndex::default();
        index.update(&f).unwrap();
        assert_eq!(index.offset_of(&f, 0).unwrap(), 0);
        assert_eq!(index.offset_of(&f, 1030).unwrap(), 1030 * 10);
        assert_eq!(index.offset_of(&f, 5000).unwrap(), 5000 * 10);
        let mut run = DiskRun::new(&f, &index, 1000, u64::MAX);
        let win = read_window(&mut [&mut run], 1000, 1000).unwrap();
        assert!(win.output.len() <= 1000);
        assert!(win.output.starts_with("line 1000\nline 1001\n"));
        assert!(win.output.ends_with("\nline 4998\nline 4999"));
        assert_eq!(win.line_count, 4000);
        let kept = win.output.lines().filter(|l| l.starts_with("line")).count() as u64;
        assert_eq!(kept + win.omitted_lines, 4000);
        let mut small = DiskRun::new(&f, &index, 10, 13);
        let win = read_window(&mut [&mut small], 10, 1000).unwrap();
        assert_eq!(win.output, "line 0010\nline 0011\nline 0012");
        let mut seen = Vec::new();
        let flow = index
            .visit(&f, 4997, u64::MAX, &mut |n, l| {
                seen.push((n, l.to_owned()));
                ControlFlow::Continue(())
            })
            .unwrap();
        assert!(flow.is_continue());
        assert_eq!(seen.len(), 3);
        assert_eq!(seen[0], (4997, "line 4997".to_owned()));
    }

    #[test]
    fn a_huge_single_line_is_cut_at_both_ends() {
        use super::super::disk_run::DiskRun;
        use crate::output::window::read_window;
        let (_dir, path) = temp("huge");
        std::fs::write(&path, format!("{}\nshort\n", "x".repeat(3 << 20))).unwrap();
        let f = File::open(&path).unwrap();
        let mut index = LogIndex::default();
        index.update(&f).unwrap();
        let mut run = DiskRun::new(&f, &index, 0, 1);
        let win = read_window(&mut [&mut run], 0, 4096).unwrap();
        assert!(win.output.len() <= 4096);
        assert!(win.output.starts_with("xxx") && win.output.ends_with("xxx"));
        assert_eq!(win.omitted_from, Some(0));
        let mut lens = Vec::new();
        let flow = index
            .visit(&f, 0, u64::MAX, &mut |_, l| {
                lens.push(l.len());
                ControlFlow::Continue(())
            })
            .unwrap();
        assert!(flow.is_continue());
        assert_eq!(lens, [STREAM_LINE_CAP, 5]);
    }
}
