//! Control of another live server's job against the same call on an own job, through two real
//! `ptyjobs` servers sharing one state directory (issue 23's target: ≤ 2 ×).
//!
//! `control [CALLS]` (default 2,000) starts servers A and B on the state directory of
//! `PTYJOBS_STATE_DIR` (the servers' default), has A start `cat` (echo off), then times, one call
//! at a time in ten interleaved rounds, each call through A (the job's own server) and through B
//! (another server: its answer is read from the job's record, or asked of A over A's attach
//! socket): `get_job_status`, `interact_with_job` with `wait_ms: 0` (the input written, no
//! response awaited) and `get_job_screen`; and the same calls through B on a kept `cat` A
//! started (the keeper runs it: control goes over the keeper's socket). Prints medians and p99s,
//! the ratios, and the targets' verdicts.

#![allow(clippy::print_stdout)] // a benchmark reports on stdout
use std::process::Command;
use std::time::{Duration, Instant};

use ptyjobs_bench::{Rpc, Stats, fmt_d, ratio, sibling, target_row, targets_header};
use serde_json::{Value, json};

const ROUNDS: usize = 10;

fn time_calls(rpc: &mut Rpc, n: usize, out: &mut Vec<Duration>, params: &Value) {
    for _ in 0..n {
        let t = Instant::now();
        let r = rpc.call("tools/call", params.clone());
        out.push(t.elapsed());
        assert!(r["isError"] != true, "{r}");
    }
}

fn server() -> Rpc {
    let mut rpc = Rpc::spawn(Command::new(sibling("ptyjobs")));
    rpc.initialize();
    rpc
}

/// Starts `cat` (echo off) through `rpc`, kept or not; returns its id once it is ready.
fn start_cat(rpc: &mut Rpc, keep: bool) -> String {
    let job = rpc.tool(
        "execute_command",
        json!({"command": "stty -echo; echo ready; exec cat >/dev/null", "keep": keep}),
    );
    let id = job["job_id"].as_str().expect("job_id").to_string();
    rpc.tool(
        "wait_for_job",
        json!({"job_id": id, "pattern": "ready", "from_start": true}),
    );
    id
}

/// The three calls on job `id`.
fn calls_on(id: &str) -> [(&'static str, Value); 3] {
    [
        (
            "`get_job_status`",
            json!({"name": "get_job_status", "arguments": {"job_id": id}}),
        ),
        (
            "`interact_with_job` (input, `wait_ms: 0`)",
            json!({"name": "interact_with_job", "arguments": {"job_id": id, "input": "x", "wait_ms": 0}}),
        ),
        (
            "`get_job_screen`",
            json!({"name": "get_job_screen", "arguments": {"job_id": id}}),
        ),
    ]
}

fn main() {
    let calls: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(2_000);
    let per = calls.div_ceil(ROUNDS);
    let (mut a, mut b) = (server(), server());
    let id = start_cat(&mut a, false);
    let kept_id = start_cat(&mut a, true);
    let calls = calls_on(&id);
    let kept_calls = calls_on(&kept_id);
    // Through B once first: the record and the socket are warm for both.
    for (_, params) in calls.iter().chain(&kept_calls) {
        b.call("tools/call", params.clone());
        a.call("tools/call", params.clone());
    }
    let mut own = vec![Vec::new(); calls.len()];
    let mut foreign = vec![Vec::new(); calls.len()];
    let mut kept = vec![Vec::new(); calls.len()];
    for _ in 0..ROUNDS {
        for (i, (_, params)) in calls.iter().enumerate() {
            time_calls(&mut a, per, &mut own[i], params);
            time_calls(&mut b, per, &mut foreign[i], params);
            time_calls(&mut b, per, &mut kept[i], &kept_calls[i].1);
        }
    }
    a.tool("kill_job", json!({"job_id": id}));
    a.tool("kill_job", json!({"job_id": kept_id}));
    b.close(Duration::from_secs(5));
    a.close(Duration::from_secs(5));

    println!("## Control of another server's job, and of a kept job");
    println!();
    println!(
        "Two servers A and B on one state directory; A started two `cat` jobs, one kept (run by \
         the keeper). Each call timed on A's own job through A, on the same job through B, and \
         on the kept job through B; one call at a time, {} calls each, {ROUNDS} interleaved \
         rounds; median (p99).",
        per * ROUNDS
    );
    println!();
    println!(
        "| call | another server's job | a kept job | the job's own server | ratios (another's; kept) |"
    );
    println!("|---|---|---|---|---|");
    let (mut worst, mut worst_kept) = (0.0f64, 0.0f64);
    for (i, (what, _)) in calls.iter().enumerate() {
        let (o, f, k) = (
            Stats::of(&own[i]),
            Stats::of(&foreign[i]),
            Stats::of(&kept[i]),
        );
        let r = f.median.as_secs_f64() / o.median.as_secs_f64();
        let rk = k.median.as_secs_f64() / o.median.as_secs_f64();
        worst = worst.max(r);
        worst_kept = worst_kept.max(rk);
        println!(
            "| {what} | {} ({}) | {} ({}) | {} ({}) | {}; {} |",
            fmt_d(f.median),
            fmt_d(f.p99),
            fmt_d(k.median),
            fmt_d(k.p99),
            fmt_d(o.median),
            fmt_d(o.p99),
            ratio(r, 1.0),
            ratio(rk, 1.0)
        );
    }
    println!();
    println!("{}", targets_header());
    println!(
        "{}",
        target_row(
            "control of another server's job (status, input, screen) ≤ 2 × the same call on an own job",
            &format!("{} (worst of the three)", ratio(worst, 1.0)),
            worst <= 2.0
        )
    );
    println!(
        "{}",
        target_row(
            "control of a kept job (status, input, screen) ≤ 2 × the same call on an own job",
            &format!("{} (worst of the three)", ratio(worst_kept, 1.0)),
            worst_kept <= 2.0
        )
    );
}
