//! Tool round trip through the real `ptyjobs` release binary, against the rmcp SDK's floor.
//!
//! `roundtrip [CALLS]` (default 10,000) starts `ptyjobs --max-jobs 1000` and the trivial rmcp
//! server `rmcp_ping` (same SDK, same transport, no tools) and drives both with one lean
//! JSON-RPC client (newline-delimited JSON on the child's stdio, after `initialize` and
//! `notifications/initialized`). Calls go one at a time — send, read the answer — in ten
//! interleaved rounds so both sides see the same machine noise. Measured:
//! - `ping` on `rmcp_ping` (the floor) and on `rmcp_ping --stdio` (the SDK's generic stdio);
//! - `ping`, `get_job_status` (of a running job) and `execute_command("true")` on `ptyjobs`,
//!   and `execute_command("true")` on a second `ptyjobs --no-persist` (the cost of the job
//!   records on disk; the benches' state directory is a temp dir, see `bench/run.sh`);
//! - a raw PTY spawn of `sh -c true` done by this process: openpty, fork, setsid, TIOCSCTTY,
//!   exec — the engine's own mechanism without the engine — until `spawn` returns (the
//!   reference of `execute_command`, whose answer comes once the job is spawned), and until
//!   the child is reaped.
//!
//! Spawns are measured two ways, each beside the raw spawn done the same way: one at a time
//! (each job has ended before the next call, untimed: `wait_for_job`, or the raw child reaped)
//! — what a start costs, and the target's measure — and back to back (the next call while the
//! last job's shell still runs: `sh -c true` takes about a millisecond of CPU here, so on two
//! cores the server's thread then waits for a core; the raw reference reaps its children only
//! after the round, so they run on beside the next spawns the same way).
//!
//! Prints medians and p99s with the ratios, and the targets with verdicts.

#![allow(clippy::print_stdout)] // a benchmark reports on stdout
use std::process::Command;
use std::time::{Duration, Instant};

use ptyjobs_bench::{Rpc, Stats, fmt_d, ratio, raw_pty_spawn, sibling, target_row, targets_header};
use serde_json::{Value, json};

const ROUNDS: usize = 10;

fn server(name: &str, args: &[&str]) -> Rpc {
    let mut cmd = Command::new(sibling(name));
    cmd.args(args);
    let mut rpc = Rpc::spawn(cmd);
    rpc.initialize();
    rpc
}

fn time_calls(rpc: &mut Rpc, n: usize, out: &mut Vec<Duration>, method: &str, params: &Value) {
    for _ in 0..n {
        let t = Instant::now();
        rpc.call(method, params.clone());
        out.push(t.elapsed());
    }
}

/// Like [`time_calls`] for `execute_command`, but each job has ended before the next call: the
/// wait (`wait_for_job`) is not timed.
fn time_spawns(rpc: &mut Rpc, n: usize, out: &mut Vec<Duration>, exec: &Value) {
    for _ in 0..n {
        let t = Instant::now();
        let started = rpc.call("tools/call", exec.clone());
        out.push(t.elapsed());
        let id = started["structuredContent"]["job_id"]
            .as_str()
            .expect("job_id")
            .to_string();
        let waited = rpc.tool("wait_for_job", json!({"job_id": id}));
        assert_eq!(waited["reason"], "exited", "{waited}");
    }
}

fn main() {
    let calls: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(10_000);
    let per = calls.div_ceil(ROUNDS);
    let mut floor = server("rmcp_ping", &[]);
    let mut generic = server("rmcp_ping", &["--stdio"]);
    let mut pj = server("ptyjobs", &["--max-jobs", "1000"]);
    // The same server keeping jobs in memory only: what the job records on disk cost a spawn.
    let mut mem = server("ptyjobs", &["--max-jobs", "1000", "--no-persist"]);

    // A running job: it stays in memory however many finished jobs the rounds leave behind
    // (the oldest finished ones are evicted from memory and then read from disk).
    let job = pj.tool(
        "execute_command",
        json!({"command": "echo ready; sleep 3600"}),
    );
    let job_id = job["job_id"].as_str().expect("job_id").to_string();
    pj.tool(
        "wait_for_job",
        json!({"job_id": job_id, "pattern": "ready", "from_start": true}),
    );

    let ping = json!({});
    let status = json!({"name": "get_job_status", "arguments": {"job_id": job_id}});
    let exec = json!({"name": "execute_command", "arguments": {"command": "true"}});
    let [
        mut f,
        mut g,
        mut p,
        mut s,
        mut e,
        mut em,
        mut raw,
        mut raw_exit,
        mut e_b2b,
        mut raw_b2b,
    ]: [Vec<Duration>; 10] = Default::default();
    for _ in 0..ROUNDS {
        time_calls(&mut floor, per, &mut f, "ping", &ping);
        time_calls(&mut generic, per, &mut g, "ping", &ping);
        time_calls(&mut pj, per, &mut p, "ping", &ping);
        time_calls(&mut pj, per, &mut s, "tools/call", &status);
        time_spawns(&mut pj, per, &mut e, &exec);
        time_spawns(&mut mem, per, &mut em, &exec);
        time_calls(&mut pj, per, &mut e_b2b, "tools/call", &exec);
        for _ in 0..per {
            let t = Instant::now();
            let mut r = raw_pty_spawn("true");
            raw.push(t.elapsed());
            r.child.wait().expect("wait");
            raw_exit.push(t.elapsed());
        }
        // Reaped after the round: like the jobs of the calls back to back, the children run
        // on while the next ones start.
        let mut children = Vec::with_capacity(per);
        for _ in 0..per {
            let t = Instant::now();
            let r = raw_pty_spawn("true");
            raw_b2b.push(t.elapsed());
            children.push(r);
        }
        for mut r in children {
            r.child.wait().expect("wait");
        }
    }
    let exec_answer = pj.call("tools/call", exec.clone());
    assert!(
        exec_answer["structuredContent"]["job_id"].is_string(),
        "{exec_answer}"
    );
    floor.close(Duration::from_secs(5));
    generic.close(Duration::from_secs(5));
    pj.close(Duration::from_secs(10));
    mem.close(Duration::from_secs(10));

    let [f, g, p, s, e, em, raw, raw_exit, e_b2b, raw_b2b]: [Stats; 10] =
        [f, g, p, s, e, em, raw, raw_exit, e_b2b, raw_b2b].map(|v: Vec<Duration>| Stats::of(&v));
    println!("## Tool round trip\n");
    println!(
        "One call at a time, {} calls each, {ROUNDS} interleaved rounds; \
         median (p99). Reference measured in the same run.\n",
        f.n
    );
    println!("| call | median (p99) | reference | median (p99) | ratio of medians |");
    println!("|---|---|---|---|---|");
    let row = |name: &str, a: Stats, rname: &str, b: Stats| {
        println!(
            "| {name} | {} ({}) | {rname} | {} ({}) | {} |",
            fmt_d(a.median),
            fmt_d(a.p99),
            fmt_d(b.median),
            fmt_d(b.p99),
            ratio(a.median.as_secs_f64(), b.median.as_secs_f64())
        );
    };
    let floor_name = "trivial rmcp server `ping`";
    row("`get_job_status` (ptyjobs)", s, floor_name, f);
    row("`ping` (ptyjobs)", p, floor_name, f);
    row("`ping`, rmcp generic `stdio()`", g, floor_name, f);
    row(
        "`execute_command(\"true\")`, one at a time (ptyjobs)",
        e,
        "raw PTY spawn of `sh -c true`, one at a time",
        raw,
    );
    row(
        "`execute_command(\"true\")`, one at a time, `--no-persist` (ptyjobs)",
        em,
        "raw PTY spawn of `sh -c true`, one at a time",
        raw,
    );
    row(
        "`execute_command(\"true\")`, back to back (ptyjobs)",
        e_b2b,
        "raw PTY spawn of `sh -c true`, back to back",
        raw_b2b,
    );
    row(
        "`execute_command(\"true\")` on disk vs in memory",
        e,
        "`execute_command(\"true\")`, `--no-persist`",
        em,
    );
    row(
        "raw PTY spawn → child reaped",
        raw_exit,
        "raw PTY spawn of `sh -c true`",
        raw,
    );
    println!();
    println!("{}", targets_header());
    let limit = f.median.as_secs_f64() * 1.5;
    println!(
        "{}",
        target_row(
            "`get_job_status` ≤ 1.5 × rmcp ping floor",
            &format!(
                "{} vs floor {} = {}",
                fmt_d(s.median),
                fmt_d(f.median),
                ratio(s.median.as_secs_f64(), f.median.as_secs_f64())
            ),
            s.median.as_secs_f64() <= limit
        )
    );
    let over = e.median.as_secs_f64() - raw.median.as_secs_f64();
    println!(
        "{}",
        target_row(
            "`execute_command` ≤ PTY spawn + 0.5 ms (one at a time)",
            &format!(
                "{} vs spawn {}: +{:.3} ms",
                fmt_d(e.median),
                fmt_d(raw.median),
                over * 1e3
            ),
            over <= 0.5e-3
        )
    );
    println!();
}
