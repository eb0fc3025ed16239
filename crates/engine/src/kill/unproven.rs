//! Why a kill of a job known from its record (another server's, a dead one's: `ptyjobs kill`)
//! signalled nothing, when the reason is that nothing *could* be proven on this platform rather
//! than that the job's processes are gone. The answer then says so, instead of "not running".

use super::Target;
use crate::procs::Proc;

/// What this platform's process table can prove (see [`crate::procs`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Proofs {
    /// The process table can be read: pids, sessions and start times (Linux `/proc`, macOS
    /// libproc).
    pub(crate) table: bool,
    /// Job markers (`PTYJOBS_JOB_ID` in a process's environment) can be read: a process that
    /// left the job's session is still recognised (Linux only).
    pub(crate) markers: bool,
}

impl Proofs {
    /// What the platform this is built for can prove.
    pub(crate) const HOST: Self = Self {
        table: crate::sys::PROCESS_TABLE,
        markers: crate::sys::JOB_MARKERS,
    };
}

/// Why nothing of the recorded job `target` could be proven in `procs` (the process table as
/// read after the kill found nothing), or `None` when the table says its processes are gone:
/// - no process table here: nothing can be proven at all;
/// - no markers here, and the record has no start time for its shell: its pid proves nothing;
/// - no markers here, and the recorded shell is gone (or its pid is another program's now):
///   processes the job left behind outside its session cannot be recognised.
///
/// Where markers are read, a job whose shell is gone is still found by them, so finding nothing
/// means nothing of it is left.
pub(crate) fn why_unproven(target: &Target, procs: &[Proc], proofs: Proofs) -> Option<String> {
    let pid = target.pid;
    if !proofs.table {
        return Some(
            "ptyjobs cannot read the process table on this platform, so no process can be proven \
             to be the job's; end it from the program that started it"
                .to_owned(),
        );
    }
    if proofs.markers {
        return None;
    }
    if target.start.is_none() {
        return Some(format!(
            "its record has no start time for pid {pid}, so that pid proves nothing (it may be \
             another program's now)"
        ));
    }
    if !target.leader_alive(procs) {
        return Some(format!(
            "its shell (pid {pid}) is gone or that pid is another program's now, and on this \
             platform processes it left behind outside its session cannot be recognised (no job \
             marker is read here); end them by hand if any are left"
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::JobId;

    const LINUX: Proofs = Proofs {
        table: true,
        markers: true,
    };
    const MACOS: Proofs = Proofs {
        table: true,
        markers: false,
    };
    const NONE: Proofs = Proofs {
        table: false,
        markers: false,
    };

    fn target(pid: u32, start: Option<u64>) -> Target {
        Target::recorded(JobId::new(), pid, start)
    }

    fn shell(pid: u32, start: u64) -> Proc {
        Proc {
            pid,
            sid: pid,
            pgrp: pid,
            start,
            marker: None,
        }
    }

    #[test]
    fn without_a_process_table_nothing_is_proven_and_the_answer_says_so() {
        let why = why_unproven(&target(100, Some(50)), &[shell(100, 50)], NONE);
        assert!(why.is_some_and(|w| w.contains("cannot read the process table")));
    }

    #[test]
    fn without_markers_a_gone_shell_or_a_missing_start_time_is_named() {
        let gone = why_unproven(&target(100, Some(50)), &[], MACOS).expect("a reason");
        assert!(
            gone.contains("pid 100") && gone.contains("no job marker"),
            "{gone}"
        );
        let reused = why_unproven(&target(100, Some(50)), &[shell(100, 70)], MACOS);
        assert!(reused.is_some(), "a reused pid proves nothing");
        let no_start = why_unproven(&target(100, None), &[shell(100, 50)], MACOS);
        assert!(no_start.is_some_and(|w| w.contains("no start time")));
        // A live shell with its start time was proven (and signalled): not a reason.
        assert_eq!(
            why_unproven(&target(100, Some(50)), &[shell(100, 50)], MACOS),
            None
        );
    }

    #[test]
    fn with_markers_finding_nothing_means_the_job_is_gone() {
        assert_eq!(why_unproven(&target(100, Some(50)), &[], LINUX), None);
        assert_eq!(why_unproven(&target(100, None), &[], LINUX), None);
    }

    #[test]
    fn the_host_proofs_are_what_the_process_table_reads() {
        assert_eq!(
            Proofs::HOST.table,
            cfg!(any(target_os = "linux", target_os = "macos"))
        );
        assert_eq!(Proofs::HOST.markers, cfg!(target_os = "linux"));
    }
}
