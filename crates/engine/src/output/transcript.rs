//! The transcript's storage: final lines in a few large text chunks with the end of each line,
//! not a `String` per line (a run of short lines costs a copy per line and no allocation, and
//! evicting a line costs moving an offset; nothing held is ever moved again).

use std::collections::VecDeque;

/// What holding one line is charged beside its text. It is what a line cost when each was a
/// `String` of its own (the header in a deque and the allocator's rounding); kept so that the
/// cap evicts exactly where it did, and it bounds memory, not just text: a million
/// one-character lines are charged ~50 MB, not ~1 MB. A line now really costs its text plus
/// 8 bytes of offset.
const LINE_OVERHEAD: usize = 48;

/// Text a chunk takes before the next line starts a new one (a longer line has a chunk of its
/// own). A chunk that is full is shrunk to its text, so memory is the text held plus at most
/// the partly evicted first chunk and the unused room of the last.
const CHUNK: usize = 64 * 1024;

/// Where a line ends: its chunk's number (counted since the transcript began) in the high half,
/// the offset in that chunk in the low half.
fn pos(chunk: u64, offset: usize) -> u64 {
    (chunk << 32) | offset as u64
}

fn chunk_of(pos: u64) -> u64 {
    pos >> 32
}

fn offset_of(pos: u64) -> usize {
    usize::try_from(pos & 0xffff_ffff).unwrap_or(usize::MAX)
}

/// Final lines of a job, bounded in bytes (text plus [`LINE_OVERHEAD`] per line), numbered
/// absolutely from the first line the job printed.
#[derive(Debug)]
pub struct Transcript {
    /// The held lines' text, in order, in full chunks then `tail`; a line never spans two
    /// chunks, and a chunk's lines are one after another from its start (before the first held
    /// line: evicted text, dropped with its chunk).
    chunks: VecDeque<String>,
    /// The chunk lines are added to, numbered `first_chunk + chunks.len()`.
    tail: String,
    /// The number of `chunks[0]` (of `tail` when there is no full chunk).
    first_chunk: u64,
    /// Where each held line ends (see [`pos`]).
    ends: VecDeque<u64>,
    /// Where the last evicted line ended: the first held line starts there if it is in the
    /// same chunk, else at its chunk's start.
    front: u64,
    /// Absolute number of the first held line.
    first: u64,
    /// What the held lines are charged against the cap.
    bytes: usize,
    cap_bytes: usize,
}

impl Transcript {
    /// An empty transcript holding at most `cap_bytes` bytes (text plus a fixed overhead per
    /// line; at least one line is always held, whatever its size).
    pub fn new(cap_bytes: usize) -> Self {
        Self {
            chunks: VecDeque::new(),
            tail: String::new(),
            first_chunk: 0,
            ends: VecDeque::new(),
            front: 0,
            first: 0,
            bytes: 0,
            cap_bytes,
        }
    }

    /// Appends one final line (its text copied in) and evicts from the front while over the
    /// cap.
    pub fn push_str(&mut self, line: &str) {
        self.bytes += line.len() + LINE_OVERHEAD;
        if !self.tail.is_empty() && self.tail.len() + line.len() > CHUNK {
            // A job that filled a chunk is likely to fill the next: it is allocated whole
            // (small jobs' first chunk grows from nothing).
            let mut full = std::mem::replace(&mut self.tail, String::with_capacity(CHUNK));
            full.shrink_to_fit();
            self.chunks.push_back(full);
        }
        self.tail.push_str(line);
        let number = self.first_chunk + self.chunks.len() as u64;
        self.ends.push_back(pos(number, self.tail.len()));
        while self.bytes > self.cap_bytes && self.ends.len() > 1 {
            let Some(end) = self.ends.pop_front() else {
                break;
            };
            self.bytes -= offset_of(end) - self.start_of(end, self.front) + LINE_OVERHEAD;
            self.front = end;
            self.first += 1;
            // Chunks before the first held line's are dropped.
            let keep = self.ends.front().map_or(number, |&e| chunk_of(e));
            while self.first_chunk < keep && !self.chunks.is_empty() {
                self.chunks.pop_front();
                self.first_chunk += 1;
            }
        }
    }

    /// Where the line ending at `end` starts in its chunk, the line before it ending at
    /// `before`.
    fn start_of(&self, end: u64, before: u64) -> usize {
        if chunk_of(before) == chunk_of(end) {
            offset_of(before)
        } else {
            0
        }
    }

    /// Absolute number of the first held line (= lines dropped so far).
    pub fn first_line(&self) -> u64 {
        self.first
    }

    /// Absolute number one past the last final line.
    pub fn end_line(&self) -> u64 {
        self.first + self.ends.len() as u64
    }

    /// Held lines from absolute number `from` (clamped to what is held) to the end.
    pub fn iter_from(&self, from: u64) -> impl Iterator<Item = &str> {
        let skip = usize::try_from(from.saturating_sub(self.first))
            .unwrap_or(usize::MAX)
            .min(self.ends.len());
        let mut before = match skip {
            0 => self.front,
            k => self.ends[k - 1],
        };
        self.ends.range(skip..).map(move |&end| {
            let start = self.start_of(end, before);
            before = end;
            let chunk = usize::try_from(chunk_of(end) - self.first_chunk).unwrap_or(usize::MAX);
            let text = if chunk == self.chunks.len() {
                Some(&self.tail)
            } else {
                self.chunks.get(chunk)
            };
            text.and_then(|c| c.get(start..offset_of(end)))
                .unwrap_or_default()
        })
    }

    /// [`Self::push_str`] of an owned line.
    #[cfg(test)]
    pub fn push(&mut self, line: String) {
        self.push_str(&line);
    }

    /// Bytes allocated for text.
    #[cfg(test)]
    fn allocated(&self) -> usize {
        self.chunks.iter().map(String::capacity).sum::<usize>() + self.tail.capacity()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    /// The buffer reads exactly as a deque of `String`s with the same cap (the transcript as
    /// it was), whatever the lines' sizes, and its memory stays within about twice the cap.
    #[test]
    fn the_buffer_reads_as_a_line_per_string_would() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            usize::try_from(seed % n as u64).unwrap_or(0)
        };
        for round in 0..40 {
            let cap = 1 + next(4000);
            let mut t = Transcript::new(cap);
            let (mut lines, mut first, mut bytes) = (VecDeque::<String>::new(), 0u64, 0usize);
            let mut longest = 0;
            for i in 0..2000 {
                let len = match next(10) {
                    0 => next(3000),
                    1 => 0,
                    _ => next(80),
                };
                let line: String = (0..len)
                    .map(|k| if (i + k) % 7 == 0 { 'é' } else { 'x' })
                    .collect();
                bytes += line.len() + LINE_OVERHEAD;
                longest = longest.max(line.len());
                lines.push_back(line.clone());
                while bytes > cap && lines.len() > 1 {
                    let old = lines.pop_front().unwrap_or_default();
                    bytes -= old.len() + LINE_OVERHEAD;
                    first += 1;
                }
                t.push_str(&line);
                let what = format!("round {round}, line {i}, cap {cap}");
                assert_eq!(
                    (t.first_line(), t.end_line()),
                    (first, first + lines.len() as u64)
                );
                assert_eq!(t.bytes, bytes, "{what}");
                let from = first + next(lines.len() + 2) as u64;
                let want: Vec<&str> = lines
                    .iter()
                    .skip(usize::try_from(from - first).unwrap_or(0))
                    .map(String::as_str)
                    .collect();
                assert_eq!(t.iter_from(from).collect::<Vec<_>>(), want, "{what}");
                assert_eq!(t.iter_from(0).count(), lines.len(), "{what}");
                // The text held, plus at most a chunk at each end.
                let held: usize = lines.iter().map(String::len).sum();
                assert!(
                    t.allocated() <= held + 2 * (2 * CHUNK + longest),
                    "{what}: {} bytes for {held}",
                    t.allocated()
                );
            }
        }
    }
}
