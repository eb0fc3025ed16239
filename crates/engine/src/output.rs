//! The bounded transcript: final lines with absolute, stable line numbers.
//!
//! Lines are numbered from 0 for the first line the job ever printed. Eviction removes lines
//! from the front but never renumbers the rest, so an `offset` a caller saved keeps meaning the
//! same line. What is no longer held is counted in `dropped_lines`.

use serde::Serialize;

use crate::job::JobStatus;

mod transcript;
pub(crate) mod window;

pub use transcript::Transcript;

/// A read of a job's transcript.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
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
    /// Set when a read of what came since a line (an offset at or past the end, a tail, an
    /// interaction) starts earlier: at this line, the first one above that changed since a
    /// read showed it (a question redrawn in place), or the end when lines were erased.
    /// `first_line` equals it then.
    pub rewritten_from: Option<u64>,
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
            rewritten_from: None,
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
}
