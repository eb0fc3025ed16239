//! The answers a terminal gives to the queries a program writes: status, cursor position, device
//! attributes, size, colours, modes and version. They are computed from the emulator's state at
//! the point of the query and queued as reply bytes; the job's sink writes them to the PTY.

use super::parse::Sequence;

/// Width and height in pixels of one character cell, for the pixel size reports.
pub(crate) const CELL_PIXELS: (u16, u16) = (8, 16);
/// The foreground colour reported to OSC 10 (light grey on black, a dark theme).
const FOREGROUND: &str = "rgb:e5e5/e5e5/e5e5";
/// The background colour reported to OSC 11.
const BACKGROUND: &str = "rgb:0000/0000/0000";
/// Reply bytes kept for the sink at most; a program that floods queries without reading its
/// input loses the excess, as it would when a real terminal's input queue is full.
pub(crate) const MAX_PENDING: usize = 64 * 1024;

/// A query a terminal answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Query {
    /// `CSI 5 n`: device status.
    Status,
    /// `CSI 6 n`: cursor position.
    Cursor,
    /// `CSI ? 6 n`: cursor position with the page (DECXCPR).
    CursorPage,
    /// `CSI c` / `CSI 0 c`: primary device attributes.
    Primary,
    /// `CSI > c`: secondary device attributes.
    Secondary,
    /// `CSI > q`: the terminal's name and version (XTVERSION).
    Version,
    /// `CSI <n> t` with n = 14, 16, 18 or 19: a size report.
    Window(u16),
    /// `CSI ? <n> $ p` (private) or `CSI <n> $ p` (ANSI): a mode (DECRQM).
    Mode { private: bool, mode: u16 },
}

/// The query `seq` asks, if it is one.
pub(super) fn query(seq: &Sequence) -> Option<Query> {
    if seq.kind != b'[' {
        return None;
    }
    let first = seq.first();
    match (seq.intermediates.as_slice(), seq.final_byte) {
        (b"", b'n') if first == 5 => Some(Query::Status),
        (b"", b'n') if first == 6 => Some(Query::Cursor),
        (b"?", b'n') if first == 6 => Some(Query::CursorPage),
        (b"", b'c') if first == 0 => Some(Query::Primary),
        (b">", b'c') if first == 0 => Some(Query::Secondary),
        (b">", b'q') if first == 0 => Some(Query::Version),
        (b"", b't') if matches!(first, 14 | 16 | 18 | 19) => Some(Query::Window(first)),
        (b"?$", b'p') => Some(Query::Mode {
            private: true,
            mode: first,
        }),
        (b"$", b'p') => Some(Query::Mode {
            private: false,
            mode: first,
        }),
        _ => None,
    }
}

/// Appends the answer to `q` for the emulator's `screen`.
pub(super) fn answer(q: Query, screen: &vt100::Screen, out: &mut Vec<u8>) {
    let (rows, cols) = screen.size();
    let (rows, cols) = (rows.get(), cols.get());
    let (row, col) = screen.cursor_position();
    // After a character in the last column the cursor waits there for the next one.
    let (row, col) = (row + 1, col.min(cols - 1) + 1);
    let (cw, ch) = CELL_PIXELS;
    let text = match q {
        Query::Status => "\x1b[0n".to_owned(),
        Query::Cursor => format!("\x1b[{row};{col}R"),
        Query::CursorPage => format!("\x1b[?{row};{col};1R"),
        // A VT220-class terminal with ANSI colour.
        Query::Primary => "\x1b[?62;22c".to_owned(),
        Query::Secondary => format!("\x1b[>1;{};0c", version_number()),
        Query::Version => format!("\x1bP>|ptyjobs {}\x1b\\", env!("CARGO_PKG_VERSION")),
        Query::Window(14) => format!(
            "\x1b[4;{};{}t",
            u32::from(rows) * u32::from(ch),
            u32::from(cols) * u32::from(cw)
        ),
        Query::Window(16) => format!("\x1b[6;{ch};{cw}t"),
        Query::Window(18) => format!("\x1b[8;{rows};{cols}t"),
        Query::Window(_) => format!("\x1b[9;{rows};{cols}t"),
        Query::Mode { private, mode } => {
            let state = if private {
                private_mode(screen, mode)
            } else {
                ansi_mode(mode)
            };
            let mark = if private { "?" } else { "" };
            format!("\x1b[{mark}{mode};{state}$y")
        }
    };
    out.extend_from_slice(text.as_bytes());
}

/// The DECRQM state of a DEC private mode: 1 set, 2 reset, 3 permanently set, 0 unknown.
fn private_mode(screen: &vt100::Screen, mode: u16) -> u8 {
    use vt100::{MouseProtocolEncoding as E, MouseProtocolMode as M};
    let on = match mode {
        1 => screen.application_cursor(),
        // Autowrap is always on in this terminal.
        7 => return 3,
        25 => !screen.hide_cursor(),
        47 | 1049 => screen.alternate_screen(),
        9 => screen.mouse_protocol_mode() == M::Press,
        1000 => screen.mouse_protocol_mode() == M::PressRelease,
        1002 => screen.mouse_protocol_mode() == M::ButtonMotion,
        1003 => screen.mouse_protocol_mode() == M::AnyMotion,
        1005 => screen.mouse_protocol_encoding() == E::Utf8,
        1006 => screen.mouse_protocol_encoding() == E::Sgr,
        2004 => screen.bracketed_paste(),
        _ => return 0,
    };
    if on { 1 } else { 2 }
}

/// The DECRQM state of an ANSI mode: insert mode (4) and newline mode (20) are not supported,
/// so permanently reset (4); others unknown.
fn ansi_mode(mode: u16) -> u8 {
    match mode {
        4 | 20 => 4,
        _ => 0,
    }
}

/// The version as one number for the secondary attributes (`1.2.3` → 10203).
fn version_number() -> u32 {
    env!("CARGO_PKG_VERSION")
        .split(['.', '-'])
        .take(3)
        .map(|p| p.parse::<u32>().unwrap_or(0))
        .fold(0, |acc, p| acc * 100 + p)
}

/// Answers the colour queries of an OSC body (`10;?` foreground, `11;?` background, `12;?`
/// cursor; xterm's `10;?;?` asks for 10 and 11 in turn), in the terminator the query used.
pub(super) fn answer_osc(body: &[u8], bel: bool, out: &mut Vec<u8>) {
    let mut params = body.split(|&b| b == b';');
    let Some(first) = params.next() else { return };
    let Some(mut code) = std::str::from_utf8(first)
        .ok()
        .and_then(|s| s.parse::<u16>().ok())
    else {
        return;
    };
    if !(10..=12).contains(&code) {
        return;
    }
    let end = if bel { "\x07" } else { "\x1b\\" };
    for p in params {
        if p == b"?" {
            let colour = if code == 11 { BACKGROUND } else { FOREGROUND };
            out.extend_from_slice(format!("\x1b]{code};{colour}{end}").as_bytes());
        }
        code += 1;
        if code > 12 {
            break;
        }
    }
}

/// The window title an OSC body sets, as the emulator reads it: `0;<title>` or `2;<title>`
/// with no other `;` (the title is already bounded by the string cap).
pub(super) fn title(body: &[u8]) -> Option<&[u8]> {
    let mut parts = body.splitn(3, |&b| b == b';');
    let (code, title) = (parts.next()?, parts.next()?);
    (parts.next().is_none() && matches!(code, b"0" | b"2")).then_some(title)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colour_queries_use_the_query_terminator() {
        let mut out = Vec::new();
        answer_osc(b"11;?", true, &mut out);
        assert_eq!(out, b"\x1b]11;rgb:0000/0000/0000\x07");
        out.clear();
        answer_osc(b"10;?;?", false, &mut out);
        assert_eq!(
            out,
            b"\x1b]10;rgb:e5e5/e5e5/e5e5\x1b\\\x1b]11;rgb:0000/0000/0000\x1b\\"
        );
        out.clear();
        answer_osc(b"0;title", true, &mut out);
        assert!(out.is_empty());
    }

    #[test]
    fn titles_are_read_as_the_emulator_reads_them() {
        assert_eq!(title(b"0;build"), Some(&b"build"[..]));
        assert_eq!(title(b"2;"), Some(&b""[..]));
        assert_eq!(title(b"0;a;b"), None);
        assert_eq!(title(b"1;icon"), None);
    }
}
