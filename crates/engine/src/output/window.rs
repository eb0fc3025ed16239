//! Bounded reads: a range of lines is read within a byte budget *before* anything is built.
//!
//! A read that fits its budget is read whole. One that does not keeps whole lines from its
//! head and from its tail, half the budget each, and a marker line in the middle says what
//! was left out (exactly as [`super::OutputSlice::fit`] does to a slice already read). Only
//! those lines are ever read or copied: a `limit` of 10^15 lines over a 100 MB log costs the
//! budget, not the log.
//!
//! The range may span several [`LineRun`]s (the disk log, then the lines held in memory, then
//! those still on screen); each knows how to give its front and back lines within a budget.

use std::io;

/// Lines that can be read from either end within a byte budget. A line costs its text plus
/// one byte (its separator).
pub(crate) trait LineRun {
    /// Lines in the run.
    fn lines(&self) -> u64;
    /// Bytes of the whole run (text plus one per line).
    fn bytes(&mut self) -> io::Result<u64>;
    /// Whole lines from the front, as many as fit in `budget` bytes.
    fn front(&mut self, budget: u64) -> io::Result<Vec<String>>;
    /// Whole lines from the back (in order), as many as fit in `budget` bytes.
    fn back(&mut self, budget: u64) -> io::Result<Vec<String>>;
    /// The first line's first bytes, at most `n` (cut at a character boundary).
    fn first_head(&mut self, n: usize) -> io::Result<String>;
    /// The last line's last bytes, at most `n` (cut at a character boundary).
    fn last_tail(&mut self, n: usize) -> io::Result<String>;
}

/// What a bounded read returned and what it left out.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Window {
    /// The text: every line, or the head and tail lines around a marker line.
    pub(crate) output: String,
    /// Lines the range covers (returned or left out).
    pub(crate) line_count: u64,
    /// Lines left out of the middle.
    pub(crate) omitted_lines: u64,
    /// Bytes left out of the middle.
    pub(crate) omitted_bytes: u64,
    /// Absolute number of the first line left out (or of the line whose middle was).
    pub(crate) omitted_from: Option<u64>,
}

/// The marker line standing for what a read left out.
pub(crate) fn marker(omitted_lines: u64, omitted_bytes: u64, omitted_from: u64) -> String {
    format!(
        "[... {omitted_lines} lines, {omitted_bytes} bytes omitted: read them with \
         offset={omitted_from} limit={} ...]",
        omitted_lines.max(1)
    )
}

fn cost(lines: &[String]) -> u64 {
    lines.iter().map(|l| l.len() as u64 + 1).sum()
}

/// Reads the lines of `runs` (numbered from `first_line`) within `max_bytes`.
pub(crate) fn read_window(
    runs: &mut [&mut dyn LineRun],
    first_line: u64,
    max_bytes: usize,
) -> io::Result<Window> {
    let mut runs: Vec<&mut dyn LineRun> = runs
        .iter_mut()
        .filter(|r| r.lines() > 0)
        .map(|r| &mut **r)
        .collect();
    let count: u64 = runs.iter().map(|r| r.lines()).sum();
    if count == 0 {
        return Ok(Window::default());
    }
    let mut total = 0u64;
    for r in &mut runs {
        total += r.bytes()?;
    }
    let joined = total - 1;
    if joined <= max_bytes as u64 {
        let mut lines = Vec::new();
        for r in &mut runs {
            lines.extend(r.front(total)?);
        }
        return Ok(Window {
            output: lines.join("\n"),
            line_count: count,
            ..Window::default()
        });
    }
    // Room for the marker line and its newlines: its longest form, whatever is left out.
    let room = marker(count, joined, first_line.saturating_add(count)).len() + 2;
    let half = (max_bytes.saturating_sub(room) / 2) as u64;
    let mut head = Vec::new();
    let mut room = half;
    for r in &mut runs {
        let got = r.front(room)?;
        room = room.saturating_sub(cost(&got));
        let whole = got.len() as u64 == r.lines();
        head.extend(got);
        if !whole {
            break;
        }
    }
    // Tail runs from the last one back; `joined > max_bytes >= 2 * half` keeps the two apart.
    let mut tail_parts = Vec::new();
    let mut room = half;
    for r in runs.iter_mut().rev() {
        let got = r.back(room)?;
        room = room.saturating_sub(cost(&got));
        let whole = got.len() as u64 == r.lines();
        tail_parts.push(got);
        if !whole {
            break;
        }
    }
    let tail: Vec<String> = tail_parts.into_iter().rev().flatten().collect();
    let (head_text, tail_text, omitted_lines, omitted_from) = if head.is_empty() && tail.is_empty()
    {
        // Not one whole line fits at either end: keep the text's own head and tail.
        let n = usize::try_from(half).unwrap_or(usize::MAX);
        let head = runs
            .first_mut()
            .map_or(Ok(String::new()), |r| r.first_head(n))?;
        let tail = runs
            .last_mut()
            .map_or(Ok(String::new()), |r| r.last_tail(n))?;
        (head, tail, count.saturating_sub(2), first_line)
    } else {
        let kept = (head.len() + tail.len()) as u64;
        (
            head.join("\n"),
            tail.join("\n"),
            count - kept,
            first_line + head.len() as u64,
        )
    };
    let omitted_bytes = joined.saturating_sub((head_text.len() + tail_text.len()) as u64);
    let marker = marker(omitted_lines, omitted_bytes, omitted_from);
    let mut output = String::with_capacity(head_text.len() + marker.len() + tail_text.len() + 2);
    output.push_str(&head_text);
    if !head_text.is_empty() {
        output.push('\n');
    }
    output.push_str(&marker);
    if !tail_text.is_empty() {
        output.push('\n');
        output.push_str(&tail_text);
    }
    Ok(Window {
        output,
        line_count: count,
        omitted_lines,
        omitted_bytes,
        omitted_from: Some(omitted_from),
    })
}

/// Where a read of a transcript starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Start {
    /// At this absolute line (by default the first line still held).
    Offset(Option<u64>),
    /// This many lines before the end (a tail: never reported `truncated`).
    Last(usize),
}

/// One read of a transcript, planned where its lines are found: lines `first..disk_to` of the
/// job's disk log, then the lines `held` (in memory, or a saved screen), with the counts the
/// answer carries. Built by the live and the stored side alike; a budgeted read copies what it
/// needs of `held` into a [`Captured`] and reads the plan with [`Plan::finish`] once the disk
/// (if any) has been read, a search visits the disk part streamed, then `held`: one splice for
/// every read.
#[derive(Debug)]
pub(crate) struct Plan<H = Captured> {
    /// The line the caller asked for (clamped to the transcript's end).
    pub(crate) requested: u64,
    /// The first line read.
    pub(crate) first: u64,
    /// The end of the part read from the disk log (`first` when none is).
    pub(crate) disk_to: u64,
    /// The lines after the disk's: where they are, or what a read copied of them.
    pub(crate) held: H,
    /// Whether this is a tail (never `truncated`).
    pub(crate) tail: bool,
    /// Lines of the whole transcript.
    pub(crate) total_lines: u64,
    /// Lines no longer held in memory.
    pub(crate) dropped_lines: u64,
    /// Lines below which every line is final.
    pub(crate) final_lines: u64,
    /// The job's status at the moment of the plan.
    pub(crate) status: crate::job::JobStatus,
    /// Where a "since" read moved back to (see [`super::OutputSlice::rewritten_from`]).
    pub(crate) rewritten_from: Option<u64>,
}

impl<H> Plan<H> {
    /// The same plan with its held lines replaced by `f`'s answer (what a read copies of
    /// them).
    pub(crate) fn map_held<K>(self, f: impl FnOnce(H) -> K) -> Plan<K> {
        Plan {
            requested: self.requested,
            first: self.first,
            disk_to: self.disk_to,
            held: f(self.held),
            tail: self.tail,
            total_lines: self.total_lines,
            dropped_lines: self.dropped_lines,
            final_lines: self.final_lines,
            status: self.status,
            rewritten_from: self.rewritten_from,
        }
    }
}

impl Plan {
    /// The answer to the planned read, given the window read over its runs.
    pub(crate) fn finish(self, window: Window) -> super::OutputSlice {
        let next_offset = self.first + window.line_count;
        super::OutputSlice {
            bytes: window.output.len() as u64,
            output: window.output,
            first_line: self.first,
            line_count: window.line_count,
            next_offset,
            total_lines: self.total_lines,
            dropped_lines: self.dropped_lines,
            final_lines: self.final_lines,
            truncated: !self.tail
                && (self.first > self.requested || next_offset < self.total_lines),
            omitted_lines: window.omitted_lines,
            omitted_bytes: window.omitted_bytes,
            omitted_from: window.omitted_from,
            rewritten_from: self.rewritten_from,
            status: self.status,
        }
    }

    /// Reads a plan with no disk part (a job without a state directory).
    pub(crate) fn read_held(mut self, max_bytes: usize) -> io::Result<super::OutputSlice> {
        let window = read_window(&mut [&mut self.held], self.first, max_bytes)?;
        Ok(self.finish(window))
    }
}

/// The largest index `<= i` that is a character boundary of `s`.
pub(crate) fn floor_boundary(s: &str, mut i: usize) -> usize {
    if i >= s.len() {
        return s.len();
    }
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// The smallest index `>= i` that is a character boundary of `s`.
pub(crate) fn ceil_boundary(s: &str, mut i: usize) -> usize {
    if i >= s.len() {
        return s.len();
    }
    while !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

/// The part of a run of lines held in memory that a read within `cap` bytes can need, copied
/// while the lines are borrowed (under a job's lock): at most `cap` bytes from each end.
#[derive(Debug, Default)]
pub(crate) struct Captured {
    count: u64,
    bytes: u64,
    /// Whole lines from the front within `cap` (every line when the run fits).
    front: Vec<String>,
    /// Whole lines from the back within `cap`, in order (empty when `front` has them all).
    back: Vec<String>,
    first_head: String,
    last_tail: String,
}

impl Captured {
    /// Copies what a read within `cap` bytes can need of the lines `visit` hands to its
    /// callback, in order. `visit` is called once or twice and must hand the same lines.
    pub(crate) fn capture(cap: usize, mut visit: impl FnMut(&mut dyn FnMut(&str))) -> Self {
        let cap64 = cap as u64;
        let mut c = Self::default();
        let mut front_full = false;
        visit(&mut |line| {
            let len = line.len() as u64 + 1;
            if c.count == 0 {
                c.first_head = line[..floor_boundary(line, cap)].to_owned();
            }
            c.count += 1;
            c.bytes += len;
            if !front_full && c.bytes <= cap64 {
                c.front.push(line.to_owned());
            } else {
                front_full = true;
            }
        });
        if c.count == 0 {
            return c;
        }
        if !front_full {
            let last = c.front.last().map_or("", String::as_str);
            c.last_tail = last[ceil_boundary(last, last.len().saturating_sub(cap))..].to_owned();
            return c;
        }
        let (total, count) = (c.bytes, c.count);
        let mut before = 0u64;
        let mut i = 0u64;
        visit(&mut |line| {
            let len = line.len() as u64 + 1;
            if total - before <= cap64 {
                c.back.push(line.to_owned());
            }
            if i + 1 == count {
                c.last_tail =
                    line[ceil_boundary(line, line.len().saturating_sub(cap))..].to_owned();
            }
            before += len;
            i += 1;
        });
        c
    }

    /// A capture of owned lines (a saved screen): nothing to copy, they are all kept.
    pub(crate) fn of_lines(lines: Vec<String>) -> Self {
        let bytes = cost(&lines);
        let first_head = lines.first().cloned().unwrap_or_default();
        let last_tail = lines.last().cloned().unwrap_or_default();
        Self {
            count: lines.len() as u64,
            bytes,
            front: lines,
            back: Vec::new(),
            first_head,
            last_tail,
        }
    }

    fn all(&self) -> bool {
        self.front.len() as u64 == self.count
    }
}

impl LineRun for Captured {
    fn lines(&self) -> u64 {
        self.count
    }

    fn bytes(&mut self) -> io::Result<u64> {
        Ok(self.bytes)
    }

    fn front(&mut self, budget: u64) -> io::Result<Vec<String>> {
        let mut used = 0;
        Ok(self
            .front
            .iter()
            .take_while(|l| {
                used += l.len() as u64 + 1;
                used <= budget
            })
            .cloned()
            .collect())
    }

    fn back(&mut self, budget: u64) -> io::Result<Vec<String>> {
        let from = if self.all() { &self.front } else { &self.back };
        let mut used = 0;
        let mut out: Vec<String> = from
            .iter()
            .rev()
            .take_while(|l| {
                used += l.len() as u64 + 1;
                used <= budget
            })
            .cloned()
            .collect();
        out.reverse();
        Ok(out)
    }

    fn first_head(&mut self, n: usize) -> io::Result<String> {
        let h = &self.first_head;
        Ok(h[..floor_boundary(h, n)].to_owned())
    }

    fn last_tail(&mut self, n: usize) -> io::Result<String> {
        let t = &self.last_tail;
        Ok(t[ceil_boundary(t, t.len().saturating_sub(n))..].to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn captured(lines: &[String], cap: usize) -> Captured {
        Captured::capture(cap, |f| lines.iter().for_each(|l| f(l)))
    }

    #[test]
    fn a_range_that_fits_is_read_whole() {
        let lines: Vec<String> = (0..10).map(|i| format!("line {i}")).collect();
        let mut c = captured(&lines, 1001);
        let w = read_window(&mut [&mut c], 5, 1000).unwrap();
        assert_eq!(w.output, lines.join("\n"));
        assert_eq!(
            (w.line_count, w.omitted_lines, w.omitted_from),
            (10, 0, None)
        );
    }

    #[test]
    fn a_large_range_keeps_head_and_tail_and_says_what_it_left_out() {
        let lines: Vec<String> = (0..10_000).map(|i| format!("line {i:05}")).collect();
        let mut c = captured(&lines, 1001);
        let w = read_window(&mut [&mut c], 100, 1000).unwrap();
        assert!(w.output.len() <= 1000, "{}", w.output.len());
        assert!(w.output.starts_with("line 00000\n"));
        assert!(w.output.ends_with("\nline 09999"));
        let kept = w.output.lines().filter(|l| l.starts_with("line")).count() as u64;
        assert_eq!(kept + w.omitted_lines, 10_000);
        let head = w
            .output
            .lines()
            .take_while(|l| l.starts_with("line"))
            .count() as u64;
        assert_eq!(w.omitted_from, Some(100 + head));
        assert!(
            w.output
                .contains(&format!("offset={} limit={}", 100 + head, w.omitted_lines))
        );
        // Nothing beyond the budget was copied out of the lines.
        assert!(c.front.len() + c.back.len() < 200);
    }

    #[test]
    fn runs_are_joined_and_a_huge_single_line_is_cut_at_characters() {
        let a: Vec<String> = (0..3).map(|i| format!("a{i}")).collect();
        let b: Vec<String> = (0..3).map(|i| format!("b{i}")).collect();
        let (mut ca, mut cb) = (captured(&a, 100), captured(&b, 100));
        let w = read_window(&mut [&mut ca, &mut cb], 0, 99).unwrap();
        assert_eq!(w.output, "a0\na1\na2\nb0\nb1\nb2");
        let huge = vec!["é".repeat(50_000)];
        let mut c = captured(&huge, 1001);
        let w = read_window(&mut [&mut c], 7, 1000).unwrap();
        assert!(w.output.len() <= 1000);
        assert!(w.output.starts_with('é') && w.output.ends_with('é'));
        assert_eq!(w.omitted_from, Some(7));
        assert!(w.omitted_bytes > 90_000);
    }
}
