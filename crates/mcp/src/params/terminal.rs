//! interact_with_job, get_job_screen, resize_job.

use ptyjobs_engine::ScreenSnapshot;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Accounting, Status};
use crate::budget;

/// `interact_with_job` default wait.
pub const DEFAULT_WAIT_MS: u64 = 5000;
/// `interact_with_job` upper bound on `wait_ms`: a call never holds the model longer.
pub const MAX_WAIT_MS: u64 = 60_000;

/// Input of interact_with_job.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct InteractParams {
    #[serde(flatten)]
    pub job: super::JobIdParams,
    /// Text to type. Each line ends with Enter (CR, as a terminal sends), also the last unless
    /// `raw`. Multi-line or long text is a bracketed paste where the program enabled it.
    #[serde(default)]
    pub input: Option<String>,
    /// Named keys and chords, pressed in order after `input`: `Enter`, `Tab`, `Escape`,
    /// `Backspace`, `Up`, `Down`, `Left`, `Right`, `Home`, `End`, `PageUp`, `PageDown`,
    /// `F1`-`F12`, a single character (`q`), and chords `C-c` (Ctrl-C), `C-d`, `C-z`, `M-x`
    /// (Alt-x), `C-Up`. Example: `["C-c"]` interrupts the running program.
    #[serde(default)]
    pub keys: Option<Vec<String>>,
    /// Send `input` bytes exactly as given: no Enter, newlines kept. Default false.
    #[serde(default)]
    pub raw: Option<bool>,
    /// Longest time to wait for the response, in ms (max 60000). Default 5000. The call returns
    /// earlier, as soon as the job's output goes quiet after its response, or the job exits.
    #[serde(default)]
    pub wait_ms: Option<u64>,
}

/// Result of interact_with_job.
#[derive(Debug, Serialize, JsonSchema)]
pub struct InteractResult {
    /// What the terminal showed from the prompt's line on: the echoed input and the job's
    /// response (clean text); from `rewritten_from` when lines above were redrawn.
    pub output: String,
    /// Bytes of input (text and keys) the job's terminal accepted.
    pub bytes_written: usize,
    /// The job's status after the response.
    pub status: Status,
    /// Lines, bytes, what was left out, and `next_offset`.
    #[serde(flatten)]
    pub read: Accounting,
    /// True when the response was longer than the 64 KiB answer budget and its middle was
    /// left out (read it with get_job_output from `omitted_from`).
    pub truncated: bool,
}

/// Input of get_job_screen.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ScreenParams {
    #[serde(flatten)]
    pub job: super::JobIdParams,
    /// Most bytes of screen text to return, 256-65536 (default and maximum 65536). A larger
    /// screen has its long rows cut and its bottom rows left out, and says so.
    #[serde(default)]
    pub max_bytes: Option<u64>,
}

/// Result of get_job_screen.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ScreenResult {
    /// The visible rows as text, top to bottom (trailing blanks trimmed). Within `max_bytes`:
    /// long rows are cut (see `cut_rows`) and the bottom rows may be left out (see
    /// `omitted_rows`).
    pub rows: Vec<String>,
    /// Cursor row, 0-based from the top.
    pub cursor_row: u16,
    /// Cursor column, 0-based from the left.
    pub cursor_col: u16,
    /// Terminal width in columns.
    pub cols: u16,
    /// Terminal height in rows.
    pub height: u16,
    /// True while a full-screen program (editor, pager, TUI) uses the alternate screen.
    pub alternate_screen: bool,
    /// The window title the program set, if any (at most 1 KiB of it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The job's status.
    pub status: Status,
    /// True when rows were cut or left out to fit `max_bytes`.
    pub truncated: bool,
    /// Rows shortened to fit (each ends with a note of the bytes cut).
    pub cut_rows: u64,
    /// Rows at the bottom of the screen left out to fit.
    pub omitted_rows: u64,
    /// Bytes of screen text left out, in cut and omitted rows.
    pub omitted_bytes: u64,
}

impl ScreenResult {
    /// The snapshot within `max_bytes` of row text, with the job's status.
    pub fn new(s: ScreenSnapshot, status: Status, max_bytes: usize) -> Self {
        let fitted = fit_rows(s.rows, max_bytes);
        Self {
            truncated: fitted.cut_rows > 0 || fitted.omitted_rows > 0,
            rows: fitted.rows,
            cut_rows: fitted.cut_rows,
            omitted_rows: fitted.omitted_rows,
            omitted_bytes: fitted.omitted_bytes,
            cursor_row: s.cursor_row,
            cursor_col: s.cursor_col,
            cols: s.cols,
            height: s.height,
            alternate_screen: s.alternate_screen,
            title: s.title.map(|t| budget::shorten(t, budget::TITLE_BYTES)),
            status,
        }
    }
}

/// Screen rows fitted into a byte budget.
pub struct FittedRows {
    /// The rows kept, some cut.
    pub rows: Vec<String>,
    /// Rows shortened.
    pub cut_rows: u64,
    /// Rows left out at the bottom.
    pub omitted_rows: u64,
    /// Bytes left out.
    pub omitted_bytes: u64,
}

/// Fits `rows` into about `max_bytes` of JSON: every row gets an equal share (at least 256
/// bytes) and is cut past it; rows that no longer fit are left out from the bottom. A 1000-row
/// screen of combining characters (megabytes) thus still shows every row's start.
pub fn fit_rows(rows: Vec<String>, max_bytes: usize) -> FittedRows {
    // JSON quotes and commas, and escapes (control characters become `\u00XX`).
    let cost = |r: &str| budget::json_len(&r) + 1;
    let total: usize = rows.iter().map(|r| cost(r)).sum();
    let mut out = FittedRows {
        rows: Vec::with_capacity(rows.len()),
        cut_rows: 0,
        omitted_rows: 0,
        omitted_bytes: 0,
    };
    if total <= max_bytes {
        out.rows = rows;
        return out;
    }
    let used_rows = rows.iter().filter(|r| !r.is_empty()).count().max(1);
    let share = (max_bytes / used_rows).max(256);
    let mut used = 0;
    for row in rows {
        let len = row.len() as u64;
        let (row, cut) = if cost(&row) > share {
            // Leave room for the note and for escapes.
            let kept = budget::shorten(row, share.saturating_sub(48) / 6 * 5);
            // The note at the end is not screen text.
            let text = kept.rfind(" [... ").unwrap_or(kept.len());
            let cut = len.saturating_sub(text as u64);
            (kept, Some(cut))
        } else {
            (row, None)
        };
        if used + cost(&row) > max_bytes {
            // Left out whole: every byte of it counts.
            out.omitted_rows += 1;
            out.omitted_bytes += len;
            continue;
        }
        if let Some(cut) = cut {
            out.cut_rows += 1;
            out.omitted_bytes += cut;
        }
        used += cost(&row);
        out.rows.push(row);
    }
    out
}

/// Input of resize_job.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ResizeParams {
    #[serde(flatten)]
    pub job: super::JobIdParams,
    /// New width in columns, 1-1000.
    #[schemars(range(min = 1, max = 1000))]
    pub cols: u16,
    /// New height in rows, 1-1000.
    #[schemars(range(min = 1, max = 1000))]
    pub rows: u16,
}

/// Result of resize_job.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ResizeResult {
    /// True when the terminal was resized (the program got SIGWINCH); false when the job had
    /// already ended and nothing changed.
    pub resized: bool,
    /// Terminal width now.
    pub cols: u16,
    /// Terminal height now.
    pub rows: u16,
    /// The job's status.
    pub status: Status,
    /// What happened, in a sentence.
    pub message: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_screens_are_sent_whole() {
        let rows = vec!["a".to_owned(), String::new(), "b".to_owned()];
        let f = fit_rows(rows.clone(), 1000);
        assert_eq!((f.rows, f.cut_rows, f.omitted_rows), (rows, 0, 0));
    }

    #[test]
    fn huge_screens_fit_and_count_what_they_left_out() {
        let row = "e\u{301}\u{302}".repeat(1000);
        let f = fit_rows(vec![row.clone(); 1000], 64 * 1024);
        let sent: usize = f.rows.iter().map(|r| budget::json_len(r) + 1).sum();
        assert!(sent <= 64 * 1024, "{sent}");
        assert_eq!(f.rows.len() as u64 + f.omitted_rows, 1000);
        assert_eq!(f.cut_rows as usize, f.rows.len(), "every row kept was cut");
        assert!(f.omitted_rows > 0);
        assert!(f.rows[0].starts_with("e\u{301}") && f.rows[0].ends_with("bytes cut]"));
        let total = (row.len() * 1000) as u64;
        let kept: u64 = f.rows.iter().map(|r| r.len() as u64).sum();
        // What was left out plus what was sent (less the notes) is the whole screen.
        let notes: u64 = f
            .rows
            .iter()
            .map(|r| (r.len() - r.rfind(" [...").expect("note")) as u64)
            .sum();
        assert_eq!(f.omitted_bytes + kept - notes, total);
    }
}
