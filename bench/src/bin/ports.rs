//! Ports that are the job's own, at a cost: the real `ptyjobs` binary over MCP on a machine
//! with 10,000 open TCP sockets (this process opens 5,000 connected loopback pairs first).
//!
//! `ports [CALLS]` (default 2,000) measures, one call at a time, in interleaved rounds:
//! - `get_job_status` of a running server (its answer carries `ports`: one look at the
//!   machine's listening sockets and, when they changed, a process scan) against
//!   `get_job_status` of an ended job of the same server (no ports to look for: the same call
//!   without them);
//! - `list_jobs` with 100 live jobs that each listen on a port;
//! - readiness wake latency: a job that listens at a known moment (it prints the wall-clock
//!   time right after `listen()`), and `wait_for_job` with `port` or `listening` already
//!   waiting; the latency is when the answer arrived minus that moment. Beside it the same for
//!   a `pattern` wait (the job prints the time with the line): the floor of this method.
//!
//! Prints medians and p99s and the targets with verdicts.

#![allow(clippy::print_stdout)] // a benchmark reports on stdout
use std::net::{TcpListener, TcpStream};
use std::process::Command;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use ptyjobs_bench::{Rpc, Stats, fmt_d, sibling, target_row, targets_header};
use serde_json::{Value, json};

const ROUNDS: usize = 10;
const PAIRS: usize = 5_000;
const LIVE_JOBS: usize = 100;
const WAKES: usize = 20;

/// A job that listens on `port` (0: any) on 127.0.0.1 and sleeps.
fn listener(port: u16) -> String {
    format!(
        "perl -MIO::Socket::INET -e '$s=IO::Socket::INET->new(Listen=>5,LocalAddr=>\"127.0.0.1\",\
         LocalPort=>{port},ReuseAddr=>1) or die $!; $|=1; print \"up\\n\"; sleep 1e6'"
    )
}

/// A job that sleeps `delay` s, then listens on `port` (or prints `ready`) and prints the
/// wall-clock time in µs right after.
fn late(port: Option<u16>, delay: f64) -> String {
    match port {
        Some(p) => format!(
            "python3 -c \"import socket,time; time.sleep({delay}); s=socket.socket(); \
             s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(('127.0.0.1',{p})); \
             s.listen(); t=time.time(); print('T', int(t*1e6), flush=True); time.sleep(1e6)\""
        ),
        None => format!(
            "python3 -c \"import time; time.sleep({delay}); t=time.time(); \
             print('ready T', int(t*1e6), flush=True); time.sleep(1e6)\""
        ),
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

fn now_us() -> u64 {
    u64::try_from(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .expect("clock")
            .as_micros(),
    )
    .unwrap_or(u64::MAX)
}

fn id_of(v: &Value) -> String {
    v["job_id"].as_str().expect("job_id").to_string()
}

/// The µs timestamp the job printed after `T `.
fn printed_time(pj: &mut Rpc, id: &str) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let out = pj.tool("get_job_output", json!({ "job_id": id }));
        let text = out["output"].as_str().unwrap_or("");
        if let Some(t) = text
            .split("T ")
            .nth(1)
            .and_then(|s| s.split_whitespace().next())
            .and_then(|s| s.parse().ok())
        {
            return t;
        }
        assert!(Instant::now() < deadline, "no time printed: {text}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Wake latencies of `WAKES` waits of one kind (`port`, `listening` or `pattern`).
fn wakes(pj: &mut Rpc, kind: &str) -> Vec<Duration> {
    let mut out = Vec::new();
    for _ in 0..WAKES {
        let port = free_port();
        let (command, wait) = match kind {
            "port" => (late(Some(port), 0.3), json!({ "port": port })),
            "listening" => (late(Some(port), 0.3), json!({ "listening": true })),
            _ => (late(None, 0.3), json!({ "pattern": "^ready" })),
        };
        let id = id_of(&pj.tool("execute_command", json!({ "command": command })));
        let mut args = wait;
        args["job_id"] = json!(id);
        args["timeout_secs"] = json!(20);
        let w = pj.tool("wait_for_job", args);
        let arrived = now_us();
        let expect = match kind {
            "port" => "port_open",
            "listening" => "listening",
            _ => "matched",
        };
        assert_eq!(w["reason"], expect, "{w}");
        let at = printed_time(pj, &id);
        out.push(Duration::from_micros(arrived.saturating_sub(at)));
        pj.tool("kill_job", json!({ "job_id": id }));
    }
    out
}

/// The engine alone (in this process; the engine is optimised in every build profile): `list()`
/// of `LIVE_JOBS` live jobs that each listen, answers reused and not, and of as many live jobs
/// that listen on nothing.
fn engine_lists() -> [Stats; 3] {
    use ptyjobs_engine::{EngineConfig, JobManager, JobSpec};
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let m = JobManager::new(EngineConfig {
            max_running: 2 * LIVE_JOBS + 8,
            store: None,
            ..EngineConfig::default()
        })
        .expect("manager");
        let time = |m: &JobManager, change: bool| {
            let mut v = Vec::new();
            for _ in 0..100 {
                let fresh = change.then(|| TcpListener::bind("127.0.0.1:0").expect("bind"));
                let t = Instant::now();
                let n = m.list().len();
                v.push(t.elapsed());
                assert!(n >= LIVE_JOBS);
                drop(fresh);
            }
            Stats::of(&v)
        };
        let quiet: Vec<_> = (0..LIVE_JOBS)
            .map(|_| m.execute(JobSpec::new("sleep 1000")).expect("start").id)
            .collect();
        let none = time(&m, true);
        for id in quiet {
            let _ = m.kill(id, ptyjobs_engine::Signal::KILL, None).await;
        }
        let m = JobManager::new(EngineConfig {
            max_running: 2 * LIVE_JOBS + 8,
            store: None,
            ..EngineConfig::default()
        })
        .expect("manager");
        for _ in 0..LIVE_JOBS {
            m.execute(JobSpec::new(listener(0))).expect("start");
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        while m.list().iter().filter(|j| !j.ports.is_empty()).count() < LIVE_JOBS {
            assert!(Instant::now() < deadline, "the listeners did not all start");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let reused = time(&m, false);
        let changed = time(&m, true);
        m.shutdown().await;
        [reused, changed, none]
    })
}

fn main() {
    let calls: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(2_000);
    let limit = ptyjobs_engine::raise_fd_limit();
    assert!(
        limit >= (2 * PAIRS + 200) as u64,
        "the open-files limit ({limit}) is too low for {PAIRS} socket pairs"
    );
    // 10,000 open TCP sockets: 5,000 connected loopback pairs, held until the end.
    let accept = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = accept.local_addr().expect("addr");
    let mut held: Vec<TcpStream> = Vec::with_capacity(2 * PAIRS);
    for _ in 0..PAIRS {
        held.push(TcpStream::connect(addr).expect("connect"));
        held.push(accept.accept().expect("accept").0);
    }
    let sockets = std::fs::read_to_string("/proc/net/tcp")
        .map(|t| t.lines().count() - 1)
        .unwrap_or(0)
        + std::fs::read_to_string("/proc/net/tcp6")
            .map(|t| t.lines().count().saturating_sub(1))
            .unwrap_or(0);

    let mut cmd = Command::new(sibling("ptyjobs"));
    cmd.args(["--max-jobs", "256"]);
    let mut pj = Rpc::spawn(cmd);
    pj.initialize();

    // A running server and an ended job.
    let server = id_of(&pj.tool(
        "execute_command",
        json!({ "command": listener(0), "name": "web" }),
    ));
    let w = pj.tool(
        "wait_for_job",
        json!({ "job_id": server, "listening": true, "timeout_secs": 20 }),
    );
    assert_eq!(w["reason"], "listening", "{w}");
    let ended = id_of(&pj.tool("execute_command", json!({ "command": "true" })));
    pj.tool("wait_for_job", json!({ "job_id": ended }));
    let st = pj.tool("get_job_status", json!({ "job_id": server }));
    assert!(st["ports"][0]["port"].is_u64(), "{st}");

    // `changed`: a listening socket opened just before the call, so nothing is reused.
    let (mut with, mut changed, mut without) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        for _ in 0..calls / ROUNDS {
            let (d, _) = pj.timed(|p| p.tool("get_job_status", json!({ "job_id": server })));
            with.push(d);
        }
        for _ in 0..calls / ROUNDS {
            // Each call sees another set of listening sockets than the call before.
            let fresh = TcpListener::bind("127.0.0.1:0").expect("bind");
            let (d, _) = pj.timed(|p| p.tool("get_job_status", json!({ "job_id": server })));
            changed.push(d);
            drop(fresh);
        }
        for _ in 0..calls / ROUNDS {
            let (d, _) = pj.timed(|p| p.tool("get_job_status", json!({ "job_id": ended })));
            without.push(d);
        }
    }

    // Readiness wake latency (before the 100 jobs: a quiet server).
    let port_wakes = wakes(&mut pj, "port");
    let listening_wakes = wakes(&mut pj, "listening");
    let pattern_wakes = wakes(&mut pj, "pattern");

    // The reference: list_jobs of 100 ended jobs (nothing to look up).
    let mut done = Vec::new();
    for _ in 0..LIVE_JOBS {
        done.push(id_of(
            &pj.tool("execute_command", json!({ "command": "true" })),
        ));
    }
    for id in &done {
        pj.tool("wait_for_job", json!({ "job_id": id }));
    }
    let mut lists_ended = Vec::new();
    for _ in 0..100 {
        let (d, _) = pj.timed(|p| {
            p.tool(
                "list_jobs",
                json!({ "status": "completed", "max_bytes": 65_536 }),
            )
        });
        lists_ended.push(d);
    }

    // 100 live jobs, each listening.
    let mut ids = Vec::new();
    for _ in 0..LIVE_JOBS - 1 {
        ids.push(id_of(
            &pj.tool("execute_command", json!({ "command": listener(0) })),
        ));
    }
    for id in &ids {
        let w = pj.tool(
            "wait_for_job",
            json!({ "job_id": id, "listening": true, "timeout_secs": 20 }),
        );
        assert_eq!(w["reason"], "listening", "{w}");
    }
    let list = pj.tool(
        "list_jobs",
        json!({ "status": "running", "max_bytes": 65_536 }),
    );
    let listed = list["jobs"]
        .as_array()
        .map_or(0, |j| j.iter().filter(|j| j["ports"].is_array()).count());
    assert!(listed >= LIVE_JOBS, "{listed} jobs with ports listed");
    let (mut lists, mut lists_changed) = (Vec::new(), Vec::new());
    for _ in 0..100 {
        let (d, _) = pj.timed(|p| {
            p.tool(
                "list_jobs",
                json!({ "status": "running", "max_bytes": 65_536 }),
            )
        });
        lists.push(d);
    }
    for _ in 0..100 {
        let fresh = TcpListener::bind("127.0.0.1:0").expect("bind");
        let (d, _) = pj.timed(|p| {
            p.tool(
                "list_jobs",
                json!({ "status": "running", "max_bytes": 65_536 }),
            )
        });
        lists_changed.push(d);
        drop(fresh);
    }

    drop(pj);
    let [er, ec, en] = engine_lists();
    let (w, wc, wo) = (Stats::of(&with), Stats::of(&changed), Stats::of(&without));
    let (l, lc, le) = (
        Stats::of(&lists),
        Stats::of(&lists_changed),
        Stats::of(&lists_ended),
    );
    let (pw, lw, mw) = (
        Stats::of(&port_wakes),
        Stats::of(&listening_wakes),
        Stats::of(&pattern_wakes),
    );
    println!("## Ports and readiness\n");
    println!(
        "`bench/src/bin/ports.rs`: {sockets} TCP sockets open on the machine ({PAIRS} connected \
         loopback pairs held by the bench); {calls} calls each in {ROUNDS} interleaved rounds; \
         median (p99).\n"
    );
    println!("| measure | median (p99) | reference | median (p99) |\n|---|---|---|---|");
    println!(
        "| `get_job_status` of a running server (with `ports`) | {} ({}) | of an ended job (no ports) | {} ({}) |",
        fmt_d(w.median),
        fmt_d(w.p99),
        fmt_d(wo.median),
        fmt_d(wo.p99)
    );
    println!(
        "| `get_job_status` of a running server, a listening socket opened just before (nothing reused) | {} ({}) | of an ended job (no ports) | {} ({}) |",
        fmt_d(wc.median),
        fmt_d(wc.p99),
        fmt_d(wo.median),
        fmt_d(wo.p99)
    );
    println!(
        "| `list_jobs(running)`, {LIVE_JOBS} live jobs each listening, 100 calls | {} ({}) | `list_jobs(completed)`, {LIVE_JOBS} ended jobs | {} ({}) |",
        fmt_d(l.median),
        fmt_d(l.p99),
        fmt_d(le.median),
        fmt_d(le.p99)
    );
    println!(
        "| `list_jobs(running)`, the same, a listening socket opened just before (nothing reused) | {} ({}) | | |",
        fmt_d(lc.median),
        fmt_d(lc.p99)
    );
    println!(
        "| engine `list()`, {LIVE_JOBS} live jobs each listening | {} ({}) | {LIVE_JOBS} live jobs listening on nothing, nothing reused | {} ({}) |",
        fmt_d(er.median),
        fmt_d(er.p99),
        fmt_d(en.median),
        fmt_d(en.p99)
    );
    println!(
        "| engine `list()`, the same, nothing reused | {} ({}) | | |",
        fmt_d(ec.median),
        fmt_d(ec.p99)
    );
    println!(
        "| wake: `wait_for_job(port)` after `listen()`, {WAKES} waits | {} ({}) | `pattern` after the line | {} ({}) |",
        fmt_d(pw.median),
        fmt_d(pw.p99),
        fmt_d(mw.median),
        fmt_d(mw.p99)
    );
    println!(
        "| wake: `wait_for_job(listening)` after `listen()`, {WAKES} waits | {} ({}) | | |\n",
        fmt_d(lw.median),
        fmt_d(lw.p99)
    );
    println!("{}", targets_header());
    for (what, s) in [("", w), (", nothing reused", wc)] {
        let diff = s.median.saturating_sub(wo.median);
        println!(
            "{}",
            target_row(
                &format!("`get_job_status` with ports ≤ 1 ms above without, 10,000 sockets{what}"),
                &format!(
                    "+{} ({} vs {})",
                    fmt_d(diff),
                    fmt_d(s.median),
                    fmt_d(wo.median)
                ),
                diff <= Duration::from_millis(1)
            )
        );
    }
    for (what, s) in [
        ("", l),
        (", nothing reused", lc),
        (" (engine `list()`)", er),
        (" (engine `list()`), nothing reused", ec),
    ] {
        println!(
            "{}",
            target_row(
                &format!("`list_jobs` of 100 live jobs with ports ≤ 20 ms{what}"),
                &fmt_d(s.median),
                s.median <= Duration::from_millis(20)
            )
        );
    }
    for (what, s) in [("port", pw), ("listening", lw)] {
        println!(
            "{}",
            target_row(
                &format!("`wait_for_job({what})` wakes ≤ 10 ms after the listen"),
                &format!("{} (p99 {})", fmt_d(s.median), fmt_d(s.p99)),
                s.median <= Duration::from_millis(10)
            )
        );
    }
    println!(
        "\nThe wake latencies are measured from the job's own clock reading after `listen()` (or \
         before printing the line) to the answer's arrival here: they include the job's print \
         through its PTY and the round trip. The `pattern` wait (unchanged by this work: a wait \
         without `port`, `listening` or `url` never looks at sockets) is this method's floor.\n"
    );
    drop(held);
}
