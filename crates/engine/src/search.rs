//! Regex search over a job's held transcript: non-destructive, with absolute line numbers.

use std::collections::VecDeque;
use std::ops::ControlFlow;

use regex::Regex;
use serde::Serialize;

use crate::error::{Error, Result};
use crate::job::JobStatus;

/// One line that matched, with its context.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SearchMatch {
    /// Absolute line number.
    pub line: u64,
    /// The matching line.
    pub text: String,
    /// Up to `context` lines before it, oldest first.
    pub before: Vec<String>,
    /// Up to `context` lines after it.
    pub after: Vec<String>,
}

/// The result of a search.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SearchResult {
    /// The first `max_matches` matches, in line order.
    pub matches: Vec<SearchMatch>,
    /// Every match in the held transcript, including those not returned.
    pub total_matches: u64,
    /// First line searched (the first line still held).
    pub first_line: u64,
    /// One past the last line searched: read new output from here.
    pub next_offset: u64,
    /// The job's status.
    pub status: JobStatus,
}

/// Compiles a user's pattern, bounded in size so a pathological one cannot eat the server.
///
/// # Errors
/// [`Error::InvalidArgument`] with the regex error.
pub fn compile_pattern(pattern: &str) -> Result<Regex> {
    regex::RegexBuilder::new(pattern)
        .size_limit(1 << 20)
        .build()
        .map_err(|e| Error::InvalidArgument(format!("invalid pattern {pattern:?}: {e}")))
}

/// Searches the numbered lines `visit` hands to its callback, in order; `visit` answers the
/// job's status (or the error that ended it, which the search returns).
pub(crate) fn search_lines(
    visit: impl FnOnce(&mut dyn FnMut(u64, &str) -> ControlFlow<()>) -> Result<JobStatus>,
    re: &Regex,
    context: usize,
    max_matches: usize,
) -> Result<SearchResult> {
    let mut matches: Vec<SearchMatch> = Vec::new();
    let mut total = 0u64;
    let mut first = None;
    let mut end = 0;
    // The last `context` lines, copied: lines are borrowed only for the visit.
    let mut recent: VecDeque<String> = VecDeque::new();
    let status = visit(&mut |n, line| {
        first.get_or_insert(n);
        end = n + 1;
        for m in matches.iter_mut().rev() {
            if m.line + (context as u64) < n {
                break;
            }
            m.after.push(line.to_owned());
        }
        if re.is_match(line) {
            total += 1;
            if matches.len() < max_matches {
                matches.push(SearchMatch {
                    line: n,
                    text: line.to_owned(),
                    before: recent.iter().cloned().collect(),
                    after: Vec::new(),
                });
            }
        }
        if context > 0 {
            // The oldest line's buffer is reused: no allocation per line of a long log.
            let mut slot = if recent.len() == context {
                recent.pop_front().unwrap_or_default()
            } else {
                String::new()
            };
            slot.clear();
            slot.push_str(line);
            recent.push_back(slot);
        }
        ControlFlow::Continue(())
    })?;
    Ok(SearchResult {
        matches,
        total_matches: total,
        first_line: first.unwrap_or(end),
        next_offset: end,
        status,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::terminal::Terminal;

    fn term(text: &str) -> Terminal {
        let mut t = Terminal::new(40, 5, 1 << 20, 1 << 16);
        t.feed(text.replace('\n', "\r\n").as_bytes());
        t
    }

    #[test]
    fn finds_matches_with_context_and_counts_all() {
        let t = term("a\nerror one\nb\nc\nerror two\nd\nerror three\n");
        let re = compile_pattern("^error").unwrap();
        let r = search_lines(
            |f| {
                t.visit_lines(0, f);
                Ok(JobStatus::Running)
            },
            &re,
            1,
            2,
        )
        .unwrap();
        assert_eq!(r.total_matches, 3);
        assert_eq!(r.matches.len(), 2);
        assert_eq!(r.matches[0].line, 1);
        assert_eq!(r.matches[0].before, ["a"]);
        assert_eq!(r.matches[0].after, ["b"]);
        assert_eq!(r.matches[1].text, "error two");
        assert_eq!(r.matches[1].before, ["c"]);
        assert_eq!(r.matches[1].after, ["d"]);
        assert_eq!(r.next_offset, 7);
    }

    #[test]
    fn bad_patterns_are_invalid_arguments() {
        assert!(matches!(
            compile_pattern("(unclosed"),
            Err(Error::InvalidArgument(_))
        ));
    }
}
