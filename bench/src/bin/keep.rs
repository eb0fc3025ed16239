//! Kept jobs at scale: `keep [N]` (default 200) starts N kept `sleep` jobs through the state
//! directory's keeper (the sibling `ptyjobs` binary) and reports the keeper's resident memory
//! and threads with them all running, beside the same figures of the keeper with one job; then
//! the time of a kept start (the keeper already up) beside a plain start of the same command.
//! Every job is killed at the end (`ptyjobs kill --kept`).

#![allow(clippy::print_stdout)] // a benchmark reports on stdout
use std::path::PathBuf;
use std::time::{Duration, Instant};

use ptyjobs_bench::{Stats, fmt_d, proc_status, rss_mb, sibling, target_row, targets_header};
use ptyjobs_engine::{JobManager, JobSpec, keep_job};

fn spec(i: usize) -> JobSpec {
    JobSpec {
        keep: true,
        keep_ttl: Some(Duration::from_secs(600)),
        ..JobSpec::new(format!("exec sleep {}", 100_000 + i))
    }
}

/// The keeper's pid: the owner of a kept job's record.
fn keeper_pid(state: &std::path::Path, id: &str) -> u32 {
    let text =
        std::fs::read_to_string(state.join("jobs").join(id).join("meta.json")).expect("record");
    let v: serde_json::Value = serde_json::from_str(&text).expect("json");
    v["server"]["process"]["pid"].as_u64().expect("pid") as u32
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(200);
    let state = std::env::var_os("PTYJOBS_STATE_DIR").map_or_else(
        || std::env::temp_dir().join(format!("ptyjobs-bench-keep-{}", std::process::id())),
        PathBuf::from,
    );
    // SAFETY: set before any thread of this process reads the environment.
    unsafe { std::env::set_var("PTYJOBS_KEEPER_IDLE_MS", "600000") };
    let program = sibling("ptyjobs");
    let (first, _) = keep_job(&state, Some(&program), &spec(0)).expect("first kept job");
    let pid = keeper_pid(&state, &first.id.to_string());
    let (rss1, threads1) = (rss_mb(pid), proc_status(pid, "Threads"));
    let mut starts = Vec::new();
    for i in 1..n {
        let t = Instant::now();
        keep_job(&state, Some(&program), &spec(i)).expect("kept job");
        starts.push(t.elapsed());
    }
    // Let the jobs' first output and records settle before measuring.
    std::thread::sleep(Duration::from_millis(500));
    let (rss, threads) = (rss_mb(pid), proc_status(pid, "Threads"));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("rt");
    let mut plain = Vec::new();
    rt.block_on(async {
        let m = JobManager::new(ptyjobs_engine::EngineConfig::default()).expect("manager");
        for _ in 0..20 {
            let t = Instant::now();
            let job = m.execute(JobSpec::new("exec sleep 1000")).expect("plain");
            plain.push(t.elapsed());
            m.kill(job.id, ptyjobs_engine::Signal::KILL, None)
                .await
                .expect("kill");
        }
        m.shutdown().await;
    });
    let _ = std::process::Command::new(&program)
        .arg("--state-dir")
        .arg(&state)
        .args(["kill", "--kept", "--grace-ms", "500"])
        .output();
    // The keeper was told to stay up; it leaves at SIGTERM.
    // SAFETY: kill(2) takes plain integers.
    unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) };
    let (s, p) = (Stats::of(&starts), Stats::of(&plain));
    println!("## Kept jobs\n");
    let build = if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    };
    println!(
        "{n} kept `sleep` jobs held by one keeper (`ptyjobs keeper`, {build} build), measured \
         with all of them running.\n"
    );
    println!("| | keeper with 1 job | keeper with {n} jobs |");
    println!("|---|---|---|");
    println!("| resident memory | {rss1:.1} MB | {rss:.1} MB |");
    println!("| threads | {threads1} | {threads} |");
    println!();
    println!("| start (median) | kept (through the keeper) | plain (in process) |");
    println!("|---|---|---|");
    println!(
        "| `exec sleep` | {} | {} |",
        fmt_d(s.median),
        fmt_d(p.median)
    );
    println!();
    println!("{}", targets_header());
    println!(
        "{}",
        target_row(
            &format!("{n} kept jobs: the keeper's RSS ≤ 40 MB"),
            &format!("{rss:.1} MB"),
            rss <= 40.0
        )
    );
    println!(
        "{}",
        target_row(
            &format!("{n} kept jobs: the keeper's threads ≤ 16"),
            &threads.to_string(),
            threads <= 16
        )
    );
    println!();
}
