//! The binding's side of a policy (docs/POLICY.md): the `policy` option read and checked at
//! construction, with the sandbox trampoline found beside the addon, and each job's policy as
//! its info carries it.

use std::path::PathBuf;
use std::sync::Arc;

use napi_derive::napi;
use ptyjobs_engine as engine;

use crate::error::{Code, Result, err};

/// Reads `file`; the trampoline is `program`, or the `ptyjobs` executable beside this addon.
pub(crate) fn load(file: &str, program: Option<&str>) -> Result<(Arc<engine::Policy>, PathBuf)> {
    let program = match program {
        Some(p) => PathBuf::from(p),
        None => engine::beside_this_library("ptyjobs").ok_or_else(|| {
            err(
                Code::InvalidArgument,
                "policy: cannot find the ptyjobs executable beside this addon; give \
                 sandboxProgram",
            )
        })?,
    };
    let policy = engine::Policy::load(std::path::Path::new(file), &program)
        .map_err(|e| err(Code::InvalidArgument, e))?;
    Ok((Arc::new(policy), program))
}

/// A job's policy: its profile, what the kernel enforces, what is only a guardrail, what is
/// not enforced, and (once it ended) the watched files it changed.
#[napi(object)]
pub struct JobPolicy {
    /// The profile it runs under.
    pub profile: String,
    /// What the kernel enforces for it, in words.
    pub enforced: Vec<String>,
    /// What is only a guardrail (the exec allowlist).
    pub guardrail: Vec<String>,
    /// What its profile asks that is not enforced (only with `enforce = "best-effort"`).
    pub not_enforced: Vec<String>,
    /// Watched files that changed while it ran (known once it ended).
    pub changed: Vec<String>,
    /// Calls the sandbox refused, per call and command.
    pub refused: Vec<RefusedCall>,
    /// One line per kind of refusal: what was refused, and the key that would allow it.
    pub hints: Vec<String>,
}

/// Calls of one kind the sandbox refused to one command of a job.
#[napi(object)]
pub struct RefusedCall {
    /// The call with its distinguishing argument: `socket(AF_INET, SOCK_DGRAM)`.
    pub syscall: String,
    /// The command of the process that made it.
    pub command: String,
    /// How many times it was refused.
    pub count: u32,
}

impl From<engine::JobPolicy> for JobPolicy {
    fn from(p: engine::JobPolicy) -> Self {
        Self {
            profile: p.profile,
            enforced: p.enforced,
            guardrail: p.guardrail,
            not_enforced: p.not_enforced,
            changed: p.changed,
            refused: p
                .refused
                .into_iter()
                .map(|r| RefusedCall {
                    syscall: r.syscall,
                    command: r.command,
                    count: u32::try_from(r.count).unwrap_or(u32::MAX),
                })
                .collect(),
            hints: p.hints,
        }
    }
}
