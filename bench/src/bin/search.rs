//! Search over a stored disk log: how long `search` takes on a job of an earlier run.
//!
//! `search DIR [MB] [ROUNDS]` (defaults 100 and 7): with DIR as the state directory, makes
//! (once; later runs reuse it) a finished job whose log holds about MB megabytes of `seq`
//! lines, then, in a fresh manager (the job is stored, not in memory), times ROUNDS searches
//! of the whole log for a pattern that matches one line, and prints the median, the minimum,
//! and the process's peak RSS (the search streams the log: memory must not follow its size).

#![allow(clippy::print_stdout)] // a benchmark reports on stdout
use std::time::{Duration, Instant};

use ptyjobs_bench::fmt_d;
use ptyjobs_engine::{EngineConfig, JobManager, JobSpec, StoreConfig, compile_pattern};

fn manager(dir: &std::path::Path) -> JobManager {
    JobManager::new(EngineConfig {
        store: Some(StoreConfig {
            job_log_bytes: u64::MAX,
            keep_bytes: u64::MAX,
            ..StoreConfig::new(dir)
        }),
        ..EngineConfig::default()
    })
    .expect("manager with a state directory")
}

fn main() {
    let mut args = std::env::args().skip(1);
    let dir = std::path::PathBuf::from(args.next().expect("usage: search DIR [MB] [ROUNDS]"));
    let mb: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(100);
    let rounds: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(7);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("rt");
    rt.block_on(async {
        let first = manager(&dir);
        if first.list().is_empty() {
            // `seq 1 N` prints about 8 bytes a line at these sizes.
            let n = mb * 1_000_000 / 8;
            let job = first
                .execute(JobSpec::new(format!("seq 1 {n}")))
                .expect("execute");
            let info = first
                .wait(job.id, Some(Duration::from_secs(3600)))
                .await
                .expect("wait");
            assert!(info.status.is_final());
        }
        first.shutdown().await;
        drop(first);
        let m = manager(&dir);
        let id = m.list()[0].id;
        let re = compile_pattern("^1234567$").expect("pattern");
        let mut times = Vec::new();
        for _ in 0..rounds {
            let t = Instant::now();
            let r = m.search(id, &re, 2, 10).expect("search");
            times.push(t.elapsed());
            assert_eq!(r.total_matches, 1);
        }
        times.sort();
        let hwm = std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("VmHWM:"))
                    .map(str::to_owned)
            })
            .unwrap_or_default();
        println!(
            "search of {} lines: median {} min {} ({rounds} rounds); {hwm}",
            m.output(id, Some(u64::MAX), Some(0))
                .expect("output")
                .total_lines,
            fmt_d(times[rounds / 2]),
            fmt_d(times[0]),
        );
    });
}
