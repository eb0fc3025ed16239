//! The screen as a person's terminal should draw it: the visible rows with their colours and
//! attributes, for a person who attaches to a job (`ptyjobs attach`).

use super::Terminal;

/// Resets attributes, homes the cursor and clears the screen: what every drawing starts with.
const CLEAR: &[u8] = b"\x1b[0m\x1b[H\x1b[2J";

impl Terminal {
    /// The visible screen as bytes that draw it on a blank terminal at least as large: the
    /// rows with their colours and attributes (vt100's formatted contents: SGR, wide
    /// characters, wrapped rows), the cursor where the program's is and hidden if it hid it.
    /// Starts with [`CLEAR`]. A screen the fast path holds back is drawn into the emulator
    /// first (hence `&mut`): the views read exactly the same screen afterwards. A job that
    /// never printed, or one that is final (its emulator is gone), is drawn as plain rows.
    pub(crate) fn screen_formatted(&mut self) -> Vec<u8> {
        let mut out = CLEAR.to_vec();
        if self.frozen.is_some() || self.unborn.is_some() {
            let s = self.screen();
            for (i, row) in s.rows.iter().enumerate() {
                if i > 0 {
                    out.extend_from_slice(b"\r\n");
                }
                out.extend_from_slice(row.as_bytes());
            }
            let at = format!("\x1b[{};{}H", s.cursor_row + 1, s.cursor_col + 1);
            out.extend_from_slice(at.as_bytes());
            return out;
        }
        self.materialize();
        out.extend_from_slice(self.parser.screen().contents_formatted().as_bytes());
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(bytes: &[u8]) -> String {
        String::from_utf8_lossy(bytes).into_owned()
    }

    #[test]
    fn colours_and_attributes_are_drawn_and_the_text_is_the_screens() {
        let mut t = Terminal::new(40, 5, 1 << 20, 1 << 16);
        t.feed(b"plain\r\n\x1b[1;31mred bold\x1b[0m and \x1b[42mgreen bg\x1b[0m\r\n> ");
        let before = t.screen();
        let drawn = text(&t.screen_formatted());
        assert!(drawn.starts_with("\x1b[0m\x1b[H\x1b[2J"), "{drawn:?}");
        let red_bold = drawn.contains("\x1b[31;1m") || drawn.contains("\x1b[1;31m");
        assert!(red_bold && drawn.contains("\x1b[42m"), "{drawn:?}");
        assert!(
            drawn.contains("red bold") && drawn.contains("plain"),
            "{drawn:?}"
        );
        // Drawing it on a terminal of the same size gives the same screen.
        let mut again = Terminal::new(40, 5, 1 << 20, 1 << 16);
        again.feed(drawn.as_bytes());
        assert_eq!(again.screen().rows, before.rows);
        assert_eq!(
            (again.screen().cursor_row, again.screen().cursor_col),
            (before.cursor_row, before.cursor_col)
        );
        assert_eq!(t.screen(), before, "drawing changes nothing the views show");
    }

    #[test]
    fn a_blank_or_final_terminal_is_drawn_as_plain_rows() {
        let mut t = Terminal::new(20, 3, 1 << 20, 1 << 16);
        assert!(text(&t.screen_formatted()).starts_with("\x1b[0m\x1b[H\x1b[2J"));
        t.feed(b"done\r\n");
        t.finish();
        assert!(text(&t.screen_formatted()).contains("done"));
    }
}
