//! The fast path is the emulator: random byte streams from a grammar covering every class of
//! terminal output, fed to [`Terminal`] (line model + emulator) in random pieces and to
//! [`Terminal::emulator_only`] in one piece, must give the same transcript, screen and replies;
//! the screen must also be what a bare vt100 parser shows for the same bytes.
//!
//! Seeded and reproducible: a failure prints its seed. `PTYJOBS_DIFF_CASES=<n>` runs more cases
//! (the default is bounded for the test command), `PTYJOBS_DIFF_SEED=<seed>` runs one case.

use crate::common::streams::{Rng, long_line, piece};
use ptyjobs_engine::{JobStatus, ScreenSnapshot, Terminal};

struct Case {
    cols: u16,
    rows: u16,
    input: Vec<u8>,
}

fn case(seed: u64) -> Case {
    let mut r = Rng(seed);
    let (cols, rows) = *r.pick(&[(30u16, 6u16), (20, 5), (80, 24), (7, 3), (120, 10), (12, 1)]);
    let mut input = Vec::new();
    for _ in 0..r.below(40) + 1 {
        piece(&mut r, usize::from(cols), &mut input);
    }
    Case { cols, rows, input }
}

const BIG: usize = 1 << 20;

struct Seen {
    text: String,
    screen: ScreenSnapshot,
    replies: Vec<u8>,
    final_text: String,
    final_screen: ScreenSnapshot,
}

/// Feeds `chunks` to `t`, collecting replies after each, then finishes.
fn observe(mut t: Terminal, chunks: &[&[u8]]) -> Seen {
    let mut replies = Vec::new();
    for c in chunks {
        t.feed(c);
        replies.extend(t.take_replies());
    }
    let (text, screen) = (t.text(), t.screen());
    t.finish();
    Seen {
        text,
        screen,
        replies,
        final_text: t.text(),
        final_screen: t.screen(),
    }
}

fn same(a: &Seen, b: &Seen, what: &str) -> Result<(), String> {
    let check = |ok: bool, field: &str| {
        if ok {
            Ok(())
        } else {
            Err(format!("{what}: {field} differs"))
        }
    };
    check(
        a.text == b.text,
        &format!("transcript ({})", first_difference(&a.text, &b.text)),
    )?;
    check(
        a.screen == b.screen,
        &format!("screen ({:?} vs {:?})", a.screen, b.screen),
    )?;
    check(
        a.replies == b.replies,
        &format!(
            "replies ({:?} vs {:?})",
            String::from_utf8_lossy(&a.replies),
            String::from_utf8_lossy(&b.replies)
        ),
    )?;
    check(a.final_text == b.final_text, "finished transcript")?;
    check(a.final_screen == b.final_screen, "finished screen")
}

/// Where two texts part, with some context (whole texts of long cases say nothing).
fn first_difference(a: &str, b: &str) -> String {
    if a.len() + b.len() < 4000 {
        return format!("{a:?} vs {b:?}");
    }
    let at = a
        .bytes()
        .zip(b.bytes())
        .position(|(x, y)| x != y)
        .unwrap_or(a.len().min(b.len()));
    let around = |s: &str| {
        let from = (at.saturating_sub(200)..=at)
            .find(|&i| s.is_char_boundary(i))
            .unwrap_or(0);
        let to = (at + 200..s.len())
            .find(|&i| s.is_char_boundary(i))
            .unwrap_or(s.len());
        format!("{:?}", &s[from..to.max(from)])
    };
    format!(
        "{} vs {} bytes, first difference at byte {at}: {} vs {}",
        a.len(),
        b.len(),
        around(a),
        around(b)
    )
}

/// A bare vt100 parser fed the same bytes: what the screen must show. Only for input that is
/// valid UTF-8 (ptyjobs draws invalid bytes as U+FFFD, which vt100 alone drops).
///
/// Also not for input with U+FE0F: a character in the bottom-right corner that it widens is
/// left by vt100 as a double-width cell in the last column (its bug, which ptyjobs repairs).
fn bare_screen(c: &Case) -> Option<(Vec<String>, (u16, u16), bool)> {
    let text = std::str::from_utf8(&c.input).ok()?;
    if text.contains('\u{fe0f}') {
        return None;
    }
    let nz = |v: u16| std::num::NonZeroU16::new(v).unwrap_or(std::num::NonZeroU16::MIN);
    // vt100 alone may panic (see the test below): then there is no reference screen.
    let p = std::panic::catch_unwind(|| {
        let mut p = vt100::Parser::new(nz(c.rows), nz(c.cols), 0);
        p.process(&c.input);
        p
    })
    .ok()?;
    let s = p.screen();
    Some((
        // ptyjobs reads U+10FFFD as U+FFFD (its stand-in for invalid bytes).
        s.rows(0, c.cols)
            .map(|r| r.replace('\u{10fffd}', "\u{fffd}"))
            .collect(),
        s.cursor_position(),
        s.alternate_screen(),
    ))
}

fn check_case(seed: u64, every_byte: bool) -> Result<(), String> {
    let c = case(seed);
    let (cols, rows) = (c.cols, c.rows);
    let reference = observe(Terminal::emulator_only(cols, rows, BIG, BIG), &[&c.input]);
    // Random pieces, as PTY reads arrive.
    let mut r = Rng(seed ^ 0x5eed);
    let mut chunks: Vec<&[u8]> = Vec::new();
    let mut at = 0;
    while at < c.input.len() {
        let max = if r.below(3) == 0 { 8 } else { 400 };
        let n = (r.below(max) + 1).min(c.input.len() - at);
        chunks.push(&c.input[at..at + n]);
        at += n;
    }
    let fast = observe(Terminal::new(cols, rows, BIG, BIG), &chunks);
    same(&fast, &reference, "fast path in pieces vs emulator")?;
    let slow_pieces = observe(Terminal::emulator_only(cols, rows, BIG, BIG), &chunks);
    same(&slow_pieces, &reference, "emulator in pieces vs emulator")?;
    if let Some((bare_rows, cursor, alt)) = bare_screen(&c) {
        let s = &reference.screen;
        if s.rows != bare_rows
            || (s.cursor_row, s.cursor_col) != cursor
            || s.alternate_screen != alt
        {
            return Err(format!(
                "screen differs from bare vt100: {:?} {:?} vs {:?} {:?}",
                s.rows,
                (s.cursor_row, s.cursor_col),
                bare_rows,
                cursor
            ));
        }
    }
    if every_byte {
        for cut in 0..=c.input.len() {
            let (a, b) = c.input.split_at(cut);
            let fast = observe(Terminal::new(cols, rows, BIG, BIG), &[a, b]);
            same(&fast, &reference, &format!("fast path cut at {cut}"))?;
        }
    }
    Ok(())
}

/// Checks every seed; returns how many cases ran and how many were also split at every byte.
fn run(seeds: impl Iterator<Item = u64>) -> (usize, usize) {
    let (mut n, mut cut) = (0, 0);
    for seed in seeds {
        let every_byte = seed % 8 == 0 && case(seed).input.len() <= 400;
        cut += usize::from(every_byte);
        let outcome = std::panic::catch_unwind(|| check_case(seed, every_byte))
            .unwrap_or_else(|_| Err("panicked".to_owned()));
        if let Err(e) = outcome {
            let c = case(seed);
            panic!(
                "differential case failed: seed {seed} (rerun with PTYJOBS_DIFF_SEED={seed}), \
                 {}x{}, input {:?}\n{e}",
                c.cols,
                c.rows,
                String::from_utf8_lossy(&c.input)
            );
        }
        n += 1;
    }
    (n, cut)
}

#[test]
fn the_fast_path_matches_the_emulator_on_generated_streams() {
    if let Some(seed) = std::env::var("PTYJOBS_DIFF_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        run(std::iter::once(seed));
        return;
    }
    let cases: u64 = std::env::var("PTYJOBS_DIFF_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5000);
    let started = std::time::Instant::now();
    let (n, cut) = run(1..=cases);
    eprintln!(
        "{n} differential cases ({cut} also split at every byte) in {:.1?}",
        started.elapsed()
    );
}

fn both(cols: u16, rows: u16) -> [Terminal; 2] {
    [
        Terminal::new(cols, rows, BIG * 16, BIG),
        Terminal::emulator_only(cols, rows, BIG * 16, BIG),
    ]
}

/// Feeds `input` in pieces of `size` bytes.
fn feed_in(t: &mut Terminal, input: &[u8], size: usize) {
    for chunk in input.chunks(size) {
        t.feed(chunk);
    }
}

/// The transcript of a wrapped line never depends on the widths of its characters: random
/// lines of narrow and wide characters, at random widths, come back exactly.
#[test]
fn wrapped_lines_come_back_whatever_their_character_widths() {
    let cases: u64 = std::env::var("PTYJOBS_DIFF_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5000)
        / 5;
    for seed in 1..=cases {
        let mut r = Rng(seed ^ 0x3173);
        let cols = 3 + r.below(40) as u16;
        let lines: Vec<String> = (0..r.below(12) + 1)
            .map(|_| {
                (0..r.below(usize::from(cols) * 4) + 1)
                    .map(|_| *r.pick(&["a", "b", "Z", "9", "漢", "中", "😀", "가", "é"]))
                    .collect()
            })
            .collect();
        let input: String = lines.iter().map(|l| format!("{l}\r\n")).collect();
        // (vt100 never marks a wrap on a one-row screen.)
        for mut t in both(cols, 2 + r.below(6) as u16) {
            let size = r.below(50) + 1;
            feed_in(&mut t, input.as_bytes(), size);
            t.finish();
            assert_eq!(t.text(), lines.join("\n"), "seed {seed}, {cols} columns");
        }
    }
}

fn long_case(seed: u64) -> Case {
    let mut r = Rng(seed ^ 0x10_1e);
    let (cols, rows) = *r.pick(&[(80u16, 24u16), (120, 40), (30, 6), (7, 3), (12, 1), (2, 2)]);
    let mut input = Vec::new();
    for _ in 0..r.below(4) + 1 {
        if r.below(3) == 0 {
            piece(&mut r, usize::from(cols), &mut input);
        } else {
            long_line(&mut r, usize::from(cols), &mut input);
        }
        if r.below(2) == 0 {
            input.extend_from_slice(b"\r\n");
        }
    }
    Case { cols, rows, input }
}

/// Long lines (the fast path wraps them in bulk) give what the emulator alone gives, fed in
/// pieces from one byte to 64 KiB.
#[test]
fn the_fast_path_matches_the_emulator_on_long_lines() {
    let one = std::env::var("PTYJOBS_DIFF_SEED")
        .ok()
        .and_then(|s| s.parse::<u64>().ok());
    let cases: u64 = std::env::var("PTYJOBS_DIFF_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5000)
        / 25;
    let seeds: Vec<u64> = one.map_or_else(|| (1..=cases).collect(), |s| vec![s]);
    let started = std::time::Instant::now();
    let mut bytes = 0;
    for seed in seeds {
        let c = long_case(seed);
        bytes += c.input.len();
        let reference = observe(
            Terminal::emulator_only(c.cols, c.rows, BIG, BIG),
            &[&c.input],
        );
        let mut r = Rng(seed ^ 0xc4_u64);
        let mut chunks: Vec<&[u8]> = Vec::new();
        let mut at = 0;
        while at < c.input.len() {
            let max = *r.pick(&[8, 400, 4096, 65536]);
            let n = (r.below(max) + 1).min(c.input.len() - at);
            chunks.push(&c.input[at..at + n]);
            at += n;
        }
        let outcome = std::panic::catch_unwind(|| {
            let fast = observe(Terminal::new(c.cols, c.rows, BIG, BIG), &chunks);
            same(&fast, &reference, "fast path in pieces vs emulator")?;
            let whole = observe(Terminal::new(c.cols, c.rows, BIG, BIG), &[&c.input]);
            same(&whole, &reference, "fast path whole vs emulator")
        })
        .unwrap_or_else(|_| Err("panicked".to_owned()));
        if let Err(e) = outcome {
            if let Ok(path) = std::env::var("PTYJOBS_DIFF_DUMP") {
                let mut dump = Vec::new();
                for ch in &chunks {
                    dump.extend_from_slice(&(ch.len() as u32).to_le_bytes());
                    dump.extend_from_slice(ch);
                }
                let _ = std::fs::write(path, dump);
            }
            panic!(
                "long-line case failed: seed {seed} (rerun with PTYJOBS_DIFF_SEED={seed}), {}x{}, \
                 {} bytes\n{}",
                c.cols,
                c.rows,
                c.input.len(),
                e.chars().take(2000).collect::<String>()
            );
        }
    }
    eprintln!(
        "long-line cases: {} bytes in {:.1?}",
        bytes,
        started.elapsed()
    );
}

/// One long line of printable text (the bulk path defers drawing its screen) read back after
/// every piece, as a reader between two reads of the PTY would: the transcript, the screen,
/// the line numbers and a cursor query's answer are the emulator's at every point.
#[test]
fn a_long_line_reads_the_same_between_any_two_pieces() {
    for seed in 1..=40u64 {
        let mut r = Rng(seed ^ 0xdefe);
        let (cols, rows) = *r.pick(&[(80u16, 24u16), (30, 6), (7, 3), (2, 2), (12, 4)]);
        let len = usize::from(cols) * usize::from(rows) * (2 + r.below(6)) + r.below(500);
        let mut input: Vec<u8> = (0..len).map(|_| b' ' + r.below(95) as u8).collect();
        if r.below(2) == 0 {
            input.extend_from_slice(b"\r\ntail\x1b[6n");
        }
        let [mut fast, mut slow] = both(cols, rows);
        let what = format!("seed {seed}, {cols}x{rows}");
        read_between_pieces(
            &mut r,
            [&mut fast, &mut slow],
            &input,
            &[3, 40, 700],
            &what,
            |_, [fast, slow], what| {
                assert_eq!(fast.text(), slow.text(), "{what}");
            },
        );
    }
}

/// Feeds `input` to `fast` and `slow` in random pieces (each at most one of `maxes` bytes) and
/// after every piece compares what a reader between two reads of the PTY sees: the screen,
/// the line count, the cursor's line, the replies, and whatever `more` checks; then finishes
/// both and compares the transcript and the screen.
fn read_between_pieces(
    r: &mut Rng,
    [fast, slow]: [&mut Terminal; 2],
    input: &[u8],
    maxes: &[usize],
    what: &str,
    mut more: impl FnMut(&mut Rng, [&mut Terminal; 2], &str),
) {
    let mut at = 0;
    while at < input.len() {
        let max = *r.pick(maxes);
        let n = (r.below(max) + 1).min(input.len() - at);
        fast.feed(&input[at..at + n]);
        slow.feed(&input[at..at + n]);
        at += n;
        let what = format!("{what}, after {at} bytes");
        assert_eq!(fast.screen(), slow.screen(), "{what}");
        more(r, [&mut *fast, &mut *slow], &what);
        assert_eq!(fast.total_lines(), slow.total_lines(), "{what}");
        assert_eq!(fast.cursor_line(), slow.cursor_line(), "{what}");
        assert_eq!(fast.take_replies(), slow.take_replies(), "{what}");
    }
    fast.finish();
    slow.finish();
    assert_eq!(fast.text(), slow.text(), "{what}, finished");
    assert_eq!(fast.screen(), slow.screen(), "{what}, finished");
    assert_eq!(fast.total_lines(), slow.total_lines(), "{what}, finished");
}

/// Runs of short lines (the fast path keeps a screenful of them undrawn while they scroll,
/// and the transcript stores them in one buffer) read the same as the emulator alone between
/// any two pieces: the screen, the transcript, its line numbers (with a small cap evicting
/// lines, and a small line cap cutting them), the cursor's line and a cursor query's answer.
#[test]
fn runs_of_short_lines_read_the_same_between_any_two_pieces() {
    for seed in 1..=300u64 {
        let mut r = Rng(seed ^ 0x5107);
        let (cols, rows) = *r.pick(&[(80u16, 24u16), (30, 6), (7, 3), (2, 2), (12, 4), (20, 1)]);
        let mut input = Vec::new();
        for _ in 0..r.below(4) + 1 {
            crate::common::streams::short_lines(
                &mut r,
                usize::from(cols),
                usize::from(rows),
                &mut input,
            );
            if r.below(3) == 0 {
                input.extend_from_slice(b"tail\x1b[6n");
            }
        }
        let (cap, line_cap) = match r.below(3) {
            0 => (BIG * 16, BIG),
            1 => (1500 + r.below(3000), BIG),
            _ => (BIG, 5 + r.below(30)),
        };
        let mut fast = Terminal::new(cols, rows, cap, line_cap);
        let mut slow = Terminal::emulator_only(cols, rows, cap, line_cap);
        let what = format!("seed {seed}, {cols}x{rows}");
        read_between_pieces(
            &mut r,
            [&mut fast, &mut slow],
            &input,
            &[3, 60, 700, 5000],
            &what,
            |r, [fast, slow], what| {
                // The whole transcript with its numbers (first held, final, total), and a read
                // from an offset inside it.
                let status = JobStatus::Running;
                assert_eq!(
                    fast.slice(None, None, status),
                    slow.slice(None, None, status),
                    "{what}"
                );
                let from = Some(
                    slow.total_lines()
                        .saturating_sub(r.below(2 * usize::from(rows)) as u64),
                );
                assert_eq!(
                    fast.slice(from, Some(rows.into()), status),
                    slow.slice(from, Some(rows.into()), status),
                    "{what}"
                );
            },
        );
    }
}
