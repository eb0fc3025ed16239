//! Helpers shared by the benchmark programs: a lean JSON-RPC client over a child's stdio,
//! latency statistics, `/proc` readers and a raw PTY spawn (the physical reference).
//!
//! Every program prints a Markdown section on stdout; `bench/run.sh` collects them into
//! `docs/BENCHMARKS.md`. A target row is printed by [`target_row`], so the runner can gather
//! all verdicts into one summary.

#![allow(clippy::print_stdout)] // a benchmark reports on stdout
use std::collections::HashSet;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::OwnedFd;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// A sibling binary in the same target directory as the running benchmark (`ptyjobs`,
/// `rmcp_ping`): `bench/run.sh` builds them all with one `cargo build --release`.
pub fn sibling(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    exe.parent().expect("exe dir").join(name)
}

/// The repository root (for the npm launcher).
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("repo root")
        .to_path_buf()
}

/// A lean MCP client: newline-delimited JSON-RPC written to the child's stdin and read from its
/// stdout, one request at a time (or pipelined with [`Rpc::send`] / [`Rpc::recv`]).
pub struct Rpc {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
    line: String,
}

impl Rpc {
    /// Starts `cmd` with piped stdin/stdout and stderr discarded.
    pub fn spawn(mut cmd: Command) -> Self {
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut child = cmd.spawn().expect("spawn server");
        let stdin = child.stdin.take();
        let stdout = BufReader::with_capacity(1 << 20, child.stdout.take().expect("stdout"));
        Self {
            child,
            stdin,
            stdout,
            next_id: 1,
            line: String::new(),
        }
    }

    /// The server's pid.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `initialize` (answered) then `notifications/initialized`.
    pub fn initialize(&mut self) -> Value {
        let r = self.call(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "ptyjobs-bench", "version": "0"}}),
        );
        self.notify("notifications/initialized");
        r
    }

    /// Sends a notification (no answer).
    pub fn notify(&mut self, method: &str) {
        let msg = json!({"jsonrpc": "2.0", "method": method});
        self.write(&msg);
    }

    fn write(&mut self, msg: &Value) {
        let mut s = serde_json::to_string(msg).expect("json");
        s.push('\n');
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(s.as_bytes()).expect("write to server");
        stdin.flush().expect("flush");
    }

    /// Sends a request without waiting; returns its id.
    pub fn send(&mut self, method: &str, params: Value) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.write(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    /// The next response (notifications from the server are skipped): `(id, message)`.
    pub fn recv(&mut self) -> (u64, Value) {
        loop {
            self.line.clear();
            let n = self.stdout.read_line(&mut self.line).expect("read");
            assert!(n > 0, "server closed its stdout");
            let v: Value = serde_json::from_str(&self.line).expect("server sent bad JSON");
            if v.get("method").is_some() {
                continue;
            }
            if let Some(id) = v.get("id").and_then(Value::as_u64) {
                return (id, v);
            }
        }
    }

    /// One request, answered: its `result` (panics on a JSON-RPC error).
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.send(method, params);
        let (got, mut v) = self.recv();
        assert_eq!(got, id, "answers arrive in order here");
        if let Some(e) = v.get("error") {
            panic!("{method}: {e}");
        }
        v["result"].take()
    }

    /// `tools/call`: the tool's structured content (panics when the tool reports an error).
    pub fn tool(&mut self, name: &str, args: Value) -> Value {
        let mut r = self.call("tools/call", json!({"name": name, "arguments": args}));
        assert!(
            r.get("isError") != Some(&Value::Bool(true)),
            "{name} failed: {r}"
        );
        r["structuredContent"].take()
    }

    /// Times one call of `f`.
    pub fn timed<T>(&mut self, f: impl FnOnce(&mut Self) -> T) -> (Duration, T) {
        let t = Instant::now();
        let v = f(self);
        (t.elapsed(), v)
    }

    /// Closes stdin (the server shuts down, killing its jobs) and waits for the exit, at most
    /// `deadline`; past it the server is killed. Returns how long the exit took.
    pub fn close(mut self, deadline: Duration) -> Duration {
        let t = Instant::now();
        drop(self.stdin.take());
        while t.elapsed() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return t.elapsed();
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        t.elapsed()
    }
}

impl Drop for Rpc {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Median and p99 of a sample.
#[derive(Clone, Copy, Debug)]
pub struct Stats {
    /// The median.
    pub median: Duration,
    /// The 99th percentile.
    pub p99: Duration,
    /// Sample size.
    pub n: usize,
}

impl Stats {
    /// Statistics of `v` (must not be empty).
    pub fn of(v: &[Duration]) -> Self {
        let mut v = v.to_vec();
        v.sort();
        let n = v.len();
        Self {
            median: v[n / 2],
            p99: v[((n * 99) / 100).min(n - 1)],
            n,
        }
    }
}

/// A duration in the unit that reads best.
pub fn fmt_d(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us < 1000.0 {
        format!("{us:.0} µs")
    } else if us < 1e6 {
        format!("{:.2} ms", us / 1000.0)
    } else {
        format!("{:.2} s", us / 1e6)
    }
}

/// `a / b` as a ratio.
pub fn ratio(a: f64, b: f64) -> String {
    format!("{:.2} ×", a / b)
}

/// A row of a section's targets table: `| target | measured | **met** / **not met** |`.
pub fn target_row(target: &str, measured: &str, met: bool) -> String {
    let verdict = if met { "**met**" } else { "**not met**" };
    format!("| {target} | {measured} | {verdict} |")
}

/// The header of a targets table.
pub fn targets_header() -> &'static str {
    "| target | measured | verdict |\n|---|---|---|"
}

/// A field of `/proc/<pid>/status` in its unit (kB for memory, a count for `Threads`).
pub fn proc_status(pid: u32, field: &str) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    s.lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// Resident memory in MB (10^6 bytes).
pub fn rss_mb(pid: u32) -> f64 {
    proc_status(pid, "VmRSS") as f64 * 1024.0 / 1e6
}

/// Peak resident memory (`VmHWM`) in MB.
pub fn peak_rss_mb(pid: u32) -> f64 {
    proc_status(pid, "VmHWM") as f64 * 1024.0 / 1e6
}

/// Open file descriptors of a process.
pub fn fd_count(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| d.count())
        .unwrap_or(0)
}

/// Live (not zombie) processes whose session id is in `sessions`. Every job is a session
/// leader, so its pid is the session of all its processes.
pub fn live_in_sessions(sessions: &HashSet<i32>) -> usize {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return 0;
    };
    dir.filter_map(|e| {
        let name = e.ok()?.file_name();
        let pid: u32 = name.to_str()?.parse().ok()?;
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // Fields after the `(comm)`: state ppid pgrp session ...
        let rest = &stat[stat.rfind(')')? + 2..];
        let mut f = rest.split_whitespace();
        let state = f.next()?;
        let sid: i32 = f.nth(2)?.parse().ok()?;
        (state != "Z" && sessions.contains(&sid)).then_some(())
    })
    .count()
}

/// A process started the way the engine starts a job, with no engine around it: a fresh PTY,
/// `sh -c <command>` as a session leader with the slave as its controlling terminal.
pub struct RawPty {
    /// The child.
    pub child: Child,
    /// The master side, held so the child keeps its terminal.
    pub master: OwnedFd,
}

/// Opens a PTY and spawns `sh -c command` on it (fork + setsid + TIOCSCTTY + exec, as the
/// engine does); returns once the child has exec'd.
pub fn raw_pty_spawn(command: &str) -> RawPty {
    let pty = nix::pty::openpty(None, None).expect("openpty");
    let slave = std::fs::File::from(pty.slave);
    let mut cmd = Command::new("/bin/sh");
    cmd.arg("-c")
        .arg(command)
        .stdin(slave.try_clone().expect("dup"))
        .stdout(slave.try_clone().expect("dup"))
        .stderr(slave);
    // SAFETY: setsid and ioctl are async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY as _, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = cmd.spawn().expect("spawn");
    drop(cmd);
    RawPty {
        child,
        master: pty.master,
    }
}

/// Reads `master` until every process holding its terminal is gone (EOF or EIO), handing
/// each read to `each` (the bare PTY reader's loop, 64 KiB at a time); returns the bytes read.
pub fn read_to_end(master: &OwnedFd, mut each: impl FnMut(&[u8])) -> usize {
    use std::os::fd::AsFd;
    let mut buf = vec![0u8; 1 << 16];
    let mut got = 0;
    loop {
        match nix::unistd::read(master.as_fd(), &mut buf) {
            Ok(0) | Err(nix::errno::Errno::EIO) => return got,
            Ok(n) => {
                got += n;
                each(&buf[..n]);
            }
            Err(nix::errno::Errno::EINTR) => {}
            Err(e) => panic!("read: {e}"),
        }
    }
}

/// The three kinds of output the throughput benchmarks use.
pub const KINDS: [&str; 3] = ["plain", "ansi", "progress"];

/// About 60 KB of one kind of output, repeated by producers: `plain` text lines,
/// `ansi`-coloured lines, `progress`: `\r` progress-bar redraws with a newline every 100, or
/// `line`: digits and no newline at all (repeated, one endless line).
pub fn sample(kind: &str) -> Vec<u8> {
    use std::fmt::Write as _;
    let mut s = String::with_capacity(1 << 16);
    let mut i = 0u64;
    while s.len() < 60_000 {
        let _ = match kind {
            "line" => write!(s, "{i:010}"),
            "plain" => writeln!(s, "line {i:08} the quick brown fox jumps over the lazy dog"),
            "ansi" => writeln!(
                s,
                "\x1b[32mINFO\x1b[0m line {i:08} \x1b[1mthe quick\x1b[0m brown fox"
            ),
            _ => write!(
                s,
                "\rprogress {:3}% [{:<40}]",
                i % 101,
                "#".repeat((i % 41) as usize)
            ),
        };
        if kind == "progress" && i % 100 == 99 {
            s.push('\n');
        }
        i += 1;
    }
    s.into_bytes()
}
