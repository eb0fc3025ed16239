//! A job's sandbox made ready in the server, for a spawn that applies it without running any
//! code of ours after its own `clone` (see `sys/unix/spawn_sandboxed.rs`): the Landlock ruleset
//! as an fd, the seccomp filter compiled, and the job's environment edits. Applying it is then
//! three system calls (no_new_privs, `landlock_restrict_self`, `seccomp`) in the child before
//! it execs the shell: no second exec of the server's binary, no JSON, no opening of roots in
//! the child.

use std::ffi::OsString;
use std::os::fd::OwnedFd;

use super::super::SandboxSpec;

/// What a sandboxed spawn applies, made from a [`SandboxSpec`] by [`prepare`].
#[derive(Debug)]
pub(crate) struct Prepared {
    /// The Landlock ruleset (close-on-exec; the job never holds it). `None` only best-effort
    /// on a kernel without Landlock.
    pub ruleset: Option<OwnedFd>,
    /// The seccomp filter, as `seccomp(SECCOMP_SET_MODE_FILTER)` takes it, its refusals
    /// notified (installed with a listener for the server's supervisor). `None` only
    /// best-effort on a kernel without seccomp filters.
    pub filter: Option<Vec<libc::sock_filter>>,
    /// Variables removed from the job's environment.
    pub env_remove: &'static [&'static str],
    /// Variables the job sees set (after the removals, replacing any of the same name).
    pub env_set: Vec<(&'static str, OsString)>,
}

/// Makes `spec` ready to apply: `Err` (saying what) when the kernel cannot enforce something
/// and `spec` is not best-effort — the job must then not run.
pub(crate) fn prepare(spec: &SandboxSpec) -> Result<Prepared, String> {
    let ruleset = super::landlock::prepare(spec)?;
    // The notifying filter (`notify.rs`): the child installs it with a listener and hands
    // that to the server's supervisor.
    let program = if super::filter::available() {
        Some(super::notify::program(spec)?)
    } else if spec.best_effort {
        None
    } else {
        return Err("this kernel has no seccomp filters".into());
    };
    let filter = program.map(|p| {
        p.iter()
            .map(|i| libc::sock_filter {
                code: i.code,
                jt: i.jt,
                jf: i.jf,
                k: i.k,
            })
            .collect()
    });
    Ok(Prepared {
        ruleset,
        filter,
        env_remove: &super::SOCKET_VARS,
        env_set: job_env(spec),
    })
}

/// The variables a sandboxed job sees set: its profile, its network, its own TMPDIR.
pub(super) fn job_env(spec: &SandboxSpec) -> Vec<(&'static str, OsString)> {
    let mut set = vec![
        ("PTYJOBS_PROFILE", OsString::from(&spec.profile)),
        ("PTYJOBS_NET", OsString::from(spec.net_env())),
    ];
    if let Some(tmp) = &spec.tmpdir {
        set.push(("TMPDIR", tmp.clone().into_os_string()));
    }
    set
}
