//! Output throughput: the same producer read by a bare PTY reader and through the engine.
//!
//! `throughput [MB] [RUNS]` (defaults 200 and 3) runs each kind of output (plain lines,
//! ANSI-coloured lines, `\r` progress updates, one endless line) RUNS times per reader,
//! interleaved, and prints medians and ratios, then the best run of each reader (the fastest
//! of RUNS: on a machine whose other load moves the bare reader itself by ±30 % between runs,
//! the best run is what each reader can do, and its ratio moves far less than the medians'):
//! - bare: this process opens a PTY, runs the producer on it as a terminal does (its own
//!   session, the PTY its controlling terminal, as every job of ptyjobs, tmux or node-pty) and
//!   reads the master to EIO with no processing at all — the physical limit, and the reference
//!   of every ratio;
//! - the same with the producer left in this process's session (shown, not a reference: with
//!   Linux's autogroups the producer then shares the reader's scheduling group, which moves the
//!   rate either way by up to a third on two cores; no terminal starts a job like that);
//! - vt100 only: the same bare reader feeding every read into `Terminal::emulator_only` (what a
//!   design that sends every byte through the emulator on the reader's thread would get);
//! - engine: `JobManager::execute` → `wait`, i.e. spawn → job final with all output held;
//! - kept: the same job kept (`JobSpec::keep`): the state directory's keeper (the sibling
//!   `ptyjobs` binary, kept up between runs) runs it; timed from the request until its record
//!   says final (its stamp looked at every 1 ms, its status read when it changed).
//!
//! `throughput produce <kind> <bytes>` is the producer itself.

#![allow(clippy::print_stdout)] // a benchmark reports on stdout
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ptyjobs_bench::{KINDS, raw_pty_spawn, read_to_end, sample, target_row, targets_header};
use ptyjobs_engine::{EngineConfig, JobManager, JobSpec, StoreConfig, Terminal};

fn produce(kind: &str, total: usize) {
    let chunk = sample(kind);
    let mut out = std::io::stdout().lock();
    let mut written = 0;
    while written < total {
        let n = chunk.len().min(total - written);
        out.write_all(&chunk[..n]).expect("write");
        written += n;
    }
}

fn producer_command(kind: &str, bytes: usize) -> String {
    let exe = std::env::current_exe().expect("exe");
    format!("{} produce {kind} {bytes}", exe.display())
}

/// How the bare reader starts its producer.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Start {
    /// As a terminal starts a program (forkpty, tmux, node-pty, ptyjobs): in its own session,
    /// the PTY its controlling terminal ([`raw_pty_spawn`], as the other benchmarks do).
    Terminal,
    /// In this process's session, with no controlling terminal: what this benchmark did before.
    /// With the kernel's autogroups on (Linux's default) the producer then shares this reader's
    /// scheduling group, which no job of a terminal does; shown for comparison only.
    SharedSession,
}

/// Reads a PTY to EIO, feeding `term` if given (nothing else): the physical limit.
fn bare(kind: &str, bytes: usize, start: Start, mut term: Option<Terminal>) -> Duration {
    let t = Instant::now();
    let (mut child, master) = if start == Start::Terminal {
        let pty = raw_pty_spawn(&producer_command(kind, bytes));
        (pty.child, pty.master)
    } else {
        let pty = nix::pty::openpty(None, None).expect("openpty");
        let slave = std::fs::File::from(pty.slave);
        let mut cmd = Command::new("/bin/sh");
        cmd.arg("-c").arg(producer_command(kind, bytes));
        cmd.stdin(Stdio::null())
            .stdout(slave.try_clone().expect("dup"))
            .stderr(Stdio::null());
        let child = cmd.spawn().expect("spawn");
        (child, pty.master)
    };
    let got = read_to_end(&master, |bytes| {
        if let Some(t) = term.as_mut() {
            t.feed(bytes);
        }
    });
    if let Some(t) = term.as_mut() {
        t.finish();
    }
    child.wait().expect("wait");
    assert!(got >= bytes, "bare reader got {got} of {bytes}");
    t.elapsed()
}

/// Through the engine: spawn → job final with all output held.
async fn engine(m: &JobManager, kind: &str, bytes: usize) -> Duration {
    let t = Instant::now();
    let job = m
        .execute(JobSpec::new(producer_command(kind, bytes)))
        .expect("execute");
    let info = m
        .wait(job.id, Some(Duration::from_secs(600)))
        .await
        .expect("wait");
    assert!(info.status.is_final());
    t.elapsed()
}

/// Kept: the keeper runs the job; from the start request until the record says final. The
/// record (`STATE/jobs/<id>/meta.json`) is looked at every millisecond by its stamp (a `stat`)
/// and its status read only when it changed: a status call on a running kept job costs
/// 0.16–0.3 ms (its record and a ports scan), which, every 2 ms, took 8–15 % of a CPU beside
/// the job and was paid by this column alone.
async fn kept(m: &JobManager, state: &std::path::Path, kind: &str, bytes: usize) -> Duration {
    let t = Instant::now();
    let job = m
        .execute(JobSpec {
            keep: true,
            ..JobSpec::new(producer_command(kind, bytes))
        })
        .expect("execute kept");
    let record = state
        .join("jobs")
        .join(job.id.to_string())
        .join("meta.json");
    let mut seen = None;
    loop {
        let stamp = std::fs::metadata(&record)
            .ok()
            .map(|md| (md.modified().ok(), md.len()));
        if stamp.is_none() || stamp != seen {
            if m.status(job.id).expect("status").status.is_final() {
                break;
            }
            seen = stamp;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    t.elapsed()
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("produce") {
        produce(&args[2], args[3].parse().expect("bytes"));
        return;
    }
    let mb: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(200);
    let runs: usize = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(3).max(1);
    let bytes = mb * 1_000_000;
    let c = EngineConfig::default();
    let emu = || Terminal::emulator_only(c.cols, c.rows, c.transcript_bytes, c.max_line_bytes);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("rt");
    let mut verdicts = Vec::new();
    println!("## Output throughput\n");
    println!(
        "{mb} MB per run from the same producer under a PTY, spawn → all output read (bare) or \
         job final with all output held (engine); median of {runs}, interleaved.\n"
    );
    println!(
        "| output | bare PTY reader | the same, producer in the reader's session | bare reader + vt100 only | ratio | through ptyjobs' engine | ratio | with a state directory (disk log) | ratio | kept (the keeper) | ratio |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    // The keeper stays up between runs (it inherits this environment).
    // SAFETY: set before any thread of this process reads the environment.
    unsafe { std::env::set_var("PTYJOBS_KEEPER_IDLE_MS", "600000") };
    rt.block_on(async {
        let m = JobManager::new(EngineConfig {
            max_running: 4,
            ..EngineConfig::default()
        })
        .expect("manager");
        // Kept jobs need a state directory (run.sh gives one per bench).
        let state = std::env::var_os("PTYJOBS_STATE_DIR").map_or_else(
            || std::env::temp_dir().join(format!("ptyjobs-bench-{}", std::process::id())),
            std::path::PathBuf::from,
        );
        let mk = JobManager::new(EngineConfig {
            max_running: 4,
            store: Some(StoreConfig::new(state.clone())),
            program: Some(ptyjobs_bench::sibling("ptyjobs")),
            ..EngineConfig::default()
        })
        .expect("manager with a state directory");
        // Starts the keeper, outside the timings.
        kept(&mk, &state, "plain", 1000).await;
        let mut kept_ratios = Vec::new();
        // Issue 23 also asks for one long line (the `line` kind: `MB` of it without a newline).
        for kind in KINDS.into_iter().chain(["line"]) {
            let (mut b, mut sh, mut v, mut e, mut d, mut k) = (
                Vec::new(),
                Vec::new(),
                Vec::new(),
                Vec::new(),
                Vec::new(),
                Vec::new(),
            );
            for _ in 0..runs {
                b.push(bare(kind, bytes, Start::Terminal, None));
                sh.push(bare(kind, bytes, Start::SharedSession, None));
                v.push(bare(kind, bytes, Start::Terminal, Some(emu())));
                e.push(engine(&m, kind, bytes).await);
                // The same job in a manager with a state directory: what a kept job also pays.
                d.push(engine(&mk, kind, bytes).await);
                k.push(kept(&mk, &state, kind, bytes).await);
            }
            let best = |v: &[Duration]| v.iter().min().copied().unwrap_or_default();
            let best_kept = best(&b).as_secs_f64() / best(&k).as_secs_f64();
            let best_engine = best(&b).as_secs_f64() / best(&e).as_secs_f64();
            let (b, sh, v, e, d, k) = (
                median(b),
                median(sh),
                median(v),
                median(e),
                median(d),
                median(k),
            );
            let rate = |d: Duration| bytes as f64 / d.as_secs_f64() / 1e6;
            let re = b.as_secs_f64() / e.as_secs_f64();
            let rd = b.as_secs_f64() / d.as_secs_f64();
            let rk = b.as_secs_f64() / k.as_secs_f64();
            kept_ratios.push((kind, rk, best_engine, best_kept));
            println!(
                "| {kind} | {:.0} MB/s | {:.0} MB/s | {:.0} MB/s | {:.2} × | {:.0} MB/s | {re:.2} × | {:.0} MB/s | {rd:.2} × | {:.0} MB/s | {rk:.2} × |",
                rate(b),
                rate(sh),
                rate(v),
                b.as_secs_f64() / v.as_secs_f64(),
                rate(e),
                rate(d),
                rate(k),
            );
            // Issue 14: plain and ANSI at 0.8 × the PTY; progress redraws at 0.6 ×.
            let want = if kind == "progress" { 0.6 } else { 0.8 };
            verdicts.push(target_row(
                &format!("{kind}: through ptyjobs ≥ {want} × bare PTY reader"),
                &format!("{re:.2} ×"),
                re >= want,
            ));
        }
        println!();
        println!("Best of {runs} runs per reader (the fastest run of each, same runs as above):\n");
        println!("| output | engine / bare | kept / bare |");
        println!("|---|---|---|");
        for (kind, rk, be, bk) in kept_ratios {
            println!("| {kind} | {be:.2} × | {bk:.2} × |");
            // Issue 23: a kept job reads like any job (≥ 0.8 × the bare reader).
            let want = if kind == "progress" { 0.6 } else { 0.8 };
            verdicts.push(target_row(
                &format!("{kind}: a kept job ≥ {want} × bare PTY reader (median; best)"),
                &format!("{rk:.2} ×; {bk:.2} ×"),
                rk >= want,
            ));
        }
        m.shutdown().await;
        // The keeper was told to stay up; it leaves at SIGTERM (its jobs are all done).
        if let Some(job) = mk.list().into_iter().find(|j| j.kept) {
            let owner = mk.store().and_then(|s| s.load(job.id).ok());
            if let Some(pid) = owner.map(|o| o.record.server.process.pid) {
                // SAFETY: kill(2) takes plain integers.
                unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) };
            }
        }
    });
    println!();
    println!("{}", targets_header());
    for v in verdicts {
        println!("{v}");
    }
    println!();
}
