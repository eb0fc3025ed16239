//! The control request and its answer, as they travel (JSON, one line each).

use serde::{Deserialize, Serialize};

/// Bytes for a job's input: a JSON string when they are UTF-8 (the usual case, and compact),
/// else an array of numbers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ControlBytes(pub Vec<u8>);

impl Serialize for ControlBytes {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match std::str::from_utf8(&self.0) {
            Ok(text) => s.serialize_str(text),
            Err(_) => s.collect_seq(&self.0),
        }
    }
}

impl<'de> Deserialize<'de> for ControlBytes {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Either {
            Text(String),
            Raw(Vec<u8>),
        }
        Ok(Self(match Either::deserialize(d)? {
            Either::Text(t) => t.into_bytes(),
            Either::Raw(b) => b,
        }))
    }
}

/// A wait's conditions as they travel ([`crate::WaitSpec`] with its pattern as text and its
/// durations in milliseconds). The owner compiles the pattern and caps the timeout by its own
/// limit.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ControlWait {
    /// The pattern a line must match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pattern: Option<String>,
    /// Lines before the wait count too.
    #[serde(default)]
    pub from_start: bool,
    /// Quiet for this long.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_ms: Option<u64>,
    /// A process of the job listens on this TCP port.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    /// The job listens on any port.
    #[serde(default)]
    pub listening: bool,
    /// A readiness URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The status the URL must answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect_status: Option<u16>,
    /// The job waits for input.
    #[serde(default)]
    pub input: bool,
    /// The wait's timeout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
}

/// What a control request asks the job's own server to do (the `op` field names it). Each is
/// the [`crate::JobManager`] method of the same name, run by that server on its own job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum ControlOp {
    /// [`crate::JobManager::write`]: what the terminal takes now. Answer: bytes written.
    Write {
        /// The bytes.
        data: ControlBytes,
    },
    /// [`crate::JobManager::write_all`]. Answer: bytes written.
    WriteAll {
        /// The bytes.
        data: ControlBytes,
        /// How long a full input buffer may be waited on.
        deadline_ms: u64,
    },
    /// [`crate::JobManager::interact_with`]. Answer: a [`crate::Interaction`].
    Interact {
        /// The bytes typed (already as the terminal sends them).
        input: ControlBytes,
        /// Named keys pressed after them (encoded by the owner, for its terminal's mode).
        #[serde(default)]
        keys: Vec<String>,
        /// The longest wait for the response.
        wait_ms: u64,
    },
    /// [`crate::JobManager::send_keys`]. Answer: bytes written.
    Keys {
        /// The key names.
        keys: Vec<String>,
    },
    /// [`crate::JobManager::resize`] (the owner also writes the size to the job's record).
    /// Answer: whether it was resized.
    Resize {
        /// Columns.
        cols: u16,
        /// Rows.
        rows: u16,
    },
    /// [`crate::JobManager::kill`], through the owner's kill path. Answer: a
    /// [`crate::KillReport`].
    Kill {
        /// The signal's number.
        signal: i32,
        /// The grace before SIGKILL, else the owner's default (capped by the owner).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        grace_ms: Option<u64>,
    },
    /// [`crate::JobManager::screen_status`]. Answer: `[screen, status]`.
    Screen,
    /// [`crate::JobManager::wait_for`]. Answer: a [`crate::WaitOutcome`]. Closing the
    /// connection cancels it.
    Wait(ControlWait),
}

/// The answer line: `{"ok":true,"answer":…}`, or `{"ok":false,"error":"…","fault":{"code":…}}`.
/// A refusal before the request was read (another uid, a bad hello, an older server) has
/// only `error`, as every attach refusal. Read straight into the answer's type `T`.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct ControlReply<T> {
    pub(crate) ok: bool,
    /// The server keeps the connection open for another request (the hello asked
    /// `keep_open`; older servers never say so).
    #[serde(default)]
    pub(crate) open: bool,
    #[serde(default)]
    pub(crate) error: Option<String>,
    #[serde(default)]
    pub(crate) fault: Option<super::ControlError>,
    #[serde(default = "none")]
    pub(crate) answer: Option<T>,
}

fn none<T>() -> Option<T> {
    None
}

/// The answer line of `done` (with its newline): the answer serialised once, in place.
pub(crate) fn reply_line(done: crate::error::Result<Vec<u8>>, open: bool) -> Vec<u8> {
    let mut line = match done {
        Ok(answer) => {
            let mut line = Vec::with_capacity(answer.len() + 36);
            line.extend_from_slice(br#"{"ok":true,"#);
            if open {
                line.extend_from_slice(br#""open":true,"#);
            }
            line.extend_from_slice(br#""answer":"#);
            line.extend_from_slice(&answer);
            line.push(b'}');
            line
        }
        Err(e) => {
            #[derive(Serialize)]
            struct Failed {
                ok: bool,
                #[serde(skip_serializing_if = "std::ops::Not::not")]
                open: bool,
                error: String,
                fault: super::ControlError,
            }
            let failed = Failed {
                ok: false,
                open,
                error: e.to_string(),
                fault: super::ControlError::from(&e),
            };
            serde_json::to_vec(&failed).unwrap_or_else(|_| br#"{"ok":false}"#.to_vec())
        }
    };
    line.push(b'\n');
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_travel_as_text_when_they_can() {
        let text = serde_json::to_string(&ControlBytes(b"ls\r".to_vec())).unwrap();
        assert_eq!(text, r#""ls\r""#);
        let raw = serde_json::to_string(&ControlBytes(vec![0xff, 0x1b])).unwrap();
        assert_eq!(raw, "[255,27]");
        for t in [text, raw] {
            let back: ControlBytes = serde_json::from_str(&t).unwrap();
            assert_eq!(serde_json::to_string(&back).unwrap(), t);
        }
    }

    #[test]
    fn an_answer_and_a_failure_read_back() {
        let line = reply_line(Ok(b"[1,2]".to_vec()), false);
        let r: ControlReply<Vec<u8>> = serde_json::from_slice(&line).unwrap();
        assert!(r.ok && r.answer == Some(vec![1, 2]));
        let line = reply_line(
            Err(crate::error::Error::InvalidArgument("bad".into())),
            false,
        );
        let r: ControlReply<Vec<u8>> = serde_json::from_slice(&line).unwrap();
        assert!(!r.ok && r.answer.is_none() && r.fault.is_some(), "{r:?}");
        let refused: ControlReply<u32> =
            serde_json::from_str(r#"{"ok":false,"error":"no"}"#).unwrap();
        assert_eq!(refused.error.as_deref(), Some("no"));
    }

    #[test]
    fn an_op_is_tagged() {
        let op = ControlOp::Kill {
            signal: 15,
            grace_ms: None,
        };
        assert_eq!(
            serde_json::to_string(&op).unwrap(),
            r#"{"op":"kill","signal":15}"#
        );
        let wait = ControlOp::Wait(ControlWait {
            input: true,
            ..ControlWait::default()
        });
        let text = serde_json::to_string(&wait).unwrap();
        assert!(text.starts_with(r#"{"op":"wait""#), "{text}");
        assert_eq!(serde_json::from_str::<ControlOp>(&text).unwrap(), wait);
    }
}
