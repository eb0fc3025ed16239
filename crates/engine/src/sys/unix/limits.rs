//! Process-wide limits a face raises when it starts.

use std::sync::OnceLock;

use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};

/// The limit on open files this process started with (soft, hard; `None`: unlimited), when
/// [`raise_fd_limit`] raised its soft limit: what jobs get back ([`restore_for_child`]).
static STARTED_WITH: OnceLock<(u64, Option<u64>)> = OnceLock::new();

/// Raises the soft limit on open files to the hard limit; returns the soft limit in force
/// afterwards (`u64::MAX`: unlimited).
///
/// Linux starts processes with a soft limit of 1024 (macOS 256) and a much higher hard limit,
/// which a process may raise its soft limit to without privileges, as servers commonly do.
/// Each job holds a few descriptors (its terminal, its process handle, its log), so the soft
/// default would end a server at a few hundred jobs. macOS refuses a soft limit above
/// `OPEN_MAX` (10240) even when the hard limit is "unlimited": the raise is capped there.
pub(crate) fn raise_fd_limit() -> u64 {
    let current = getrlimit(Resource::Nofile);
    // `None` is "unlimited".
    let soft = current.current.unwrap_or(u64::MAX);
    let hard = current.maximum.unwrap_or(u64::MAX);
    let target = if cfg!(target_os = "macos") {
        hard.min(10_240)
    } else {
        hard
    };
    if target <= soft {
        return soft;
    }
    let raised = Rlimit {
        current: (target != u64::MAX).then_some(target),
        maximum: current.maximum,
    };
    match setrlimit(Resource::Nofile, raised) {
        Ok(()) => {
            let _ = STARTED_WITH.set((soft, current.maximum));
            target
        }
        Err(e) => {
            tracing::debug!("cannot raise the open-files limit from {soft} to {target}: {e}");
            soft
        }
    }
}

/// Gives a child just spawned the soft limit on open files this process started with, when
/// [`raise_fd_limit`] raised it: a job sees the limit its user's shell has, as Go's runtime does
/// for the children of a program whose limit it raised (`ulimit -n` says 1024, not the hard
/// limit; programs that close every descriptor up to the limit, or use `select`, behave as they
/// do in a terminal). The hard limit is unchanged, so a job may raise its own as any program may.
///
/// Linux sets it with `prlimit` on the child right after `posix_spawn` returns, which is once
/// the shell has exec'd: a process the shell starts before that call (in the microseconds
/// between its exec and this call) keeps the raised limit — `posix_spawn` has no attribute
/// for limits. Elsewhere nothing is changed (no `prlimit`): jobs keep the raised limit.
pub(crate) fn restore_for_child(pid: u32) {
    #[cfg(target_os = "linux")]
    if let Some(&(soft, hard)) = STARTED_WITH.get() {
        let Some(pid) = i32::try_from(pid)
            .ok()
            .and_then(rustix::process::Pid::from_raw)
        else {
            return;
        };
        let limit = Rlimit {
            current: Some(soft),
            maximum: hard,
        };
        if let Err(e) = rustix::process::prlimit(Some(pid), Resource::Nofile, limit) {
            tracing::debug!("job {pid:?} keeps the raised open-files limit: {e}");
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = pid;
}
