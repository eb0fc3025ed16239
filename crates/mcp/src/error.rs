//! The one mapping from engine errors to MCP answers.
//!
//! - A mistake the model can fix — an unknown or malformed `job_id`, a job that is no longer
//!   running, an argument out of range, a `cwd` that does not exist, the running-jobs limit —
//!   becomes a tool result with `isError: true` and a message that says what to do. Argument
//!   checks that need the engine's knowledge (sizes, cwd, signals) are answered this way rather
//!   than as JSON-RPC -32602, because MCP clients show tool results to the model but often only
//!   log protocol errors (the spec, since 2025-11-25, asks for exactly this).
//! - JSON that does not fit a tool's input schema at all (a string where a number belongs) is
//!   rejected by rmcp before a tool runs, as invalid params (-32602).
//! - Anything that can only be a bug of ours becomes an internal error (-32603).
//!
//! A job that exits non-zero is data (`status: failed`, `exit_code`), never an error.

use ptyjobs_engine::Error;
use rmcp::ErrorData;
use rmcp::handler::server::tool::IntoCallToolResult;
use rmcp::model::{CallToolResponse, CallToolResult, ContentBlock};

/// Why a tool call did not produce its normal result.
#[derive(Debug)]
pub enum ToolError {
    /// The model can fix this: answered as an `isError` tool result carrying the message.
    Fixable(String),
    /// Answered as a JSON-RPC error.
    Protocol(ErrorData),
}

impl ToolError {
    /// An `isError` result for an argument the model should change.
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::Fixable(message.into())
    }
}

/// An engine error's message as the model reads it: the engine's words plus this face's hint
/// (the engine names no tool).
pub fn message(e: &Error) -> String {
    match e {
        Error::InvalidJobId(_) => format!(
            "{e} (the UUID that execute_command returned). Call list_jobs to see the ids of \
             the known jobs."
        ),
        Error::JobNotFound(_) | Error::UnknownName { .. } => {
            format!("{e}: call list_jobs to see the known jobs")
        }
        Error::NameTaken(t) if t.wanted.is_none() => format!(
            "{e}. To use it: execute_command with the same command and \"ensure\": true; to \
             replace it: restart_job; or kill_job it."
        ),
        Error::NameTaken(_) => {
            format!("{e}: call restart_job with its job_id and the new command.")
        }
        _ => e.to_string(),
    }
}

impl From<Error> for ToolError {
    fn from(e: Error) -> Self {
        match e {
            // The engine's messages say what to do next, with this face's hint added.
            Error::InvalidJobId(_)
            | Error::JobNotFound(_)
            | Error::NotRunning { .. }
            | Error::NotOwner { .. }
            | Error::Unproven { .. }
            | Error::NameTaken(_)
            | Error::UnknownName { .. }
            | Error::InvalidArgument(_)
            | Error::LimitReached(_)
            | Error::Spawn(_)
            // An OS error on a job (e.g. its terminal went away mid-write) is about that job,
            // not the server: tell the model, keep serving.
            | Error::Io(_) => Self::Fixable(message(&e)),
            other => Self::Protocol(ErrorData::internal_error(other.to_string(), None)),
        }
    }
}

impl IntoCallToolResult for ToolError {
    fn into_call_tool_result(self) -> Result<CallToolResponse, ErrorData> {
        match self {
            Self::Fixable(message) => {
                Ok(CallToolResult::error(vec![ContentBlock::text(message)]).into())
            }
            Self::Protocol(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ptyjobs_engine::JobId;

    #[test]
    fn malformed_ids_tell_the_model_to_list_jobs() {
        let e = ToolError::from(Error::InvalidJobId("../../etc/passwd".into()));
        let ToolError::Fixable(msg) = e else {
            panic!("expected a fixable error")
        };
        assert!(msg.contains("list_jobs"), "{msg}");
        let ToolError::Fixable(msg) = ToolError::from(Error::JobNotFound(JobId::new())) else {
            panic!("expected a fixable error")
        };
        assert!(msg.contains("call list_jobs"), "{msg}");
    }

    #[test]
    fn fixable_errors_are_is_error_results() {
        let r = ToolError::invalid("nope").into_call_tool_result();
        let Ok(CallToolResponse::Complete(r)) = r else {
            panic!("expected a complete result")
        };
        assert_eq!(r.is_error, Some(true));
    }
}
