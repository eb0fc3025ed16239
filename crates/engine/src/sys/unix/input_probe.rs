//! The Linux input probe: which process of a foreground group sleeps waiting for its
//! terminal, told from `/proc` (see `crate::input` for what is read and why).

use std::fs;
use std::os::unix::fs::{FileExt, FileTypeExt, MetadataExt};

use super::procfs::{Stat, read_stat as stat};

/// Whether this platform can tell a job waiting for input: yes.
pub(crate) const AVAILABLE: bool = true;

/// `/dev/tty` (major 5, minor 0): whatever the process's controlling terminal is.
const DEV_TTY: u64 = 5 << 8;
/// Most descriptors of a poll or select set looked at.
const MAX_FDS: u64 = 4096;

/// The threads of `pid` (its stat `st` says how many).
fn threads(pid: u32, st: &Stat) -> Vec<u32> {
    if st.threads <= 1 {
        return vec![pid];
    }
    fs::read_dir(format!("/proc/{pid}/task"))
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// The children of `pid` that are in group `pgrp`, with their stat.
fn children(pid: u32, st: &Stat, pgrp: u32) -> Vec<(u32, Stat)> {
    let mut out = Vec::new();
    for tid in threads(pid, st) {
        let Ok(kids) = fs::read_to_string(format!("/proc/{pid}/task/{tid}/children")) else {
            continue;
        };
        for kid in kids
            .split_whitespace()
            .filter_map(|k| k.parse::<u32>().ok())
        {
            if let Some(s) = stat(&format!("/proc/{kid}/stat"))
                && s.pgrp == pgrp
            {
                out.push((kid, s));
            }
        }
    }
    out
}

/// Every process of group `pgrp` (its leader is gone: a scan of `/proc`).
fn scan(pgrp: u32) -> Vec<(u32, Stat)> {
    super::procfs::pids()
        .filter_map(|pid| {
            let s = stat(&format!("/proc/{pid}/stat"))?;
            (s.pgrp == pgrp).then_some((pid, s))
        })
        .collect()
}

/// The first process of group `pgrp` with a thread asleep waiting for its terminal, unless
/// a process of the group is running or runnable: then the group is working, not waiting
/// (on a loaded machine a printer beside a reader can be kept off the CPU for longer than
/// the quiet period). The leader is looked at first, then its descendants in the group,
/// breadth first, each as it is found (every `/proc` read costs tens of microseconds).
pub(crate) fn reader_in_group(pgrp: u32) -> Option<u32> {
    let mut queue: std::collections::VecDeque<(u32, Stat)> =
        match stat(&format!("/proc/{pgrp}/stat")).filter(|s| s.pgrp == pgrp) {
            Some(leader) => [(pgrp, leader)].into(),
            None => scan(pgrp).into(),
        };
    let walk = queue.len() == 1;
    let mut looked = 0;
    let mut reader = None;
    while let Some((pid, st)) = queue.pop_front() {
        if st.state == 'R' {
            return None;
        }
        if reader.is_none() && st.tty != 0 && waits(pid, &st) {
            reader = Some(pid);
        }
        looked += 1;
        if walk && looked < 1024 {
            queue.extend(children(pid, &st, pgrp));
        }
    }
    reader
}

/// Whether a thread of `pid` sleeps waiting for its terminal.
fn waits(pid: u32, st: &Stat) -> bool {
    if st.threads <= 1 {
        return st.state == 'S' && waits_on_tty(pid, pid, st.tty);
    }
    threads(pid, st).into_iter().any(|tid| {
        stat(&format!("/proc/{pid}/task/{tid}/stat")).is_some_and(|t| t.state == 'S')
            && waits_on_tty(pid, tid, st.tty)
    })
}

/// Whether descriptor `fd` of `pid` is the terminal `tty` (or `/dev/tty`).
fn is_tty(pid: u32, fd: u64, tty: u64) -> bool {
    fs::metadata(format!("/proc/{pid}/fd/{fd}"))
        .is_ok_and(|m| m.file_type().is_char_device() && (m.rdev() == tty || m.rdev() == DEV_TTY))
}

/// The system call thread `tid` of `pid` sleeps in: its number and arguments.
/// (The caller checked that the thread is in an interruptible sleep: a stopped thread —
/// `SIGTTIN` — may still show the read it was stopped in.)
fn syscall(pid: u32, tid: u32) -> Option<(i64, Vec<u64>)> {
    let text = fs::read_to_string(format!("/proc/{pid}/task/{tid}/syscall")).ok()?;
    let mut it = text.split_whitespace();
    let nr: i64 = it.next()?.parse().ok()?;
    let args = it
        .take(6)
        .filter_map(|a| u64::from_str_radix(a.trim_start_matches("0x"), 16).ok())
        .collect::<Vec<_>>();
    (args.len() == 6).then_some((nr, args))
}

fn waits_on_tty(pid: u32, tid: u32, tty: u64) -> bool {
    let Some((nr, a)) = syscall(pid, tid) else {
        return false;
    };
    match Call::of(nr) {
        Some(Call::Read) => is_tty(pid, a[0], tty),
        Some(Call::Epoll) => epoll_has_tty(pid, a[0], tty),
        Some(Call::Poll) => poll_has_tty(pid, a[0], a[1], tty),
        Some(Call::Select) => select_has_tty(pid, a[0], a[1], tty),
        None => false,
    }
}

enum Call {
    Read,
    Epoll,
    Poll,
    Select,
}

impl Call {
    fn of(nr: i64) -> Option<Self> {
        use libc::*;
        let read = [SYS_read, SYS_readv, SYS_pread64];
        let epoll = [SYS_epoll_pwait, SYS_epoll_pwait2];
        #[cfg(target_arch = "x86_64")]
        let (poll, select, epoll_old) = (
            [SYS_poll, SYS_ppoll],
            [SYS_select, SYS_pselect6],
            SYS_epoll_wait,
        );
        #[cfg(not(target_arch = "x86_64"))]
        let (poll, select, epoll_old) = (
            [SYS_ppoll, SYS_ppoll],
            [SYS_pselect6, SYS_pselect6],
            SYS_epoll_pwait,
        );
        if read.contains(&nr) {
            Some(Self::Read)
        } else if epoll.contains(&nr) || nr == epoll_old {
            Some(Self::Epoll)
        } else if poll.contains(&nr) {
            Some(Self::Poll)
        } else if select.contains(&nr) {
            Some(Self::Select)
        } else {
            None
        }
    }
}

/// Whether the interest list of epoll descriptor `epfd` holds the terminal.
fn epoll_has_tty(pid: u32, epfd: u64, tty: u64) -> bool {
    let Ok(info) = fs::read_to_string(format!("/proc/{pid}/fdinfo/{epfd}")) else {
        return false;
    };
    info.lines()
        .filter_map(|l| {
            l.strip_prefix("tfd:")?
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        })
        .any(|fd: u64| is_tty(pid, fd, tty))
}

fn read_mem(pid: u32, addr: u64, len: u64) -> Option<Vec<u8>> {
    let mem = fs::File::open(format!("/proc/{pid}/mem")).ok()?;
    let mut buf = vec![0u8; usize::try_from(len).ok()?];
    mem.read_exact_at(&mut buf, addr).ok()?;
    Some(buf)
}

/// Whether the `poll` set at `addr` (`n` entries) waits for the terminal to be readable.
fn poll_has_tty(pid: u32, addr: u64, n: u64, tty: u64) -> bool {
    if n == 0 || n > MAX_FDS {
        return false;
    }
    let Some(buf) = read_mem(pid, addr, n * 8) else {
        return false;
    };
    // struct pollfd { int fd; short events; short revents; }
    buf.chunks_exact(8).any(|p| {
        let fd = i32::from_ne_bytes([p[0], p[1], p[2], p[3]]);
        let events = i16::from_ne_bytes([p[4], p[5]]);
        fd >= 0 && events & libc::POLLIN != 0 && is_tty(pid, fd.unsigned_abs().into(), tty)
    })
}

/// Whether the `select` read set at `addr` (descriptors below `nfds`) holds the terminal.
fn select_has_tty(pid: u32, nfds: u64, addr: u64, tty: u64) -> bool {
    if nfds == 0 || nfds > MAX_FDS || addr == 0 {
        return false;
    }
    let Some(buf) = read_mem(pid, addr, nfds.div_ceil(64) * 8) else {
        return false;
    };
    // An fd_set is an array of longs, bit `fd % 64` of long `fd / 64` (little- or
    // big-endian longs alike).
    (0..nfds).any(|fd| {
        let word = usize::try_from(fd / 64).unwrap_or(usize::MAX) * 8;
        let Some(bytes) = buf.get(word..word + 8) else {
            return false;
        };
        let mut w = [0u8; 8];
        w.copy_from_slice(bytes);
        u64::from_ne_bytes(w) >> (fd % 64) & 1 == 1 && is_tty(pid, fd, tty)
    })
}
