//! Signal names ↔ numbers, and what a kill ended in.

use std::fmt;
use std::str::FromStr;

use std::time::Instant;

use serde::Serialize;

use crate::error::Error;

/// The signals a caller may send to a job, by name.
const NAMES: &[(&str, i32)] = &[
    ("HUP", libc::SIGHUP),
    ("INT", libc::SIGINT),
    ("QUIT", libc::SIGQUIT),
    ("KILL", libc::SIGKILL),
    ("USR1", libc::SIGUSR1),
    ("USR2", libc::SIGUSR2),
    ("TERM", libc::SIGTERM),
    ("CONT", libc::SIGCONT),
    ("STOP", libc::SIGSTOP),
    ("TSTP", libc::SIGTSTP),
    ("WINCH", libc::SIGWINCH),
    ("ALRM", libc::SIGALRM),
    ("PIPE", libc::SIGPIPE),
    ("ABRT", libc::SIGABRT),
    ("SEGV", libc::SIGSEGV),
    ("BUS", libc::SIGBUS),
    ("FPE", libc::SIGFPE),
    ("ILL", libc::SIGILL),
    ("TRAP", libc::SIGTRAP),
];

/// A POSIX signal, parsed from `TERM`, `SIGTERM`, `sigterm` or `15`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Signal(i32);

impl Signal {
    /// SIGTERM, the default for kills.
    pub const TERM: Self = Self(libc::SIGTERM);
    /// SIGKILL.
    pub const KILL: Self = Self(libc::SIGKILL);
    /// SIGINT.
    pub const INT: Self = Self(libc::SIGINT);
    /// SIGHUP.
    pub const HUP: Self = Self(libc::SIGHUP);

    /// The signal with this number, if it is one we know by name.
    pub fn from_number(n: i32) -> Option<Self> {
        NAMES.iter().any(|&(_, v)| v == n).then_some(Self(n))
    }

    /// The signal's number.
    pub fn number(self) -> i32 {
        self.0
    }

    /// `SIGTERM`-style name; `SIG<n>` for a number without a name.
    pub fn name(self) -> String {
        signal_name(self.0)
    }
}

/// `SIGTERM`-style name of any signal number.
pub fn signal_name(n: i32) -> String {
    NAMES
        .iter()
        .find(|&&(_, v)| v == n)
        .map_or_else(|| format!("SIG{n}"), |(name, _)| format!("SIG{name}"))
}

impl fmt::Display for Signal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

impl FromStr for Signal {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        let t = s.trim();
        let bad = || {
            Error::InvalidArgument(format!(
                "unknown signal {s:?}: use a name such as TERM, INT, HUP, KILL or a number"
            ))
        };
        if let Ok(n) = t.parse::<i32>() {
            return Self::from_number(n).ok_or_else(bad);
        }
        let upper = t.to_ascii_uppercase();
        let bare = upper.strip_prefix("SIG").unwrap_or(&upper);
        NAMES
            .iter()
            .find(|&&(name, _)| name == bare)
            .map(|&(_, n)| Self(n))
            .ok_or_else(bad)
    }
}

/// What a kill request ended in. Wire names `killed`, `already_terminated`, `not_found`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum KillOutcome {
    /// The job was running and no process of it remains.
    Killed,
    /// The job had already ended.
    AlreadyTerminated,
    /// No such job.
    NotFound,
}

impl KillOutcome {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Killed => "killed",
            Self::AlreadyTerminated => "already_terminated",
            Self::NotFound => "not_found",
        }
    }
}

/// Sends `sig` to the process groups of the jobs whose shells are `pids` (no scan: cheap).
pub(crate) fn signal_groups(pids: &[u32], sig: i32) {
    for &pid in pids {
        if let Ok(pgid) = libc::pid_t::try_from(pid) {
            // SAFETY: kill with a negative pid signals a process group; no memory is involved.
            unsafe { libc::kill(-pgid, sig) };
        }
    }
}

/// Sends `sig` to single processes.
pub(crate) fn signal_processes(pids: &[u32], sig: i32) {
    for &pid in pids {
        // SAFETY: kill signals one process; no memory is involved.
        unsafe { libc::kill(pid as libc::pid_t, sig) };
    }
}

/// Sends `sig` to the jobs whose shells are `pids`: each one's process group and, on Linux,
/// every other process still in its session (a job that made process groups of its own).
/// Errors are ignored: a process that is already gone is what we want.
pub(crate) fn kill_jobs(pids: &[u32], sig: i32) {
    signal_groups(pids, sig);
    signal_processes(&live_processes(pids, Instant::now()), sig);
}

/// The live (non-zombie) processes of the jobs whose shells are `pids`, as seen by a look at
/// the system that began at `since` or later: on Linux every process in their sessions;
/// elsewhere their process groups' leaders that are alive.
///
/// On Linux a look is a scan of all of `/proc` (about 10 ms with 2,000 processes). Callers
/// that ask at the same time share one scan: a scan that began after `since` answers for
/// everyone, so a thousand concurrent kills cost a few scans, not a thousand.
pub(crate) fn live_processes(pids: &[u32], since: Instant) -> Vec<u32> {
    let mut found = Vec::new();
    #[cfg(target_os = "linux")]
    {
        let sessions = snapshot::since(since);
        for pid in pids {
            if let Some(members) = sessions.get(pid) {
                found.extend_from_slice(members);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = since;
        for &pid in pids {
            // SAFETY: signal 0 only checks for existence.
            if unsafe { libc::kill(-(pid as libc::pid_t), 0) } == 0 {
                found.push(pid);
            }
        }
    }
    found
}

#[cfg(target_os = "linux")]
mod snapshot {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex, PoisonError};
    use std::time::Instant;

    /// Session id → its live processes, and when the scan that found them began.
    type Sessions = (Instant, Arc<HashMap<u32, Vec<u32>>>);

    static LAST: Mutex<Option<Sessions>> = Mutex::new(None);

    /// The sessions as seen by a scan that began at `since` or later.
    pub(super) fn since(since: Instant) -> Arc<HashMap<u32, Vec<u32>>> {
        // Held during a scan: whoever waits for it reuses its result if it is recent enough.
        let mut last = LAST.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((began, sessions)) = last.as_ref()
            && *began >= since
        {
            return sessions.clone();
        }
        let began = Instant::now();
        let sessions = Arc::new(scan());
        *last = Some((began, sessions.clone()));
        sessions
    }

    fn scan() -> HashMap<u32, Vec<u32>> {
        let mut sessions: HashMap<u32, Vec<u32>> = HashMap::new();
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return sessions;
        };
        for entry in dir.flatten() {
            let name = entry.file_name();
            let Some(pid) = name.to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                continue;
            };
            if let Some((state, session)) = super::parse_stat(&stat)
                && state != 'Z'
                && state != 'X'
            {
                sessions.entry(session).or_default().push(pid);
            }
        }
        sessions
    }
}

/// State and session id from a `/proc/<pid>/stat` line. The command name (field 2) may contain
/// spaces and parentheses, so fields are counted after its last `)`.
#[cfg(target_os = "linux")]
fn parse_stat(stat: &str) -> Option<(char, u32)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_ascii_whitespace();
    let state = fields.next()?.chars().next()?;
    let _ppid = fields.next()?;
    let _pgrp = fields.next()?;
    let session = fields.next()?.parse().ok()?;
    Some((state, session))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_names_prefixes_case_and_numbers() {
        for s in ["TERM", "SIGTERM", "sigterm", "term", "15", " TERM "] {
            assert_eq!(s.parse::<Signal>().unwrap(), Signal::TERM, "{s}");
        }
        assert_eq!("KILL".parse::<Signal>().unwrap().number(), 9);
        assert_eq!(Signal::INT.name(), "SIGINT");
        assert_eq!(signal_name(64), "SIG64");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn stat_lines_with_odd_command_names_parse() {
        let line = "42 (a) b (c)) S 1 42 42 0 -1 4194560 0 0";
        assert_eq!(parse_stat(line), Some(('S', 42)));
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn rejects_unknown_signals() {
        for s in ["", "FOO", "SIG", "999", "-1"] {
            assert!(
                matches!(s.parse::<Signal>(), Err(Error::InvalidArgument(_))),
                "{s}"
            );
        }
    }
}
