//! Scale of the read path: a thousand idle jobs cost a fixed number of threads and little
//! memory (one I/O reactor and a small parse pool, not a thread per job), and a job whose output
//! arrives faster than it can be parsed is held back at the PTY (back-pressure) instead of
//! growing the server's memory, without losing a byte.
//!
//! Alone in its test binary: it measures the threads and memory of the whole process.
// Unix only: it counts the threads and memory of the process through /proc and rlimits.
#![cfg(unix)]

mod common;

use std::time::{Duration, Instant};

use common::*;
use ptyjobs_engine::{JobSpec, JobStatus};

/// A field of `/proc/self/status` (a number; kB for sizes).
fn status(field: &str) -> u64 {
    let text = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    text.lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no {field} in /proc/self/status"))
}

/// Raises the soft limit of open files to the hard one (as the server does at start); returns
/// the new soft limit.
fn raise_nofile() -> u64 {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit read or write one rlimit through a pointer valid for the call.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim), 0);
        lim.rlim_cur = lim.rlim_max;
        assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &lim), 0);
    }
    lim.rlim_cur
}

/// The tests of this file measure the whole process: one at a time.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

const JOBS: usize = 1000;
/// Threads the engine may add, whatever the number of jobs: the reactor, the parse workers
/// (at most eight) and a few of the runtime's blocking threads.
const MAX_NEW_THREADS: u64 = 16;
/// Memory a thousand idle jobs may add: the target of the design (≤ 100 MB).
const MAX_GROWTH_KB: u64 = 100 * 1024;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_idle_jobs_take_a_fixed_number_of_threads_and_little_memory() {
    let _alone = SERIAL.lock().await;
    let started = Instant::now();
    let soft = raise_nofile();
    // Two descriptors per job (the master and a pidfd), plus the test's own.
    if soft < (JOBS as u64) * 2 + 100 {
        eprintln!("skipped: the hard limit of open files ({soft}) is too low for {JOBS} jobs");
        return;
    }
    let m = manager_with(|c| c.max_running = JOBS + 10);
    let threads_before = status("Threads");
    let rss_before = status("VmRSS");
    let fds_before = std::fs::read_dir("/proc/self/fd").expect("fd dir").count();
    let mut jobs = Vec::with_capacity(JOBS);
    for _ in 0..JOBS {
        jobs.push(m.execute(JobSpec::new("exec sleep 600")).expect("execute"));
    }
    // Every job idle (started, nothing to read), then look.
    assert!(
        wait_until(Duration::from_secs(20), || m
            .list()
            .iter()
            .filter(|j| j.status == JobStatus::Running)
            .count()
            == JOBS)
        .await,
        "not every job is running"
    );
    tokio::time::sleep(Duration::from_millis(300)).await; // let idle/quiet timers fire once
    let threads = status("Threads");
    let rss = status("VmRSS");
    let fds = std::fs::read_dir("/proc/self/fd").expect("fd dir").count();
    let growth = rss.saturating_sub(rss_before);
    eprintln!(
        "{JOBS} idle jobs: threads {threads_before} -> {threads}, RSS {rss_before} kB -> {rss} kB \
         (+{} kB per job), descriptors {fds_before} -> {fds} ({:.2} per job), started in {:.1?}",
        growth / JOBS as u64,
        (fds - fds_before) as f64 / JOBS as f64,
        started.elapsed()
    );
    assert!(
        threads <= threads_before + MAX_NEW_THREADS,
        "{threads} threads for {JOBS} jobs (the harness had {threads_before})"
    );
    assert!(
        growth <= MAX_GROWTH_KB,
        "{JOBS} idle jobs grew the process by {growth} kB"
    );
    assert!(
        fds - fds_before <= JOBS * 2 + 8,
        "{} descriptors for {JOBS} jobs",
        fds - fds_before
    );

    m.shutdown().await;
    let sessions: std::collections::HashSet<String> =
        jobs.iter().map(|j| j.pid.to_string()).collect();
    assert!(
        wait_until(Duration::from_secs(20), || m
            .list()
            .iter()
            .all(|j| j.status.is_final()))
        .await,
        "not every job ended"
    );
    let left = processes_where(|_, f| f.len() > 3 && sessions.contains(f[3]) && f[0] != "Z");
    assert!(left.is_empty(), "processes left: {left:?}");
    let me = std::process::id().to_string();
    let zombies = processes_where(|_, f| f.len() > 1 && f[1] == me && f[0] == "Z");
    assert!(zombies.is_empty(), "unreaped children: {zombies:?}");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "took {:.1?}",
        started.elapsed()
    );
}

/// The producer of a burst that is slow to parse: one line of colours, wide characters and
/// erases, repeated (every byte goes through the emulator), cut at `bytes`.
fn slow_burst(bytes: usize) -> (String, usize) {
    let line = "\x1b[1;31m漢字かな\x1b[0m\x1b[K\x1b[32m中文字\x1b[0m";
    let command = format!("yes '{line}' | head -c {bytes}");
    // What the PTY delivers: each newline becomes CR LF.
    let newlines = bytes / (line.len() + 1);
    (command, bytes + newlines)
}

/// Bytes the job's parse side has taken so far.
fn parsed(m: &ptyjobs_engine::JobManager, id: ptyjobs_engine::JobId) -> u64 {
    m.subscribe(id).expect("subscribe").borrow().bytes
}

/// Output far slower to parse than to read: the producer is held back at the PTY, so the
/// process's peak memory stays near the lane's cap (not the tens of megabytes the PTY delivers
/// ahead of the parser), and every byte is parsed in the end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_producer_faster_than_the_parser_is_held_back() {
    let _alone = SERIAL.lock().await;
    let m = manager_with(|c| c.transcript_bytes = 1 << 20);
    let (command, expected) = slow_burst(30_000_000);
    // Reset the peak (Linux 4.0+): VmHWM then measures this test only.
    let reset = std::fs::write("/proc/self/clear_refs", "5").is_ok();
    let rss_before = status("VmRSS");
    let started = Instant::now();
    let job = m.execute(JobSpec::new(command)).expect("execute");
    let mut peak = 0;
    let done = wait_until(Duration::from_secs(120), || {
        peak = peak.max(status("VmRSS"));
        m.status(job.id).is_ok_and(|i| i.status.is_final())
    })
    .await;
    assert!(done, "the job did not finish");
    if reset {
        peak = peak.max(status("VmHWM"));
    }
    let took = started.elapsed();
    let growth = peak.saturating_sub(rss_before);
    eprintln!(
        "{expected} bytes parsed at {:.1} MB/s; peak RSS growth {growth} kB (VmHWM reset: {reset})",
        expected as f64 / took.as_secs_f64() / 1e6
    );
    assert_eq!(parsed(&m, job.id), expected as u64, "bytes lost or added");
    // The transcript holds 1 MiB, the lane at most 2 MiB (5 MB measured): without back-pressure the unparsed
    // bytes pile up by tens of megabytes (the PTY delivers this text several times faster than
    // the emulator takes it).
    assert!(
        growth < 12 * 1024,
        "memory grew by {growth} kB while a fast producer ran"
    );
}

/// A burst that fills the lane, then a counted sequence: every line arrives, in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_line_after_a_burst_arrives_in_order() {
    let _alone = SERIAL.lock().await;
    let m = manager_with(|c| c.transcript_bytes = 32 << 20);
    let (burst, _) = slow_burst(10_000_000);
    let job = m
        .execute(JobSpec::new(format!("{burst}; echo; seq 1 300000")))
        .expect("execute");
    let info = m
        .wait(job.id, Some(Duration::from_secs(120)))
        .await
        .expect("wait");
    assert_eq!(info.status, JobStatus::Completed);
    let out = m.output(job.id, None, None).expect("output");
    let lines: Vec<&str> = out.output.lines().collect();
    let tail = &lines[lines.len().saturating_sub(300_000)..];
    assert_eq!(tail.len(), 300_000, "lines missing");
    for (n, line) in (1..).zip(tail) {
        assert_eq!(*line, n.to_string(), "line {n} of seq");
    }
}
