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
        &format!("transcript ({:?} vs {:?})", a.text, b.text),
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

/// vt100 0.18 panics when a double-width cell left in the last column (a character in the
/// bottom-right corner widened by U+FE0F as the screen scrolls) is overwritten; the terminal
/// survives it and goes on.
#[test]
fn an_emulator_panic_on_a_wide_cell_at_the_margin_is_survived() {
    let input = "\x1b[1;9H\n\n🏳🏳\u{fe0f}aaaaaaaaa\x1b[1;9Haaaaaaaaa\r\nnext line\r\n";
    let bare = std::panic::catch_unwind(|| {
        let nz = |v: u16| std::num::NonZeroU16::new(v).unwrap_or(std::num::NonZeroU16::MIN);
        vt100::Parser::new(nz(3), nz(10), 0).process(input.as_bytes());
    });
    assert!(
        bare.is_err(),
        "vt100 no longer panics here: this test can go"
    );
    for mut t in [
        Terminal::new(10, 3, BIG, BIG),
        Terminal::emulator_only(10, 3, BIG, BIG),
    ] {
        t.feed(input.as_bytes());
        t.feed(b"more\r\n");
        t.finish();
        let text = t.text();
        assert!(
            text.contains("next line") && text.ends_with("more"),
            "{text:?}"
        );
    }
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

/// Issue 12, finding 2: a build loop setting the title before every line lost lines.
#[test]
fn a_build_loop_setting_titles_loses_no_line() {
    let mut input = Vec::new();
    let mut expected = Vec::new();
    for n in 0..20_000 {
        input.extend_from_slice(format!("\x1b]0;building step {n}\x07line {n}\r\n").as_bytes());
        expected.push(format!("line {n}"));
    }
    for size in [4096, 1000, 77] {
        for mut t in both(80, 24) {
            feed_in(&mut t, &input, size);
            t.finish();
            assert_eq!(t.text(), expected.join("\n"), "pieces of {size}");
            assert_eq!(t.screen().title.as_deref(), Some("building step 19999"));
        }
    }
}

/// Issue 12, finding 2: an OSC whose body spans lines hid real lines and showed its body.
#[test]
fn a_title_spanning_lines_hides_its_body_and_nothing_else() {
    let seq = |a: u32, b: u32| -> String { (a..=b).map(|n| format!("{n}\r\n")).collect() };
    let input = format!(
        "{}\x1b]0;{}\x07{}",
        seq(1, 100),
        seq(1000, 1100),
        seq(5000, 5100)
    );
    let expected: Vec<String> = (1..=100)
        .chain(5000..=5100)
        .map(|n| n.to_string())
        .collect();
    for size in [4096, 64, 7, 1] {
        for mut t in both(80, 24) {
            feed_in(&mut t, input.as_bytes(), size);
            t.finish();
            assert_eq!(t.text(), expected.join("\n"), "pieces of {size}");
        }
    }
}

/// Issue 12, finding 3: a double-width character that does not fit in the last column.
#[test]
fn a_wide_character_wrapped_at_the_margin_joins_its_line() {
    let line = format!("{}{}", "a".repeat(11), "漢".repeat(70));
    for mut t in both(120, 40) {
        t.feed(format!("{line}\r\n").as_bytes());
        assert_eq!(t.text(), line, "on screen");
        for i in 0..50 {
            t.feed(format!("after {i}\r\n").as_bytes());
        }
        assert_eq!(t.text().lines().next(), Some(line.as_str()), "scrolled off");
        assert_eq!(t.text().lines().count(), 51);
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

/// Issue 11, finding 4: a 30 MB title is cut to the string cap.
#[test]
fn a_huge_title_is_truncated() {
    let mut input = b"\x1b]0;".to_vec();
    input.resize(30 << 20, b't');
    input.extend_from_slice(b"\x07after\r\n");
    for mut t in both(80, 24) {
        feed_in(&mut t, &input, 65536);
        let title = t.screen().title.unwrap_or_default();
        assert!(
            title.len() <= 4096 && title.starts_with("ttt"),
            "{}",
            title.len()
        );
        assert_eq!(t.text(), "after");
    }
}
