//! A start request on the attach socket (see [`super::AttachServer`]): a keeper (see
//! `crate::keep`) runs a kept job for a server, the CLI or a Node program, through the same
//! start and ensure verbs as any job. Also the keeper's gate: whether this process is a keeper,
//! and whether it is closing (a start that races the keeper's exit is refused, so its starter
//! starts a new keeper instead of handing a job to a process about to leave).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{ATTACH_START_VERSION, AttachHello};
use crate::job::{JobInfo, JobSpec};
use crate::manager::JobManager;
use crate::sync::lock;

/// What a start request asks for: the fields of a [`JobSpec`] a kept job can have.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttachStart {
    /// The command line.
    pub command: String,
    /// The working directory (resolved by the starter: the keeper's own is not the starter's).
    pub cwd: PathBuf,
    /// Extra environment variables.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Terminal width.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cols: Option<u16>,
    /// Terminal height.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rows: Option<u16>,
    /// The job's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Reuse the live job with that name and command.
    #[serde(default)]
    pub ensure: bool,
    /// Pick a free port as `PORT`.
    #[serde(default)]
    pub auto_port: bool,
    /// Kill the job after this many milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// End the kept job this many milliseconds after its start (milliseconds: a restarted
    /// kept job keeps the rest of its lifetime, not a whole second less); `None`: only when
    /// killed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep_ttl_ms: Option<u64>,
}

impl AttachStart {
    /// The request for a kept `spec` (its `cwd` already resolved to `cwd`).
    pub fn of(spec: &JobSpec, cwd: PathBuf) -> Self {
        Self {
            command: spec.command.clone(),
            cwd,
            env: spec.env.clone(),
            cols: spec.cols,
            rows: spec.rows,
            name: spec.name.clone(),
            ensure: spec.ensure,
            auto_port: spec.auto_port,
            timeout_ms: spec
                .timeout
                .map(|t| u64::try_from(t.as_millis()).unwrap_or(u64::MAX)),
            keep_ttl_ms: spec
                .keep_ttl
                .map(|t| u64::try_from(t.as_millis()).unwrap_or(u64::MAX).max(1)),
        }
    }

    /// The spec the keeper starts: kept, with its TTL.
    fn spec(self) -> JobSpec {
        JobSpec {
            command: self.command,
            cwd: Some(self.cwd),
            env: self.env,
            cols: self.cols,
            rows: self.rows,
            name: self.name,
            timeout: self.timeout_ms.map(Duration::from_millis),
            ensure: self.ensure,
            auto_port: self.auto_port,
            keep: true,
            keep_ttl: self.keep_ttl_ms.map(Duration::from_millis),
            ..JobSpec::default()
        }
    }
}

/// The keeper's one-line answer to a start request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StartReply {
    /// Whether the job runs (`job`); else `error` says why.
    pub ok: bool,
    /// Why not (the engine's message).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// True when the keeper is closing: the starter starts a new keeper and asks it again.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub closing: bool,
    /// The job (new, or the live one an ensure reused).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<Box<JobInfo>>,
    /// True when an ensure found the job already running.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reused: bool,
}

impl StartReply {
    fn refused(why: impl Into<String>) -> Self {
        Self {
            ok: false,
            error: Some(why.into()),
            closing: false,
            job: None,
            reused: false,
        }
    }
}

/// This process's keeper state. One keeper per process (the `ptyjobs keeper` daemon).
#[derive(Debug, Default)]
struct Gate {
    /// This process is a keeper: its starts are kept jobs, and start requests are served.
    keeping: bool,
    /// The keeper is leaving: start requests are refused with `closing`.
    closing: bool,
    /// Start requests being served now.
    starting: usize,
}

static GATE: Mutex<Gate> = Mutex::new(Gate {
    keeping: false,
    closing: false,
    starting: 0,
});

/// Makes this process a keeper (see `crate::keep`).
pub(crate) fn become_keeper() {
    lock(&GATE).keeping = true;
}

/// Whether this process is a keeper: a kept start here runs here, not in another keeper.
pub(crate) fn is_keeper() -> bool {
    lock(&GATE).keeping
}

/// Closes the keeper when `idle` says it has no running job and no start request is being
/// served: from then on every start request is refused with `closing`. True when closed.
/// `idle` is asked under the gate, so no start can slip in between the look and the close.
pub(crate) fn close_if_idle(idle: impl FnOnce() -> bool) -> bool {
    let mut gate = lock(&GATE);
    if gate.starting == 0 && idle() {
        gate.closing = true;
    }
    gate.closing
}

/// Counts a start request in while it is served (or refuses it when the keeper is closing).
struct Serving;

impl Serving {
    fn enter() -> Result<Self, StartReply> {
        let mut gate = lock(&GATE);
        if !gate.keeping {
            return Err(StartReply::refused(
                "this ptyjobs server does not keep jobs (start requests go to the keeper)",
            ));
        }
        if gate.closing {
            return Err(StartReply {
                closing: true,
                ..StartReply::refused("the keeper is closing; start a new one")
            });
        }
        gate.starting += 1;
        Ok(Self)
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        let mut gate = lock(&GATE);
        gate.starting = gate.starting.saturating_sub(1);
    }
}

/// Checks a start request's hello: version [`ATTACH_START_VERSION`] with `start`.
pub(super) fn checked(hello: AttachHello) -> Result<AttachHello, String> {
    if hello.version != ATTACH_START_VERSION || hello.start.is_none() {
        return Err(format!(
            "a start request is a hello of version {ATTACH_START_VERSION} with `start`"
        ));
    }
    Ok(hello)
}

/// Serves a start request: the job through [`JobManager::ensure`] (off the async workers:
/// a start writes files and spawns), or why not.
pub(super) async fn start(jobs: &JobManager, request: AttachStart) -> StartReply {
    let serving = match Serving::enter() {
        Ok(s) => s,
        Err(refused) => return refused,
    };
    let this = jobs.clone();
    let spec = request.spec();
    let started = jobs
        .inner
        .runtime
        .spawn_blocking(move || this.ensure(spec))
        .await;
    drop(serving);
    match started {
        Ok(Ok(started)) => StartReply {
            ok: true,
            error: None,
            closing: false,
            reused: started.reused,
            job: Some(Box::new(started.info)),
        },
        Ok(Err(e)) => StartReply::refused(e.to_string()),
        Err(e) => StartReply::refused(format!("the start failed: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_start_request_carries_a_kept_spec_and_its_ttl() {
        let spec = JobSpec {
            name: Some("web".into()),
            ensure: true,
            auto_port: true,
            timeout: Some(Duration::from_millis(1500)),
            keep: true,
            keep_ttl: Some(Duration::from_secs(60)),
            ..JobSpec::new("npm run dev")
        };
        let request = AttachStart::of(&spec, PathBuf::from("/p"));
        let json = serde_json::to_string(&request).unwrap();
        let back: AttachStart = serde_json::from_str(&json).unwrap();
        let kept = back.spec();
        assert!(kept.keep);
        assert_eq!(kept.keep_ttl, Some(Duration::from_secs(60)));
        assert_eq!(kept.cwd.as_deref(), Some(std::path::Path::new("/p")));
        assert_eq!(kept.name.as_deref(), Some("web"));
        assert!(kept.ensure && kept.auto_port);
        assert_eq!(kept.timeout, Some(Duration::from_millis(1500)));
        let forever = AttachStart::of(
            &JobSpec {
                keep: true,
                ..JobSpec::new("x")
            },
            PathBuf::from("/"),
        );
        assert_eq!(forever.spec().keep_ttl, None, "no TTL: kept until killed");
    }

    #[test]
    fn a_start_that_races_the_close_is_refused_as_closing() {
        // The gate is this process's: put back as it was at the end.
        let saved = std::mem::take(&mut *lock(&GATE));
        assert!(Serving::enter().is_err_and(|r| !r.closing), "not a keeper");
        become_keeper();
        let serving = Serving::enter().expect("a keeper serves starts");
        assert!(
            !close_if_idle(|| true),
            "a start being served keeps it open"
        );
        drop(serving);
        assert!(!close_if_idle(|| false), "a running job keeps it open");
        assert!(close_if_idle(|| true), "idle: closed");
        let refused = Serving::enter().err().expect("refused once closed");
        assert!(refused.closing, "{refused:?}");
        *lock(&GATE) = saved;
    }

    #[test]
    fn a_start_request_is_a_version_5_hello_with_start() {
        let hello = |version, start: Option<AttachStart>| AttachHello {
            version,
            job_id: String::new(),
            cols: 0,
            rows: 0,
            restart: None,
            start: start.map(Box::new),
            control: None,
            keep_open: false,
        };
        assert!(checked(hello(ATTACH_START_VERSION, Some(AttachStart::default()))).is_ok());
        assert!(checked(hello(ATTACH_START_VERSION, None)).is_err());
        assert!(checked(hello(2, Some(AttachStart::default()))).is_err());
    }
}
