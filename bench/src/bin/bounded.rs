//! Bounded cost: memory and read latency must not grow with a job's output.
//!
//! `bounded [MB]` (default 1000) starts a fresh `ptyjobs` for each case and reads its RSS from
//! `/proc/<pid>/status` (growth = peak `VmHWM` during the job − `VmRSS` before it):
//! 1. a job writing MB megabytes of text lines (`yes … | head -c`), default transcript cap;
//! 2. a job writing one 50 MB line with no newline (`head -c | tr`), default cap;
//! 3. `--transcript-bytes 16000000` and `seq 1 1000000`: a finished job holding 1M lines.
//!
//! While jobs 1 and 2 run, `tail_job_output(3)` and `get_job_status` are called on the big job
//! and, interleaved, on a tiny finished job of the same server (the reference: same server,
//! same CPU load, no log). On job 3, once finished, the same calls, 200 of each, interleaved
//! with the tiny job's.

#![allow(clippy::print_stdout)] // a benchmark reports on stdout
use std::process::Command;
use std::time::{Duration, Instant};

use ptyjobs_bench::{
    Rpc, Stats, fmt_d, peak_rss_mb, ratio, rss_mb, sibling, target_row, targets_header,
};
use ptyjobs_engine::EngineConfig;
use serde_json::{Value, json};

struct Case {
    name: String,
    cap_mb: f64,
    growth_mb: f64,
    held_lines: u64,
    tail_bytes: usize,
    big: [Stats; 2],
    tiny: [Stats; 2],
    /// Median of the big job's calls in the last quarter of its run over the first quarter
    /// (tail, status): does the latency grow with the log? `None` for a finished job.
    late_early: Option<[f64; 2]>,
}

/// Median of the last quarter of `v` over the median of its first quarter.
fn late_over_early(v: &[Duration]) -> f64 {
    let q = (v.len() / 4).max(1);
    Stats::of(&v[v.len() - q..]).median.as_secs_f64() / Stats::of(&v[..q]).median.as_secs_f64()
}

fn start(args: &[&str], tiny: &str) -> (Rpc, String) {
    let mut cmd = Command::new(sibling("ptyjobs"));
    cmd.args(args);
    let mut pj = Rpc::spawn(cmd);
    pj.initialize();
    let tiny = pj.tool("execute_command", json!({"command": tiny}));
    let tiny = tiny["job_id"].as_str().expect("job_id").to_string();
    pj.tool("wait_for_job", json!({"job_id": tiny}));
    std::thread::sleep(Duration::from_millis(200));
    (pj, tiny)
}

/// One `tail_job_output(3)` and one `get_job_status` of `id`, timed; the status and the size
/// of the tail's text.
fn probe(
    pj: &mut Rpc,
    id: &str,
    tail: &mut Vec<Duration>,
    st: &mut Vec<Duration>,
) -> (Value, usize) {
    let (d, t) = pj.timed(|p| p.tool("tail_job_output", json!({"job_id": id, "lines": 3})));
    tail.push(d);
    let (d, s) = pj.timed(|p| p.tool("get_job_status", json!({"job_id": id})));
    st.push(d);
    let len = t["output"].as_str().map_or(0, str::len);
    (s["status"].clone(), len)
}

/// Runs `command` in a fresh server, probing while it runs; `tiny` is the reference job.
fn running_case(name: &str, command: &str, tiny: &str, cap: usize) -> Case {
    let (mut pj, tiny) = start(&[], tiny);
    let pid = pj.pid();
    let rss0 = rss_mb(pid);
    let job = pj.tool("execute_command", json!({"command": command}));
    let id = job["job_id"].as_str().expect("job_id").to_string();
    let (mut bt, mut bs, mut tt, mut ts) = (vec![], vec![], vec![], vec![]);
    let mut tail_bytes = 0;
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(600) {
        let (status, len) = probe(&mut pj, &id, &mut bt, &mut bs);
        tail_bytes = tail_bytes.max(len);
        probe(&mut pj, &tiny, &mut tt, &mut ts);
        if status != "running" {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let growth = peak_rss_mb(pid) - rss0;
    let out = pj.tool("get_job_output", json!({"job_id": id, "limit": 1}));
    pj.close(Duration::from_secs(10));
    Case {
        name: format!("{name} (running {:.1} s)", t.elapsed().as_secs_f64()),
        cap_mb: cap as f64 / 1e6,
        growth_mb: growth,
        held_lines: out["total_lines"].as_u64().unwrap_or(0)
            - out["dropped_lines"].as_u64().unwrap_or(0),
        tail_bytes,
        big: [Stats::of(&bt), Stats::of(&bs)],
        tiny: [Stats::of(&tt), Stats::of(&ts)],
        late_early: Some([late_over_early(&bt), late_over_early(&bs)]),
    }
}

fn held_case(lines: u64, cap: usize) -> Case {
    let cap_arg = cap.to_string();
    let (mut pj, tiny) = start(&["--transcript-bytes", &cap_arg], "echo tiny");
    let pid = pj.pid();
    let rss0 = rss_mb(pid);
    let job = pj.tool(
        "execute_command",
        json!({"command": format!("seq 1 {lines}")}),
    );
    let id = job["job_id"].as_str().expect("job_id").to_string();
    let w = pj.tool("wait_for_job", json!({"job_id": id}));
    assert_eq!(w["status"], "completed", "{w}");
    let growth = peak_rss_mb(pid) - rss0;
    let (mut bt, mut bs, mut tt, mut ts) = (vec![], vec![], vec![], vec![]);
    let mut tail_bytes = 0;
    for _ in 0..200 {
        tail_bytes = tail_bytes.max(probe(&mut pj, &id, &mut bt, &mut bs).1);
        probe(&mut pj, &tiny, &mut tt, &mut ts);
    }
    let out = pj.tool("get_job_output", json!({"job_id": id, "limit": 1}));
    pj.close(Duration::from_secs(10));
    Case {
        name: format!("finished job holding {lines} lines (`seq`)"),
        cap_mb: cap as f64 / 1e6,
        growth_mb: growth,
        held_lines: out["total_lines"].as_u64().unwrap_or(0)
            - out["dropped_lines"].as_u64().unwrap_or(0),
        tail_bytes,
        big: [Stats::of(&bt), Stats::of(&bs)],
        tiny: [Stats::of(&tt), Stats::of(&ts)],
        late_early: None,
    }
}

fn main() {
    let mb: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1000);
    let cap = EngineConfig::default().transcript_bytes;
    let cases = [
        running_case(
            &format!("{mb} MB of lines"),
            &format!(
                "yes 'the quick brown fox jumps over the lazy dog 0123456789' | head -c {}",
                mb * 1_000_000
            ),
            "echo tiny",
            cap,
        ),
        // The reference job's tail is as big as the 50 MB line's: three 64 KiB pieces.
        running_case(
            "one 50 MB line",
            "head -c 50000000 /dev/zero | tr '\\0' x",
            "head -c 300000 /dev/zero | tr '\\0' x",
            cap,
        ),
        held_case(1_000_000, 16_000_000),
    ];
    println!("## Bounded cost\n");
    println!(
        "A fresh server per case. RSS growth = peak `VmHWM` − `VmRSS` before the job. Latency: \
         median (p99) of calls on the big job, beside the same calls on a small finished \
         reference job of the same server, interleaved (same load, small log; for the 50 MB \
         line the reference's tail is also three 64 KiB pieces). For running jobs the verdict \
         compares the last quarter of the run with the first, as the log grew.\n"
    );
    println!(
        "| case | transcript cap | RSS growth | lines held | `tail_job_output(3)` | tiny job | ratio | `get_job_status` | tiny job | ratio |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    let ms = |s: Stats| format!("{} ({})", fmt_d(s.median), fmt_d(s.p99));
    let r = |a: Stats, b: Stats| ratio(a.median.as_secs_f64(), b.median.as_secs_f64());
    for c in &cases {
        println!(
            "| {} | {:.1} MB | {:.1} MB | {} | {} | {} | {} | {} | {} | {} |",
            c.name,
            c.cap_mb,
            c.growth_mb,
            c.held_lines,
            ms(c.big[0]),
            ms(c.tiny[0]),
            r(c.big[0], c.tiny[0]),
            ms(c.big[1]),
            ms(c.tiny[1]),
            r(c.big[1], c.tiny[1]),
        );
    }
    println!();
    println!("{}", targets_header());
    for c in &cases {
        println!(
            "{}",
            target_row(
                &format!("{}: RSS growth ≤ cap + 16 MB", c.name),
                &format!("{:.1} MB vs {:.1} MB allowed", c.growth_mb, c.cap_mb + 16.0),
                c.growth_mb <= c.cap_mb + 16.0
            )
        );
    }
    for c in &cases {
        // Running: the last quarter of the run against the first (the log grew in between).
        // Finished: the big job against the reference job.
        let (worst, how) = match c.late_early {
            Some(r) => (r[0].max(r[1]), "late / early in the run"),
            None => (
                (0..2)
                    .map(|i| c.big[i].median.as_secs_f64() / c.tiny[i].median.as_secs_f64())
                    .fold(0.0, f64::max),
                "big job / reference job",
            ),
        };
        println!(
            "{}",
            target_row(
                &format!(
                    "{}: tail(3) and status latency independent of log size (≤ 2 ×)",
                    c.name
                ),
                &format!(
                    "worst {how}: {worst:.2} ×; largest tail answer {} bytes",
                    c.tail_bytes
                ),
                worst <= 2.0
            )
        );
    }
    println!();
}
