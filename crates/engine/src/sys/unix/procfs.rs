//! The process table on Linux, from `/proc`: the one `/proc/<pid>/stat` parser, and the
//! platform's side of `crate::procs` (each process's group, session, start time and state; a
//! process's environment).

use std::fmt::Write as _;
use std::os::fd::OwnedFd;

use rustix::fs::{CWD, Mode, OFlags, openat};

pub(crate) use super::tree::process_exists as exists;
use crate::sys::proc_info::ProcInfo;

/// Whether a scan shows a job's live leader among its members: yes, every live process of a
/// job, its leader included, is in `/proc` with its session and marker.
pub(crate) const SCAN_SHOWS_LEADERS: bool = true;

/// The fields of a `/proc/<pid>/stat` (or `/proc/<pid>/task/<tid>/stat`) line that ptyjobs
/// reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Stat {
    /// `R`, `S`, `D`, `Z`, ...
    pub state: char,
    pub pgrp: u32,
    pub sid: u32,
    /// The controlling terminal's device number (0: none).
    pub tty: u64,
    pub threads: u32,
    /// Clock ticks since boot.
    pub start: u64,
}

impl Stat {
    /// A zombie (or a process being reaped): it runs no more.
    pub(crate) fn is_zombie(&self) -> bool {
        matches!(self.state, 'Z' | 'X')
    }
}

/// Parses a `stat` line. The command name (field 2) may contain spaces, parentheses and bytes
/// that are not UTF-8, so fields are counted after its last `)`.
pub(crate) fn parse_stat(stat: impl AsRef<[u8]>) -> Option<Stat> {
    let stat = stat.as_ref();
    let close = stat.iter().rposition(|&b| b == b')')?;
    let rest = std::str::from_utf8(&stat[close + 1..]).ok()?;
    // The fields after the name start at field 3 (state): field n is at index n - 3.
    let mut f = rest.split_ascii_whitespace();
    let state = f.next()?.chars().next()?; // 3
    let pgrp = f.nth(1)?.parse().ok()?; // 5
    let sid = f.next()?.parse().ok()?; // 6
    // 7; printed as a signed int: a number that is not a device counts as none, and never
    // hides the process from a scan.
    let tty = f
        .next()?
        .parse::<i64>()
        .ok()
        .and_then(|t| u64::try_from(t).ok())
        .unwrap_or(0);
    let threads = f.nth(12)?.parse().ok()?; // 20
    let start = f.nth(1)?.parse().ok()?; // 22
    Some(Stat {
        state,
        pgrp,
        sid,
        tty,
        threads,
        start,
    })
}

/// The `stat` file at `path` (`/proc/<pid>/stat`, `/proc/<pid>/task/<tid>/stat`), parsed.
pub(crate) fn read_stat(path: &str) -> Option<Stat> {
    parse_stat(std::fs::read(path).ok()?)
}

impl From<&Stat> for ProcInfo {
    fn from(s: &Stat) -> Self {
        Self {
            pgrp: s.pgrp,
            sid: s.sid,
            start: s.start,
            zombie: s.is_zombie(),
        }
    }
}

/// `pid`'s entry, if it exists.
pub(crate) fn info(pid: u32) -> Option<ProcInfo> {
    read_stat(&format!("/proc/{pid}/stat"))
        .as_ref()
        .map(ProcInfo::from)
}

/// `pid`'s environment (NUL-separated `KEY=value` entries), when it can be read.
pub(crate) fn environ(pid: u32) -> Option<Vec<u8>> {
    std::fs::read(format!("/proc/{pid}/environ")).ok()
}

/// A `stat` line is a few hundred bytes (the command name is at most 64); one read of this
/// size takes it whole.
const STAT_MAX: usize = 4096;

/// Reads `<pid>/<file>` under the open `/proc` into `buf` with one `read`: no path lookup of
/// `/proc` itself, no size query, no second read for the end of the file (a scan reads
/// thousands of these, and their syscalls are its whole cost). `None` if the process is gone
/// or the file did not fit.
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

/// The ids of every process listed in `/proc` now (the one walk of the process table's
/// directory; what each caller reads of a process is its own).
pub(crate) fn pids() -> impl Iterator<Item = u32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
}

/// Calls `f` with every process listed in `/proc` whose `stat` could be read.
pub(crate) fn each(mut f: impl FnMut(u32, ProcInfo)) {
    let Ok(proc_dir) = openat(
        CWD,
        "/proc",
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    ) else {
        return;
    };
    let mut path = String::with_capacity(32);
    let mut buf = vec![0u8; STAT_MAX];
    for pid in pids() {
        if let Some(stat) =
            read_small(&proc_dir, &mut path, pid, "stat", &mut buf).and_then(parse_stat)
        {
            f(pid, ProcInfo::from(&stat));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_with_odd_command_names_parse() {
        let line = "42 (a) b (c)) S 1 40 41 34816 -1 4194560 0 0 0 0 0 0 0 0 20 0 3 0 12345 0 0";
        assert_eq!(
            parse_stat(line),
            Some(Stat {
                state: 'S',
                pgrp: 40,
                sid: 41,
                tty: 34816,
                threads: 3,
                start: 12345
            })
        );
        assert_eq!(parse_stat("garbage"), None);
        // A name that is not UTF-8 still parses: such a process must not hide from the scan.
        let odd = b"42 (\xff\xfe) Z 1 40 41 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 12345 0 0";
        let odd = parse_stat(odd).expect("parses");
        assert_eq!(odd.start, 12345);
        assert!(odd.is_zombie());
    }

    /// This process's own line, as the kernel writes it.
    #[test]
    fn this_process_reads_as_itself() {
        let me = read_stat(&format!("/proc/{}/stat", std::process::id())).expect("own stat");
        assert!(!me.is_zombie());
        assert!(me.threads >= 1);
        assert_eq!(info(std::process::id()).map(|i| i.start), Some(me.start));
        // SAFETY: getpgrp takes no arguments and cannot fail.
        assert_eq!(i64::from(me.pgrp), i64::from(unsafe { libc::getpgrp() }));
    }
}
