//! The fast path against the emulator alone: same bytes, same transcript, same screen.

use super::*;

/// A small deterministic generator (xorshift), so failures reproduce from the seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn text(&mut self, max: u64) -> String {
        let len = self.below(max + 1);
        (0..len)
            .map(|_| b"abcdefghij klmnop"[self.below(17) as usize] as char)
            .collect()
    }
}

/// One random piece of terminal output, from the kinds real programs print.
fn piece(r: &mut Rng) -> String {
    match r.below(20) {
        0..=4 => format!("{}\r\n", r.text(40)),
        5 => (0..r.below(30))
            .map(|i| format!("bulk line {i}\r\n"))
            .collect(),
        6 => format!(
            "\x1b[3{}m{}\x1b[0m {}\r\n",
            r.below(8),
            r.text(10),
            r.text(10)
        ),
        7 => format!("\x1b[1;3{}m{}", r.below(8), r.text(10)),
        8 => {
            let mut s = String::new();
            for _ in 0..r.below(6) {
                s.push_str(&format!("\r{}", r.text(25)));
                if r.below(3) == 0 {
                    s.push_str("\x1b[K");
                }
            }
            if r.below(2) == 0 {
                s.push_str("\r\n");
            }
            s
        }
        9 => format!("{}\n", r.text(5)),
        10 => format!("wide \u{4e2d}\u{6587} {}\r\n", r.text(5)),
        11 => format!("a\tb\tc{}\r\n", r.text(3)),
        12 => format!("\x1b[1A\x1b[2K{}\r\n", r.text(10)),
        13 => "\x1b[2J\x1b[H".to_owned(),
        14 => format!("\x1b[?1049h\x1b[H{}\x1b[?1049l", r.text(10)),
        15 => format!("\x1b[2;4r{}\r\n\x1b[r", r.text(10)),
        16 => format!("prompt> {}", r.text(5)),
        17 => format!("\x07\x1b[41m\x1b[K{}\x1b[0m\r\n", r.text(5)),
        18 => format!("{}\x1b[0K\r\n", r.text(31)),
        _ => format!("\x1b[4h{}\x1b[4l\r{}\r\n", r.text(5), r.text(8)),
    }
}

fn terminals() -> (Terminal, Terminal) {
    (
        Terminal::new(30, 6, 1 << 20, 1 << 16),
        Terminal::emulator_only(30, 6, 1 << 20, 1 << 16),
    )
}

fn assert_same(fast: &Terminal, slow: &Terminal, context: &str) {
    assert_eq!(fast.text(), slow.text(), "transcript differs: {context}");
    assert_eq!(fast.screen(), slow.screen(), "screen differs: {context}");
}

#[test]
fn the_fast_path_matches_the_emulator_on_random_output() {
    for seed in 1..=300u64 {
        let mut r = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let input: String = (0..r.below(40) + 1).map(|_| piece(&mut r)).collect();
        let (mut fast, mut slow) = terminals();
        slow.feed(input.as_bytes());
        // Fed in random chunks, as PTY reads arrive.
        let bytes = input.as_bytes();
        let mut at = 0;
        while at < bytes.len() {
            let n = (r.below(300) as usize + 1).min(bytes.len() - at);
            fast.feed(&bytes[at..at + n]);
            at += n;
            assert_eq!(
                fast.screen().cursor_row,
                {
                    let mut probe = Terminal::emulator_only(30, 6, 1 << 20, 1 << 16);
                    probe.feed(&bytes[..at]);
                    probe.screen().cursor_row
                },
                "cursor differs mid-stream: seed {seed} at {at}"
            );
        }
        assert_same(&fast, &slow, &format!("seed {seed}: {input:?}"));
    }
}

#[test]
fn the_fast_path_matches_the_emulator_split_at_every_byte() {
    let mut r = Rng(42);
    let input: String = (0..25).map(|_| piece(&mut r)).collect();
    let bytes = input.as_bytes();
    let (_, mut slow) = terminals();
    slow.feed(bytes);
    for cut in 0..=bytes.len() {
        let (mut fast, _) = terminals();
        fast.feed(&bytes[..cut]);
        fast.feed(&bytes[cut..]);
        assert_same(&fast, &slow, &format!("cut at {cut}"));
    }
}

#[test]
fn a_long_run_of_lines_skips_the_emulator_but_keeps_every_line() {
    let input: String = (0..1000)
        .map(|i| format!("\x1b[32mline\x1b[0m {i}\r\n"))
        .collect();
    let (mut fast, mut slow) = terminals();
    fast.feed(input.as_bytes());
    slow.feed(input.as_bytes());
    assert_same(&fast, &slow, "1000 lines");
    assert_eq!(fast.total_lines(), 1000);
}

#[test]
fn a_run_of_short_lines_is_not_drawn_until_something_needs_the_screen() {
    let input: String = (0..100).map(|i| format!("line {i}\r\n")).collect();
    let (mut fast, mut slow) = terminals();
    for piece in input.as_bytes().chunks(97) {
        fast.feed(piece);
        slow.feed(piece);
        assert_same(&fast, &slow, "between pieces");
    }
    // The screen is held as the rows the line model finished; the emulator shows nothing.
    assert!(fast.lines_deferred());
    assert_eq!(fast.parser.screen().contents(), "");
    assert_eq!(fast.screen().rows[4], "line 99");
    assert_eq!((fast.total_lines(), fast.cursor_line()), (100, 100));
    // A query needs the emulator's cursor: the screen is drawn first, then answered.
    for t in [&mut fast, &mut slow] {
        t.feed(b"> \x1b[6n");
    }
    assert!(!fast.lines_deferred());
    assert_eq!(fast.take_replies(), b"\x1b[6;3R");
    assert_eq!(slow.take_replies(), b"\x1b[6;3R");
    assert_eq!(
        fast.parser.screen().contents(),
        slow.parser.screen().contents()
    );
    assert_same(&fast, &slow, "after the query");
}

#[test]
fn queries_and_repeats_after_what_the_line_model_took_match_the_emulator() {
    // A chunk the line model takes whole, then one starting with a query (the cursor's place
    // and attributes are read from the emulator), a repeat of the last character or a clear.
    let after = [
        "\x1b[6n",
        "\x1b[3b\r\n",
        "\x1b[2J",
        "\x1b[?1049h\x1b[?1049l",
        "\x1b[c",
        "\x1b]0;title\x07",
        "\t\r\n",
    ];
    for seed in 1..=200u64 {
        let mut r = Rng(seed.wrapping_mul(0x2545_f491_4f6c_dd1d));
        let (mut fast, mut slow) = terminals();
        let (mut fast_replies, mut slow_replies) = (Vec::new(), Vec::new());
        let mut fed = String::new();
        for _ in 0..r.below(12) + 1 {
            let text = match r.below(4) {
                0 => format!("\x1b[3{}m{}\x1b[0m {}", r.below(8), r.text(8), r.text(6)),
                1 => format!("{}\r\n\x1b[1m{}", r.text(12), r.text(4)),
                2 => (0..r.below(12))
                    .map(|i| format!("\x1b[32mok\x1b[0m {i}\r\n"))
                    .collect(),
                _ => piece(&mut r),
            };
            let next = after[r.below(after.len() as u64) as usize];
            for chunk in [text.as_str(), next] {
                fast.feed(chunk.as_bytes());
                slow.feed(chunk.as_bytes());
                fast_replies.extend(fast.take_replies());
                slow_replies.extend(slow.take_replies());
            }
            fed.push_str(&text);
            fed.push_str(next);
        }
        assert_eq!(
            fast_replies, slow_replies,
            "replies differ: seed {seed}: {fed:?}"
        );
        assert_same(&fast, &slow, &format!("seed {seed}: {fed:?}"));
    }
}

#[test]
fn lines_fed_one_by_one_take_the_screen_over_once_it_shows_only_plain_lines() {
    let (mut fast, mut slow) = terminals();
    // A coloured erase leaves coloured blanks: that screen cannot be taken over until the row
    // scrolled off.
    let mut pieces = vec!["\x1b[41m\x1b[Kred\x1b[0m\r\n".to_owned()];
    pieces.extend((0..40).map(|i| format!("\x1b[32mline\x1b[0m {i}  \x1b[1mx\x1b[0m\r\n")));
    let mut deferred_after = None;
    for (n, piece) in pieces.iter().enumerate() {
        fast.feed(piece.as_bytes());
        slow.feed(piece.as_bytes());
        assert_same(&fast, &slow, &format!("after piece {n}"));
        assert_eq!(fast.cursor_line(), slow.cursor_line(), "after piece {n}");
        if n < 6 {
            assert!(
                !fast.lines_deferred(),
                "the coloured row is still on screen"
            );
        }
        if fast.lines_deferred() && deferred_after.is_none() {
            deferred_after = Some(n);
        }
    }
    assert!(deferred_after.is_some(), "never taken over");
    assert!(fast.lines_deferred());
    // A query needs the emulator: the held screen is drawn first.
    for t in [&mut fast, &mut slow] {
        t.feed(b"> \x1b[6n");
    }
    assert_eq!(fast.take_replies(), slow.take_replies());
    assert_eq!(
        fast.parser.screen().contents(),
        slow.parser.screen().contents()
    );
    assert_same(&fast, &slow, "after the query");
}

#[test]
fn output_that_needs_the_emulator_every_few_lines_is_taken_over_ever_more_rarely() {
    // Every fourth line holds a tab, which the line model leaves to the emulator: a screen
    // taken over is drawn again a few lines later, so the wait before the next takeover grows.
    let (mut fast, mut slow) = terminals();
    let mut takeovers = 0;
    for i in 0..2000 {
        let line = if i % 4 == 0 {
            format!("a\tb {i}\r\n")
        } else {
            format!("line {i}\r\n")
        };
        let was = fast.lines_deferred();
        fast.feed(line.as_bytes());
        slow.feed(line.as_bytes());
        if !was && fast.lines_deferred() {
            takeovers += 1;
        }
    }
    assert_same(&fast, &slow, "2000 lines");
    // Without the growing wait: a takeover every few screenfuls, well over 100.
    assert!((1..30).contains(&takeovers), "{takeovers} takeovers");
}
