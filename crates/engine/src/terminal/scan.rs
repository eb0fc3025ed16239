//! Byte-level preparation of a job's output before the emulator sees it (invalid UTF-8, the
//! sequences the transcript must act on first) and of the text that leaves it.

use super::parse::Sequence;

/// What invalid input becomes inside the emulator. vt100 refuses to draw U+FFFD itself, so
/// invalid bytes are drawn as this private-use character and turned back into U+FFFD whenever
/// text leaves the emulator (a program printing U+10FFFD itself would read as U+FFFD too).
pub(super) const STAND_IN: char = '\u{10fffd}';
pub(super) const REPLACEMENT: &[u8] = "\u{10fffd}".as_bytes();

/// Drawn into the last column when a double-width character does not fit there and moves to
/// the next row. vt100 marks such a row as ending its line (it wraps only rows whose last cell
/// holds something); the marker makes it a wrapped row like any other, so the line is joined
/// again whatever the widths of its characters. It stands for a blank cell and never leaves the
/// emulator as a character (see [`restore_row`]).
pub(super) const MARGIN: char = '\u{10fffc}';

/// Turns one row's text from the emulator into what a person sees: the stand-in back into
/// U+FFFD, a margin marker at the end of the row removed (with the blank cells before it), one
/// elsewhere turned into the blank it stands for.
pub(super) fn restore_row(text: String) -> String {
    let mut text = restore_replacement(text);
    if !text.contains(MARGIN) {
        return text;
    }
    if text.ends_with(MARGIN) {
        let kept = text.trim_end_matches(MARGIN).trim_end_matches(' ').len();
        text.truncate(kept);
    }
    text.replace(MARGIN, " ")
}

/// The screen's text like [`vt100::Screen::contents`] (rows of one line joined, lines separated
/// by `\n`, trailing empty lines dropped), each row cleaned by [`restore_row`].
pub(super) fn screen_text(screen: &vt100::Screen) -> String {
    let cols = screen.size().1.get();
    let mut out = String::new();
    let mut wrapping = false;
    for (i, row) in (0u16..).zip(screen.rows(0, cols)) {
        let row = restore_row(row);
        if wrapping && row.is_empty() {
            out.push('\n');
        }
        out.push_str(&row);
        wrapping = screen.row_wrapped(i);
        if !wrapping {
            out.push('\n');
        }
    }
    let kept = out.trim_end_matches('\n').len();
    out.truncate(kept);
    out
}

/// Turns the emulator's stand-in back into U+FFFD.
fn restore_replacement(text: String) -> String {
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
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Watched {
    /// Erases the whole screen (`ESC[2J`).
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

/// Whether the emulator's dispatch of `seq` is one the transcript acts on first.
pub(super) fn watched(seq: &Sequence) -> Option<Watched> {
    if seq.kind != b'[' {
        return (seq.intermediates.is_empty() && seq.final_byte == b'c').then_some(Watched::Reset);
    }
    let values = || seq.values();
    match (seq.intermediates.as_slice(), seq.final_byte) {
        (b"", b'J') => match seq.first() {
            2 => Some(Watched::Clear),
            0 => Some(Watched::ClearBelow),
            _ => None,
        },
        (b"?", b'h') => values()
            .any(|m| matches!(m, 47 | 1047 | 1049))
            .then_some(Watched::EnterAlternate),
        (b"", b'r') => Some(Watched::ScrollRegion(values().any(|v| v != 0))),
        (b"", f @ (b'h' | b'l')) => values()
            .any(|m| m == 4)
            .then_some(Watched::InsertMode(f == b'h')),
        _ => None,
    }
}
