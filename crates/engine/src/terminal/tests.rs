use super::*;

fn text_of(bytes: &[u8]) -> String {
    let mut t = Terminal::new(20, 5, 1 << 20, 1 << 16);
    t.feed(bytes);
    t.finish();
    t.text()
}

/// Feeding the bytes in two pieces, cut at every position, gives the same text and screen.
fn assert_split_invariant(bytes: &[u8]) {
    let mut whole = Terminal::new(20, 5, 1 << 20, 1 << 16);
    whole.feed(bytes);
    whole.finish();
    for cut in 0..=bytes.len() {
        let mut t = Terminal::new(20, 5, 1 << 20, 1 << 16);
        t.feed(&bytes[..cut]);
        t.feed(&bytes[cut..]);
        t.finish();
        assert_eq!(t.text(), whole.text(), "cut at {cut}");
        assert_eq!(t.screen(), whole.screen(), "cut at {cut}");
    }
}

#[test]
fn colours_are_stripped() {
    assert_eq!(
        text_of(b"\x1b[31mred\x1b[0m and \x1b[1;32mgreen\x1b[0m\r\n"),
        "red and green"
    );
}

#[test]
fn carriage_return_redraws_leave_the_final_state() {
    assert_eq!(text_of(b"10%\r50%\r100%\r\ndone\r\n"), "100%\ndone");
    assert_eq!(text_of(b"[###   ]\r\x1b[K[######]\r\n"), "[######]");
}

#[test]
fn wrapped_lines_are_joined_both_on_screen_and_after_scrolling() {
    let long = "abcdefghijklmnopqrstuvwxyz0123456789"; // 36 chars on a 20-col screen
    let mut t = Terminal::new(20, 5, 1 << 20, 1 << 16);
    t.feed(format!("{long}\r\n").as_bytes());
    assert_eq!(t.text(), long);
    for i in 0..10 {
        t.feed(format!("line{i}\r\n").as_bytes());
    }
    let text = t.text();
    assert_eq!(text.lines().next(), Some(long));
    assert_eq!(text.lines().count(), 11);
}

#[test]
fn lines_scrolled_off_the_screen_are_kept_in_order() {
    let mut input = String::new();
    for i in 0..100 {
        input.push_str(&format!("line {i}\r\n"));
    }
    let text = text_of(input.as_bytes());
    let expected: Vec<String> = (0..100).map(|i| format!("line {i}")).collect();
    assert_eq!(text, expected.join("\n"));
}

#[test]
fn a_full_clear_keeps_what_was_on_screen() {
    assert_eq!(
        text_of(b"before\r\n\x1b[2J\x1b[Hafter\r\n"),
        "before\nafter"
    );
    assert_eq!(
        text_of(b"one\r\ntwo\r\n\x1b[H\x1b[Jthree\r\n"),
        "one\ntwo\nthree"
    );
    assert_eq!(text_of(b"run 1\r\n\x1bcrun 2\r\n"), "run 1\nrun 2");
}

#[test]
fn clearing_below_the_cursor_mid_screen_is_a_redraw_not_a_clear() {
    // A spinner that moves up and erases: only the final frame stays.
    assert_eq!(
        text_of(b"head\r\nframe1\r\n\x1b[1A\x1b[Jframe2\r\n"),
        "head\nframe2"
    );
}

#[test]
fn the_alternate_screen_stays_out_of_the_transcript() {
    let text = text_of(b"pre\r\n\x1b[?1049hSECRET\r\n\x1b[2Jmore secret\x1b[?1049lpost\r\n");
    assert!(
        !text.contains("SECRET") && !text.contains("secret"),
        "{text}"
    );
    assert!(text.starts_with("pre"), "{text}");
    assert!(text.contains("post"), "{text}");
}

#[test]
fn while_on_the_alternate_screen_the_transcript_shows_the_main_screen() {
    let mut t = Terminal::new(20, 5, 1 << 20, 1 << 16);
    t.feed(b"main text\r\n\x1b[?1049h\x1b[HTUI");
    assert_eq!(t.text(), "main text");
    let screen = t.screen();
    assert!(screen.alternate_screen);
    assert_eq!(screen.rows[0], "TUI");
}

#[test]
fn a_prompt_without_newline_is_visible() {
    assert_eq!(text_of(b"Name? "), "Name? ");
}

#[test]
fn invalid_utf8_becomes_replacement_characters() {
    assert_eq!(text_of(b"\xff\xfe ok\r\n"), "\u{fffd}\u{fffd} ok");
    assert_eq!(text_of(b"a\xffb\xe2\x82c\r\n"), "a\u{fffd}b\u{fffd}c");
    // A character cut off by the end of the output.
    assert_eq!(text_of(b"end\xe2\x82"), "end\u{fffd}");
}

#[test]
fn osc_titles_and_modes_are_consumed() {
    let text = text_of(b"\x1b]0;my title\x07\x1b[?2004h\x1b[?1000hvisible\r\n");
    assert_eq!(text, "visible");
    let mut t = Terminal::new(20, 5, 1 << 20, 1 << 16);
    t.feed(b"\x1b]2;the title\x07");
    assert_eq!(t.screen().title.as_deref(), Some("the title"));
}

#[test]
fn text_does_not_depend_on_how_bytes_were_split() {
    assert_split_invariant(b"\x1b[31mred\x1b[0m\r\nprogress 1\rprogress 2\r\n");
    assert_split_invariant(b"before\r\n\x1b[2J\x1b[Hafter\r\nx\x1bcy\r\n");
    assert_split_invariant(b"pre\r\n\x1b[?1049hALT\x1b[?1049lpost\r\n");
    assert_split_invariant(
        &[
            "caf\u{e9} \u{1f600} wide\u{4e2d}\u{6587}\r\n".as_bytes(),
            b"\xff",
        ]
        .concat(),
    );
    let mut many = Vec::new();
    for i in 0..12 {
        many.extend_from_slice(format!("row {i} with some text to wrap around\r\n").as_bytes());
    }
    assert_split_invariant(&many);
}

#[test]
fn a_single_endless_line_stays_bounded() {
    let mut t = Terminal::new(80, 24, 64 * 1024, 1024);
    let chunk = vec![b'a'; 4096];
    for _ in 0..1024 {
        t.feed(&chunk); // 4 MiB, no newline
    }
    let all = t.slice(None, None, JobStatus::Running);
    assert!(
        all.output.len() <= 64 * 1024 + 80 * 24 + 1024,
        "{}",
        all.output.len()
    );
    assert!(all.dropped_lines > 0);
    let tail = t.tail(3, JobStatus::Running);
    assert!(
        tail.output.len() <= 3 * 1024 + 80 * 24,
        "{}",
        tail.output.len()
    );
}

#[test]
fn line_numbers_stay_absolute_after_eviction() {
    let mut t = Terminal::new(20, 3, 200, 1 << 16);
    for i in 0..100 {
        t.feed(format!("l{i:03}\r\n").as_bytes());
    }
    let s = t.slice(None, None, JobStatus::Running);
    assert!(s.dropped_lines > 0);
    assert_eq!(s.first_line, s.dropped_lines);
    assert_eq!(
        s.output.lines().next(),
        Some(format!("l{:03}", s.first_line).as_str())
    );
    let later = t.slice(Some(98), None, JobStatus::Running);
    assert_eq!(later.output, "l098\nl099");
    assert_eq!(later.next_offset, 100);
    let gone = t.slice(Some(0), Some(2), JobStatus::Running);
    assert!(gone.truncated);
    assert_eq!(gone.first_line, s.dropped_lines);
}

#[test]
fn slices_report_ranges_and_truncation() {
    let mut t = Terminal::new(20, 10, 1 << 20, 1 << 16);
    t.feed(b"a\r\nb\r\nc\r\nd\r\n");
    let s = t.slice(Some(1), Some(2), JobStatus::Running);
    assert_eq!(
        (
            s.output.as_str(),
            s.first_line,
            s.next_offset,
            s.total_lines
        ),
        ("b\nc", 1, 3, 4)
    );
    assert!(s.truncated);
    let rest = t.slice(Some(s.next_offset), None, JobStatus::Running);
    assert_eq!(rest.output, "d");
    assert!(!rest.truncated);
    let past = t.slice(Some(50), None, JobStatus::Running);
    assert_eq!(
        (past.output.as_str(), past.line_count, past.next_offset),
        ("", 0, 4)
    );
    assert_eq!(t.tail(2, JobStatus::Running).output, "c\nd");
}

#[test]
fn finishing_makes_every_line_final_and_keeps_the_last_screen() {
    let mut t = Terminal::new(20, 5, 1 << 20, 1 << 16);
    t.feed(b"one\r\ntwo\r\nprompt> ");
    let (text, screen) = (t.text(), t.screen());
    let before = t.slice(None, None, JobStatus::Running);
    assert!(before.final_lines < before.total_lines);
    t.finish();
    assert_eq!(t.text(), text);
    assert_eq!(
        t.screen(),
        screen,
        "the last screen is still shown after the end"
    );
    let after = t.slice(None, None, JobStatus::Completed);
    assert_eq!((after.final_lines, after.total_lines), (3, 3));
    // A program that died on the alternate screen: its main-screen text is what stays.
    let mut t = Terminal::new(20, 5, 1 << 20, 1 << 16);
    t.feed(b"before\r\n\x1b[?1049hTUI");
    t.finish();
    assert_eq!(t.text(), "before");
    assert!(t.screen().alternate_screen);
}

#[test]
fn a_terminal_nothing_was_fed_shows_what_a_fresh_emulator_shows() {
    let fresh = Terminal::new(120, 40, 1 << 20, 1 << 16);
    let mut born = Terminal::new(120, 40, 1 << 20, 1 << 16);
    born.feed(b"\x1b[0m");
    assert_eq!(fresh.screen(), born.screen());
    assert_eq!(fresh.text(), born.text());
    assert_eq!(fresh.total_lines(), born.total_lines());
    // A resize before the first output is the size the emulator is born with.
    let mut resized = Terminal::new(120, 40, 1 << 20, 1 << 16);
    resized.resize(30, 5);
    resized.feed(b"\x1b[18t");
    assert_eq!(resized.take_replies(), b"\x1b[8;5;30t");
    assert_eq!(resized.screen().rows.len(), 5);
    let mut finished = Terminal::new(20, 3, 1 << 20, 1 << 16);
    finished.finish();
    assert_eq!(finished.screen().rows, vec![String::new(); 3]);
}

#[test]
fn final_lines_are_events_in_the_order_the_transcript_gets_them() {
    let mut t = Terminal::new(10, 3, 1 << 20, 1 << 16);
    t.feed(b"b1\r\nb2\r\nb3\r\nb4\r\n");
    let before = usize::try_from(t.final_end()).unwrap_or(0);
    assert_eq!(before, 2, "b1 and b2 scrolled off");
    t.emit_final_lines();
    let mut taken = Vec::new();
    for chunk in [
        &b"one\r\ntwo\r\nthree\r\nfour\r\n"[..],
        b"\x1b[2J",
        b"a long line wraps",
    ] {
        t.feed(chunk);
        taken.extend(t.take_final_lines());
    }
    t.finish();
    taken.extend(t.take_final_lines());
    assert!(t.take_final_lines().is_empty());
    let all: Vec<String> = t.text().lines().map(str::to_owned).collect();
    // Every line final after the listening began (b3 and b4 were still on screen), none
    // before, none twice.
    assert_eq!(taken, all[before..]);
    assert_eq!(taken[..2], ["b3", "b4"]);
}
