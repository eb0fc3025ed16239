//! An engine error as it travels back from the job's owner: a code and the data the variant
//! carries, rebuilt into the same [`Error`] on the caller's side, so every face maps it as it
//! maps an error of its own jobs.

use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::job::{JobId, JobStatus};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "code", rename_all = "snake_case")]
pub(crate) enum ControlError {
    JobNotFound {
        id: JobId,
    },
    InvalidJobId {
        text: String,
    },
    NotRunning {
        id: JobId,
        status: JobStatus,
    },
    NotOwner {
        id: JobId,
        server_pid: u32,
    },
    Unproven {
        id: JobId,
        reason: String,
    },
    Spawn {
        message: String,
    },
    LimitReached {
        message: String,
    },
    InvalidArgument {
        message: String,
    },
    /// An I/O error, or a variant this side does not rebuild (its message kept).
    Io {
        message: String,
    },
}

impl From<&Error> for ControlError {
    fn from(e: &Error) -> Self {
        match e {
            Error::JobNotFound(id) => Self::JobNotFound { id: *id },
            Error::InvalidJobId(text) => Self::InvalidJobId { text: text.clone() },
            Error::NotRunning { id, status } => Self::NotRunning {
                id: *id,
                status: *status,
            },
            Error::NotOwner { id, server_pid } => Self::NotOwner {
                id: *id,
                server_pid: *server_pid,
            },
            Error::Unproven { id, reason } => Self::Unproven {
                id: *id,
                reason: reason.clone(),
            },
            Error::Spawn(m) => Self::Spawn { message: m.clone() },
            Error::LimitReached(m) => Self::LimitReached { message: m.clone() },
            Error::InvalidArgument(m) => Self::InvalidArgument { message: m.clone() },
            Error::Io(e) => Self::Io {
                message: e.to_string(),
            },
            // Names are resolved by the caller before a request is sent: not expected here.
            other => Self::Io {
                message: other.to_string(),
            },
        }
    }
}

impl From<ControlError> for Error {
    fn from(e: ControlError) -> Self {
        match e {
            ControlError::JobNotFound { id } => Self::JobNotFound(id),
            ControlError::InvalidJobId { text } => Self::InvalidJobId(text),
            ControlError::NotRunning { id, status } => Self::NotRunning { id, status },
            ControlError::NotOwner { id, server_pid } => Self::NotOwner { id, server_pid },
            ControlError::Unproven { id, reason } => Self::Unproven { id, reason },
            ControlError::Spawn { message } => Self::Spawn(message),
            ControlError::LimitReached { message } => Self::LimitReached(message),
            ControlError::InvalidArgument { message } => Self::InvalidArgument(message),
            ControlError::Io { message } => Self::Io(std::io::Error::other(message)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_comes_back_as_the_same_variant() {
        let id = JobId(uuid::Uuid::nil());
        let sent = Error::NotRunning {
            id,
            status: JobStatus::Killed,
        };
        let text = serde_json::to_string(&ControlError::from(&sent)).unwrap();
        assert!(text.contains(r#""code":"not_running""#), "{text}");
        let back: ControlError = serde_json::from_str(&text).unwrap();
        let back = Error::from(back);
        assert!(matches!(
            back,
            Error::NotRunning {
                status: JobStatus::Killed,
                ..
            }
        ));
        assert_eq!(back.to_string(), sent.to_string());
        let bad = Error::InvalidArgument("unknown key \"Nope\"".into());
        let back = Error::from(ControlError::from(&bad));
        assert_eq!(back.to_string(), bad.to_string());
    }
}
