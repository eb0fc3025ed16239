//! Byte-level preparation of a job's output before the emulator sees it: invalid UTF-8, and
//! the escape sequences the transcript must act on first.

/// What invalid input becomes inside the emulator. vt100 refuses to draw U+FFFD itself, so
/// invalid bytes are drawn as this private-use character and turned back into U+FFFD whenever
/// text leaves the emulator (a program printing U+10FFFD itself would read as U+FFFD too).
pub(super) const STAND_IN: char = '\u{10fffd}';
pub(super) const REPLACEMENT: &[u8] = "\u{10fffd}".as_bytes();

/// Turns the emulator's stand-in back into U+FFFD.
pub(super) fn restore_replacement(text: String) -> String {
    if text.contains(STAND_IN) {
        text.replace(STAND_IN, "\u{fffd}")
    } else {
        text
    }
}

/// Returns `tail + input` as valid UTF-8: every invalid sequence becomes [`STAND_IN`] (vte would
/// drop it silently), and a character cut off at the end is kept in `tail` for the next chunk (vte
/// mishandles characters split across calls).
pub(super) fn sanitize_utf8<'a>(tail: &mut Vec<u8>, input: &'a [u8]) -> std::borrow::Cow<'a, [u8]> {
    let joined;
    let mut rest: &[u8] = if tail.is_empty() {
        if std::str::from_utf8(input).is_ok() {
            return std::borrow::Cow::Borrowed(input);
        }
        input
    } else {
        let mut t = std::mem::take(tail);
        t.extend_from_slice(input);
        joined = t;
        &joined
    };
    let mut out = Vec::with_capacity(rest.len() + 8);
    loop {
        match std::str::from_utf8(rest) {
            Ok(_) => {
                out.extend_from_slice(rest);
                break;
            }
            Err(e) => {
                let (good, bad) = rest.split_at(e.valid_up_to());
                out.extend_from_slice(good);
                match e.error_len() {
                    Some(n) => {
                        out.extend_from_slice(REPLACEMENT);
                        rest = &bad[n..];
                    }
                    None => {
                        tail.extend_from_slice(bad);
                        break;
                    }
                }
            }
        }
    }
    std::borrow::Cow::Owned(out)
}

/// A sequence the transcript must act on before the emulator sees it.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Watched {
    /// Erases the whole screen (`ESC[2J`, `ESC c`).
    Clear,
    /// `ESC[J` / `ESC[0J`: erases from the cursor down, a full clear when the cursor is at home.
    ClearBelow,
    /// Switches to the alternate screen (`?47h`, `?1047h`, `?1049h`).
    EnterAlternate,
    /// `ESC c`: full reset, which also clears the screen.
    Reset,
    /// `CSI <top>;<bottom> r` (DECSTBM): true when a scroll region is set, false for `CSI r`.
    ScrollRegion(bool),
    /// `CSI 4 h` / `CSI 4 l` (IRM): insert mode on or off.
    InsertMode(bool),
}

#[derive(Debug, PartialEq, Eq)]
pub(super) enum Scan {
    /// The escape sequence at this position is cut off by the end of the buffer.
    Incomplete,
    /// A sequence of this many bytes that we act on.
    Watched(Watched, usize),
    /// Anything else: let the emulator have it.
    Other,
}

/// Classifies the escape sequence starting at `buf[0] == ESC`.
pub(super) fn scan_escape(buf: &[u8]) -> Scan {
    match buf.get(1) {
        None => Scan::Incomplete,
        Some(b'c') => Scan::Watched(Watched::Reset, 2),
        Some(b'[') => {
            let mut i = 2;
            while let Some(&b) = buf.get(i) {
                match b {
                    0x20..=0x3f => i += 1,
                    0x40..=0x7e => return classify_csi(&buf[2..i], b, i + 1),
                    _ => return Scan::Other,
                }
            }
            Scan::Incomplete
        }
        Some(_) => Scan::Other,
    }
}

fn classify_csi(params: &[u8], final_byte: u8, len: usize) -> Scan {
    match (final_byte, params) {
        (b'J', b"2") => Scan::Watched(Watched::Clear, len),
        (b'J', b"" | b"0") => Scan::Watched(Watched::ClearBelow, len),
        (b'h', [b'?', modes @ ..]) => {
            let alt = modes
                .split(|&b| b == b';')
                .any(|m| matches!(m, b"47" | b"1047" | b"1049"));
            if alt {
                Scan::Watched(Watched::EnterAlternate, len)
            } else {
                Scan::Other
            }
        }
        (b'r', p) if !p.starts_with(b"?") => {
            Scan::Watched(Watched::ScrollRegion(!p.is_empty()), len)
        }
        (b'h' | b'l', p) if p.split(|&b| b == b';').any(|m| m == b"4") => {
            Scan::Watched(Watched::InsertMode(final_byte == b'h'), len)
        }
        _ => Scan::Other,
    }
}
