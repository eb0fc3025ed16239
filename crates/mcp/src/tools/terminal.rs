//! interact_with_job, get_job_screen, resize_job.

use std::time::{Duration, Instant};

use ptyjobs_engine::{Interaction, JobId, encode_keys};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::{Json, tool, tool_router};

use super::job_id;
use crate::budget::OUTPUT_BUDGET;
use crate::error::ToolError;
use crate::params::*;
use crate::server::Server;

/// After keys, how long output must stay quiet for the response to count as complete (the
/// engine's `interact` uses the same window for text input).
const KEYS_IDLE: Duration = Duration::from_millis(300);

#[tool_router(router = terminal_tools, vis = "pub(crate)")]
impl Server {
    /// Type into a running job (answer a prompt, send a REPL command, press keys) and return
    /// what the job printed in response. `input` is text (a newline is appended unless `raw`
    /// is true); `keys` are named keys pressed after it. Returns as soon as the response is
    /// complete (output went quiet or the job exited), at most after `wait_ms`. Examples:
    /// `{"job_id": ..., "input": "yes"}`, `{"job_id": ..., "keys": ["C-c"]}`,
    /// `{"job_id": ..., "keys": ["Down", "Down", "Enter"]}`.
    #[tool(annotations(destructive_hint = true, open_world_hint = true))]
    async fn interact_with_job(
        &self,
        Parameters(p): Parameters<InteractParams>,
    ) -> Result<Json<InteractResult>, ToolError> {
        let id = job_id(&p.job_id)?;
        let keys = p.keys.unwrap_or_default();
        // Reject unknown keys before anything is written.
        encode_keys(&keys, false)?;
        let wait = Duration::from_millis(p.wait_ms.unwrap_or(DEFAULT_WAIT_MS).min(MAX_WAIT_MS));
        let input = match p.input {
            Some(mut input) => {
                if !p.raw.unwrap_or(false) && !input.ends_with('\n') {
                    input.push('\n');
                }
                Some(input)
            }
            None if keys.is_empty() => {
                return Err(ToolError::invalid(
                    "give `input` (text to type), `keys` (e.g. [\"Enter\"] or [\"C-c\"]), or both",
                ));
            }
            None => None,
        };
        let done = if keys.is_empty() {
            let input = input.unwrap_or_default();
            self.jobs.interact(id, input.as_bytes(), wait).await?
        } else {
            self.press(id, input, &keys, wait).await?
        };
        // The same range as an engine slice, to fit it like every other read.
        let lines = usize::try_from(done.next_offset - done.first_line).unwrap_or(usize::MAX);
        let mut slice = self.jobs.output(id, Some(done.first_line), Some(lines))?;
        let read = Accounting::fit(&mut slice, OUTPUT_BUDGET);
        Ok(Json(InteractResult {
            truncated: read.omitted_lines > 0 || read.omitted_bytes > 0,
            output: slice.output,
            bytes_written: done.bytes_written,
            status: done.status.into(),
            read,
        }))
    }

    /// Show the job's terminal screen as a person would see it now: rows of text, cursor
    /// position, size, whether a full-screen program is on the alternate screen, the window
    /// title. Use it for TUIs, editors, pagers and watchers that redraw in place.
    #[tool(annotations(read_only_hint = true, open_world_hint = false))]
    async fn get_job_screen(
        &self,
        Parameters(p): Parameters<JobIdParams>,
    ) -> Result<Json<ScreenResult>, ToolError> {
        let id = job_id(&p.job_id)?;
        let screen = self.jobs.screen(id)?;
        let status = self.jobs.status(id)?.status;
        Ok(Json(ScreenResult::new(screen, status.into())))
    }

    /// Change a running job's terminal size; the program gets SIGWINCH and redraws.
    /// Example: `{"job_id": ..., "cols": 200, "rows": 50}`. On a finished job it changes
    /// nothing and says so.
    #[tool(annotations(
        destructive_hint = false,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn resize_job(
        &self,
        Parameters(p): Parameters<ResizeParams>,
    ) -> Result<Json<ResizeResult>, ToolError> {
        let id = job_id(&p.job_id)?;
        let resized = self.jobs.resize(id, p.cols, p.rows)?;
        let info = self.jobs.status(id)?;
        let (cols, rows) = info.size;
        let message = if resized {
            format!("The terminal is now {cols}x{rows}.")
        } else {
            format!(
                "The job has already ended (status: {}); nothing was resized.",
                info.status.as_str()
            )
        };
        Ok(Json(ResizeResult {
            resized,
            cols,
            rows,
            status: info.status.into(),
            message,
        }))
    }
}

impl Server {
    /// Types `input` (as `interact` does, with its response), then presses `keys` and waits
    /// for their response the same way; returns everything from the line `input` went to.
    ///
    /// This belongs in the engine (an `interact` that takes keys): until it is there, the
    /// response to the keys is awaited here.
    async fn press(
        &self,
        id: JobId,
        input: Option<String>,
        keys: &[String],
        wait: Duration,
    ) -> Result<Interaction, ToolError> {
        let deadline = Instant::now() + wait;
        let mark = self.jobs.tail(id, 1)?.first_line;
        let mut written = 0;
        if let Some(input) = input {
            written += self
                .jobs
                .interact(id, input.as_bytes(), wait)
                .await?
                .bytes_written;
        }
        // Input that got no response may have used up the wait: the keys still get a moment.
        let deadline = deadline.max(Instant::now() + 2 * KEYS_IDLE);
        let mut rx = self.jobs.subscribe(id)?;
        let before = rx.borrow_and_update().bytes;
        written += self.jobs.send_keys(id, keys).await?;
        let mut last_change = None;
        loop {
            let ev = *rx.borrow_and_update();
            if ev.finished {
                break;
            }
            if ev.bytes != before && last_change.is_none() {
                last_change = Some(Instant::now());
            }
            let wake = last_change.map_or(deadline, |t| (t + KEYS_IDLE).min(deadline));
            if Instant::now() >= wake {
                break;
            }
            match tokio::time::timeout_at(wake.into(), rx.changed()).await {
                Ok(Ok(())) if last_change.is_some() => last_change = Some(Instant::now()),
                Ok(Ok(())) | Err(_) => {}
                Ok(Err(_)) => break,
            }
        }
        let slice = self.jobs.output(id, Some(mark), None)?;
        Ok(Interaction {
            output: slice.output,
            bytes_written: written,
            status: slice.status,
            first_line: slice.first_line,
            next_offset: slice.next_offset,
        })
    }
}
