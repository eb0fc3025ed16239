//! A byte budget for the text one tool call returns.
//!
//! The engine bounds what it *holds* per job (a few MiB); this bounds what one answer *sends*,
//! because the answer lands in a model's context window (clients cut tool results at roughly
//! 25k tokens) and is sent twice (structured and as text). Cuts fall on line boundaries and
//! always keep at least one whole line, so line numbers stay exact and paging with
//! `next_offset` never skips text; a single line is itself bounded by the engine's
//! `max_line_bytes`.

/// Most bytes of text one answer carries (plus at most one over-long line).
pub const OUTPUT_BUDGET: usize = 64 * 1024;

/// The leading lines of `text` that fit `budget` (at least one), and how many lines that is;
/// `None` when all of `text` fits.
pub fn head(text: &str, budget: usize) -> Option<(&str, u64)> {
    if text.len() <= budget {
        return None;
    }
    let mut end = 0;
    let mut kept = 0u64;
    for line in text.split('\n') {
        let next = if kept == 0 {
            line.len()
        } else {
            end + 1 + line.len()
        };
        if kept > 0 && next > budget {
            break;
        }
        end = next;
        kept += 1;
    }
    Some((&text[..end], kept))
}

/// The trailing lines of `text` that fit `budget` (at least one), and how many lines were
/// cut from the front; `None` when all of `text` fits.
pub fn tail(text: &str, budget: usize) -> Option<(&str, u64)> {
    if text.len() <= budget {
        return None;
    }
    let mut start = text.len();
    let mut kept = 0u64;
    for line in text.rsplit('\n') {
        let next = if kept == 0 {
            start - line.len()
        } else {
            start - 1 - line.len()
        };
        if kept > 0 && text.len() - next > budget {
            break;
        }
        start = next;
        kept += 1;
    }
    let total = text.split('\n').count() as u64;
    Some((&text[start..], total - kept))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_within_the_budget_is_untouched() {
        assert_eq!(head("a\nb", 3), None);
        assert_eq!(tail("a\nb", 3), None);
    }

    #[test]
    fn head_keeps_whole_leading_lines() {
        assert_eq!(head("aa\nbb\ncc", 5), Some(("aa\nbb", 2)));
        assert_eq!(
            head("aaaa\nb", 2),
            Some(("aaaa", 1)),
            "one line is always kept"
        );
    }

    #[test]
    fn tail_keeps_whole_trailing_lines() {
        assert_eq!(tail("aa\nbb\ncc", 5), Some(("bb\ncc", 1)));
        assert_eq!(
            tail("a\nbbbb", 2),
            Some(("bbbb", 1)),
            "one line is always kept"
        );
        assert_eq!(tail("a\n\n\nb", 3), Some(("\n\nb", 1)));
    }
}
