//! The bounded transcript: final lines with absolute, stable line numbers.
//!
//! Lines are numbered from 0 for the first line the job ever printed. Eviction removes lines
//! from the front but never renumbers the rest, so an `offset` a caller saved keeps meaning the
//! same line. What is no longer held is counted in `dropped_lines`.

use std::collections::VecDeque;

use serde::Serialize;

use crate::job::JobStatus;

pub(crate) mod window;

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
    /// Absolute number below which every line is final: it scrolled off the screen (or was
    /// cleared) and will never change. Lines from here on are still on screen.
    pub final_lines: u64,
    /// True when this slice is not the whole requested range: lines in it were evicted,
    /// or `limit` cut it short.
    pub truncated: bool,
    /// Bytes of `output`.
    pub bytes: u64,
    /// Lines cut out of the middle of `output` to respect a byte budget (see [`Self::fit`]).
    pub omitted_lines: u64,
    /// Bytes cut out of the middle of `output` to respect a byte budget.
    pub omitted_bytes: u64,
    /// Absolute number of the first line (or of the line whose middle) was cut out by
    /// [`Self::fit`]: read the gap with `offset = omitted_from`, `limit = omitted_lines`.
    pub omitted_from: Option<u64>,
    /// The job's status at the time of the read.
    pub status: JobStatus,
}

impl OutputSlice {
    /// Makes `output` fit in `max_bytes`: the first and last lines are kept and a marker line
    /// in the middle says how many lines and bytes were left out. Lines are cut whole, except a
    /// single line longer than the budget, whose head and tail are kept. `first_line` and
    /// `next_offset` do not change: the slice still covers the same range.
    pub fn fit(&mut self, max_bytes: usize) {
        if self.output.len() <= max_bytes {
            return;
        }
        let total_lines = self.output.split('\n').count() as u64;
        let half = max_bytes.saturating_sub(80) / 2;
        // Whole lines from the head while they fit in half the budget.
        let mut head_end = 0;
        for (i, _) in self.output.match_indices('\n') {
            if i > half {
                break;
            }
            head_end = i;
        }
        let mut tail_start = self.output.len();
        for (i, _) in self.output.rmatch_indices('\n') {
            if self.output.len() - (i + 1) > half || i < head_end {
                break;
            }
            tail_start = i + 1;
        }
        let whole_lines = !(head_end == 0 && tail_start == self.output.len());
        if !whole_lines {
            // No line boundary fits: keep the head and tail of the text itself.
            head_end = floor_char_boundary(&self.output, half);
            tail_start = ceil_char_boundary(&self.output, self.output.len() - half);
        }
        let head = &self.output[..head_end];
        let head_lines =
            head.matches('\n').count() as u64 + u64::from(whole_lines && !head.is_empty());
        let omitted_from = self.first_line + head_lines;
        let tail = &self.output[tail_start..];
        let kept_lines = if head.is_empty() {
            0
        } else {
            head.split('\n').count() as u64
        } + if tail.is_empty() {
            0
        } else {
            tail.split('\n').count() as u64
        };
        let omitted_bytes = (tail_start - head_end) as u64;
        let omitted_lines = total_lines.saturating_sub(kept_lines);
        let marker = window::marker(omitted_lines, omitted_bytes, omitted_from);
        let mut out = String::with_capacity(head.len() + marker.len() + tail.len() + 2);
        out.push_str(head);
        if !head.is_empty() {
            out.push('\n');
        }
        out.push_str(&marker);
        if !tail.is_empty() {
            out.push('\n');
            out.push_str(tail);
        }
        self.output = out;
        self.bytes = self.output.len() as u64;
        self.omitted_lines += omitted_lines;
        self.omitted_bytes += omitted_bytes;
        self.omitted_from = self.omitted_from.or(Some(omitted_from));
    }
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_char_boundary(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

/// What holding one line costs beside its text: the `String` header in the deque and the
/// allocator's rounding. Charged against the cap so that it bounds memory, not just text
/// (a million one-character lines would otherwise cost ~50 MB under a 16 MB cap).
const LINE_OVERHEAD: usize = 48;

/// Final lines of a job, bounded in bytes (text plus [`LINE_OVERHEAD`] per line).
#[derive(Debug)]
pub struct Transcript {
    lines: VecDeque<String>,
    /// Absolute number of `lines[0]`.
    first: u64,
    bytes: usize,
    cap_bytes: usize,
}

impl Transcript {
    /// An empty transcript holding at most `cap_bytes` bytes (text plus a fixed overhead per
    /// line; at least one line is always held, whatever its size).
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
        self.bytes += line.len() + LINE_OVERHEAD;
        self.lines.push_back(line);
        while self.bytes > self.cap_bytes && self.lines.len() > 1 {
            if let Some(old) = self.lines.pop_front() {
                self.bytes -= old.len() + LINE_OVERHEAD;
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

    fn slice_of(text: &str) -> OutputSlice {
        OutputSlice {
            output: text.to_owned(),
            first_line: 0,
            line_count: text.lines().count() as u64,
            next_offset: text.lines().count() as u64,
            total_lines: text.lines().count() as u64,
            dropped_lines: 0,
            final_lines: 0,
            truncated: false,
            bytes: text.len() as u64,
            omitted_lines: 0,
            omitted_bytes: 0,
            omitted_from: None,
            status: JobStatus::Running,
        }
    }

    #[test]
    fn fit_keeps_head_and_tail_lines_with_a_marker() {
        let text: Vec<String> = (0..1000).map(|i| format!("line {i:04}")).collect();
        let mut s = slice_of(&text.join("\n"));
        s.fit(400);
        assert!(s.output.len() <= 400, "{}", s.output.len());
        assert!(s.output.starts_with("line 0000\nline 0001"));
        assert!(s.output.ends_with("line 0998\nline 0999"));
        assert!(s.output.contains("lines, "), "{}", s.output);
        let kept = s.output.lines().filter(|l| l.starts_with("line")).count() as u64;
        assert_eq!(kept + s.omitted_lines, 1000);
        let head = s
            .output
            .lines()
            .take_while(|l| l.starts_with("line"))
            .count() as u64;
        assert_eq!(s.omitted_from, Some(head));
        assert!(
            s.output
                .contains(&format!("offset={head} limit={}", s.omitted_lines))
        );
        assert_eq!(s.bytes, s.output.len() as u64);
    }

    #[test]
    fn fit_cuts_inside_one_huge_line_at_character_boundaries() {
        let mut s = slice_of(&"é".repeat(10_000));
        s.fit(1000);
        assert!(s.output.len() <= 1000);
        assert!(s.omitted_bytes > 0);
        assert_eq!(s.omitted_from, Some(0));
        let mut small = slice_of("short");
        small.fit(1000);
        assert_eq!(small.output, "short");
    }

    #[test]
    fn eviction_keeps_absolute_numbers() {
        let mut t = Transcript::new(3 * (5 + LINE_OVERHEAD) + 1);
        for i in 0..10 {
            t.push(format!("line{i}"));
        }
        // each line costs its 5 bytes of text plus the overhead: 3 fit
        assert_eq!(t.first_line(), 7);
        assert_eq!(t.end_line(), 10);
        assert_eq!(t.iter_from(7).next(), Some("line7"));
        assert_eq!(t.iter_from(8).collect::<Vec<_>>(), ["line8", "line9"]);
        assert_eq!(t.iter_from(0).count(), 3);
        assert!(t.bytes <= 3 * (5 + LINE_OVERHEAD) + 1);
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
