//! A mirror of the emulator's escape-sequence parser (vte 0.15, the parser inside vt100).
//!
//! The terminal must know, at every byte, what state the emulator's parser is in: the line
//! model may only see text the emulator would draw (never the body of a window title), a
//! sequence cut by the end of a read must be recognised when it completes, and strings (OSC,
//! DCS, SOS, PM, APC) must be bounded before they reach anything that buffers them. This module
//! follows vte's state machine transition for transition, but keeps only what ptyjobs acts on:
//! the parameters and intermediates of a control sequence (bounded like vte's own) and the first
//! [`STRING_CAP`] bytes of an OSC body. Everything else inside a string is dropped here, so the
//! emulator only ever receives complete, bounded sequences and is always back in its ground
//! state between them.

/// Bytes of an OSC body kept; the rest of the string is discarded (titles are truncated).
pub(crate) const STRING_CAP: usize = 4096;

/// Parameters vte keeps per sequence (values and sub-values together).
const MAX_PARAMS: usize = 32;
/// Intermediates vte keeps per sequence.
const MAX_INTERMEDIATES: usize = 2;

/// The parser state, named as in vte (and in <https://vt100.net/emu/dec_ansi_parser>).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum State {
    #[default]
    Ground,
    Escape,
    EscapeIntermediate,
    CsiEntry,
    CsiParam,
    CsiIntermediate,
    CsiIgnore,
    DcsEntry,
    DcsParam,
    DcsIntermediate,
    DcsPassthrough,
    DcsIgnore,
    OscString,
    SosPmApcString,
}

/// A complete control sequence (CSI or ESC) as the emulator would dispatch it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Sequence {
    /// `[` for a control sequence, 0 for an ESC sequence.
    pub kind: u8,
    /// Private markers (`<=>?`, CSI only) and intermediates (`0x20..=0x2f`), in order.
    pub intermediates: Vec<u8>,
    /// Parameter values; `true` marks a sub-parameter (joined to the previous one by `:`).
    pub params: Vec<(u16, bool)>,
    /// The final byte.
    pub final_byte: u8,
}

impl Sequence {
    /// The parameter values, sub-parameters included, in order.
    pub fn values(&self) -> impl Iterator<Item = u16> + '_ {
        self.params.iter().map(|&(v, _)| v)
    }

    /// The first parameter (0 when absent, as vte reports it).
    pub fn first(&self) -> u16 {
        self.params.first().map_or(0, |&(v, _)| v)
    }

    /// Bytes that make the emulator dispatch exactly this sequence.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.push(0x1b);
        if self.kind == b'[' {
            out.push(b'[');
            let (private, rest) = match self.intermediates.first() {
                Some(&p @ 0x3c..=0x3f) => (Some(p), &self.intermediates[1..]),
                _ => (None, &self.intermediates[..]),
            };
            out.extend(private);
            for (i, &(v, sub)) in self.params.iter().enumerate() {
                if i > 0 {
                    out.push(if sub { b':' } else { b';' });
                }
                out.extend_from_slice(v.to_string().as_bytes());
            }
            out.extend_from_slice(rest);
        } else {
            out.extend_from_slice(&self.intermediates);
        }
        out.push(self.final_byte);
    }
}

/// What one byte did to the parser.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// Nothing to act on yet.
    Pending,
    /// A C0 control executed in the middle of a sequence (vte executes it at once, the
    /// sequence goes on).
    Execute(u8),
    /// A control sequence or ESC sequence completed; the parser is back in the ground state.
    Dispatch(Sequence),
    /// An OSC string ended. `bel` is whether BEL ended it (else ST/ESC, CAN or SUB). When ended
    /// by CAN/SUB, that byte is also executed ([`Self::Execute`] semantics, reported as
    /// `then_execute`).
    Osc {
        /// The kept body (at most [`STRING_CAP`] bytes, cut at a character boundary).
        body: Vec<u8>,
        /// Terminated by BEL (the reply to a query uses the same terminator).
        bel: bool,
        /// CAN or SUB ended the string and is executed after it.
        then_execute: Option<u8>,
    },
    /// CAN or SUB aborted a sequence or a non-OSC string: executed, back to ground.
    Abort(u8),
}

/// The parser mirror: its state and the sequence being collected.
#[derive(Debug, Default)]
pub(crate) struct Mirror {
    pub state: State,
    kind: u8,
    intermediates: Vec<u8>,
    ignoring: bool,
    params: Vec<(u16, bool)>,
    param: u16,
    /// The next completed value is a sub-parameter.
    sub_next: bool,
    osc: Vec<u8>,
}

impl Mirror {
    fn reset_params(&mut self) {
        self.intermediates.clear();
        self.ignoring = false;
        self.params.clear();
        self.param = 0;
        self.sub_next = false;
    }

    fn collect(&mut self, b: u8) {
        if self.intermediates.len() == MAX_INTERMEDIATES {
            self.ignoring = true;
        } else {
            self.intermediates.push(b);
        }
    }

    fn param_digit(&mut self, b: u8) {
        if self.params.len() == MAX_PARAMS {
            self.ignoring = true;
        } else {
            self.param = self
                .param
                .saturating_mul(10)
                .saturating_add(u16::from(b - b'0'));
        }
    }

    /// `;` (next parameter) or `:` (next sub-parameter).
    fn param_end(&mut self, sub: bool) {
        if self.params.len() == MAX_PARAMS {
            self.ignoring = true;
        } else {
            self.params.push((self.param, self.sub_next));
            self.param = 0;
            self.sub_next = sub;
        }
    }

    fn dispatch(&mut self, final_byte: u8) -> Step {
        if self.params.len() < MAX_PARAMS && self.kind == b'[' {
            self.params.push((self.param, self.sub_next));
        }
        self.state = State::Ground;
        Step::Dispatch(Sequence {
            kind: self.kind,
            intermediates: std::mem::take(&mut self.intermediates),
            params: std::mem::take(&mut self.params),
            final_byte,
        })
    }

    /// Enters the escape state (an ESC byte seen in any state).
    pub fn escape(&mut self) {
        self.reset_params();
        self.kind = 0;
        self.state = State::Escape;
    }

    fn osc_end(&mut self, bel: bool, then_execute: Option<u8>) -> Step {
        let mut body = std::mem::take(&mut self.osc);
        // The body is valid UTF-8 up to the cap: drop a character the cap cut in two.
        if let Err(e) = std::str::from_utf8(&body) {
            body.truncate(e.valid_up_to());
        }
        Step::Osc {
            body,
            bel,
            then_execute,
        }
    }

    /// The "anywhere" transitions of a non-ground state; `None` for other bytes.
    fn anywhere(&mut self, b: u8) -> Option<Step> {
        match b {
            0x18 | 0x1a => {
                self.state = State::Ground;
                Some(Step::Abort(b))
            }
            0x1b => {
                self.escape();
                Some(Step::Pending)
            }
            _ => None,
        }
    }

    /// Advances by one byte (the parser must not be in the ground state, which
    /// [`Self::escape`] leaves).
    pub fn step(&mut self, b: u8) -> Step {
        use State::*;
        let c0 = matches!(b, 0x00..=0x17 | 0x19 | 0x1c..=0x1f);
        match self.state {
            Ground => Step::Pending,
            Escape => match b {
                _ if c0 => Step::Execute(b),
                0x20..=0x2f => {
                    self.collect(b);
                    self.state = EscapeIntermediate;
                    Step::Pending
                }
                b'P' => {
                    self.reset_params();
                    self.state = DcsEntry;
                    Step::Pending
                }
                b'X' | b'^' | b'_' => {
                    self.state = SosPmApcString;
                    Step::Pending
                }
                b'[' => {
                    self.reset_params();
                    self.kind = b'[';
                    self.state = CsiEntry;
                    Step::Pending
                }
                b']' => {
                    self.osc.clear();
                    self.state = OscString;
                    Step::Pending
                }
                0x30..=0x7e => self.dispatch(b),
                0x18 | 0x1a => {
                    self.state = Ground;
                    Step::Abort(b)
                }
                _ => Step::Pending, // ESC again, DEL, bytes >= 0x80: ignored
            },
            EscapeIntermediate => match b {
                _ if c0 => Step::Execute(b),
                0x20..=0x2f => {
                    self.collect(b);
                    Step::Pending
                }
                0x30..=0x7e => self.dispatch(b),
                _ => self.anywhere(b).unwrap_or(Step::Pending),
            },
            CsiEntry | CsiParam | CsiIntermediate | CsiIgnore if c0 => Step::Execute(b),
            CsiEntry => match b {
                0x20..=0x2f => {
                    self.collect(b);
                    self.state = CsiIntermediate;
                    Step::Pending
                }
                0x30..=0x39 => {
                    self.param_digit(b);
                    self.state = CsiParam;
                    Step::Pending
                }
                b':' | b';' => {
                    self.param_end(b == b':');
                    self.state = CsiParam;
                    Step::Pending
                }
                0x3c..=0x3f => {
                    self.collect(b);
                    self.state = CsiParam;
                    Step::Pending
                }
                0x40..=0x7e => self.dispatch(b),
                _ => self.anywhere(b).unwrap_or(Step::Pending),
            },
            CsiParam => match b {
                0x20..=0x2f => {
                    self.collect(b);
                    self.state = CsiIntermediate;
                    Step::Pending
                }
                0x30..=0x39 => {
                    self.param_digit(b);
                    Step::Pending
                }
                b':' | b';' => {
                    self.param_end(b == b':');
                    Step::Pending
                }
                0x3c..=0x3f => {
                    self.state = CsiIgnore;
                    Step::Pending
                }
                0x40..=0x7e => self.dispatch(b),
                _ => self.anywhere(b).unwrap_or(Step::Pending),
            },
            CsiIntermediate => match b {
                0x20..=0x2f => {
                    self.collect(b);
                    Step::Pending
                }
                0x30..=0x3f => {
                    self.state = CsiIgnore;
                    Step::Pending
                }
                0x40..=0x7e => self.dispatch(b),
                _ => self.anywhere(b).unwrap_or(Step::Pending),
            },
            CsiIgnore => match b {
                0x40..=0x7e => {
                    // The sequence ends without being dispatched.
                    self.state = Ground;
                    Step::Pending
                }
                _ => self.anywhere(b).unwrap_or(Step::Pending),
            },
            DcsEntry | DcsParam | DcsIntermediate if c0 => Step::Pending,
            DcsEntry | DcsParam => match b {
                0x20..=0x2f => {
                    self.state = DcsIntermediate;
                    Step::Pending
                }
                0x30..=0x3b => {
                    self.state = DcsParam;
                    Step::Pending
                }
                0x3c..=0x3f => {
                    self.state = if self.state == DcsEntry {
                        DcsParam
                    } else {
                        DcsIgnore
                    };
                    Step::Pending
                }
                0x40..=0x7e => {
                    self.state = DcsPassthrough;
                    Step::Pending
                }
                _ => self.anywhere(b).unwrap_or(Step::Pending),
            },
            DcsIntermediate => match b {
                0x20..=0x2f => Step::Pending,
                0x30..=0x3f => {
                    self.state = DcsIgnore;
                    Step::Pending
                }
                0x40..=0x7e => {
                    self.state = DcsPassthrough;
                    Step::Pending
                }
                _ => self.anywhere(b).unwrap_or(Step::Pending),
            },
            DcsPassthrough => match b {
                0x18 | 0x1a => {
                    self.state = Ground;
                    Step::Abort(b)
                }
                0x1b => {
                    self.escape();
                    Step::Pending
                }
                0x9c => {
                    self.state = Ground;
                    Step::Pending
                }
                _ => Step::Pending,
            },
            DcsIgnore | SosPmApcString => self.anywhere(b).unwrap_or(Step::Pending),
            OscString => match b {
                0x07 => {
                    self.state = Ground;
                    self.osc_end(true, None)
                }
                0x18 | 0x1a => {
                    self.state = Ground;
                    self.osc_end(false, Some(b))
                }
                0x1b => {
                    let step = self.osc_end(false, None);
                    self.escape();
                    step
                }
                _ if c0 => Step::Pending,
                _ => {
                    if self.osc.len() < STRING_CAP {
                        self.osc.push(b);
                    }
                    Step::Pending
                }
            },
        }
    }

    /// Inside a string, consumes the run of body bytes before the next byte that can end it
    /// (keeping what an OSC keeps), so long strings are passed over quickly; returns how many
    /// bytes were consumed (0 outside a string).
    pub fn skip_string(&mut self, buf: &[u8]) -> usize {
        let ends: &[u8] = match self.state {
            State::OscString => &[0x07, 0x18, 0x1a, 0x1b],
            State::DcsPassthrough => &[0x18, 0x1a, 0x1b, 0x9c],
            State::DcsIgnore | State::SosPmApcString => &[0x18, 0x1a, 0x1b],
            _ => return 0,
        };
        let n = buf
            .iter()
            .position(|b| ends.contains(b))
            .unwrap_or(buf.len());
        if self.state == State::OscString && self.osc.len() < STRING_CAP {
            // vte drops C0 controls inside an OSC and keeps everything else.
            let room = STRING_CAP - self.osc.len();
            let kept = buf[..n]
                .iter()
                .filter(|&&b| !matches!(b, 0x00..=0x1f))
                .take(room);
            self.osc.extend(kept);
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(bytes: &[u8]) -> Vec<Step> {
        let mut m = Mirror::default();
        let mut out = Vec::new();
        let mut i = 0;
        while i < bytes.len() {
            let n = m.skip_string(&bytes[i..]);
            i += n;
            let Some(&b) = bytes.get(i) else { break };
            i += 1;
            if m.state == State::Ground {
                if b == 0x1b {
                    m.escape();
                }
                continue;
            }
            match m.step(b) {
                Step::Pending => {}
                s => out.push(s),
            }
        }
        out
    }

    #[test]
    fn sequences_are_parsed_as_vte_parses_them() {
        let [Step::Dispatch(s)] = &run(b"\x1b[?1;2004h")[..] else {
            panic!()
        };
        assert_eq!(
            (s.intermediates.as_slice(), s.final_byte),
            (&b"?"[..], b'h')
        );
        assert_eq!(s.values().collect::<Vec<_>>(), [1, 2004]);
        let [Step::Dispatch(s)] = &run(b"\x1b[38:2:1:2:3m")[..] else {
            panic!()
        };
        let mut enc = Vec::new();
        s.encode(&mut enc);
        assert_eq!(enc, b"\x1b[38:2:1:2:3m");
        // A control inside a sequence is executed; the sequence goes on.
        assert_eq!(
            run(b"\x1b[2\nJ")[0],
            Step::Execute(b'\n'),
            "executed in place"
        );
        // ESC inside a string ends the string and starts a new sequence.
        let steps = run(b"\x1b]0;title\x1b\\");
        assert!(matches!(&steps[0], Step::Osc { body, bel: false, .. } if body == b"0;title"));
        // BEL does not end an APC string, ESC does.
        assert_eq!(run(b"\x1b_abc\x07def"), []);
    }

    #[test]
    fn an_osc_body_is_capped() {
        let mut bytes = b"\x1b]0;".to_vec();
        bytes.resize(100_000, b'x');
        bytes.push(0x07);
        let [Step::Osc { body, .. }] = &run(&bytes)[..] else {
            panic!()
        };
        assert_eq!(body.len(), STRING_CAP);
    }
}
