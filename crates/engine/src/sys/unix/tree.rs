//! A job's process tree on Unix: the process group (= session) its shell leads. Signals go to
//! the group; the kill path ([`crate::kill`]) adds the session's other members from `/proc`.

/// The process group of a job's shell, which is the job's tree.
#[derive(Debug)]
pub(crate) struct Tree {
    pgid: u32,
}

impl Tree {
    /// The group led by the just-spawned `pid` (its pid is its group and session id).
    pub(crate) fn new(pid: u32) -> Self {
        Self { pgid: pid }
    }

    /// The pids of the tree that the platform lists without a process scan: none on Unix
    /// (a scan of the session finds them).
    pub(crate) fn pids(&self) -> Vec<u32> {
        Vec::new()
    }

    /// Whether the group has a member. A zombie leader alone counts too: on Linux, ask the
    /// process table for live members instead.
    pub(crate) fn alive(&self) -> bool {
        // SAFETY: signal 0 only checks for existence; no memory is involved.
        self.pgid > 1 && unsafe { libc::kill(-pid_t(self.pgid), 0) } == 0
    }

    /// Sends `sig` to the whole group.
    pub(crate) fn signal(&self, sig: i32) {
        send(-pid_t(self.pgid), sig);
    }
}

fn pid_t(pid: u32) -> libc::pid_t {
    libc::pid_t::try_from(pid).unwrap_or(0)
}

/// Sends `sig` to the single process `pid` (a member proven by the caller).
pub(crate) fn signal_process(pid: u32, sig: i32) {
    send(pid_t(pid), sig);
}

/// The only `kill(2)` of the kill path. Refuses pid 0, 1 and -1, this process, and a negative
/// pid naming this process's group, whatever the caller computed.
fn send(pid: libc::pid_t, sig: i32) {
    let me = pid_t(std::process::id());
    // SAFETY: getpgrp takes no arguments and cannot fail.
    let my_group = unsafe { libc::getpgrp() };
    if matches!(pid, -1..=1) || pid == me || pid == -me || pid == -my_group {
        return;
    }
    // SAFETY: kill signals a process or group by number; no memory is involved.
    unsafe { libc::kill(pid, sig) };
}

/// Whether a process `pid` exists (a zombie included).
pub(crate) fn process_exists(pid: u32) -> bool {
    let Ok(pid) = i32::try_from(pid) else {
        return false;
    };
    if pid <= 0 {
        return false;
    }
    // SAFETY: kill with signal 0 only checks that the process exists and may be signalled.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}
