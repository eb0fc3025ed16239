//! The transcript's storage: final lines in one text buffer with the end of each line, not a
//! `String` per line (a run of short lines costs a copy per line, no allocation, and evicting a
//! line costs moving an offset).

use std::collections::VecDeque;

/// What holding one line is charged beside its text. It is what a line cost when each was a
/// `String` of its own (the header in a deque and the allocator's rounding); kept so that the
/// cap evicts exactly where it did, and it bounds memory, not just text: a million
/// one-character lines are charged ~50 MB, not ~1 MB. A line now really costs its text plus
/// 8 bytes of offset.
const LINE_OVERHEAD: usize = 48;

/// Final lines of a job, bounded in bytes (text plus [`LINE_OVERHEAD`] per line), numbered
/// absolutely from the first line the job printed.
#[derive(Debug)]
pub struct Transcript {
    /// The held lines' text, one after another from `start` (before it: evicted text, not yet
    /// reclaimed). Line boundaries are character boundaries: every line was a `&str`.
    text: String,
    /// Offset in `text` of the first held line.
    start: usize,
    /// The end of each held line, as a position in the stream of every byte ever pushed.
    ends: VecDeque<u64>,
    /// Stream position of `text[0]`.
    base: u64,
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
            text: String::new(),
            start: 0,
            ends: VecDeque::new(),
            base: 0,
            first: 0,
            bytes: 0,
            cap_bytes,
        }
    }

    /// Appends one final line (its text copied into the buffer) and evicts from the front
    /// while over the cap.
    pub fn push_str(&mut self, line: &str) {
        self.bytes += line.len() + LINE_OVERHEAD;
        self.make_room(line.len());
        self.text.push_str(line);
        self.ends.push_back(self.base + self.text.len() as u64);
        while self.bytes > self.cap_bytes && self.ends.len() > 1 {
            if let Some(end) = self.ends.pop_front() {
                let next = usize::try_from(end - self.base).unwrap_or(self.text.len());
                self.bytes -= next - self.start + LINE_OVERHEAD;
                self.start = next;
                self.first += 1;
            }
        }
        if self.ends.len() == 1 && self.start > 0 && self.text.len() - self.start == line.len() {
            // Only the new line is held: nothing before it is worth keeping (or moving later).
            self.reclaim();
        }
    }

    /// Makes room for `n` more bytes. Evicted text is reclaimed (the held text moved to the
    /// front) when the buffer is full rather than growing it, and the room after a move is at
    /// least a quarter of what is held: a byte pushed is moved at most ~4 times, and the
    /// buffer stays within about twice the cap.
    fn make_room(&mut self, n: usize) {
        if self.text.len() + n <= self.text.capacity() || self.start == 0 {
            return;
        }
        self.reclaim();
        let want = n + self.text.len() / 4;
        if self.text.capacity() - self.text.len() < want {
            self.text.reserve_exact(want);
        }
    }

    /// Drops the evicted text at the front of the buffer.
    fn reclaim(&mut self) {
        self.text.drain(..self.start);
        self.base += self.start as u64;
        self.start = 0;
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
        let mut at = match skip {
            0 => self.start,
            k => self.offset(self.ends[k - 1]),
        };
        self.ends.range(skip..).map(move |&end| {
            let end = self.offset(end);
            let line = self.text.get(at..end).unwrap_or_default();
            at = end;
            line
        })
    }

    /// [`Self::push_str`] of an owned line.
    #[cfg(test)]
    pub fn push(&mut self, line: String) {
        self.push_str(&line);
    }

    /// Where stream position `pos` (a held line's end) is in `text`.
    fn offset(&self, pos: u64) -> usize {
        usize::try_from(pos - self.base).unwrap_or(self.text.len())
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
                // Grown only while everything in it is held (the cap, or one line over it).
                assert!(
                    t.text.capacity() <= 2 * (cap.max(longest) + longest) + 64,
                    "{what}: {} bytes of buffer",
                    t.text.capacity()
                );
            }
        }
    }
}
