//! Output throughput: the same producer read by a bare PTY reader and through the engine.
//!
//! `throughput [MB]` runs each kind of output (plain lines, ANSI-coloured lines, `\r` progress
//! updates) three times per reader, interleaved, and prints medians and ratios as Markdown.
//! `throughput produce <kind> <bytes>` is the producer itself.

#![allow(clippy::print_stdout)] // a benchmark reports on stdout
use std::io::Write;
use std::os::fd::AsFd;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use ptyjobs_engine::{EngineConfig, JobManager, JobSpec};

const KINDS: [&str; 3] = ["plain", "ansi", "progress"];

fn produce(kind: &str, total: usize) {
    let mut chunk = Vec::with_capacity(1 << 16);
    let mut i = 0u64;
    while chunk.len() < 60_000 {
        match kind {
            "plain" => writeln!(
                chunk,
                "line {i:08} the quick brown fox jumps over the lazy dog"
            ),
            "ansi" => writeln!(
                chunk,
                "\x1b[32mINFO\x1b[0m line {i:08} \x1b[1mthe quick\x1b[0m brown fox"
            ),
            _ => write!(
                chunk,
                "\rprogress {:3}% [{:<40}]",
                i % 101,
                "#".repeat((i % 41) as usize)
            ),
        }
        .expect("write");
        if kind == "progress" && i % 100 == 99 {
            chunk.push(b'\n');
        }
        i += 1;
    }
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

/// Reads a PTY with no processing at all: the physical limit.
fn bare(kind: &str, bytes: usize) -> Duration {
    let t = Instant::now();
    let pty = nix::pty::openpty(None, None).expect("openpty");
    let slave = std::fs::File::from(pty.slave);
    let mut cmd = Command::new("/bin/sh");
    cmd.arg("-c").arg(producer_command(kind, bytes));
    cmd.stdin(Stdio::null())
        .stdout(slave.try_clone().expect("dup"))
        .stderr(Stdio::null());
    let mut child = cmd.spawn().expect("spawn");
    drop(cmd);
    drop(slave);
    let mut buf = vec![0u8; 1 << 16];
    let mut got = 0usize;
    loop {
        match nix::unistd::read(pty.master.as_fd(), &mut buf) {
            Ok(0) | Err(Errno::EIO) => break,
            Ok(n) => got += n,
            Err(Errno::EINTR) => {}
            Err(e) => panic!("read: {e}"),
        }
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
    let bytes = mb * 1_000_000;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("rt");
    rt.block_on(async {
        let m = JobManager::new(EngineConfig {
            max_running: 4,
            ..EngineConfig::default()
        })
        .expect("manager");
        println!("| output ({mb} MB) | bare PTY reader | through ptyjobs | ratio |");
        println!("|---|---|---|---|");
        for kind in KINDS {
            let (mut b, mut e) = (Vec::new(), Vec::new());
            for _ in 0..3 {
                b.push(bare(kind, bytes));
                e.push(engine(&m, kind, bytes).await);
            }
            let (b, e) = (median(b), median(e));
            let rate = |d: Duration| bytes as f64 / d.as_secs_f64() / 1e6;
            println!(
                "| {kind} | {:.0} MB/s | {:.0} MB/s | {:.2} × |",
                rate(b),
                rate(e),
                b.as_secs_f64() / e.as_secs_f64()
            );
        }
    });
}
