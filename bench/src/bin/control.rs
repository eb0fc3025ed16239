//! Control of another live server's job against the same call on an own job, through two real
//! `ptyjobs` servers sharing one state directory (issue 23's target: ≤ 2 ×).
//!
//! `control [CALLS]` (default 2,000) starts servers A and B on the state directory of
//! `PTYJOBS_STATE_DIR` (the servers' default), has A start `cat` (echo off), then times, one call
//! at a time in ten interleaved rounds, each call through A (the job's own server) and through B
//! (another server: its answer is read from the job's record, or asked of A over A's attach
//! socket): `get_job_status`, `interact_with_job` with `wait_ms: 0` (the input written, no
//! response awaited) and `get_job_screen`. Prints medians and p99s, the ratios, and the
//! target's verdict.

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

fn main() {
    let calls: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(2_000);
    let per = calls.div_ceil(ROUNDS);
    let (mut a, mut b) = (server(), server());
    let job = a.tool(
        "execute_command",
        json!({"command": "stty -echo; echo ready; exec cat >/dev/null"}),
    );
    let id = job["job_id"].as_str().expect("job_id").to_string();
    a.tool(
        "wait_for_job",
        json!({"job_id": id, "pattern": "ready", "from_start": true}),
    );
    let calls = [
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
    ];
    // Through B once first: the record and the socket are warm for both.
    for (_, params) in &calls {
        b.call("tools/call", params.clone());
    }
    let mut own = vec![Vec::new(); calls.len()];
    let mut foreign = vec![Vec::new(); calls.len()];
    for _ in 0..ROUNDS {
        for (i, (_, params)) in calls.iter().enumerate() {
            time_calls(&mut a, per, &mut own[i], params);
            time_calls(&mut b, per, &mut foreign[i], params);
        }
    }
    a.tool("kill_job", json!({"job_id": id}));
    b.close(Duration::from_secs(5));
    a.close(Duration::from_secs(5));

    println!("## Control of another server's job");
    println!();
    println!(
        "Two servers on one state directory; one call at a time, {} calls each, {ROUNDS} \
         interleaved rounds; median (p99).",
        per * ROUNDS
    );
    println!();
    println!("| call | another server's job | the job's own server | ratio of medians |");
    println!("|---|---|---|---|");
    let mut worst = 0.0f64;
    for (i, (what, _)) in calls.iter().enumerate() {
        let (o, f) = (Stats::of(&own[i]), Stats::of(&foreign[i]));
        let r = f.median.as_secs_f64() / o.median.as_secs_f64();
        worst = worst.max(r);
        println!(
            "| {what} | {} ({}) | {} ({}) | {} |",
            fmt_d(f.median),
            fmt_d(f.p99),
            fmt_d(o.median),
            fmt_d(o.p99),
            ratio(r, 1.0)
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
}
