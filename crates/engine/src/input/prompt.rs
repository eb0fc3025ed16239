//! The question a job waiting for input asks, read off its screen (see
//! [`crate::InputWait::prompt`]).
//!
//! Prompt libraries draw more than a line: clack puts a `└` under the question and leaves the
//! cursor there, inquirer and prompts draw a menu under it, prompt_toolkit frames a dialog in
//! box drawing. The cursor's line alone is then `└` or a menu choice, which tells an agent
//! nothing. What is read instead: the cursor's line when it holds a question, else the nearest
//! line above that does (holds letters and is not a choice), then the menu drawn under it.

use crate::terminal::ScreenSnapshot;

/// Rows above the cursor searched for the question.
const LOOK_UP: usize = 12;
/// Most menu choices kept (a window around the selected one).
const MAX_CHOICES: usize = 8;
/// Most bytes kept of one row.
const MAX_ROW: usize = 200;

/// Box drawing (U+2500–U+257F) and the ASCII bars frames are made of.
fn is_frame(c: char) -> bool {
    ('\u{2500}'..='\u{257F}').contains(&c) || c == '|'
}

/// A row without the blanks and frame characters around it.
fn bare(row: &str) -> &str {
    row.trim_matches(|c: char| c.is_whitespace() || is_frame(c))
}

fn has_letters(row: &str) -> bool {
    row.chars().any(char::is_alphabetic)
}

/// Markers menus draw before a choice: (marker, selected).
const MARKERS: [(&str, bool); 20] = [
    ("❯", true),
    ("›", true),
    (">", true),
    ("→", true),
    ("▸", true),
    ("▶", true),
    ("●", true),
    ("◉", true),
    ("(*)", true),
    ("(•)", true),
    ("(x)", true),
    ("[x]", true),
    ("[X]", true),
    ("◼", true),
    ("○", false),
    ("◯", false),
    ("( )", false),
    ("[ ]", false),
    ("◻", false),
    ("☐", false),
];

/// Whether `row` is a marked menu choice (a marker, a blank, a label with letters), and
/// whether it is the selected one.
fn marked(row: &str) -> Option<bool> {
    let t = bare(row);
    MARKERS.iter().find_map(|(m, selected)| {
        let rest = t.strip_prefix(m)?;
        (rest.starts_with(char::is_whitespace) && has_letters(rest)).then_some(*selected)
    })
}

/// Leading blanks after the frame: an unmarked choice is indented like the marked ones.
fn indented(row: &str) -> bool {
    let t = row.trim_start_matches(is_frame);
    t.len() - t.trim_start().len() >= 2 && has_letters(t)
}

/// Which rows are menu choices: the marked ones, and indented rows next to them (inquirer
/// and prompts mark only the selected choice).
fn choices(rows: &[String]) -> Vec<bool> {
    let mut choice: Vec<bool> = rows.iter().map(|r| marked(r).is_some()).collect();
    let seeds: Vec<usize> = (0..rows.len()).filter(|&i| choice[i]).collect();
    for i in seeds {
        for j in (0..i).rev() {
            if choice[j] || !indented(&rows[j]) {
                break;
            }
            choice[j] = true;
        }
        for j in i + 1..rows.len() {
            if choice[j] || !indented(&rows[j]) {
                break;
            }
            choice[j] = true;
        }
    }
    choice
}

/// A row as it goes into the prompt: no frame, runs of blanks (a dialog's padding before a
/// scroll bar) shortened to two, at most [`MAX_ROW`] bytes.
fn tidy(row: &str) -> String {
    let mut out = String::new();
    let mut blanks = 0;
    for c in bare(row).chars() {
        blanks = if c == ' ' { blanks + 1 } else { 0 };
        if blanks > 2 {
            continue;
        }
        if out.len() + c.len_utf8() > MAX_ROW {
            break;
        }
        out.push(c);
    }
    out
}

/// Whether a row reads as a question: it ends in `:`, `?` or `›`, or holds `? `.
fn questionish(row: &str) -> bool {
    let t = bare(row);
    t.ends_with([':', '?', '›', '»']) || t.contains("? ") || t.contains(": ")
}

/// The question on `screen` (see [`crate::InputWait::prompt`]): lines joined with `\n`.
pub(crate) fn question(screen: &ScreenSnapshot) -> String {
    let rows = &screen.rows;
    if rows.is_empty() {
        return String::new();
    }
    let c = usize::from(screen.cursor_row).min(rows.len() - 1);
    let cursor = bare(&rows[c]);
    // A prompt without letters that is more than a marker (`>>>`, `$`, `(Pdb)` has letters)
    // is the question itself.
    let lone = cursor.chars().count() <= 1 && !has_letters(cursor);
    if !lone && !has_letters(cursor) {
        return tidy(&rows[c]);
    }
    let choice = choices(rows);
    let candidate = |i: usize| has_letters(&rows[i]) && !choice[i];
    let above = (c.saturating_sub(LOOK_UP)..=c).rev();
    let q = if candidate(c) && questionish(&rows[c]) {
        Some(c)
    } else {
        above
            .clone()
            .find(|&i| candidate(i) && questionish(&rows[i]))
            .or_else(|| above.clone().find(|&i| candidate(i)))
    };
    let Some(q) = q else {
        // Nothing above reads as a question: the last non-blank row up to the cursor.
        return rows[..=c]
            .iter()
            .rev()
            .map(|r| tidy(r))
            .find(|r| !r.is_empty())
            .unwrap_or_default();
    };
    // Under the question: its menu's choices (blank rows between them skipped), and down to
    // the cursor the rows of its field (a default value, a lone `>`).
    let (mut menu, mut field) = (Vec::new(), Vec::new());
    for i in q + 1..rows.len() {
        if choice[i] {
            menu.push(i);
        } else if bare(&rows[i]).is_empty() {
            continue;
        } else if i <= c && field.len() < 3 {
            field.push(i);
        } else {
            break;
        }
    }
    if menu.len() > MAX_CHOICES {
        let selected = menu
            .iter()
            .position(|&i| marked(&rows[i]) == Some(true))
            .unwrap_or(0);
        let start = selected
            .saturating_sub(MAX_CHOICES / 2)
            .min(menu.len() - MAX_CHOICES);
        menu = menu[start..start + MAX_CHOICES].to_vec();
    }
    let mut body: Vec<usize> = menu.into_iter().chain(field).collect();
    body.sort_unstable();
    let out: Vec<String> = std::iter::once(q)
        .chain(body)
        .map(|i| tidy(&rows[i]))
        .collect();
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn screen(rows: &[&str], cursor_row: u16) -> ScreenSnapshot {
        ScreenSnapshot {
            rows: rows.iter().map(|r| (*r).to_owned()).collect(),
            cursor_row,
            cursor_col: 0,
            cols: 80,
            height: rows.len() as u16,
            alternate_screen: false,
            title: None,
        }
    }

    #[test]
    fn a_line_prompt_is_the_cursor_line() {
        let s = screen(&["building", "Continue? [y/N]", ""], 1);
        assert_eq!(question(&s), "Continue? [y/N]");
        let s = screen(&["Password:"], 0);
        assert_eq!(question(&s), "Password:");
        let s = screen(&["1", ">>>"], 1);
        assert_eq!(question(&s), ">>>", "a REPL's own prompt stays");
        let s = screen(&["(Pdb)"], 0);
        assert_eq!(question(&s), "(Pdb)");
        let s = screen(&["Name?", ""], 1);
        assert_eq!(question(&s), "Name?", "a question printed with a newline");
        assert_eq!(question(&screen(&["", ""], 1)), "");
    }

    #[test]
    fn clack_select_gives_the_question_and_its_choices() {
        let rows = [
            "│",
            "◇  Project name:",
            "│  vite-project",
            "│",
            "◆  Select a framework:",
            "│  ● Vanilla",
            "│  ○ Vue",
            "│  ○ React",
            "└",
        ];
        assert_eq!(
            question(&screen(&rows, 8)),
            "◆  Select a framework:\n● Vanilla\n○ Vue\n○ React"
        );
    }

    #[test]
    fn clack_text_gives_the_question_and_the_field() {
        let rows = ["│", "◆  Project name:", "│  vite-project", "└"];
        assert_eq!(
            question(&screen(&rows, 3)),
            "◆  Project name:\nvite-project"
        );
        assert_eq!(
            question(&screen(&rows, 2)),
            "◆  Project name:\nvite-project"
        );
    }

    #[test]
    fn inquirer_marks_only_the_selected_choice() {
        let rows = [
            "? Pick one: (Use arrow keys)",
            "❯ apple",
            "  pear",
            "  plum",
            "",
        ];
        assert_eq!(
            question(&screen(&rows, 0)),
            "? Pick one: (Use arrow keys)\n❯ apple\npear\nplum"
        );
        assert_eq!(
            question(&screen(&rows, 4)),
            "? Pick one: (Use arrow keys)\n❯ apple\npear\nplum"
        );
    }

    #[test]
    fn a_framed_radio_list_and_a_long_menu() {
        let rows = [
            "┌───| Fruit |───┐",
            "│ Pick a fruit  │",
            "│ (*) apple          ^ │",
            "│ ( ) pear      │",
            "│               │",
            "│  < Ok >       │",
            "└───────────────┘",
        ];
        assert_eq!(
            question(&screen(&rows, 2)),
            "Pick a fruit\n(*) apple  ^\n( ) pear"
        );
        let mut long = vec!["? Pick:".to_owned()];
        long.extend((0..20).map(|i| format!("{} item{i}", if i == 15 { '●' } else { '○' })));
        let s = ScreenSnapshot {
            rows: long,
            ..screen(&[], 0)
        };
        let q = question(&s);
        assert_eq!(q.lines().count(), 1 + MAX_CHOICES);
        assert!(q.contains("● item15"), "{q}");
    }

    #[test]
    fn a_lone_marker_looks_above() {
        let rows = [
            "Welcome to Node.js",
            "Type \".help\" for more information.",
            ">",
        ];
        assert_eq!(
            question(&screen(&rows, 2)),
            "Type \".help\" for more information.\n>"
        );
    }
}
