//! The process table as the kill path sees it: every live process with the facts that prove
//! (or disprove) that it belongs to a job — its session, its start time, and the job id it
//! carries in its environment (`PTYJOBS_JOB_ID`, set on every job's shell and inherited by
//! everything it starts, even processes that left the session with `setsid`).
//!
//! Linux reads `/proc`; macOS asks libproc (pids, sessions and start times, but no job markers:
//! see `procs/macos.rs`). Elsewhere the scan is empty, and the kill path signals nothing but its
//! own not-yet-reaped children (see [`crate::kill`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use crate::job::JobId;
use crate::jobenv::JOB_ID_ENV;

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

/// The live processes as seen by a scan that began at `since` or later. Callers that ask at
/// the same time share one scan, so a thousand concurrent kills cost a few scans, not a
/// thousand. Blocking (reads `/proc`): call it off the async runtime.
pub(crate) fn since(since: Instant) -> Arc<Vec<Proc>> {
    #[cfg(target_os = "linux")]
    {
        linux::since(since)
    }
    #[cfg(target_os = "macos")]
    {
        let _ = since;
        SCANS.fetch_add(1, Ordering::Relaxed);
        Arc::new(macos::scan())
    }
    #[cfg(not(any(target_os = "linux", target_os = "macos")))]
    {
        let _ = since;
        Arc::new(Vec::new())
    }
}

/// The start time of `pid` (in [`Proc::start`]'s unit), and whether it is a zombie.
pub(crate) fn start_of(pid: u32) -> Option<(u64, bool)> {
    #[cfg(target_os = "linux")]
    {
        let stat = std::fs::read(format!("/proc/{pid}/stat")).ok()?;
        let s = parse_stat(stat)?;
        Some((s.start, s.state == 'Z' || s.state == 'X'))
    }
    #[cfg(target_os = "macos")]
    {
        macos::start_of(pid)
    }
    #[cfg(not(any(target_os = "linux", target_os = "macos")))]
    {
        let _ = pid;
        None
    }
}

/// The fields of a `/proc/<pid>/stat` line the kill path needs.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Stat {
    pub state: char,
    pub pgrp: u32,
    pub sid: u32,
    pub start: u64,
}

/// Parses a `/proc/<pid>/stat` line. The command name (field 2) may contain spaces,
/// parentheses and bytes that are not UTF-8, so fields are counted after its last `)`.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub(crate) fn parse_stat(stat: impl AsRef<[u8]>) -> Option<Stat> {
    let stat = stat.as_ref();
    let close = stat.iter().rposition(|&b| b == b')')?;
    let rest = std::str::from_utf8(&stat[close + 1..]).ok()?;
    let fields: Vec<&str> = rest.split_ascii_whitespace().collect();
    // Fields after the name start at field 3 (state); starttime is field 22.
    Some(Stat {
        state: fields.first()?.chars().next()?,
        pgrp: fields.get(2)?.parse().ok()?,
        sid: fields.get(3)?.parse().ok()?,
        start: fields.get(19)?.parse().ok()?,
    })
}

/// The job id in a NUL-separated environment block, if it has `PTYJOBS_JOB_ID=<uuid>`.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub(crate) fn marker_in(environ: &[u8]) -> Option<JobId> {
    let key = JOB_ID_ENV.as_bytes();
    environ
        .split(|&b| b == 0)
        .filter_map(|entry| entry.strip_prefix(key)?.strip_prefix(b"="))
        .next_back()
        .and_then(|v| std::str::from_utf8(v).ok()?.parse().ok())
}

#[cfg(target_os = "macos")]
mod macos;

#[cfg(target_os = "linux")]
mod linux {
    use std::collections::HashMap;
    use std::fmt::Write as _;
    use std::os::fd::OwnedFd;
    use std::sync::{Arc, Mutex, PoisonError};
    use std::time::Instant;

    use rustix::fs::{CWD, Mode, OFlags, openat};

    use super::{Proc, marker_in, parse_stat};
    use crate::job::JobId;

    /// The last scan and when it began.
    type Last = (Instant, Arc<Vec<Proc>>);

    static LAST: Mutex<Option<Last>> = Mutex::new(None);
    /// Job markers already read, by (pid, start time): an environment is read once per process.
    static MARKERS: Mutex<Option<Markers>> = Mutex::new(None);

    /// Job markers by (pid, start time).
    type Markers = HashMap<(u32, u64), Option<JobId>>;

    pub(super) fn since(since: Instant) -> Arc<Vec<Proc>> {
        // Held during a scan: whoever waits for it reuses its result if it is recent enough.
        let mut last = LAST.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((began, procs)) = last.as_ref()
            && *began >= since
        {
            return procs.clone();
        }
        let began = Instant::now();
        super::SCANS.fetch_add(1, super::Ordering::Relaxed);
        let procs = Arc::new(scan());
        *last = Some((began, procs.clone()));
        procs
    }

    /// A `stat` line is a few hundred bytes (the command name is at most 64); one read of
    /// this size takes it whole.
    const STAT_MAX: usize = 4096;

    /// Reads `<pid>/<file>` under the open `/proc` into `buf` with one `read`: no path lookup
    /// of `/proc` itself, no size query, no second read for the end of the file (a scan reads
    /// thousands of these, and their syscalls are its whole cost). `None` if the process is
    /// gone or the file did not fit.
    fn read_small<'b>(
        proc_dir: &OwnedFd,
        path: &mut String,
        pid: u32,
        file: &str,
        buf: &'b mut [u8],
    ) -> Option<&'b [u8]> {
        path.clear();
        let _ = write!(path, "{pid}/{file}");
        let fd = openat(
            proc_dir,
            path.as_str(),
            OFlags::RDONLY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .ok()?;
        let n = rustix::io::read(&fd, &mut *buf).ok()?;
        (n < buf.len()).then(|| &buf[..n])
    }

    fn scan() -> Vec<Proc> {
        let me = std::process::id();
        let (my_sid, my_pgrp) = std::fs::read(format!("/proc/{me}/stat"))
            .ok()
            .and_then(parse_stat)
            .map_or((0, 0), |s| (s.sid, s.pgrp));
        let mut markers = MARKERS.lock().unwrap_or_else(PoisonError::into_inner);
        let old = markers.take().unwrap_or_default();
        let mut seen = HashMap::with_capacity(old.len());
        let mut procs = Vec::new();
        let Ok(proc_dir) = openat(
            CWD,
            "/proc",
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        ) else {
            return procs;
        };
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return procs;
        };
        let mut path = String::with_capacity(32);
        let mut buf = vec![0u8; STAT_MAX];
        for entry in dir.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|s| s.parse::<u32>().ok())
            else {
                continue;
            };
            if pid <= 1 || pid == me {
                continue;
            }
            let Some(stat) =
                read_small(&proc_dir, &mut path, pid, "stat", &mut buf).and_then(parse_stat)
            else {
                continue;
            };
            if matches!(stat.state, 'Z' | 'X')
                || stat.sid == my_sid
                || stat.pgrp == my_pgrp
                || stat.sid == 0
            {
                continue;
            }
            let key = (pid, stat.start);
            let marker = match old.get(&key) {
                Some(m) => *m,
                None => std::fs::read(format!("/proc/{pid}/environ"))
                    .ok()
                    .and_then(|e| marker_in(&e)),
            };
            seen.insert(key, marker);
            procs.push(Proc {
                pid,
                sid: stat.sid,
                pgrp: stat.pgrp,
                start: stat.start,
                marker,
            });
        }
        *markers = Some(seen);
        procs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_with_odd_command_names_parse() {
        let line = "42 (a) b (c)) S 1 40 41 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 12345 0 0";
        assert_eq!(
            parse_stat(line),
            Some(Stat {
                state: 'S',
                pgrp: 40,
                sid: 41,
                start: 12345
            })
        );
        assert_eq!(parse_stat("garbage"), None);
        // A name that is not UTF-8 still parses: such a process must not hide from the scan.
        let odd = b"42 (\xff\xfe) S 1 40 41 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 12345 0 0";
        assert_eq!(parse_stat(odd).map(|s| s.start), Some(12345));
    }

    #[test]
    fn the_marker_is_found_only_as_a_whole_variable() {
        let id = JobId::new();
        let env = format!("A=1\0{JOB_ID_ENV}={id}\0B=2\0");
        assert_eq!(marker_in(env.as_bytes()), Some(id));
        let fake = format!("X{JOB_ID_ENV}={id}\0{JOB_ID_ENV}X={id}\0");
        assert_eq!(marker_in(fake.as_bytes()), None);
        assert_eq!(marker_in(format!("{JOB_ID_ENV}=nope").as_bytes()), None);
    }
}
