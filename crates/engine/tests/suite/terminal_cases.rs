//! Exact transcript cases of the terminal model: the sequences issues 11 and 12 found wrong,
//! through the fast path and the emulator alone, fed in pieces of several sizes.

use ptyjobs_engine::Terminal;

const BIG: usize = 1 << 20;

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
