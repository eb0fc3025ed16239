//! Process identity: a pid plus the process's start time, so that a pid the kernel has since
//! given to another process is never taken for the one we recorded.

use serde::{Deserialize, Serialize};

use crate::procs;

/// A process as recorded on disk: its pid and its start time. Two processes never share both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ProcessRef {
    /// The process id.
    pub pid: u32,
    /// Start time in the platform's unit: clock ticks since boot on Linux (`/proc/<pid>/stat`
    /// field 22), microseconds since the epoch on macOS, 100 ns since 1601 on Windows; `None`
    /// where the platform does not tell. Compared only with start times read on the same
    /// machine.
    pub start_ticks: Option<u64>,
}

impl ProcessRef {
    /// The reference of the running process `pid`, if it exists now.
    pub fn of(pid: u32) -> Option<Self> {
        procs::exists(pid).then(|| Self {
            pid,
            start_ticks: start_ticks(pid),
        })
    }

    /// This process.
    pub fn current() -> Self {
        let pid = std::process::id();
        Self {
            pid,
            start_ticks: start_ticks(pid),
        }
    }

    /// Whether the very process recorded is still alive (not merely some process with its pid).
    /// Zombies count as gone.
    pub fn is_alive(&self) -> bool {
        if !procs::exists(self.pid) {
            return false;
        }
        match (self.start_ticks, procs::start_of(self.pid)) {
            (Some(recorded), Some((now, zombie))) => recorded == now && !zombie,
            // Without start times (a platform that does not tell) the pid alone has to do.
            (None, _) => true,
            // It died between the two looks, or its entry is unreadable.
            (Some(_), None) => false,
        }
    }
}

/// The start time of `pid`, in the platform's unit (see [`ProcessRef::start_ticks`]).
pub(crate) fn start_ticks(pid: u32) -> Option<u64> {
    procs::start_of(pid).map(|(start, _)| start)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_current_process_is_alive_and_a_changed_start_time_is_not() {
        let me = ProcessRef::current();
        assert!(me.is_alive());
        if let Some(t) = me.start_ticks {
            let other = ProcessRef {
                start_ticks: Some(t + 1),
                ..me
            };
            assert!(!other.is_alive(), "a reused pid must not look alive");
        }
        let gone = ProcessRef {
            pid: u32::MAX - 1,
            start_ticks: None,
        };
        assert!(!gone.is_alive());
    }
}
