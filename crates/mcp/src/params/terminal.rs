//! interact_with_job, get_job_screen, resize_job.

use ptyjobs_engine::ScreenSnapshot;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Accounting, Status};

/// `interact_with_job` default wait.
pub const DEFAULT_WAIT_MS: u64 = 5000;
/// `interact_with_job` upper bound on `wait_ms`: a call never holds the model longer.
pub const MAX_WAIT_MS: u64 = 60_000;

/// Input of interact_with_job.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct InteractParams {
    /// The job's UUID.
    pub job_id: String,
    /// Text to type into the job's terminal. A newline (Enter) is appended unless the text
    /// already ends with one or `raw` is true. Multi-line or long text is sent as a bracketed
    /// paste when the program asked for it. May be omitted when `keys` is given.
    #[serde(default)]
    pub input: Option<String>,
    /// Named keys and chords, pressed in order after `input`: `Enter`, `Tab`, `Escape`,
    /// `Backspace`, `Up`, `Down`, `Left`, `Right`, `Home`, `End`, `PageUp`, `PageDown`,
    /// `F1`-`F12`, a single character (`q`), and chords `C-c` (Ctrl-C), `C-d`, `C-z`, `M-x`
    /// (Alt-x), `C-Up`. Example: `["C-c"]` interrupts the running program.
    #[serde(default)]
    pub keys: Option<Vec<String>>,
    /// Send `input` exactly as given, without appending a newline. Default false.
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
    /// response (clean text).
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

/// Result of get_job_screen.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ScreenResult {
    /// Every visible row as text, top to bottom (trailing blanks trimmed).
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
    /// The window title the program set, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The job's status.
    pub status: Status,
}

impl ScreenResult {
    /// The snapshot, with the job's status.
    pub fn new(s: ScreenSnapshot, status: Status) -> Self {
        Self {
            rows: s.rows,
            cursor_row: s.cursor_row,
            cursor_col: s.cursor_col,
            cols: s.cols,
            height: s.height,
            alternate_screen: s.alternate_screen,
            title: s.title,
            status,
        }
    }
}

/// Input of resize_job.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ResizeParams {
    /// The job's UUID.
    pub job_id: String,
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
