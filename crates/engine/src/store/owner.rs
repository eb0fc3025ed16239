//! Process identity: a pid plus the process's start time, so that a pid the kernel has since
//! given to another process is never taken for the one we recorded.

use serde::{Deserialize, Serialize};

/// A process as recorded on disk: its pid and its start time in clock ticks since boot
/// (`/proc/<pid>/stat` field 22). Two processes never share both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ProcessRef {
    /// The process id.
    pub pid: u32,
    /// Start time in clock ticks since boot; `None` where the platform does not tell.
    pub start_ticks: Option<u64>,
}

impl ProcessRef {
    /// The reference of the running process `pid`, if it exists now.
    pub fn of(pid: u32) -> Option<Self> {
        process_exists(pid).then(|| Self {
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
        if !process_exists(self.pid) {
            return false;
        }
        match (self.start_ticks, start_ticks(self.pid)) {
            (Some(recorded), Some(now)) => recorded == now && !is_zombie(self.pid),
            // Without start times (not Linux) the pid alone has to do.
            (None, _) => true,
            // It died between the two looks, or its /proc entry is unreadable.
            (Some(_), None) => false,
        }
    }
}

pub(crate) use crate::sys::tree::start_time as start_ticks;
use crate::sys::tree::{is_zombie, process_exists};

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
