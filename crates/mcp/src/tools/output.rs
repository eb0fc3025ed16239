//! get_job_output, tail_job_output, search_job_output.

use ptyjobs_engine::compile_pattern;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::{Json, tool, tool_router};

use super::count;
use crate::budget;
use crate::error::ToolError;
use crate::params::*;
use crate::server::Server;

#[tool_router(router = output_tools, vis = "pub(crate)")]
impl Server {
    /// Read a job's output as clean text, by absolute line numbers. Without `offset` it starts
    /// at the oldest line held; returns at most `limit` lines (default 1000) and `max_bytes`
    /// bytes (default 64 KiB; the middle is left out past that). Pass the result's
    /// `next_offset` as `offset` to read only what is new: `{"job_id": ..., "offset": 120}`.
    #[tool(annotations(read_only_hint = true, open_world_hint = false))]
    async fn get_job_output(
        &self,
        Parameters(p): Parameters<OutputParams>,
    ) -> Result<Json<OutputResult>, ToolError> {
        let id = self.job_id(&p.job).await?;
        let limit = count("limit", p.limit, DEFAULT_OUTPUT_LIMIT, 1, usize::MAX)?;
        let max_bytes = budget::requested(p.max_bytes);
        let slice = self
            .jobs()
            .output_async(id, p.offset, Some(limit), max_bytes)
            .await?;
        Ok(Json(OutputResult::new(slice, max_bytes)))
    }

    /// Get the last `lines` lines (1-1000, default 50) of a job's output as clean text,
    /// including a prompt still waiting for input; at most `max_bytes` bytes (default 64 KiB).
    /// Example: `{"job_id": ..., "lines": 20}`.
    #[tool(annotations(read_only_hint = true, open_world_hint = false))]
    async fn tail_job_output(
        &self,
        Parameters(p): Parameters<TailParams>,
    ) -> Result<Json<TailResult>, ToolError> {
        let id = self.job_id(&p.job).await?;
        let lines = count("lines", p.lines, DEFAULT_TAIL_LINES, 1, MAX_TAIL_LINES)?;
        let max_bytes = budget::requested(p.max_bytes);
        let slice = self.jobs().tail_async(id, lines, max_bytes).await?;
        Ok(Json(TailResult::new(slice, max_bytes)))
    }

    /// Search all of a job's held output with a regular expression, without consuming it:
    /// matching lines with their absolute line numbers and `context` lines around them, and
    /// the count of all matches. Example: `{"job_id": ..., "pattern": "(?i)error", "context": 3}`.
    #[tool(annotations(read_only_hint = true, open_world_hint = false))]
    async fn search_job_output(
        &self,
        Parameters(p): Parameters<SearchParams>,
    ) -> Result<Json<SearchResult>, ToolError> {
        let id = self.job_id(&p.job).await?;
        let context = count("context", p.context, DEFAULT_CONTEXT, 0, MAX_CONTEXT)?;
        let max = count(
            "max_matches",
            p.max_matches,
            DEFAULT_MAX_MATCHES,
            1,
            MAX_MATCHES,
        )?;
        let re = compile_pattern(&p.pattern)?;
        Ok(Json(
            self.jobs().search_async(id, re, context, max).await?.into(),
        ))
    }
}
