//! The two output workloads, end to end: the same shell command read by a bare PTY
//! reader, through ptyjobs' engine, and under a pipe.
//!
//! `workloads [ROUNDS] [SCALE]` (defaults 5 and 1.0) runs, for each workload, ROUNDS rounds
//! that alternate the three readers (so all see the same machine noise), and prints medians:
//! - `lines`: 1M lines of 50 bytes, `yes <49 characters> | head -n 1000000` (50 MB);
//! - `long line`: one 50 MB line with no newline, `head -c 50000000 /dev/zero | tr '\0' x`;
//!
//! read by:
//! - bare PTY reader: this process opens a PTY, runs `sh -c <command>` on it (fork, setsid,
//!   the slave as controlling terminal) and reads the master to EIO with no processing at all
//!   — the physical limit of a PTY;
//! - ptyjobs' engine: `JobManager::execute` → `wait`, spawn → job final with all output held;
//! - pipe: `sh -c <command>` with stdout on a pipe this process reads to EOF — what a server
//!   that does not use a PTY at all would do (its answer is the same bytes, unparsed).
//!
//! SCALE shrinks the sizes for a quick run (`0.1`: 100,000 lines, a 5 MB line).
//!
//! `workloads ROUNDS SCALE WORKLOAD [READERS]` runs one workload only (`lines` or `long`) and,
//! with READERS (a comma-separated subset of `bare,engine,pipe`), only those readers: to profile
//! one path (`perf record`, `valgrind --tool=cachegrind ... long engine`). A reader left out
//! shows as 0 in the table.

#![allow(clippy::print_stdout)] // a benchmark reports on stdout
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ptyjobs_bench::{fmt_d, raw_pty_spawn, read_to_end, target_row, targets_header};
use ptyjobs_engine::{EngineConfig, JobManager, JobSpec};

struct Workload {
    name: String,
    command: String,
    bytes: usize,
}

fn workloads(scale: f64) -> Vec<Workload> {
    let lines = ((1_000_000.0 * scale) as usize).max(1000);
    let long = ((50_000_000.0 * scale) as usize).max(100_000);
    vec![
        Workload {
            name: if lines == 1_000_000 {
                "1M lines of 50 B".to_owned()
            } else {
                format!("{lines} lines of 50 B")
            },
            // 49 characters + newline = 50 bytes a line (51 under a PTY: `\r\n`).
            command: format!("yes {} | head -n {lines}", "x".repeat(49)),
            bytes: lines * 50,
        },
        Workload {
            name: format!("one {} MB line, no newline", long / 1_000_000),
            command: format!("head -c {long} /dev/zero | tr '\\0' x"),
            bytes: long,
        },
    ]
}

/// Spawn → all output read to EIO from a PTY master (nothing else done with the bytes).
fn bare(w: &Workload) -> Duration {
    let t = Instant::now();
    let mut pty = raw_pty_spawn(&w.command);
    let got = read_to_end(&pty.master, |_| {});
    pty.child.wait().expect("wait");
    assert!(got >= w.bytes, "bare reader got {got} of {}", w.bytes);
    t.elapsed()
}

/// Spawn → all output read to EOF from a pipe.
fn pipe(w: &Workload) -> Duration {
    let t = Instant::now();
    let mut child = Command::new("/bin/sh")
        .arg("-c")
        .arg(&w.command)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let mut out = child.stdout.take().expect("stdout");
    let mut buf = vec![0u8; 1 << 16];
    let mut got = 0usize;
    loop {
        match out.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => panic!("read: {e}"),
        }
    }
    child.wait().expect("wait");
    assert!(got >= w.bytes, "pipe reader got {got} of {}", w.bytes);
    t.elapsed()
}

/// Through the engine: spawn → job final with all output held.
async fn engine(m: &JobManager, w: &Workload) -> Duration {
    let t = Instant::now();
    let job = m.execute(JobSpec::new(w.command.clone())).expect("execute");
    let info = m
        .wait(job.id, Some(Duration::from_secs(600)))
        .await
        .expect("wait");
    let d = t.elapsed();
    assert_eq!(info.exit_code, Some(0), "{}: {info:?}", w.name);
    d
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v.get(v.len() / 2).copied().unwrap_or_default()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let rounds: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(5);
    let scale: f64 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(1.0);
    let only = args
        .get(3)
        .filter(|a| *a != "all")
        .map(|a| match a.as_str() {
            "long" => "one ",
            _ => "lines",
        });
    let readers = args.get(4).map_or("bare,engine,pipe", String::as_str);
    let (run_bare, run_engine, run_pipe) = (
        readers.contains("bare"),
        readers.contains("engine"),
        readers.contains("pipe"),
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("rt");
    println!("## The issue's workloads: bare PTY, ptyjobs, pipe\n");
    println!(
        "Each command run {rounds} times per reader, the three readers alternating round by \
         round; medians of spawn → all output read (bare PTY reader, pipe) or job final with \
         all output held (ptyjobs' engine, in process: the server adds nothing to the read \
         path). MB/s counts the command's bytes (a PTY adds a `\\r` per line).\n"
    );
    println!(
        "| workload | bare PTY reader | ptyjobs | ratio | pipe (`sh -c … > pipe`) | ptyjobs / pipe time |"
    );
    println!("|---|---|---|---|---|---|");
    let mut verdicts = Vec::new();
    rt.block_on(async {
        let m = JobManager::new(EngineConfig {
            max_running: 4,
            ..EngineConfig::default()
        })
        .expect("manager");
        for w in workloads(scale) {
            if only.is_some_and(|o| !w.name.contains(o)) {
                continue;
            }
            let (mut b, mut e, mut p) = (vec![], vec![], vec![]);
            for _ in 0..rounds {
                if run_bare {
                    b.push(bare(&w));
                }
                if run_engine {
                    e.push(engine(&m, &w).await);
                }
                if run_pipe {
                    p.push(pipe(&w));
                }
            }
            let (b, e, p) = (median(b), median(e), median(p));
            let rate = |d: Duration| w.bytes as f64 / d.as_secs_f64() / 1e6;
            let re = b.as_secs_f64() / e.as_secs_f64();
            println!(
                "| {} | {} ({:.0} MB/s) | {} ({:.0} MB/s) | {re:.2} × | {} ({:.0} MB/s) | {:.1} × |",
                w.name,
                fmt_d(b),
                rate(b),
                fmt_d(e),
                rate(e),
                fmt_d(p),
                rate(p),
                e.as_secs_f64() / p.as_secs_f64(),
            );
            verdicts.push(target_row(
                &format!("{}: through ptyjobs ≥ 0.8 × bare PTY reader", w.name),
                &format!("{re:.2} × ({} vs {})", fmt_d(e), fmt_d(b)),
                re >= 0.8,
            ));
        }
        m.shutdown().await;
    });
    println!();
    println!("{}", targets_header());
    for v in verdicts {
        println!("{v}");
    }
    println!();
}
