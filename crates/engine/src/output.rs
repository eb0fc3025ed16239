//! The bounded transcript: final lines with absolute, stable line numbers.
//!
//! Lines are numbered from 0 for the first line the job ever printed. Eviction removes lines
//! from the front but never renumbers the rest, so an `offset` a caller saved keeps meaning the
//! same line. What is no longer held is counted in `dropped_lines`.

use std::collections::VecDeque;

use serde::Serialize;

use crate::job::JobStatus;

/// A read of a job's transcript.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OutputSlice {
    /// The lines returned, joined with `\n` (no trailing newline).
    pub output: String,
    /// Absolute number of the first line returned (equal to `next_offset` when none is).
    pub first_line: u64,
    /// How many lines were returned.
    pub line_count: u64,
    /// Absolute number of the line after the last one returned: pass it as the next `offset`
    /// to read only what is new.
    pub next_offset: u64,
    /// Lines the job has printed so far, including the current (unfinished) line on screen.
    pub total_lines: u64,
    /// Lines evicted from the front of the transcript to respect the memory cap.
    pub dropped_lines: u64,
    /// True when this slice is not the whole requested range: lines in it were evicted,
    /// or `limit` cut it short.
    pub truncated: bool,
    /// The job's status at the time of the read.
    pub status: JobStatus,
}

/// Final lines of a job, bounded in bytes.
#[derive(Debug)]
pub struct Transcript {
    lines: VecDeque<String>,
    /// Absolute number of `lines[0]`.
    first: u64,
    bytes: usize,
    cap_bytes: usize,
}

impl Transcript {
    /// An empty transcript holding at most `cap_bytes` bytes of text (at least one line is
    /// always held, whatever its size).
    pub fn new(cap_bytes: usize) -> Self {
        Self {
            lines: VecDeque::new(),
            first: 0,
            bytes: 0,
            cap_bytes,
        }
    }

    /// Appends one final line and evicts from the front while over the cap.
    pub fn push(&mut self, line: String) {
        self.bytes += line.len() + 1;
        self.lines.push_back(line);
        while self.bytes > self.cap_bytes && self.lines.len() > 1 {
            if let Some(old) = self.lines.pop_front() {
                self.bytes -= old.len() + 1;
                self.first += 1;
            }
        }
    }

    /// Absolute number of the first held line (= lines dropped so far).
    pub fn first_line(&self) -> u64 {
        self.first
    }

    /// Absolute number one past the last final line.
    pub fn end_line(&self) -> u64 {
        self.first + self.lines.len() as u64
    }

    /// Held lines from absolute number `from` (clamped to what is held) to the end.
    pub fn iter_from(&self, from: u64) -> impl Iterator<Item = &str> {
        let skip = from.saturating_sub(self.first);
        let skip = usize::try_from(skip).unwrap_or(usize::MAX);
        self.lines.iter().skip(skip).map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eviction_keeps_absolute_numbers() {
        let mut t = Transcript::new(20);
        for i in 0..10 {
            t.push(format!("line{i}"));
        }
        // each line is 6 bytes with its newline: 3 fit in 20 bytes
        assert_eq!(t.first_line(), 7);
        assert_eq!(t.end_line(), 10);
        assert_eq!(t.iter_from(7).next(), Some("line7"));
        assert_eq!(t.iter_from(8).collect::<Vec<_>>(), ["line8", "line9"]);
        assert_eq!(t.iter_from(0).count(), 3);
        assert!(t.bytes <= 20);
    }

    #[test]
    fn a_line_larger_than_the_cap_is_still_held_alone() {
        let mut t = Transcript::new(4);
        t.push("a".repeat(10));
        assert_eq!(t.end_line(), 1);
        t.push("b".into());
        assert_eq!(t.first_line(), 1);
        assert_eq!(t.iter_from(0).collect::<Vec<_>>(), ["b"]);
    }
}
