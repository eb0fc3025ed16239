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
/// Bytes of tail a wait_for_job answer carries.
pub const WAIT_TAIL_BYTES: usize = 4 * 1024;

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
}
