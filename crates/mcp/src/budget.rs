//! The byte budget for the text one tool call returns.
//!
//! The engine bounds what it *holds* per job (a few MiB); this bounds what one answer *sends*,
//! because the answer lands in a model's context window (clients cut tool results at roughly
//! 25k tokens) and is sent twice (structured and as text). One mechanism for every read: the
//! engine's [`OutputSlice::fit`], which keeps the head and the tail of the text and puts a
//! marker line in the middle saying how much was left out. The range a slice covers does not
//! change, so `next_offset` still means "after everything this read covered".

use ptyjobs_engine::OutputSlice;

/// Most bytes of text one answer carries, and the upper bound of every `max_bytes`.
pub const OUTPUT_BUDGET: usize = 64 * 1024;
/// Smallest `max_bytes` accepted: room for the omission marker and some text around it.
pub const MIN_MAX_BYTES: usize = 256;
/// Bytes of tail an execute_command answer carries when ensure reused a running job.
pub const REUSED_TAIL_BYTES: usize = 2 * 1024;
/// Bytes of tail a wait_for_job answer carries.
pub const WAIT_TAIL_BYTES: usize = 4 * 1024;
/// Most bytes of the matched line or the prompt in a wait_for_job answer.
pub const WAIT_LINE_BYTES: usize = 4 * 1024;
/// Most bytes of a command line in a list entry (list_jobs) or a resource name.
pub const LIST_TEXT_BYTES: usize = 512;
/// Most bytes of a command line in get_job_status.
pub const STATUS_COMMAND_BYTES: usize = 16 * 1024;
/// Most bytes of a window title in a screen answer.
pub const TITLE_BYTES: usize = 1024;

/// `text` cut to at most about `max` bytes (at a character boundary), with a note saying how
/// many bytes were cut; unchanged when it fits.
pub fn shorten(mut text: String, max: usize) -> String {
    if text.len() > max {
        let total = text.len();
        let mut end = max;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push_str(&format!(" [... {} bytes cut]", total - end));
    }
    text
}

/// The first items of `items` whose JSON fits in `max_bytes` (at least one, which is itself
/// bounded by the caller), for a paginated listing.
pub fn page<T: serde::Serialize>(items: impl Iterator<Item = T>, max_bytes: usize) -> Vec<T> {
    // Room for the fields around the list.
    let room = max_bytes.saturating_sub(256);
    let mut used = 0;
    let mut page = Vec::new();
    for item in items {
        let size = json_len(&item).saturating_add(1);
        if !page.is_empty() && used + size > room {
            break;
        }
        used += size;
        page.push(item);
    }
    page
}

/// Bytes `value` takes as JSON.
pub fn json_len<T: serde::Serialize>(value: &T) -> usize {
    serde_json::to_vec(value).map_or(usize::MAX, |v| v.len())
}

/// The budget a read asked for: `max_bytes` clamped to [`MIN_MAX_BYTES`]..=[`OUTPUT_BUDGET`].
pub fn requested(max_bytes: Option<u64>) -> usize {
    max_bytes.map_or(OUTPUT_BUDGET, |m| {
        usize::try_from(m)
            .unwrap_or(usize::MAX)
            .clamp(MIN_MAX_BYTES, OUTPUT_BUDGET)
    })
}

/// Fits `slice` into `max_bytes` and returns the absolute number of the first line left out
/// (`None` when nothing was).
pub fn fit(slice: &mut OutputSlice, max_bytes: usize) -> Option<u64> {
    slice.fit(max_bytes);
    slice.omitted_from
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_are_clamped() {
        assert_eq!(requested(None), OUTPUT_BUDGET);
        assert_eq!(requested(Some(1)), MIN_MAX_BYTES);
        assert_eq!(requested(Some(u64::MAX)), OUTPUT_BUDGET);
        assert_eq!(requested(Some(1000)), 1000);
    }

    #[test]
    fn shorten_cuts_at_a_char_boundary_and_says_so() {
        assert_eq!(shorten("abc".into(), 10), "abc");
        let s = shorten("ééé".into(), 3);
        assert!(
            s.starts_with('é') && s.ends_with("[... 4 bytes cut]"),
            "{s}"
        );
    }
}
