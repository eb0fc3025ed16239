//! `execute_command` with `ensure` of a service that already runs, against `get_job_status`
//! of the same job, through the real `ptyjobs` binary (issue 22's target: ≤ 1.5 ×).
//!
//! `ensure [CALLS]` (default 10,000) starts `ptyjobs`, starts a named service with
//! `{"name": "svc", "ensure": true}` and waits for its first line, then times, one call at a
//! time in ten interleaved rounds: `get_job_status` of the service, and the same
//! `execute_command` again (answered `reused: true` with the job's status and last lines,
//! nothing started). A second run of the pair has 200 finished jobs beside the service (their
//! records on disk): a reuse consults the server's own table only. Prints medians and p99s,
//! the ratio, and the target's verdict.

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
        debug_assert!(r["isError"] != true, "{r}");
    }
}

/// Median and p99 of `ensure` and `status`, and the ratio of the medians.
fn pair(rpc: &mut Rpc, per: usize, status: &Value, ensure: &Value) -> (Stats, Stats, f64) {
    let (mut s, mut e) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        time_calls(rpc, per, &mut s, status);
        time_calls(rpc, per, &mut e, ensure);
    }
    let (s, e) = (Stats::of(&s), Stats::of(&e));
    (s, e, e.median.as_secs_f64() / s.median.as_secs_f64())
}

fn main() {
    let calls: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(10_000);
    let per = calls.div_ceil(ROUNDS);
    let mut cmd = Command::new(sibling("ptyjobs"));
    cmd.args(["--max-jobs", "1000"]);
    let mut pj = Rpc::spawn(cmd);
    pj.initialize();
    let args = json!({"command": "echo ready; sleep 3600", "name": "svc", "ensure": true});
    let job = pj.tool("execute_command", args.clone());
    let job_id = job["job_id"].as_str().expect("job_id").to_string();
    pj.tool(
        "wait_for_job",
        json!({"job_id": job_id, "pattern": "ready", "from_start": true}),
    );
    let status = json!({"name": "get_job_status", "arguments": {"job_id": job_id}});
    let ensure = json!({"name": "execute_command", "arguments": args});
    let reused = pj.call("tools/call", ensure.clone());
    assert_eq!(reused["structuredContent"]["reused"], true, "{reused}");
    assert_eq!(reused["structuredContent"]["job_id"], job_id.as_str());

    let (s, e, r) = pair(&mut pj, per, &status, &ensure);
    for _ in 0..200 {
        let done = pj.tool("execute_command", json!({"command": "true", "wait": true}));
        assert_eq!(done["status"], "completed", "{done}");
    }
    let (s2, e2, r2) = pair(&mut pj, per, &status, &ensure);
    pj.close(Duration::from_secs(5));

    println!("## Ensure a running service");
    println!();
    println!(
        "One call at a time, {} calls each, {ROUNDS} interleaved rounds; median (p99).",
        per * ROUNDS
    );
    println!();
    println!("| call | median (p99) | reference | median (p99) | ratio of medians |");
    println!("|---|---|---|---|---|");
    let row = |what: &str, e: Stats, s: Stats, r: f64| {
        println!(
            "| {what} | {} ({}) | `get_job_status` of it | {} ({}) | {} |",
            fmt_d(e.median),
            fmt_d(e.p99),
            fmt_d(s.median),
            fmt_d(s.p99),
            ratio(r, 1.0)
        );
    };
    row("`execute_command(ensure)` of a running service", e, s, r);
    row("the same, 200 finished jobs beside it", e2, s2, r2);
    println!();
    println!("{}", targets_header());
    let worst = r.max(r2);
    println!(
        "{}",
        target_row(
            "`execute_command(ensure)` of a running service ≤ 1.5 × `get_job_status`",
            &format!("{} (worst of the two runs)", ratio(worst, 1.0)),
            worst <= 1.5
        )
    );
}
