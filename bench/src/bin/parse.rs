//! The terminal model alone, without a PTY: how fast `Terminal::feed` consumes each kind of
//! output, with the engine's fast path (`Terminal::new`) and through the vt100 emulator only
//! (`Terminal::emulator_only`, the reference the fast path is tested against).
//!
//! `parse [MB] [CHUNK] [KIND...]` (defaults 50 MB, 65536-byte chunks, the kinds `plain`, `ansi`,
//! `progress`) feeds the same bytes to both, three times each, interleaved, and prints the median
//! rates and their ratio. Two more kinds are the workloads as the PTY delivers them:
//! `lines` (lines of 49 characters, `\r\n`) and `long` (one line of `x`, no newline).
//! `PTYJOBS_PARSE_ONLY=fast` (or `emulator`) feeds only one of the two, once: for counting
//! instructions per byte under `valgrind --tool=cachegrind` (a measure the machine's load does
//! not change); `PTYJOBS_PARSE_ONLY=none` builds the input and feeds nothing, to subtract what
//! the bench itself costs.

#![allow(clippy::print_stdout)] // a benchmark reports on stdout
use std::time::{Duration, Instant};

use ptyjobs_bench::{KINDS, sample};
use ptyjobs_engine::{EngineConfig, Terminal};

fn feed(mut t: Terminal, data: &[u8], chunk: usize) -> Duration {
    let start = Instant::now();
    for c in data.chunks(chunk) {
        t.feed(c);
    }
    t.finish();
    start.elapsed()
}

fn main() {
    let all: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<usize> = all.iter().filter_map(|a| a.parse().ok()).collect();
    let mut kinds: Vec<&str> = all
        .iter()
        .filter(|a| a.parse::<usize>().is_err())
        .map(String::as_str)
        .collect();
    if kinds.is_empty() {
        kinds = KINDS.to_vec();
    }
    let only = std::env::var("PTYJOBS_PARSE_ONLY").ok();
    let rounds = if only.is_some() { 1 } else { 3 };
    let mb = args.first().copied().unwrap_or(50);
    let chunk = args.get(1).copied().unwrap_or(65536);
    let c = EngineConfig::default();
    let new = || Terminal::new(c.cols, c.rows, c.transcript_bytes, c.max_line_bytes);
    let emu = || Terminal::emulator_only(c.cols, c.rows, c.transcript_bytes, c.max_line_bytes);
    println!("## Terminal model alone (no PTY)\n");
    println!(
        "{mb} MB fed in {chunk}-byte chunks to a {}×{} terminal, median of 3.\n",
        c.cols, c.rows
    );
    println!("| output | engine (fast path) | vt100 emulator only | ratio |");
    println!("|---|---|---|---|");
    for kind in kinds {
        // As the PTY delivers it: its line discipline turns `\n` into `\r\n`.
        let s: Vec<u8> = match kind {
            "lines" => format!("{}\n", "x".repeat(49)).into_bytes(),
            "long" => b"x".to_vec(),
            _ => sample(kind),
        }
        .into_iter()
        .flat_map(|b| {
            if b == b'\n' {
                vec![b'\r', b'\n']
            } else {
                vec![b]
            }
        })
        .collect();
        let data: Vec<u8> = s.iter().copied().cycle().take(mb * 1_000_000).collect();
        let (mut f, mut e) = (vec![], vec![]);
        for _ in 0..rounds {
            if only.as_deref() == Some("none") {
                continue;
            }
            if only.as_deref() != Some("emulator") {
                f.push(feed(new(), &data, chunk));
            }
            if only.as_deref() != Some("fast") {
                e.push(feed(emu(), &data, chunk));
            }
        }
        f.sort();
        e.sort();
        let mid = |v: &[Duration]| v.get(v.len() / 2).copied().unwrap_or(Duration::MAX);
        let rate = |d: Duration| data.len() as f64 / d.as_secs_f64() / 1e6;
        println!(
            "| {kind} | {:.0} MB/s | {:.0} MB/s | {:.2} × |",
            rate(mid(&f)),
            rate(mid(&e)),
            rate(mid(&f)) / rate(mid(&e))
        );
    }
    println!();
}
