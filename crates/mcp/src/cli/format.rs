//! Text for people: local times, durations, sizes, and fields fitted on one line.

use chrono::{DateTime, Local, Utc};
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

/// `t` in local time to the second, as `2026-11-22 05:31:02` (chrono's local time zone: `TZ`
/// or `/etc/localtime` on Unix, the system's zone on macOS and Windows).
pub(crate) fn local_time(t: DateTime<Utc>) -> String {
    t.with_timezone(&Local)
        .format("%Y-%m-%d %H:%M:%S")
        .to_string()
}

/// `t` in local time with its offset, as `2026-11-22 05:31:02 +01:00`.
pub(crate) fn local_time_zoned(t: DateTime<Utc>) -> String {
    t.with_timezone(&Local)
        .format("%Y-%m-%d %H:%M:%S %:z")
        .to_string()
}

/// How long before `now` `t` was, roughly: `12s ago`, `3m ago`, `5h ago`, `2d ago`.
pub(crate) fn ago(t: DateTime<Utc>, now: DateTime<Utc>) -> String {
    let s = (now - t).num_seconds();
    match s {
        ..0 => "in the future".to_owned(),
        0..60 => format!("{s}s ago"),
        60..3600 => format!("{}m ago", s / 60),
        3600..86_400 => format!("{}h ago", s / 3600),
        _ => format!("{}d ago", s / 86_400),
    }
}

/// A run time: `13ms`, `12.0s`, `3m04s`, `2h05m`, `3d04h`.
pub(crate) fn duration(ms: u64) -> String {
    let s = ms / 1000;
    match s {
        0 => format!("{ms}ms"),
        1..60 => format!("{}.{}s", s, ms % 1000 / 100),
        60..3600 => format!("{}m{:02}s", s / 60, s % 60),
        3600..86_400 => format!("{}h{:02}m", s / 3600, s % 3600 / 60),
        _ => format!("{}d{:02}h", s / 86_400, s % 86_400 / 3600),
    }
}

/// A size: `512 B`, `1.5 KiB`, `3.0 MiB`, `1.2 GiB`.
pub(crate) fn bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    // Precision loss is irrelevant at one decimal.
    #[allow(clippy::cast_precision_loss)]
    let mut v = n as f64 / 1024.0;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    format!("{v:.1} {}", UNITS[unit])
}

/// Whether `c` is a bidirectional formatting character: embeddings and overrides
/// (U+202A–U+202E), isolates (U+2066–U+2069), the marks U+200E, U+200F and U+061C. On a
/// terminal they reorder what follows them, so a field could show something else than it is.
pub(crate) fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}' | '\u{061C}')
}

/// `s` safe on one line of a person's terminal: control characters (newlines, tabs, escapes
/// that could drive the terminal, C1 controls) become spaces, bidirectional formatting
/// characters are dropped. Every record field the CLI prints goes through it.
pub(crate) fn one_line(s: &str) -> String {
    s.chars()
        .filter(|&c| !is_bidi_control(c))
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// A line of a job's output for `logs`: control characters but tabs become spaces (the
/// emulator's text has none; a log written by something else might), and on a terminal
/// bidirectional formatting characters are dropped. Piped, the text stays as the job wrote it.
pub(crate) fn output_line(s: &str, tty: bool) -> std::borrow::Cow<'_, str> {
    let unsafe_char = |c: char| (c.is_control() && c != '\t') || (tty && is_bidi_control(c));
    if !s.chars().any(unsafe_char) {
        return std::borrow::Cow::Borrowed(s);
    }
    s.chars()
        .filter(|&c| !(tty && is_bidi_control(c)))
        .map(|c| if c.is_control() && c != '\t' { ' ' } else { c })
        .collect::<String>()
        .into()
}

/// JSON text with every bidirectional formatting character and every control character
/// serde_json leaves as is (DEL, the C1 controls such as U+009B, a CSI on some terminals)
/// written as a `\uXXXX` escape: the same JSON to a parser, nothing that drives or reorders a
/// terminal. Only strings can hold them (the layout's own newlines are kept), so escaping is
/// always valid.
pub(crate) fn json_safe(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        if is_bidi_control(c) || (c.is_control() && c != '\n') {
            out.push_str(&format!("\\u{:04x}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
}

/// A wait for input for people: `waiting for input: "Name? "`, with `(echo off)` when what is
/// typed is not shown (a password) and `(raw)` when every key goes to the program (a menu, a
/// REPL).
pub(crate) fn waiting(wait: &ptyjobs_engine::InputWait) -> String {
    let echo = if wait.echo { "" } else { " (echo off)" };
    let raw = match wait.mode {
        ptyjobs_engine::InputMode::Raw => " (raw)",
        ptyjobs_engine::InputMode::Line => "",
    };
    format!(
        "waiting for input{echo}{raw}: \"{}\"",
        one_line(&wait.prompt)
    )
}

/// The columns `s` takes on a terminal: two for a wide (CJK, most emoji) character, none for a
/// combining one (Unicode's East Asian Width, as terminals draw it).
pub(crate) fn width(s: &str) -> usize {
    s.width()
}

/// `s` cut to at most `width` columns, an ellipsis (one column) marking the cut.
pub(crate) fn truncate(s: &str, width: usize) -> String {
    if s.width() <= width {
        return s.to_owned();
    }
    let room = width.saturating_sub(1);
    let mut t = String::new();
    let mut used = 0;
    for c in s.chars() {
        let w = c.width().unwrap_or(0);
        if used + w > room {
            break;
        }
        used += w;
        t.push(c);
    }
    if width > 0 {
        t.push('…');
    }
    t
}

/// `s` padded with spaces to `width` columns.
pub(crate) fn pad(s: &str, width: usize) -> String {
    format!("{s}{}", " ".repeat(width.saturating_sub(s.width())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_sizes_and_cuts_read_well() {
        assert_eq!(duration(400), "400ms");
        assert_eq!(duration(12_050), "12.0s");
        assert_eq!(duration(184_000), "3m04s");
        assert_eq!(duration(7_500_000), "2h05m");
        assert_eq!(duration(3 * 86_400_000 + 4 * 3_600_000), "3d04h");
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(1536), "1.5 KiB");
        assert_eq!(bytes(3 << 20), "3.0 MiB");
        assert_eq!(truncate("abcdef", 4), "abc…");
        assert_eq!(truncate("abc", 4), "abc");
        assert_eq!(pad("ab", 4), "ab  ");
        // Wide characters take two columns: padded and cut by columns, not characters.
        assert_eq!(width("构建"), 4);
        assert_eq!(pad("构建", 6), "构建  ");
        assert_eq!(truncate("构建服务器", 6), "构建…");
        assert_eq!(truncate("构建服务器", 10), "构建服务器");
        assert_eq!(pad("e\u{301}", 2), "e\u{301} ");
        assert_eq!(one_line("a\nb\t\u{1b}[31m"), "a b  [31m");
        assert_eq!(one_line("ab\u{202e}cd\u{2066}e\u{9b}f"), "abcde f");
        assert_eq!(output_line("a\tb\u{202e}c", false), "a\tb\u{202e}c");
        assert_eq!(output_line("a\tb\u{202e}c\u{1b}", true), "a\tbc ");
        let json = json_safe(&serde_json::to_string("x\u{202e}y\u{1b}").unwrap());
        assert_eq!(json, "\"x\\u202ey\\u001b\"");
        assert_eq!(
            serde_json::from_str::<String>(&json).unwrap(),
            "x\u{202e}y\u{1b}"
        );
    }

    #[test]
    fn times_are_relative_and_local() {
        let now = Utc::now();
        assert_eq!(ago(now - chrono::Duration::seconds(5), now), "5s ago");
        assert_eq!(ago(now - chrono::Duration::minutes(3), now), "3m ago");
        assert_eq!(ago(now - chrono::Duration::hours(50), now), "2d ago");
        assert_eq!(local_time(now).len(), "2026-11-22 05:31:02".len());
    }
}
