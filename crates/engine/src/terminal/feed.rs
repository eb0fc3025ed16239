//! The feed: bytes from the PTY, cut by the parser mirror into text for the line model and the
//! emulator, sequences the transcript acts on, queries to answer, and strings to bound.

use super::Terminal;
use super::parse::{Sequence, State, Step};
use super::replies::{self, Query};
use super::scan::{Watched, watched};

/// What the terminal does with a complete sequence besides handing it to the emulator.
pub(super) enum Action {
    Watched(Watched),
    Query(Query),
    /// `CSI <n> b` (REP): print the last printed character n more times.
    Repeat(u16),
}

pub(super) fn action(seq: &Sequence) -> Option<Action> {
    if seq.kind == b'[' && seq.intermediates.is_empty() && seq.final_byte == b'b' {
        return Some(Action::Repeat(seq.first().max(1)));
    }
    if let Some(w) = watched(seq) {
        return Some(Action::Watched(w));
    }
    replies::query(seq).map(Action::Query)
}

impl Terminal {
    /// Feeds valid UTF-8. Text and the sequences nothing acts on are handed on in batches; a
    /// sequence the transcript acts on, a query, a string, or a sequence cut by the end of the
    /// chunk or holding controls goes through the parser mirror.
    pub(super) fn feed_clean(&mut self, buf: &[u8]) {
        // What the line model takes needs no looking at here (see `Self::process_simple`).
        let mut i = if self.mirror.state == State::Ground {
            self.process_simple(buf)
        } else {
            0
        };
        let mut start = i;
        while i < buf.len() {
            if self.mirror.state != State::Ground {
                i += self.mirror.skip_string(&buf[i..]);
                if let Some(&b) = buf.get(i) {
                    i += 1;
                    self.step(b);
                }
                start = i;
                continue;
            }
            let Some(p) = crate::fastpath::find_byte(0x1b, &buf[i..]) else {
                break;
            };
            let esc = i + p;
            if let Some(len) = inert_csi(&buf[esc..]) {
                i = esc + len; // stays in the batch: only the emulator needs it
                continue;
            }
            self.mirror.escape();
            i = esc + 1;
            // The common case: a sequence of plain bytes, complete in this chunk.
            let mut done = None;
            while let Some(&b) = buf.get(i).filter(|b| (0x20..=0x7e).contains(*b)) {
                i += 1;
                match self.mirror.step(b) {
                    Step::Dispatch(seq) => {
                        done = Some(Some(seq));
                        break;
                    }
                    _ if self.mirror.state == State::Ground => {
                        done = Some(None); // ignored by the emulator too
                        break;
                    }
                    _ if self.in_string() => break,
                    _ => {}
                }
            }
            match done {
                Some(Some(seq)) => {
                    if let Some(act) = action(&seq) {
                        self.process(&buf[start..esc]);
                        self.act(act, &seq);
                        start = i;
                    }
                }
                Some(None) => {}
                None => {
                    self.process(&buf[start..esc]);
                    start = i;
                }
            }
        }
        if self.mirror.state == State::Ground {
            self.process(&buf[start..]);
        }
    }

    fn in_string(&self) -> bool {
        matches!(
            self.mirror.state,
            State::OscString
                | State::SosPmApcString
                | State::DcsEntry
                | State::DcsParam
                | State::DcsIntermediate
                | State::DcsPassthrough
                | State::DcsIgnore
        )
    }

    /// One byte through the parser mirror, outside the ground state.
    fn step(&mut self, b: u8) {
        match self.mirror.step(b) {
            Step::Pending => {}
            Step::Execute(c) | Step::Abort(c) => self.process(&[c]),
            Step::Dispatch(seq) => match action(&seq) {
                Some(act) => self.act(act, &seq),
                None => {
                    let mut bytes = Vec::new();
                    seq.encode(&mut bytes);
                    self.process(&bytes);
                }
            },
            Step::Osc {
                body,
                bel,
                then_execute,
            } => {
                self.osc(&body, bel);
                if let Some(c) = then_execute {
                    self.process(&[c]);
                }
            }
        }
    }

    /// A complete OSC string: the title, or a colour query. Nothing else in an OSC changes
    /// what ptyjobs shows, so the emulator never sees one.
    fn osc(&mut self, body: &[u8], bel: bool) {
        if let Some(title) = replies::title(body) {
            self.parser.callbacks_mut().title = Some(String::from_utf8_lossy(title).into_owned());
        }
        if self.replies.len() < replies::MAX_PENDING {
            replies::answer_osc(body, bel, &mut self.replies);
        }
    }

    /// Acts on a sequence: a watched one reaches the emulator after the transcript took what
    /// it wipes; a query is answered from the emulator's state (the emulator ignores it).
    fn act(&mut self, act: Action, seq: &Sequence) {
        // Queries and watched sequences look at the emulator's screen.
        self.materialize();
        match act {
            Action::Repeat(n) => {
                if let Some(c) = self.last_printed {
                    let text: String = std::iter::repeat_n(c, usize::from(n)).collect();
                    self.process(text.as_bytes());
                }
            }
            Action::Watched(what) => {
                if what == Watched::Reset {
                    self.last_printed = None;
                }
                self.model = None;
                self.before(what);
                let mut bytes = Vec::new();
                seq.encode(&mut bytes);
                self.draw(&bytes);
            }
            Action::Query(q) => {
                if self.replies.len() < replies::MAX_PENDING {
                    replies::answer(q, self.parser.screen(), &mut self.replies);
                }
            }
        }
    }
}

/// The length of the control sequence at the start of `buf` if it is complete, made of plain
/// bytes in the usual order (parameters, intermediates, final) and its final byte is one no
/// action of the terminal depends on (colours, cursor moves, erasing a line...): the common
/// case, which then needs no parsing here at all.
fn inert_csi(buf: &[u8]) -> Option<usize> {
    if buf.get(1) != Some(&b'[') {
        return None;
    }
    let mut i = 2;
    while buf.get(i).is_some_and(|b| (0x30..=0x3f).contains(b)) {
        i += 1;
    }
    while buf.get(i).is_some_and(|b| (0x20..=0x2f).contains(b)) {
        i += 1;
    }
    let f = *buf.get(i)?;
    // Finals the terminal acts on (see `action`): erase display, modes, scroll region, status,
    // attributes, window reports, DECRQM, version, repeat.
    let acted = matches!(
        f,
        b'J' | b'h' | b'l' | b'r' | b'n' | b'c' | b't' | b'p' | b'q' | b'b'
    );
    ((0x40..=0x7e).contains(&f) && !acted).then_some(i + 1)
}
