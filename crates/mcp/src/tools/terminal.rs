//! interact_with_job, get_job_screen, resize_job.

use std::time::Duration;

use rmcp::handler::server::wrapper::Parameters;
use rmcp::{Json, tool, tool_router};

use crate::budget::OUTPUT_BUDGET;
use crate::error::ToolError;
use crate::params::*;
use crate::server::Server;

#[tool_router(router = terminal_tools, vis = "pub(crate)")]
impl Server {
    /// Type into a running job (answer a prompt, send a REPL command, press keys) and return
    /// what the job printed in response. `input` is text, each line ended with Enter (CR) as
    /// a terminal sends it; `keys` are named keys pressed after it. Returns as soon as the
    /// response is complete (output went quiet or the job exited), at most after `wait_ms`;
    /// lines redrawn above (a menu replaced by the next question) are included
    /// (`rewritten_from`). Examples: `{"job_id": ..., "input": "yes"}`,
    /// `{"job_id": ..., "keys": ["Down", "Enter"]}`.
    #[tool(annotations(destructive_hint = true, open_world_hint = true))]
    async fn interact_with_job(
        &self,
        Parameters(p): Parameters<InteractParams>,
    ) -> Result<Json<InteractResult>, ToolError> {
        let id = self.job_id(&p.job).await?;
        let keys = p.keys.unwrap_or_default();
        let wait = Duration::from_millis(p.wait_ms.unwrap_or(DEFAULT_WAIT_MS).min(MAX_WAIT_MS));
        let input = match p.input {
            Some(input) if p.raw.unwrap_or(false) => Some(input.into_bytes()),
            Some(input) => Some(ptyjobs_engine::typed_input(&input, true)),
            None if keys.is_empty() => {
                return Err(ToolError::invalid(
                    "give `input` (text to type), `keys` (e.g. [\"Enter\"] or [\"C-c\"]), or both",
                ));
            }
            None => None,
        };
        let input = input.unwrap_or_default();
        let done = self.jobs().interact_with(id, &input, &keys, wait).await?;
        // The response as the engine read it, fitted like every other read.
        let mut slice = done.slice;
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
    /// title. Use it for TUIs, editors, pagers and watchers that redraw in place. At most
    /// `max_bytes` (default 64 KiB) of rows: a bigger screen says what it left out.
    #[tool(annotations(read_only_hint = true, open_world_hint = false))]
    async fn get_job_screen(
        &self,
        Parameters(p): Parameters<ScreenParams>,
    ) -> Result<Json<ScreenResult>, ToolError> {
        let id = self.job_id(&p.job).await?;
        // Screen and status of one moment: a job ending in between cannot pair its last
        // screen with a running status.
        let (screen, status) = self.jobs().screen_status_async(id).await?;
        Ok(Json(ScreenResult::new(
            screen,
            status.into(),
            crate::budget::requested(p.max_bytes),
        )))
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
        let id = self.job_id(&p.job).await?;
        let resized = self.jobs().resize_async(id, p.cols, p.rows).await?;
        let info = self.jobs().status_async(id).await?;
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
