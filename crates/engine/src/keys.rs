//! Named keys and chords → the bytes a terminal (xterm) sends for them.
//!
//! Names are case-insensitive: `Enter`, `Tab`, `BackTab`, `Escape`/`Esc`, `Backspace`,
//! `Delete`, `Insert`, `Space`, `Up`/`Down`/`Left`/`Right`, `Home`/`End`, `PageUp`/`PageDown`,
//! `F1`–`F12`, a single character (`q`, `?`), and chords with `C-` (Ctrl), `M-` (Meta/Alt) and
//! `S-` (Shift) prefixes: `C-c`, `M-x`, `C-M-a`, `C-Up`, `S-Tab`. `Ctrl+C`, `Alt-x` and `^C`
//! are accepted too. Cursor keys follow the program's application-cursor mode (`ESC[?1h`).

use crate::error::{Error, Result};

#[derive(Default, Clone, Copy)]
struct Mods {
    ctrl: bool,
    meta: bool,
    shift: bool,
}

impl Mods {
    /// xterm's modifier parameter: 1 + shift + 2·alt + 4·ctrl.
    fn param(self) -> u8 {
        1 + u8::from(self.shift) + 2 * u8::from(self.meta) + 4 * u8::from(self.ctrl)
    }
}

/// Encodes `keys` in order. `app_cursor` is the program's application-cursor mode.
///
/// # Errors
/// [`Error::InvalidArgument`] naming the first key that is not understood.
pub fn encode_keys<S: AsRef<str>>(keys: &[S], app_cursor: bool) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    for key in keys {
        encode_key(key.as_ref(), app_cursor, &mut out)?;
    }
    Ok(out)
}

fn unknown(key: &str) -> Error {
    Error::InvalidArgument(format!(
        "unknown key {key:?}: use names like Enter, Tab, Escape, Backspace, Up, Down, Left, Right, \
         Home, End, PageUp, PageDown, F1-F12, a single character, or chords like C-c, M-x, C-Up"
    ))
}

/// Splits modifier prefixes off `key` (`C-`, `Ctrl+`, `^`, ...).
fn split_mods(key: &str) -> (Mods, &str) {
    let mut mods = Mods::default();
    let mut rest = key;
    loop {
        let lower = rest.to_ascii_lowercase();
        // (prefix, ctrl, meta, shift)
        const PREFIXES: [(&str, bool, bool, bool); 12] = [
            ("c-", true, false, false),
            ("ctrl-", true, false, false),
            ("ctrl+", true, false, false),
            ("control-", true, false, false),
            ("m-", false, true, false),
            ("meta-", false, true, false),
            ("alt-", false, true, false),
            ("alt+", false, true, false),
            ("a-", false, true, false),
            ("s-", false, false, true),
            ("shift-", false, false, true),
            ("shift+", false, false, true),
        ];
        let found = PREFIXES
            .iter()
            .find(|(p, ..)| lower.starts_with(p) && rest.len() > p.len());
        match found {
            Some(&(p, ctrl, meta, shift)) => {
                mods.ctrl |= ctrl;
                mods.meta |= meta;
                mods.shift |= shift;
                rest = &rest[p.len()..];
            }
            None if rest.len() == 2 && rest.starts_with('^') => {
                mods.ctrl = true;
                rest = &rest[1..];
            }
            None => return (mods, rest),
        }
    }
}

fn encode_key(key: &str, app_cursor: bool, out: &mut Vec<u8>) -> Result<()> {
    let (mods, name) = split_mods(key.trim());
    if name.is_empty() {
        return Err(unknown(key));
    }
    let modified = mods.ctrl || mods.meta || mods.shift;
    // Cursor and editing keys: CSI forms carry modifiers as a parameter.
    let csi_final = match name.to_ascii_lowercase().as_str() {
        "up" => Some(b'A'),
        "down" => Some(b'B'),
        "right" => Some(b'C'),
        "left" => Some(b'D'),
        "home" => Some(b'H'),
        "end" => Some(b'F'),
        _ => None,
    };
    if let Some(f) = csi_final {
        if modified {
            out.extend_from_slice(format!("\x1b[1;{}", mods.param()).as_bytes());
            out.push(f);
        } else {
            out.extend_from_slice(if app_cursor { b"\x1bO" } else { b"\x1b[" });
            out.push(f);
        }
        return Ok(());
    }
    let tilde = match name.to_ascii_lowercase().as_str() {
        "insert" | "ins" => Some(2),
        "delete" | "del" => Some(3),
        "pageup" | "pgup" => Some(5),
        "pagedown" | "pgdn" => Some(6),
        "f5" => Some(15),
        "f6" => Some(17),
        "f7" => Some(18),
        "f8" => Some(19),
        "f9" => Some(20),
        "f10" => Some(21),
        "f11" => Some(23),
        "f12" => Some(24),
        _ => None,
    };
    if let Some(n) = tilde {
        let seq = if modified {
            format!("\x1b[{n};{}~", mods.param())
        } else {
            format!("\x1b[{n}~")
        };
        out.extend_from_slice(seq.as_bytes());
        return Ok(());
    }
    let ss3 = match name.to_ascii_lowercase().as_str() {
        "f1" => Some(b'P'),
        "f2" => Some(b'Q'),
        "f3" => Some(b'R'),
        "f4" => Some(b'S'),
        _ => None,
    };
    if let Some(f) = ss3 {
        if modified {
            out.extend_from_slice(format!("\x1b[1;{}", mods.param()).as_bytes());
        } else {
            out.extend_from_slice(b"\x1bO");
        }
        out.push(f);
        return Ok(());
    }
    // Keys that are one character, possibly with Ctrl and Meta.
    let base: Vec<u8> = match name.to_ascii_lowercase().as_str() {
        "enter" | "return" | "ret" | "cr" => b"\r".to_vec(),
        "tab" if mods.shift => return push_meta(mods, b"\x1b[Z", out),
        "tab" => b"\t".to_vec(),
        "backtab" => return push_meta(mods, b"\x1b[Z", out),
        "escape" | "esc" => b"\x1b".to_vec(),
        "backspace" | "bs" => b"\x7f".to_vec(),
        "space" | "spc" => b" ".to_vec(),
        _ => {
            let mut chars = name.chars();
            let (Some(c), None) = (chars.next(), chars.next()) else {
                return Err(unknown(key));
            };
            if mods.ctrl {
                vec![ctrl_byte(c).ok_or_else(|| unknown(key))?]
            } else if mods.shift {
                c.to_uppercase().collect::<String>().into_bytes()
            } else {
                c.to_string().into_bytes()
            }
        }
    };
    let base = if mods.ctrl && base == b" " {
        vec![0]
    } else {
        base
    };
    push_meta(mods, &base, out)
}

fn push_meta(mods: Mods, bytes: &[u8], out: &mut Vec<u8>) -> Result<()> {
    if mods.meta {
        out.push(0x1b);
    }
    out.extend_from_slice(bytes);
    Ok(())
}

/// The control character for Ctrl+`c`.
fn ctrl_byte(c: char) -> Option<u8> {
    match c {
        'a'..='z' => Some(c as u8 - b'a' + 1),
        'A'..='Z' => Some(c as u8 - b'A' + 1),
        '@' | ' ' | '2' => Some(0),
        '[' | '3' => Some(0x1b),
        '\\' | '4' => Some(0x1c),
        ']' | '5' => Some(0x1d),
        '^' | '6' => Some(0x1e),
        '_' | '-' | '7' => Some(0x1f),
        '?' | '8' => Some(0x7f),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(keys: &[&str]) -> Vec<u8> {
        encode_keys(keys, false).unwrap()
    }

    #[test]
    fn plain_keys() {
        assert_eq!(
            enc(&["Enter", "Tab", "Escape", "Backspace", "Space"]),
            b"\r\t\x1b\x7f "
        );
        assert_eq!(enc(&["q"]), b"q");
        assert_eq!(
            enc(&["PageUp", "PageDown", "Delete"]),
            b"\x1b[5~\x1b[6~\x1b[3~"
        );
        assert_eq!(enc(&["F1", "F5", "F12"]), b"\x1bOP\x1b[15~\x1b[24~");
    }

    #[test]
    fn chords() {
        assert_eq!(
            enc(&["C-c", "C-d", "C-z", "^C", "Ctrl+C"]),
            b"\x03\x04\x1a\x03\x03"
        );
        assert_eq!(enc(&["M-x", "Alt-x", "C-M-a"]), b"\x1bx\x1bx\x1b\x01");
        assert_eq!(enc(&["C-Up", "S-Tab", "M-Enter"]), b"\x1b[1;5A\x1b[Z\x1b\r");
        assert_eq!(enc(&["C-Space", "C-["]), b"\x00\x1b");
    }

    #[test]
    fn cursor_keys_follow_application_mode() {
        assert_eq!(
            enc(&["Up", "Down", "Right", "Left", "Home", "End"]),
            b"\x1b[A\x1b[B\x1b[C\x1b[D\x1b[H\x1b[F"
        );
        assert_eq!(encode_keys(&["Up", "Left"], true).unwrap(), b"\x1bOA\x1bOD");
    }

    #[test]
    fn unknown_names_are_clear_errors() {
        for bad in ["", "Foo", "C-", "C-Foo", "F13", "C-é"] {
            let err = encode_keys(&[bad], false).unwrap_err();
            assert!(
                matches!(err, Error::InvalidArgument(ref m) if m.contains("unknown key")),
                "{bad}"
            );
        }
    }
}
