//! Start-up: spawn → `initialize` answered, and idle memory after it.
//!
//! `startup [RUNS]` (default 20) times, interleaved run by run:
//! - the `ptyjobs` release binary, against the trivial rmcp server `rmcp_ping` (the SDK alone);
//! - the npm launcher (`node npm/ptyjobs/bin/ptyjobs.js`, `PTYJOBS_BINARY` set to the release
//!   binary), against bare `node -e 0` (spawn → exit);
//!
//! and reads the idle RSS (`VmRSS` in `/proc/<pid>/status`) of each server 100 ms after
//! `notifications/initialized`. Each server is then shut down by closing its stdin.

#![allow(clippy::print_stdout)] // a benchmark reports on stdout
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ptyjobs_bench::{
    Rpc, Stats, fmt_d, ratio, repo_root, rss_mb, sibling, target_row, targets_header,
};

/// Spawn → `initialize` answered; then the idle RSS in MB.
fn start(cmd: Command) -> (Duration, f64) {
    let t = Instant::now();
    let mut rpc = Rpc::spawn(cmd);
    rpc.initialize();
    let d = t.elapsed();
    std::thread::sleep(Duration::from_millis(100));
    let rss = rss_mb(rpc.pid());
    rpc.close(Duration::from_secs(5));
    (d, rss)
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let runs: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(20);
    let bin = sibling("ptyjobs");
    let launcher = repo_root().join("npm/ptyjobs/bin/ptyjobs.js");
    let (mut tb, mut tr, mut tl, mut tn) = (vec![], vec![], vec![], vec![]);
    let (mut rb, mut rr) = (vec![], vec![]);
    for _ in 0..runs {
        let (d, r) = start(Command::new(&bin));
        tb.push(d);
        rb.push(r);
        let (d, r) = start(Command::new(sibling("rmcp_ping")));
        tr.push(d);
        rr.push(r);
        let mut cmd = Command::new("node");
        cmd.arg(&launcher).env("PTYJOBS_BINARY", &bin);
        tl.push(start(cmd).0);
        let t = Instant::now();
        let ok = Command::new("node")
            .args(["-e", "0"])
            .stdin(Stdio::null())
            .status()
            .expect("node");
        assert!(ok.success());
        tn.push(t.elapsed());
    }
    let [b, r, l, n] = [tb, tr, tl, tn].map(|v| Stats::of(&v));
    let (rb, rr) = (median(&mut rb), median(&mut rr));
    println!("## Start-up\n");
    println!(
        "Spawn → `initialize` answered, {runs} interleaved runs, median (p99 = max here). \
         Idle RSS read from `/proc/<pid>/status` 100 ms after `notifications/initialized`.\n"
    );
    println!("| measure | ptyjobs | reference | reference value | ratio |");
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
    row("binary start → initialized", b, "trivial rmcp server", r);
    row(
        "npm launcher start → initialized",
        l,
        "`node -e 0` (start → exit)",
        n,
    );
    println!(
        "| idle RSS of the server | {rb:.1} MB | trivial rmcp server | {rr:.1} MB | {} |",
        ratio(rb, rr)
    );
    println!();
    println!("{}", targets_header());
    println!(
        "{}",
        target_row(
            "binary start → initialized ≤ 5 ms",
            &fmt_d(b.median),
            b.median <= Duration::from_millis(5)
        )
    );
    let vs = b.median.as_secs_f64() / r.median.as_secs_f64();
    println!(
        "{}",
        target_row(
            "binary start → initialized ≤ 1.3 × a trivial rmcp server",
            &format!("{} vs {} = {vs:.2} ×", fmt_d(b.median), fmt_d(r.median)),
            vs <= 1.3
        )
    );
    println!(
        "{}",
        target_row("idle RSS ≤ 10 MB", &format!("{rb:.1} MB"), rb <= 10.0)
    );
    println!();
}
