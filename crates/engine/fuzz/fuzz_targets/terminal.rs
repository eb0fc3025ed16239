//! The fast path against the emulator alone on arbitrary bytes: same transcript, screen and
//! replies, whatever the bytes and however they are split; and nothing panics.
//!
//! Run with `cargo +nightly fuzz run terminal` from `crates/engine` (cargo-fuzz installed with
//! `cargo install cargo-fuzz`). The bounded, seeded version of the same check runs in the test
//! command: `crates/engine/tests/suite/differential.rs`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ptyjobs_engine::Terminal;

fuzz_target!(|data: &[u8]| {
    let [cols, rows, split, input @ ..] = data else {
        return;
    };
    let (cols, rows) = (u16::from(*cols % 120) + 1, u16::from(*rows % 40) + 1);
    let mut slow = Terminal::emulator_only(cols, rows, 1 << 20, 1 << 16);
    slow.feed(input);
    let slow_replies = slow.take_replies();
    let mut fast = Terminal::new(cols, rows, 1 << 20, 1 << 16);
    let mut fast_replies = Vec::new();
    // Pieces whose sizes come from the split byte, as PTY reads arrive.
    let step = usize::from(*split).max(1);
    for chunk in input.chunks(step) {
        fast.feed(chunk);
        fast_replies.extend(fast.take_replies());
    }
    assert_eq!(fast.text(), slow.text());
    assert_eq!(fast.screen(), slow.screen());
    assert_eq!(fast_replies, slow_replies);
    fast.finish();
    slow.finish();
    assert_eq!(fast.text(), slow.text());
    assert_eq!(fast.screen(), slow.screen());
});
