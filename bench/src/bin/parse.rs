//! The emulator alone, without a PTY: how fast `Terminal::feed` consumes each kind of output.

#![allow(clippy::print_stdout)] // a benchmark reports on stdout
use std::io::Write;
use std::time::Instant;

use ptyjobs_engine::Terminal;

fn main() {
    let mb: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(50);
    let mut data = Vec::new();
    let mut i = 0u64;
    while data.len() < mb * 1_000_000 {
        writeln!(
            data,
            "line {i:08} the quick brown fox jumps over the lazy dog\r"
        )
        .expect("w");
        i += 1;
    }
    let mut t = Terminal::new(120, 40, 4 << 20, 64 << 10);
    let start = Instant::now();
    let chunk_size: usize = std::env::args()
        .nth(2)
        .and_then(|a| a.parse().ok())
        .unwrap_or(65536);
    for chunk in data.chunks(chunk_size) {
        t.feed(chunk);
    }
    let el = start.elapsed();
    println!(
        "feed: {:.0} MB/s",
        data.len() as f64 / el.as_secs_f64() / 1e6
    );
}
