//! The random-stream grammar of the differential test (`tests/differential.rs`): pieces of
//! every class of terminal output (text of every width, controls, CSI, strings, invalid UTF-8,
//! resets, screen switches, progress redraws) and long lines without newlines, drawn from a
//! seeded [`Rng`] so that every case is reproducible from its seed.
#![allow(dead_code)]

/// SplitMix64: small, fast, and reproducible from the seed.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
    pub fn bytes(&mut self, items: &[&'static [u8]]) -> &'static [u8] {
        items[self.below(items.len())]
    }
}

pub const WORDS: &[&str] = &[
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
pub const WIDE: &[&str] = &["漢", "中文", "😀", "🎉", "가", "ｱ"];
pub const OTHER_UTF8: &[&str] = &[
    "é",
    "e\u{301}",
    "\u{200b}",
    "👨\u{200d}👩\u{200d}👧",
    "🏳\u{fe0f}\u{200d}🌈",
    "ñ",
    "\u{10fffd}",
];
pub const INVALID: &[&[u8]] = &[
    b"\xff",
    b"\xc3",
    b"\xe2\x82",
    b"\xf0\x9f\x98",
    b"\x80",
    b"\xed\xa0\x80",
];

pub fn text(r: &mut Rng, out: &mut Vec<u8>) {
    for _ in 0..r.below(6) + 1 {
        match r.below(10) {
            0..=5 => out.extend_from_slice(r.pick(WORDS).as_bytes()),
            6 | 7 => out.extend_from_slice(r.pick(WIDE).as_bytes()),
            _ => out.extend_from_slice(r.pick(OTHER_UTF8).as_bytes()),
        }
    }
}

pub fn num(r: &mut Rng, max: usize) -> String {
    match r.below(4) {
        0 => String::new(),
        _ => r.below(max + 1).to_string(),
    }
}

pub fn csi(r: &mut Rng, out: &mut Vec<u8>) {
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

pub fn string(r: &mut Rng, out: &mut Vec<u8>) {
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
pub fn piece(r: &mut Rng, cols: usize, out: &mut Vec<u8>) {
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

/// A long line without newline (2 KB to ~100 KB): runs of printable ASCII, now and then a wide
/// character, a colour, an erase, a `\r` redraw, or any other piece of output.
pub fn long_line(r: &mut Rng, cols: usize, out: &mut Vec<u8>) {
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

/// A run of short lines (up to five screenfuls of `rows`, each line `\r\n`-ended as a PTY
/// delivers it): text up to the margin, blank lines, printed trailing spaces, colours, `\r`
/// redraws and erases (`\x1b[1K` leaves blank cells before the text), and now and then
/// something the line model does not take: a tab, a wide or invalid character, a line that
/// wraps, a cursor query, a clear, or any other piece of output.
pub fn short_lines(r: &mut Rng, cols: usize, rows: usize, out: &mut Vec<u8>) {
    // Up to `below - 1` printable characters.
    fn printable(r: &mut Rng, below: usize, out: &mut Vec<u8>) {
        let n = r.below(below);
        out.extend((0..n).map(|_| b' ' + r.below(95) as u8));
    }
    for _ in 0..r.below(rows * 5 + 2) + 1 {
        match r.below(60) {
            0 => out.extend_from_slice(b"\t"),
            1 => out.extend_from_slice(r.pick(WIDE).as_bytes()),
            2 => out.extend_from_slice(r.bytes(INVALID)),
            3 => {
                let n = cols + r.below(cols * 2 + 1);
                out.extend((0..n).map(|_| b'!' + r.below(90) as u8));
            }
            4 => out.extend_from_slice(b"\x1b[6n"),
            5 => {
                out.extend_from_slice(r.pick(&["\x1b[2J", "\x1b[H\x1b[J", "\x1b[5;1H"]).as_bytes())
            }
            6 => piece(r, cols, out),
            7 => out.extend_from_slice(b"\x1b[3b"),
            _ => {}
        }
        match r.below(12) {
            0 => {}
            1 => out.extend_from_slice(b"   "),
            2 => {
                printable(r, cols, out);
                out.extend_from_slice(b"\x1b[1K");
                printable(r, cols / 2 + 1, out);
            }
            3 => {
                printable(r, cols, out);
                out.extend_from_slice(b"\r");
                printable(r, cols / 2 + 1, out);
                out.extend_from_slice(r.pick(&["\x1b[K", "", "\x1b[2K"]).as_bytes());
            }
            4 => {
                out.extend_from_slice(
                    r.pick(&["\x1b[32m", "\x1b[1;4m", "\x1b[0m", "\x1b[m"])
                        .as_bytes(),
                );
                printable(r, cols, out);
                out.extend_from_slice(r.pick(&["\x1b[0m", ""]).as_bytes());
            }
            _ => printable(r, cols, out),
        }
        out.extend_from_slice(b"\r\n");
    }
}
