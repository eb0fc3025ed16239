//! What the job history on disk costs: the same output through the engine with no state
//! directory and with one (the server's default), side by side.
//!
//! `persist [MB]` (default 50) runs plain and ANSI output (the producer of `throughput`) through
//! two managers in the same process, alternating them 7 times, and prints the medians, the
//! ratio and the cost per MB of output. The disk log is uncapped here so that every megabyte
//! is written. Also measures `execute` alone (spawn of `true`, 200 times each way).

#![allow(clippy::print_stdout)] // a benchmark reports on stdout
use std::time::{Duration, Instant};

use ptyjobs_bench::{fmt_d, ratio, sibling};
use ptyjobs_engine::{EngineConfig, JobManager, JobSpec, StoreConfig};

const ROUNDS: usize = 7;

fn producer(kind: &str, bytes: usize) -> String {
    format!("{} produce {kind} {bytes}", sibling("throughput").display())
}

async fn run(m: &JobManager, command: &str) -> Duration {
    let t = Instant::now();
    let job = m.execute(JobSpec::new(command)).expect("execute");
    let info = m
        .wait(job.id, Some(Duration::from_secs(600)))
        .await
        .expect("wait");
    assert!(info.status.is_final());
    t.elapsed()
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let mb: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(50);
    let bytes = mb * 1_000_000;
    let state = std::env::temp_dir().join(format!("ptyjobs-bench-persist-{}", std::process::id()));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("rt");
    println!("## Cost of the job history on disk\n");
    println!(
        "{mb} MB per run from the same producer through the engine, without and with a state \
         directory (disk log uncapped); {ROUNDS} alternating runs each, medians. `execute`: \
         spawn of `true` until `execute` returns, 200 alternating calls each.\n"
    );
    println!("| output | in memory only | with the disk log | ratio | cost per MB of output |");
    println!("|---|---|---|---|---|");
    rt.block_on(async {
        let memory = JobManager::new(EngineConfig::default()).expect("manager");
        let disk = JobManager::new(EngineConfig {
            store: Some(StoreConfig {
                job_log_bytes: u64::MAX,
                keep_bytes: u64::MAX,
                ..StoreConfig::new(&state)
            }),
            ..EngineConfig::default()
        })
        .expect("manager with a state directory");
        for kind in ["plain", "ansi"] {
            let command = producer(kind, bytes);
            let (mut a, mut b) = (Vec::new(), Vec::new());
            for _ in 0..ROUNDS {
                a.push(run(&memory, &command).await);
                b.push(run(&disk, &command).await);
                for job in disk.list() {
                    let _ = disk.remove(job.id);
                }
            }
            let (a, b) = (median(a), median(b));
            let rate = |d: Duration| bytes as f64 / d.as_secs_f64() / 1e6;
            let per_mb = (b.as_secs_f64() - a.as_secs_f64()) * 1e3 / mb as f64;
            println!(
                "| {kind} | {:.0} MB/s | {:.0} MB/s | {} | {per_mb:+.2} ms |",
                rate(a),
                rate(b),
                ratio(b.as_secs_f64(), a.as_secs_f64()),
            );
        }
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for _ in 0..200 {
            for (m, out) in [(&memory, &mut a), (&disk, &mut b)] {
                let t = Instant::now();
                let job = m.execute(JobSpec::new("true")).expect("execute");
                out.push(t.elapsed());
                m.wait(job.id, Some(Duration::from_secs(10)))
                    .await
                    .expect("wait");
            }
        }
        let (a, b) = (median(a), median(b));
        println!(
            "| `execute(\"true\")` | {} | {} | {} | {:+.0} µs per job |",
            fmt_d(a),
            fmt_d(b),
            ratio(b.as_secs_f64(), a.as_secs_f64()),
            (b.as_secs_f64() - a.as_secs_f64()) * 1e6,
        );
        memory.shutdown().await;
        disk.shutdown().await;
    });
    let _ = std::fs::remove_dir_all(&state);
    println!();
}
