//! The fast path is the emulator: random byte streams from a grammar covering every class of
//! terminal output, fed to [`Terminal`] (line model + emulator) in random pieces and to
//! [`Terminal::emulator_only`] in one piece, must give the same transcript, screen and replies;
//! the screen must also be what a bare vt100 parser shows for the same bytes.
//!
//! Seeded and reproducible: a failure prints its seed. `PTYJOBS_DIFF_CASES=<n>` runs more cases
//! (the default is bounded for the test command), `PTYJOBS_DIFF_SEED=<seed>` runs one case.

use ptyjobs_engine::{ScreenSnapshot, Terminal};

/// SplitMix64: small, fast, and reproducible from the seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
    fn bytes(&mut self, items: &[&'static [u8]]) -> &'static [u8] {
        items[self.below(items.len())]
    }
}

const WORDS: &[&str] = &[
    "a",
    "ok",
    "build",
    "line",
    "step",
    "x",
    "hello world",
    "  ",
    "0123456789",
    "-_=+[]{}",
];
const WIDE: &[&str] = &["漢", "中文", "😀", "🎉", "가", "ｱ"];
const OTHER_UTF8: &[&str] = &[
    "é",
    "e\u{301}",
    "\u{200b}",
    "👨\u{200d}👩\u{200d}👧",
    "🏳\u{fe0f}\u{200d}🌈",
    "ñ",
    "\u{10fffd}",
];
const INVALID: &[&[u8]] = &[
    b"\xff",
    b"\xc3",
    b"\xe2\x82",
    b"\xf0\x9f\x98",
    b"\x80",
    b"\xed\xa0\x80",
];

fn text(r: &mut Rng, out: &mut Vec<u8>) {
    for _ in 0..r.below(6) + 1 {
        match r.below(10) {
            0..=5 => out.extend_from_slice(r.pick(WORDS).as_bytes()),
            6 | 7 => out.extend_from_slice(r.pick(WIDE).as_bytes()),
            _ => out.extend_from_slice(r.pick(OTHER_UTF8).as_bytes()),
        }
    }
}

fn num(r: &mut Rng, max: usize) -> String {
    match r.below(4) {
        0 => String::new(),
        _ => r.below(max + 1).to_string(),
    }
}

fn csi(r: &mut Rng, out: &mut Vec<u8>) {
    let s = match r.below(24) {
        0 => format!("\x1b[{}A", num(r, 8)),
        1 => format!("\x1b[{}B", num(r, 8)),
        2 => format!("\x1b[{}C", num(r, 40)),
        3 => format!("\x1b[{}D", num(r, 40)),
        4 => format!("\x1b[{};{}H", num(r, 10), num(r, 40)),
        5 => format!("\x1b[{}G", num(r, 40)),
        6 => format!("\x1b[{}J", r.pick(&["", "0", "1", "2"])),
        7 => format!("\x1b[{}K", r.pick(&["", "0", "1", "2"])),
        8 => format!("\x1b[{};{}r", num(r, 4), num(r, 8)),
        9 => "\x1b[r".to_owned(),
        10 => format!(
            "\x1b[{}{}",
            num(r, 5),
            r.pick(&["@", "P", "L", "M", "X", "S", "T"])
        ),
        11 => format!(
            "\x1b[{}m",
            r.pick(&["", "0", "1", "31", "1;32", "7", "41", "0;44"])
        ),
        12 => format!("\x1b[38;5;{}m", r.below(256)),
        13 => "\x1b[38:2:10:20:30m".to_owned(),
        14 => format!(
            "\x1b[?{}{}",
            r.pick(&["25", "1", "2004", "1000;1006", "7", "6"]),
            r.pick(&["h", "l"])
        ),
        15 => format!("\x1b[{} q", r.below(7)),
        16 => r
            .pick(&[
                "\x1b[6n",
                "\x1b[5n",
                "\x1b[c",
                "\x1b[0c",
                "\x1b[>c",
                "\x1b[18t",
                "\x1b[14t",
                "\x1b[?6n",
                "\x1b[>0q",
                "\x1b[?2004$p",
                "\x1b[?1049$p",
                "\x1b[4$p",
            ])
            .to_string(),
        17 => format!("\x1b[{}d", num(r, 10)),
        18 => format!("\x1b[{}h", r.pick(&["4", "20"])) + *r.pick(&["", "\x1b[4l"]),
        19 => "\x1b[!p".to_owned(),
        20 => format!("\x1b[{}", r.pick(&["?", "1;", "2", "?25", ">"])), // cut off by what follows
        21 => format!("\x1b[1{}2J", r.pick(&["\n", "\r", "\x08", "\x07"])), // a control inside
        22 => format!("\x1b[{}E", num(r, 3)),
        _ => format!("\x1b[{}F", num(r, 3)),
    };
    out.extend_from_slice(s.as_bytes());
}

fn string(r: &mut Rng, out: &mut Vec<u8>) {
    let opener: &[u8] = r.bytes(&[
        &b"\x1b]0;"[..],
        b"\x1b]2;",
        b"\x1b]10;?",
        b"\x1b]11;?",
        b"\x1b]8;;",
        b"\x1bP",
        b"\x1bP1$q",
        b"\x1b_",
        b"\x1b^",
        b"\x1bX",
        b"\x1b]",
    ]);
    out.extend_from_slice(opener);
    for _ in 0..r.below(4) {
        match r.below(6) {
            0 => out.extend_from_slice(b"\r\n"),
            1 => out.extend_from_slice(b"1000\r\n1001"),
            2 => out.extend_from_slice(r.pick(WIDE).as_bytes()),
            _ => out.extend_from_slice(r.pick(WORDS).as_bytes()),
        }
    }
    let end: &[u8] = r.bytes(&[&b"\x07"[..], b"\x1b\\", b"", b"\x18", b"\x1a", b"\x1b[31m"]);
    out.extend_from_slice(end);
}

/// One piece of output, from a class chosen at random.
fn piece(r: &mut Rng, cols: usize, out: &mut Vec<u8>) {
    match r.below(30) {
        0..=5 => {
            text(r, out);
            out.extend_from_slice(b"\r\n");
        }
        6 | 7 => text(r, out),
        8 => {
            for i in 0..r.below(3 * cols) {
                out.extend_from_slice(format!("bulk {i}\r\n").as_bytes());
            }
        }
        9 => {
            // A long line without newline, wrapped many times.
            for _ in 0..r.below(cols * 6) + cols {
                if r.below(8) == 0 {
                    out.extend_from_slice(r.pick(WIDE).as_bytes());
                } else {
                    out.push(b'a' + r.below(26) as u8);
                }
            }
        }
        10 | 11 => out.extend_from_slice(r.bytes(&[
            &b"\x08"[..],
            b"\t",
            b"\r",
            b"\n",
            b"\x0b",
            b"\x0c",
            b"\x07",
            b"\x18",
            b"\x1a",
            b"\x00",
        ])),
        12..=16 => csi(r, out),
        17 | 18 => string(r, out),
        19 => out.extend_from_slice(b"\x1bc"),
        20 => out.extend_from_slice(r.bytes(&[
            &b"\x1b[?1049h"[..],
            b"\x1b[?1049l",
            b"\x1b[?47h",
            b"\x1b[?47l",
            b"\x1b[?1047h",
        ])),
        21 => out.extend_from_slice(r.bytes(&[
            &b"\x9b"[..],
            b"\x9d",
            b"\xc2\x9b31m",
            b"\xc2\x9d0;t\x07",
            b"\xc2\x90",
            b"\x9c",
        ])),
        22 => out.extend_from_slice(r.bytes(INVALID)),
        23 => out.extend_from_slice(r.bytes(&[
            &b"\x1b7"[..],
            b"\x1b8",
            b"\x1bM",
            b"\x1bD",
            b"\x1b=",
            b"\x1b>",
            b"\x1b(B",
            b"\x1b\x1bc",
            b"\x1b\xc3\xa9x",
        ])),
        24 => {
            // Progress redraws.
            for i in 0..r.below(5) {
                out.extend_from_slice(format!("\r{}% ", i * 25).as_bytes());
                if r.below(2) == 0 {
                    out.extend_from_slice(b"\x1b[K");
                }
            }
        }
        25 => {
            out.extend_from_slice(b"\x1b[32m");
            text(r, out);
            out.extend_from_slice(b"\x1b[0m\r\n");
        }
        26 => {
            // Exactly to the margin, then a wide character.
            for _ in 0..cols.saturating_sub(1 + r.below(3)) {
                out.push(b'm');
            }
            out.extend_from_slice(r.pick(WIDE).as_bytes());
        }
        _ => {
            out.extend_from_slice(format!("\x1b]0;step {}\x07", r.below(100)).as_bytes());
            out.extend_from_slice(format!("line {}\r\n", r.below(100)).as_bytes());
        }
    }
}

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

/// A long line without newline (2 KB to ~100 KB): runs of printable ASCII, now and then a wide
/// character, a colour, an erase, a `\r` redraw, or any other piece of output.
fn long_line(r: &mut Rng, cols: usize, out: &mut Vec<u8>) {
    let len = (1usize << (11 + r.below(6))) + r.below(40_000);
    let start = out.len();
    while out.len() - start < len {
        match r.below(40) {
            0 => out.extend_from_slice(r.pick(WIDE).as_bytes()),
            1 => out.extend_from_slice(
                r.pick(&["\x1b[31m", "\x1b[0m", "\x1b[1;44m", "\x1b[m"])
                    .as_bytes(),
            ),
            2 => out.extend_from_slice(b"\r"),
            3 => out.extend_from_slice(b"\x1b[K"),
            4 => piece(r, cols, out),
            _ => {
                let run = match r.below(3) {
                    0 => r.below(cols + 2) + 1,
                    _ => r.below(5000) + 1,
                };
                out.extend((0..run).map(|_| b' ' + r.below(95) as u8));
            }
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
