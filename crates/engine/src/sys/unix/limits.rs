//! Process-wide limits a face raises when it starts.

use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};

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
        Ok(()) => target,
        Err(e) => {
            tracing::debug!("cannot raise the open-files limit from {soft} to {target}: {e}");
            soft
        }
    }
}
