//! Unix: a PTY pair from `posix_openpt`, the shell started with `posix_spawn` as a new
//! session leader whose controlling terminal is the PTY.

pub(crate) mod fs;
pub(crate) mod limits;
pub(crate) mod pty;
mod reactor;
pub(crate) mod sched;
pub(crate) mod sig;
pub(crate) mod spawn;
pub(crate) mod tree;
