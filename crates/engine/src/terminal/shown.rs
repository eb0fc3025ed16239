//! What reads have shown of the lines that may still change: how a "since" read sees text that
//! was redrawn above the line it starts from.
//!
//! Lines still on the screen are numbered as they stand now, and a program may redraw them: a
//! select menu moves the cursor up (`ESC[3A`), erases (`ESC[J`) and draws the next question
//! there. A read from the last `next_offset` would then start below the new question, or past
//! the end. So every read notes the text (a digest) of the not-yet-final lines it returned,
//! and a read that asks for what came since a line first looks for a line above it whose text
//! is no longer what was shown: it starts there instead (`rewritten_from`).
//!
//! The invariant, for a reader that reads each time from the last answer's `next_offset`:
//! a line below `final_lines` never changes; whatever a read shows of a line is what the
//! terminal holds at that moment; a line whose text changed after a read showed it is shown
//! again by the next read (nothing on screen is hidden); `next_offset` moves back only to a
//! line whose text changed or was erased, never past text the reader was not shown. The notes
//! are the job's, not a reader's: two readers of one job see each other's reads as their own.

use std::collections::VecDeque;
use std::hash::{DefaultHasher, Hash, Hasher};

use super::Terminal;

/// Most lines noted (a screen's worth is all a read ever notes; finished lines are let go).
const MAX_SHOWN: usize = 2048;

/// The lines reads have shown while they could still change: (number, digest of the text),
/// by number.
#[derive(Debug, Default)]
pub(crate) struct Shown {
    lines: VecDeque<(u64, u64)>,
}

fn digest(text: &str) -> u64 {
    let mut h = DefaultHasher::new();
    text.hash(&mut h);
    h.finish()
}

/// A line as the terminal holds it now.
enum Now<'a> {
    Text(&'a str),
    /// Past the end: erased.
    Gone,
    /// Evicted from memory: cannot be compared (and cannot be shown again).
    Evicted,
}

impl Terminal {
    fn line_now<'a>(&'a self, n: u64, live: &'a [String]) -> Now<'a> {
        let transcript = &self.parser.callbacks().transcript;
        let end = transcript.end_line();
        if n < transcript.first_line() {
            Now::Evicted
        } else if n < end {
            transcript
                .iter_from(n)
                .next()
                .map_or(Now::Evicted, Now::Text)
        } else {
            usize::try_from(n - end)
                .ok()
                .and_then(|i| live.get(i))
                .map_or(Now::Gone, |t| Now::Text(t))
        }
    }

    /// The first line before `from` whose text is no longer what a read showed (or that was
    /// erased: then the end of the text), when there is one before `from`.
    pub(crate) fn rewritten_before(&self, from: u64) -> Option<u64> {
        let live = self.screen_lines();
        let total = self.final_end() + live.len() as u64;
        // Every note is of a line before `from`, so the line found is before it too (a gone
        // line `n` has `total <= n`).
        self.shown
            .lines
            .iter()
            .take_while(|(n, _)| *n < from)
            .find_map(|&(n, h)| match self.line_now(n, &live) {
                Now::Text(t) if digest(t) != h => Some(n),
                Now::Gone => Some(total),
                _ => None,
            })
    }

    /// Notes that a read showed lines `from..to` as they are now (the final ones need no
    /// note: they never change). Notes at or past `to` are dropped (the next read starts
    /// there), and so are notes of lines that became final as shown.
    pub(crate) fn remember(&mut self, from: u64, to: u64) {
        let live = self.screen_lines();
        let final_end = self.final_end();
        let mut kept: VecDeque<(u64, u64)> = self
            .shown
            .lines
            .iter()
            .copied()
            .filter(|&(n, h)| {
                n < from
                    && match self.line_now(n, &live) {
                        Now::Text(t) => n >= final_end || digest(t) != h,
                        Now::Gone => true,
                        Now::Evicted => false,
                    }
            })
            .collect();
        for n in from.max(final_end)..to {
            if let Now::Text(t) = self.line_now(n, &live) {
                kept.push_back((n, digest(t)));
            }
        }
        while kept.len() > MAX_SHOWN {
            kept.pop_front();
        }
        self.shown.lines = kept;
    }

    /// Notes the lines on screen that no read showed yet, as they are now: what a caller
    /// about to type sees (an interaction's starting point).
    pub(crate) fn remember_screen(&mut self) {
        let live = self.screen_lines();
        let final_end = self.final_end();
        let last = self.shown.lines.back().map_or(0, |&(n, _)| n + 1);
        for (i, t) in live.iter().enumerate() {
            let n = final_end + i as u64;
            if n >= last {
                self.shown.lines.push_back((n, digest(t)));
            }
        }
        while self.shown.lines.len() > MAX_SHOWN {
            self.shown.lines.pop_front();
        }
    }

    /// A read of what came since line `from` (an interaction's or a caller's last
    /// `next_offset`): from the first line above it that changed since a read showed it, when
    /// one did (`rewritten_from` says so), to the end; noted as shown.
    pub(crate) fn since(&mut self, from: u64, status: crate::job::JobStatus) -> super::OutputSlice {
        let rewritten = self.rewritten_before(from);
        let mut slice = self.slice(Some(rewritten.unwrap_or(from)), None, status);
        slice.rewritten_from = rewritten;
        self.remember(slice.first_line, slice.next_offset);
        slice
    }
}
