//! The one mapping from engine errors to JavaScript errors.
//!
//! Every error the binding raises is a JS `Error` whose `code` property is one of the stable
//! strings of [`Code`]; the message says what went wrong and what to do. Nothing panics across
//! the boundary: every fallible path returns one of these.

use napi::bindgen_prelude::{Env, ToNapiValue, Unknown};
use ptyjobs_engine::Error as EngineError;

/// The stable `code` of an error thrown by the binding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    /// No job with this id is known (never started here, or forgotten).
    JobNotFound,
    /// The job id is not a job id (a job id is the UUID `execute` returned).
    InvalidJobId,
    /// The job has finished, so it cannot take input.
    NotRunning,
    /// Too many jobs are running, or no pseudo-terminal is left.
    LimitReached,
    /// The shell could not be started.
    SpawnFailed,
    /// An argument is out of range or unusable.
    InvalidArgument,
    /// The manager was closed: it starts no more jobs.
    ManagerClosed,
    /// The job belongs to another live process sharing the state directory (a ptyjobs server,
    /// or another `JobManager` with the same `stateDir`), and only that process does this
    /// (`removeJob`, `onData`, `onExit`), or it serves no attach socket to be asked through.
    NotOwner,
    /// A live job already holds this name in this directory: the message names it.
    NameTaken,
    /// No job has this name: the message lists the live names (the binding's job references
    /// answer `INVALID_JOB_ID` for it, as for any text that names no job).
    UnknownName,
    /// An operating-system error outside the cases above.
    IoError,
    /// An engine error this binding does not know (a newer engine).
    Internal,
}

impl AsRef<str> for Code {
    fn as_ref(&self) -> &str {
        match self {
            Self::JobNotFound => "JOB_NOT_FOUND",
            Self::InvalidJobId => "INVALID_JOB_ID",
            Self::NotRunning => "NOT_RUNNING",
            Self::LimitReached => "LIMIT_REACHED",
            Self::SpawnFailed => "SPAWN_FAILED",
            Self::InvalidArgument => "INVALID_ARGUMENT",
            Self::ManagerClosed => "MANAGER_CLOSED",
            Self::NotOwner => "NOT_OWNER",
            Self::NameTaken => "NAME_TAKEN",
            Self::UnknownName => "UNKNOWN_NAME",
            Self::IoError => "IO_ERROR",
            Self::Internal => "INTERNAL",
        }
    }
}

/// A binding error: becomes a JS `Error` with `code` set to the [`Code`] string.
pub type JsErr = napi::Error<Code>;

/// The binding's result type.
pub type Result<T> = std::result::Result<T, JsErr>;

/// An error with `code` and `message`.
pub fn err(code: Code, message: impl Into<String>) -> JsErr {
    napi::Error::new(code, message.into())
}

/// An [`Code::InvalidArgument`] error.
pub fn invalid(message: impl Into<String>) -> JsErr {
    err(Code::InvalidArgument, message)
}

/// Converts an engine error, keeping its message.
pub fn from_engine(e: EngineError) -> JsErr {
    let code = match &e {
        EngineError::JobNotFound(_) => Code::JobNotFound,
        EngineError::InvalidJobId(_) => Code::InvalidJobId,
        EngineError::NotRunning { .. } => Code::NotRunning,
        EngineError::LimitReached(_) => Code::LimitReached,
        EngineError::Spawn(_) => Code::SpawnFailed,
        EngineError::InvalidArgument(_) => Code::InvalidArgument,
        EngineError::NotOwner { .. } => Code::NotOwner,
        EngineError::NameTaken(_) => Code::NameTaken,
        EngineError::UnknownName { .. } => Code::UnknownName,
        EngineError::Io(_) => Code::IoError,
        _ => Code::Internal,
    };
    // The engine names no method of any face: the binding's own hints are added here.
    let message = match &e {
        EngineError::JobNotFound(_) | EngineError::UnknownName { .. } => {
            format!("{e}: call list() to see the known jobs")
        }
        EngineError::InvalidJobId(_) => format!("{e} (the UUID that execute() returned)"),
        EngineError::NameTaken(t) if t.wanted.is_none() => format!(
            "{e} (execute with ensure: true reuses it; restart() replaces it; kill() ends it)"
        ),
        EngineError::NameTaken(_) => format!("{e} (with restart(idOrName, {{ command }}))"),
        _ => e.to_string(),
    };
    err(code, message)
}

/// Turns a coded error into a plain `napi::Error` that carries the JS error object itself, so
/// that a Promise rejected with it (napi's async machinery only takes `napi::Error`) rejects
/// with our `Error` and its `code`. Must run on the JS thread.
pub fn into_napi(env: &Env, e: JsErr) -> napi::Error {
    let reason = e.reason.clone();
    // SAFETY: `env` is the live environment of the JS thread we are called on.
    match unsafe { ToNapiValue::to_napi_value(env.raw(), e) } {
        Ok(raw) if !raw.is_null() => {
            // SAFETY: `raw` was just created in `env`.
            napi::Error::from(unsafe { Unknown::from_raw_unchecked(env.raw(), raw) })
        }
        _ => napi::Error::from_reason(reason),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engine_errors_keep_their_message_and_get_a_stable_code() {
        let e = from_engine(EngineError::InvalidJobId("x".into()));
        assert_eq!(e.status.as_ref(), "INVALID_JOB_ID");
        assert!(e.reason.contains("invalid job id"));
        assert_eq!(
            from_engine(EngineError::Spawn("no".into())).status.as_ref(),
            "SPAWN_FAILED"
        );
        assert_eq!(
            from_engine(EngineError::LimitReached("n".into()))
                .status
                .as_ref(),
            "LIMIT_REACHED"
        );
        assert_eq!(
            from_engine(EngineError::InvalidArgument("a".into())).status,
            Code::InvalidArgument
        );
        let id = ptyjobs_engine::JobId::new();
        let e = from_engine(EngineError::NotOwner {
            id,
            server_pid: 4321,
        });
        assert_eq!(e.status.as_ref(), "NOT_OWNER");
        assert!(e.reason.contains("4321") && e.reason.contains(&id.to_string()));
    }
}
