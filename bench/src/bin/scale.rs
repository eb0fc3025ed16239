//! Scale: 1000 concurrent idle jobs, then 2000 short jobs in sequence.
//!
//! `scale [JOBS] [SHORT]` (defaults 1000 and 2000):
//! 1. Reference, no server: a child process (`scale hold JOBS`) starts JOBS
//!    `sh -c 'sleep 1000'` under fresh PTYs itself (fork + setsid + TIOCSCTTY, the engine's
//!    mechanism) and holds their masters: its RSS and threads are the bare cost of 1000 idle
//!    jobs. Then it kills every process group with SIGTERM and reaps — timed until no live
//!    process of any of those sessions is left in `/proc` (zombies ignored).
//! 2. `ptyjobs --max-jobs JOBS`: RSS, threads (`/proc/<pid>/status`), open fds
//!    (`/proc/<pid>/fd`) and `list_jobs` latency (median of 20) at rest; JOBS
//!    `execute_command("sleep 1000")` one after another (timed); the same figures with JOBS
//!    running; `kill_job` for each (pipelined 100 at a time), timed until no live process of
//!    any job remains; then SHORT `execute_command("true")` + `wait_for_job`, one job at a
//!    time, and the open fds compared with the figure at rest.

#![allow(clippy::print_stdout)] // a benchmark reports on stdout
use std::collections::HashSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ptyjobs_bench::{
    Rpc, Stats, fd_count, fmt_d, live_in_sessions, proc_status, ratio, raw_pty_spawn, rss_mb,
    sibling, target_row, targets_header,
};
use serde_json::json;

/// Polls until no live process of `sessions` is left (at most 30 s); returns whether it emptied.
fn until_gone(sessions: &HashSet<i32>) -> bool {
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(30) {
        if live_in_sessions(sessions) == 0 {
            return true;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    false
}

fn list_latency(rpc: &mut Rpc) -> Stats {
    let v: Vec<Duration> = (0..20)
        .map(|_| rpc.timed(|r| r.tool("list_jobs", json!({}))).0)
        .collect();
    Stats::of(&v)
}

/// `scale hold N`: starts N idle jobs under fresh PTYs with no server, prints their session
/// ids and the time it took (ms) on one line, waits for stdin to close, then kills every group
/// with SIGTERM, reaps, and prints how long that took.
fn hold(jobs: usize) {
    let t = Instant::now();
    let mut raw: Vec<_> = (0..jobs).map(|_| raw_pty_spawn("sleep 1000")).collect();
    let started = t.elapsed();
    let sessions: Vec<String> = raw.iter().map(|r| r.child.id().to_string()).collect();
    println!("{} {}", started.as_secs_f64() * 1e3, sessions.join(","));
    let _ = std::io::stdout().flush();
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
    let t = Instant::now();
    for r in &raw {
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(r.child.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
    }
    for r in &mut raw {
        r.child.wait().expect("wait");
    }
    let set: HashSet<i32> = raw.iter().map(|r| r.child.id() as i32).collect();
    assert!(until_gone(&set), "reference processes survived");
    println!("{}", t.elapsed().as_secs_f64() * 1e3);
}

/// The reference: `scale hold JOBS` in a child process. Returns the time to start the jobs,
/// the holder's RSS (MB) and threads with them, and the time to kill them all.
fn reference(jobs: usize) -> (Duration, f64, u64, Duration) {
    let mut child = Command::new(std::env::current_exe().expect("exe"))
        .args(["hold", &jobs.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn the holder");
    let mut out = BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    out.read_line(&mut line).expect("holder's first line");
    let ms: f64 = line
        .split_whitespace()
        .next()
        .and_then(|v| v.parse().ok())
        .expect("start time");
    std::thread::sleep(Duration::from_millis(500));
    let (rss, threads) = (rss_mb(child.id()), proc_status(child.id(), "Threads"));
    drop(child.stdin.take());
    line.clear();
    out.read_line(&mut line).expect("holder's kill time");
    let kill: f64 = line.trim().parse().expect("kill time");
    assert!(child.wait().expect("wait").success(), "the holder failed");
    (
        Duration::from_secs_f64(ms / 1e3),
        rss,
        threads,
        Duration::from_secs_f64(kill / 1e3),
    )
}

fn main() {
    // 1000 PTYs need more descriptors than the usual soft limit, here as in the server.
    ptyjobs_engine::raise_fd_limit();
    let argv: Vec<String> = std::env::args().collect();
    if argv.get(1).map(String::as_str) == Some("hold") {
        hold(argv[2].parse().expect("jobs"));
        return;
    }
    let args: Vec<usize> = argv.iter().skip(1).filter_map(|a| a.parse().ok()).collect();
    let jobs = args.first().copied().unwrap_or(1000);
    let short = args.get(1).copied().unwrap_or(2000);

    // 1. The reference: the same processes without ptyjobs.
    let (raw_start, raw_rss, raw_threads, raw_kill) = reference(jobs);

    // 2. Through the server.
    let mut cmd = Command::new(sibling("ptyjobs"));
    cmd.args(["--max-jobs", &jobs.to_string()]);
    let mut pj = Rpc::spawn(cmd);
    pj.initialize();
    let pid = pj.pid();
    // "At rest" is after the store's first upkeep (a second after start), which makes the
    // spare job directory (three open descriptors) the server keeps from then on.
    std::thread::sleep(Duration::from_millis(1500));
    let (rss0, thr0, fd0) = (rss_mb(pid), proc_status(pid, "Threads"), fd_count(pid));
    let list0 = list_latency(&mut pj);

    let t = Instant::now();
    let mut ids = Vec::with_capacity(jobs);
    let mut sessions = HashSet::new();
    for _ in 0..jobs {
        let r = pj.tool("execute_command", json!({"command": "sleep 1000"}));
        ids.push(r["job_id"].as_str().expect("job_id").to_string());
        sessions.insert(r["pid"].as_i64().expect("pid") as i32);
    }
    let start_all = t.elapsed();
    std::thread::sleep(Duration::from_millis(500));
    let (rss1, thr1, fd1) = (rss_mb(pid), proc_status(pid, "Threads"), fd_count(pid));
    let list1 = list_latency(&mut pj);
    let live_before = live_in_sessions(&sessions);

    let t = Instant::now();
    for batch in ids.chunks(100) {
        for id in batch {
            pj.send(
                "tools/call",
                json!({"name": "kill_job", "arguments": {"job_id": id}}),
            );
        }
        for _ in batch {
            let (_, v) = pj.recv();
            let st = &v["result"]["structuredContent"]["status"];
            assert_eq!(st, "killed", "{v}");
        }
    }
    let answered = t.elapsed();
    let gone = until_gone(&sessions);
    let kill_all = t.elapsed();
    std::thread::sleep(Duration::from_millis(500));
    let (rss2, thr2, fd2) = (rss_mb(pid), proc_status(pid, "Threads"), fd_count(pid));

    let t = Instant::now();
    // The fds of a warm server: after its first short job, what it keeps for good (the spare
    // job directory, the I/O reactor's poller) is open; a leak shows as growth beyond this.
    let mut fd_warm = fd0;
    for i in 0..short {
        let r = pj.tool("execute_command", json!({"command": "true"}));
        let w = pj.tool("wait_for_job", json!({"job_id": r["job_id"]}));
        assert_eq!(w["status"], "completed", "{w}");
        if i == 0 {
            fd_warm = fd_warm.max(fd_count(pid));
        }
    }
    let short_time = t.elapsed();
    let t = Instant::now();
    while fd_count(pid) > fd0 && t.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(10));
    }
    let (rss3, thr3, fd3) = (rss_mb(pid), proc_status(pid, "Threads"), fd_count(pid));
    pj.close(Duration::from_secs(10));

    println!("## Scale\n");
    println!(
        "{jobs} idle jobs (`sleep 1000`) started through `ptyjobs --max-jobs {jobs}` one call \
         after another, then killed with `kill_job` (pipelined 100 at a time); the reference \
         starts and kills the same processes under fresh PTYs with no server. \
         {live_before} live job processes counted before the kill.\n"
    );
    println!("| measure | ptyjobs | reference | reference value | ratio |");
    println!("|---|---|---|---|---|");
    println!(
        "| start {jobs} jobs | {} ({:.2} ms/job) | raw PTY spawns, no server | {} | {} |",
        fmt_d(start_all),
        start_all.as_secs_f64() * 1e3 / jobs as f64,
        fmt_d(raw_start),
        ratio(start_all.as_secs_f64(), raw_start.as_secs_f64())
    );
    println!(
        "| kill all → no process left | {} (all `kill_job` answered after {}) | killpg + reap, no server | {} | {} |",
        fmt_d(kill_all),
        fmt_d(answered),
        fmt_d(raw_kill),
        ratio(kill_all.as_secs_f64(), raw_kill.as_secs_f64())
    );
    println!(
        "| server RSS with {jobs} jobs | {rss1:.1} MB (+{:.1} KiB/job) | at rest | {rss0:.1} MB | {} |",
        (rss1 - rss0) * 1e6 / 1024.0 / jobs as f64,
        ratio(rss1, rss0)
    );
    println!(
        "| server threads with {jobs} jobs | {thr1} | at rest | {thr0} | {} |",
        ratio(thr1 as f64, thr0 as f64)
    );
    println!(
        "| server RSS with {jobs} jobs | {rss1:.1} MB | bare holder of {jobs} PTYs and children, no server | {raw_rss:.1} MB | {} |",
        ratio(rss1, raw_rss)
    );
    println!(
        "| server threads with {jobs} jobs | {thr1} | bare holder | {raw_threads} | {} |",
        ratio(thr1 as f64, raw_threads as f64)
    );
    println!(
        "| server open fds with {jobs} jobs | {fd1} | at rest | {fd0} | {} |",
        ratio(fd1 as f64, fd0 as f64)
    );
    println!(
        "| `list_jobs` with {jobs} jobs, median (p99) | {} ({}) | with no job | {} ({}) | {} |",
        fmt_d(list1.median),
        fmt_d(list1.p99),
        fmt_d(list0.median),
        fmt_d(list0.p99),
        ratio(list1.median.as_secs_f64(), list0.median.as_secs_f64())
    );
    println!(
        "| after the kill: RSS / threads / fds | {rss2:.1} MB / {thr2} / {fd2} | at rest | {rss0:.1} MB / {thr0} / {fd0} | |"
    );
    println!(
        "| {short} short jobs (`true`) in sequence | {} ({:.2} ms/job) | | | |",
        fmt_d(short_time),
        short_time.as_secs_f64() * 1e3 / short as f64
    );
    println!(
        "| after them: RSS / threads / fds | {rss3:.1} MB / {thr3} / {fd3} | at rest | {rss0:.1} MB / {thr0} / {fd0} | |"
    );
    println!();
    println!("{}", targets_header());
    println!(
        "{}",
        target_row(
            &format!("{jobs} idle jobs ≤ 100 MB server RSS"),
            &format!("{rss1:.1} MB (bare holder {raw_rss:.1} MB)"),
            rss1 <= 100.0
        )
    );
    println!(
        "{}",
        target_row(
            &format!("{jobs} idle jobs ≤ 16 server threads"),
            &format!("{thr1} (bare holder {raw_threads})"),
            thr1 <= 16
        )
    );
    println!(
        "{}",
        target_row(
            "all killed within grace (3 s) + 2 s, nothing left",
            &format!(
                "{}, {}",
                fmt_d(kill_all),
                if gone { "none left" } else { "processes left" }
            ),
            gone && kill_all <= Duration::from_secs(5)
        )
    );
    println!(
        "{}",
        target_row(
            &format!("fds back at baseline after {short} jobs"),
            &format!("{fd3} vs {fd_warm} after the first one ({fd0} at rest)"),
            fd3 <= fd_warm
        )
    );
    println!();
}
