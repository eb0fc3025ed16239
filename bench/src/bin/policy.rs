//! The cost of a policy (issue 24): the same jobs through two `ptyjobs` servers side by side,
//! one plain and one with `--policy` (every job under a profile: its Landlock ruleset
//! and seccomp filter made by the server, applied by the child before it execs the shell),
//! interleaved in rounds.
//!
//! `policy [CALLS] [MB] [FINDS]` (defaults 200, 100 and 2) measures, one call at a time (plain and
//! policy alternating, `ROUNDS` rounds):
//! - `execute_command("true")`: the answer (the job started) and, with `wait`, the whole job
//!   (start → exit: the sandbox's set-up included);
//! - throughput: `MB` of lines from the `throughput` bench's producer through the PTY, start →
//!   end, and the same read by a bare PTY reader (the physical limit);
//! - the sandbox's cost on a syscall-heavy job: `find /usr > /dev/null`, start → end (`FINDS`
//!   per round and server), and on a build: `cc -O1 -c` of a generated file in the write root
//!   (skipped without `cc`).
//!
//! Prints medians (p99), the differences and ratios, and the targets' verdicts.

#![allow(clippy::print_stdout)] // a benchmark reports on stdout
use std::process::Command;
use std::time::{Duration, Instant};

use ptyjobs_bench::{
    Rpc, Stats, fmt_d, ratio, raw_pty_spawn, read_to_end, sibling, target_row, targets_header,
};
use serde_json::{Value, json};

const ROUNDS: usize = 5;

fn server(policy: Option<&std::path::Path>, cwd: &std::path::Path) -> Rpc {
    let mut cmd = Command::new(sibling("ptyjobs"));
    cmd.arg("--no-persist").current_dir(cwd);
    if let Some(p) = policy {
        cmd.arg("--policy").arg(p);
    }
    let mut rpc = Rpc::spawn(cmd);
    rpc.initialize();
    rpc
}

/// The bare PTY reader: `command` on a PTY of this process, read to EIO with no processing
/// (the physical limit), start → end.
fn bare(command: &str) -> Duration {
    let t = Instant::now();
    let mut pty = raw_pty_spawn(command);
    read_to_end(&pty.master, |_| {});
    pty.child.wait().expect("wait");
    t.elapsed()
}

fn call(rpc: &mut Rpc, args: &Value) -> Duration {
    let t = Instant::now();
    let r = rpc.call(
        "tools/call",
        json!({ "name": "execute_command", "arguments": args }),
    );
    let took = t.elapsed();
    assert!(r["isError"] != true, "{r}");
    took
}

/// `per` calls of `args` on each server in each of the rounds, alternating: (plain, policy)
/// samples.
fn sample(servers: &mut [Rpc; 2], per: usize, args: &Value) -> (Vec<Duration>, Vec<Duration>) {
    let (mut a, mut b) = (Vec::new(), Vec::new());
    // Call by call, alternating: a slow moment of the machine falls on both sides.
    for _ in 0..ROUNDS * per {
        a.push(call(&mut servers[0], args));
        b.push(call(&mut servers[1], args));
    }
    (a, b)
}

fn row(what: &str, plain: Stats, policy: Stats) {
    let diff = policy.median.as_secs_f64() - plain.median.as_secs_f64();
    println!(
        "| {what} | {} ({}) | {} ({}) | {:+.3} ms | {} |",
        fmt_d(plain.median),
        fmt_d(plain.p99),
        fmt_d(policy.median),
        fmt_d(policy.p99),
        diff * 1e3,
        ratio(policy.median.as_secs_f64(), plain.median.as_secs_f64())
    );
}

fn main() {
    let mut args = std::env::args().skip(1);
    let calls: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(200);
    let mb: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(100);
    let finds: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(2);
    let dir = std::env::temp_dir().join(format!("ptyjobs-bench-policy-{}", std::process::id()));
    let proj = dir.join("proj");
    std::fs::create_dir_all(&proj).expect("mkdir");
    let file = dir.join("policy.toml");
    std::fs::write(
        &file,
        format!(
            "[profiles.default]\nwrite = [{:?}]\n",
            proj.display().to_string()
        ),
    )
    .expect("policy");
    let mut servers = [server(None, &proj), server(Some(&file), &proj)];
    let per = (calls / ROUNDS).max(1);

    let (a, b) = sample(&mut servers, per, &json!({ "command": "true" }));
    let (start_a, start_b) = (Stats::of(&a), Stats::of(&b));
    let (a, b) = sample(
        &mut servers,
        per,
        &json!({ "command": "true", "wait": true }),
    );
    let (job_a, job_b) = (Stats::of(&a), Stats::of(&b));
    // The throughput bench's producer (60 KB writes of plain lines), as its bare reader reads it.
    let produce = format!(
        "{} produce plain {}",
        sibling("throughput").display(),
        mb * 1_000_000
    );
    let seq = json!({ "command": produce, "wait": true });
    let (a, b) = sample(&mut servers, 1, &seq);
    let (seq_a, seq_b) = (Stats::of(&a), Stats::of(&b));
    let bare_seq: Vec<Duration> = (0..ROUNDS).map(|_| bare(&produce)).collect();
    let bare_seq = Stats::of(&bare_seq);
    let find = json!({ "command": "find /usr > /dev/null 2>&1; true", "wait": true });
    let (a, b) = sample(&mut servers, finds, &find);
    let (find_a, find_b) = (Stats::of(&a), Stats::of(&b));
    // A build: the C compiler on a generated file in the write root (skipped without `cc`).
    let build = have_cc().then(|| {
        let source: String = (0..1500)
            .map(|i| format!("int f{i}(int x) {{ return x * {i} + (x >> 3) - {i} / (x | 1); }}\n"))
            .collect();
        std::fs::write(proj.join("big.c"), source).expect("big.c");
        let cc = json!({ "command": "cc -O1 -c big.c -o big.o", "wait": true });
        let (a, b) = sample(&mut servers, finds, &cc);
        (Stats::of(&a), Stats::of(&b))
    });

    println!("## Policy: the cost of the sandbox\n");
    println!(
        "The same calls on a plain server and on one with `--policy` (profile `default`: one \
         write root, network off), {ROUNDS} interleaved rounds; median (p99)."
    );
    println!();
    println!("| call | plain | under the policy | difference | ratio |");
    println!("|---|---|---|---|---|");
    row("`execute_command(\"true\")`: the answer", start_a, start_b);
    row(
        "`execute_command(\"true\", wait)`: start → exit",
        job_a,
        job_b,
    );
    row(
        &format!("{mb} MB of lines through the PTY, start → end"),
        seq_a,
        seq_b,
    );
    row("`find /usr > /dev/null`, start → end", find_a, find_b);
    if let Some((a, b)) = build {
        row("a build: `cc -O1 -c` of 1500 functions, start → end", a, b);
    }
    println!(
        "| {mb} MB of lines, the bare PTY reader (this process, no server) | {} ({}) | | | |",
        fmt_d(bare_seq.median),
        fmt_d(bare_seq.p99)
    );
    println!();
    let mb = |d: Duration| mb as f64 / d.as_secs_f64();
    let answer = start_b.median.as_secs_f64() - start_a.median.as_secs_f64();
    let job = job_b.median.as_secs_f64() - job_a.median.as_secs_f64();
    let tput = mb(seq_b.median) / mb(seq_a.median);
    let vs_bare = mb(seq_b.median) / mb(bare_seq.median);
    let filter = find_b.median.as_secs_f64() / find_a.median.as_secs_f64() - 1.0;
    println!("{}", targets_header());
    println!(
        "{}",
        target_row(
            "`execute_command` under a profile ≤ plain + 0.5 ms (the answer)",
            &format!("{:+.3} ms", answer * 1e3),
            answer <= 0.0005
        )
    );
    println!(
        "{}",
        target_row(
            "the same, start → exit of the job (the sandbox's set-up included)",
            &format!("{:+.3} ms", job * 1e3),
            job <= 0.0005
        )
    );
    println!(
        "{}",
        target_row(
            "throughput unchanged (≥ 0.8 × plain)",
            &format!(
                "{:.1} MB/s vs {:.1} MB/s = {tput:.2} ×",
                mb(seq_b.median),
                mb(seq_a.median)
            ),
            tput >= 0.8
        )
    );
    println!(
        "{}",
        target_row(
            "a profile job's throughput ≥ 0.8 × the bare PTY reader",
            &format!(
                "{:.1} MB/s vs {:.1} MB/s = {vs_bare:.2} ×",
                mb(seq_b.median),
                mb(bare_seq.median)
            ),
            vs_bare >= 0.8
        )
    );
    println!(
        "{}",
        target_row(
            "the sandbox's cost on a syscall-heavy job (`find /usr`) ≤ 5 %",
            &format!("{:+.1} %", filter * 100.0),
            filter <= 0.05
        )
    );
    if let Some((a, b)) = build {
        let cost = b.median.as_secs_f64() / a.median.as_secs_f64() - 1.0;
        println!(
            "{}",
            target_row(
                "the sandbox's cost on a build (`cc`) ≤ 5 %",
                &format!("{:+.1} %", cost * 100.0),
                cost <= 0.05
            )
        );
    }
    for s in servers {
        s.close(Duration::from_secs(5));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Whether a C compiler answers as `cc`.
fn have_cc() -> bool {
    Command::new("cc")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}
