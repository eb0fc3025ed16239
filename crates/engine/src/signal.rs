//! Signal names ↔ numbers, and what a kill ended in.

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

use crate::error::Error;
use crate::sys::sig;

/// The signals a caller may send to a job, by name.
const NAMES: &[(&str, i32)] = &[
    ("HUP", sig::SIGHUP),
    ("INT", sig::SIGINT),
    ("QUIT", sig::SIGQUIT),
    ("KILL", sig::SIGKILL),
    ("USR1", sig::SIGUSR1),
    ("USR2", sig::SIGUSR2),
    ("TERM", sig::SIGTERM),
    ("CONT", sig::SIGCONT),
    ("STOP", sig::SIGSTOP),
    ("TSTP", sig::SIGTSTP),
    ("WINCH", sig::SIGWINCH),
    ("ALRM", sig::SIGALRM),
    ("PIPE", sig::SIGPIPE),
    ("ABRT", sig::SIGABRT),
    ("SEGV", sig::SIGSEGV),
    ("BUS", sig::SIGBUS),
    ("FPE", sig::SIGFPE),
    ("ILL", sig::SIGILL),
    ("TRAP", sig::SIGTRAP),
];

/// A POSIX signal, parsed from `TERM`, `SIGTERM`, `sigterm` or `15`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Signal(i32);

impl Signal {
    /// SIGTERM, the default for kills.
    pub const TERM: Self = Self(sig::SIGTERM);
    /// SIGKILL.
    pub const KILL: Self = Self(sig::SIGKILL);
    /// SIGINT.
    pub const INT: Self = Self(sig::SIGINT);
    /// SIGHUP.
    pub const HUP: Self = Self(sig::SIGHUP);

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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KillOutcome {
    /// The job was running and was signalled, then checked: see [`KillReport::survivors`] for
    /// any of its processes that were still alive when the kill gave up waiting.
    Killed,
    /// The job had already ended.
    AlreadyTerminated,
    /// No such job.
    NotFound,
}

/// A kill's answer, decided after it verified what is left: the outcome and the job's
/// processes (pids) still alive after SIGKILL and a bounded wait, if any. An empty
/// `survivors` with [`KillOutcome::Killed`] means no process proven to be the job's remains.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct KillReport {
    /// What the kill ended in.
    pub outcome: KillOutcome,
    /// Processes of the job still alive when the kill stopped waiting (normally none).
    pub survivors: Vec<u32>,
}

impl KillReport {
    /// A report without survivors.
    pub fn of(outcome: KillOutcome) -> Self {
        Self {
            outcome,
            survivors: Vec::new(),
        }
    }
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
