//! Looking at and signalling processes through `/proc`: shared by the MCP end-to-end tests and
//! the CLI tests (each includes this file with `#[path]`).

#![allow(dead_code)] // each test crate uses its own part

/// Sends `sig` to `pid` (errors ignored: a process that is gone is what we want).
pub fn kill(pid: u32, sig: i32) {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return;
    };
    // SAFETY: kill(2) takes plain integers.
    unsafe { libc::kill(pid, sig) };
}

/// `(state, session id)` of a process, from `/proc/<pid>/stat`.
pub fn stat(pid: u32) -> Option<(char, u32)> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses: count fields after the last ')'.
    let mut f = s[s.rfind(')')? + 1..].split_ascii_whitespace();
    let state = f.next()?.chars().next()?;
    let (_ppid, _pgrp) = (f.next()?, f.next()?);
    Some((state, f.next()?.parse().ok()?))
}

/// Live (non-zombie) processes whose session id is `sid`: a job's processes, since each job's
/// shell leads its own session.
pub fn session_processes(sid: u32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| matches!(stat(pid), Some((st, s)) if s == sid && st != 'Z' && st != 'X'))
        .collect()
}
