//! Process identity and the process table as the kill path sees it: every live process with
//! the facts that prove (or disprove) that it belongs to a job — its session, its start time,
//! and the job id it carries in its environment (`PTYJOBS_JOB_ID`, set on every job's shell
//! and inherited by everything it starts, even processes that left the session with `setsid`).
//!
//! The one place that asks the platform's process table (`sys::procs`): Linux reads `/proc`;
//! macOS asks libproc (pids, sessions and start times, but no job markers); Windows tells a
//! process's identity but is never scanned. Where the scan is empty, the kill path signals
//! nothing but its own not-yet-reaped children (see [`crate::kill`]).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use crate::job::JobId;
use crate::jobenv::JOB_ID_ENV;
use crate::sys::procs as table;

/// One live (non-zombie) process that ptyjobs may ever consider signalling. Processes that are
/// never candidates are not in the table at all: pid 0 and 1, this process, and every process
/// of this process's own session or process group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Proc {
    /// Process id.
    pub pid: u32,
    /// Session id.
    pub sid: u32,
    /// Process group id.
    pub pgrp: u32,
    /// Start time: clock ticks since boot on Linux, microseconds since the epoch on macOS.
    pub start: u64,
    /// The job id of its `PTYJOBS_JOB_ID`, when its environment is readable and has one.
    pub marker: Option<JobId>,
}

/// Scans of the process table made so far (see [`process_scans`]).
static SCANS: AtomicU64 = AtomicU64::new(0);

/// How many times this process has looked at the whole process table (on Linux, a walk of
/// `/proc` reading every process's `stat`) to prove or find a job's processes. A gauge of the
/// kill path's cost, for tests and benchmarks: ending any number of jobs together costs a few
/// looks per round of the kill sequence, not a few per job.
pub fn process_scans() -> u64 {
    SCANS.load(Ordering::Relaxed)
}

/// The start time of `pid` (in [`Proc::start`]'s unit, or the platform's: see
/// `sys::proc_info::ProcInfo::start`), and whether it has exited (a zombie).
pub(crate) fn start_of(pid: u32) -> Option<(u64, bool)> {
    table::info(pid).map(|p| (p.start, p.zombie))
}

/// Whether a scan ([`since`]) shows a job's live leader among its members, so that the kill
/// path needs no other sign of it. Where it does not (off Linux), a live process tree stands
/// for its leader.
pub(crate) const SCAN_SHOWS_LEADERS: bool = table::SCAN_SHOWS_LEADERS;

/// Whether a process `pid` exists (on Unix a zombie included).
pub(crate) fn exists(pid: u32) -> bool {
    table::exists(pid)
}

/// The last scan and when it began.
type Last = (Instant, Arc<Vec<Proc>>);

static LAST: Mutex<Option<Last>> = Mutex::new(None);
/// Job markers already read, by (pid, start time): an environment is read once per process.
static MARKERS: Mutex<Option<Markers>> = Mutex::new(None);

/// Job markers by (pid, start time).
type Markers = HashMap<(u32, u64), Option<JobId>>;

/// The live processes as seen by a scan that began at `since` or later. Callers that ask at
/// the same time share one scan, so a thousand concurrent kills cost a few scans, not a
/// thousand. Blocking (reads the process table): call it off the async runtime.
pub(crate) fn since(since: Instant) -> Arc<Vec<Proc>> {
    // Held during a scan: whoever waits for it reuses its result if it is recent enough.
    let mut last = LAST.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((began, procs)) = last.as_ref()
        && *began >= since
    {
        return procs.clone();
    }
    let began = Instant::now();
    SCANS.fetch_add(1, Ordering::Relaxed);
    let procs = Arc::new(scan());
    *last = Some((began, procs.clone()));
    procs
}

fn scan() -> Vec<Proc> {
    let me = std::process::id();
    let (my_sid, my_pgrp) = table::info(me).map_or((0, 0), |p| (p.sid, p.pgrp));
    let mut markers = MARKERS.lock().unwrap_or_else(PoisonError::into_inner);
    let old = markers.take().unwrap_or_default();
    let mut seen = HashMap::with_capacity(old.len());
    let mut procs = Vec::new();
    table::each(|pid, p| {
        if pid <= 1 || pid == me || p.zombie || p.sid == my_sid || p.pgrp == my_pgrp || p.sid == 0 {
            return;
        }
        let key = (pid, p.start);
        let marker = match old.get(&key) {
            Some(m) => *m,
            None => table::environ(pid).and_then(|e| marker_in(&e)),
        };
        seen.insert(key, marker);
        procs.push(Proc {
            pid,
            sid: p.sid,
            pgrp: p.pgrp,
            start: p.start,
            marker,
        });
    });
    *markers = Some(seen);
    procs
}

/// The job id `pid` carries in its environment (`PTYJOBS_JOB_ID`), when it can be read.
pub(crate) fn marker_of(pid: u32) -> Option<JobId> {
    table::environ(pid).and_then(|e| marker_in(&e))
}

/// The job id in a NUL-separated environment block, if it has `PTYJOBS_JOB_ID=<uuid>`.
fn marker_in(environ: &[u8]) -> Option<JobId> {
    let key = JOB_ID_ENV.as_bytes();
    environ
        .split(|&b| b == 0)
        .filter_map(|entry| entry.strip_prefix(key)?.strip_prefix(b"="))
        .next_back()
        .and_then(|v| std::str::from_utf8(v).ok()?.parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_marker_is_found_only_as_a_whole_variable() {
        let id = JobId::new();
        let env = format!("A=1\0{JOB_ID_ENV}={id}\0B=2\0");
        assert_eq!(marker_in(env.as_bytes()), Some(id));
        let fake = format!("X{JOB_ID_ENV}={id}\0{JOB_ID_ENV}X={id}\0");
        assert_eq!(marker_in(fake.as_bytes()), None);
        assert_eq!(marker_in(format!("{JOB_ID_ENV}=nope").as_bytes()), None);
    }

    /// This process is never a candidate, but it has an identity.
    #[test]
    fn this_process_exists_and_is_no_candidate() {
        let me = std::process::id();
        assert!(exists(me));
        assert!(start_of(me).is_none_or(|(_, zombie)| !zombie));
        assert!(since(Instant::now()).iter().all(|p| p.pid != me));
    }
}
