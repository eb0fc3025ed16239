//! The "since" read's invariant (see [`super::shown`]), tested against random streams of
//! prompts redrawn in place: a reader that keeps every answer, each read from the last
//! `next_offset`, always holds exactly the terminal's text; final lines never change.

use super::*;

/// A small deterministic generator (xorshift): the same streams on every run.
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
}

/// A random piece of a prompt library's output: text, line ends, cursor-up redraws, erases.
fn piece(rng: &mut Rng) -> Vec<u8> {
    let words = [
        "apple",
        "pear",
        "? Pick one:",
        "> plum",
        "Name?",
        "│  ○ Vue",
        "└",
        "x",
    ];
    match rng.below(10) {
        0..=2 => words[rng.below(words.len() as u64) as usize]
            .as_bytes()
            .to_vec(),
        3 | 4 => b"\r\n".to_vec(),
        5 => format!("\x1b[{}A", 1 + rng.below(4)).into_bytes(),
        6 => b"\x1b[J".to_vec(),
        7 => b"\r\x1b[K".to_vec(),
        8 => format!("\x1b[{}G", 1 + rng.below(6)).into_bytes(),
        _ => b"\r\n\r\n\r\n".to_vec(),
    }
}

/// Applies an answer to what the reader holds: lines from `first_line` on are replaced.
fn apply(view: &mut Vec<String>, slice: &OutputSlice) {
    let first = usize::try_from(slice.first_line).expect("small");
    assert!(
        first <= view.len(),
        "an answer never starts past what was read"
    );
    view.truncate(first);
    if slice.line_count > 0 {
        view.extend(slice.output.split('\n').map(str::to_owned));
    }
}

#[test]
fn a_reader_from_next_offset_always_holds_the_whole_text() {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    for round in 0..300 {
        let mut t = Terminal::new(12, 4 + rng.below(4) as u16, 1 << 20, 1 << 16);
        let mut view: Vec<String> = Vec::new();
        let mut next = 0;
        let mut finals: Vec<String> = Vec::new();
        let mut stream = Vec::new();
        for _ in 0..(10 + rng.below(60)) {
            let bytes = piece(&mut rng);
            stream.extend_from_slice(&bytes);
            t.feed(&bytes);
            if rng.below(3) > 0 {
                continue;
            }
            let slice = t.since(next, JobStatus::Running);
            assert!(
                slice
                    .rewritten_from
                    .is_none_or(|r| r == slice.first_line && r < next),
                "round {round}: {slice:?}"
            );
            apply(&mut view, &slice);
            next = slice.next_offset;
            let whole = t.slice(None, None, JobStatus::Running);
            let now: Vec<String> = if whole.line_count == 0 {
                Vec::new()
            } else {
                whole.output.split('\n').map(str::to_owned).collect()
            };
            assert_eq!(
                view,
                now,
                "round {round}: the reader misses text on screen; stream {:?}",
                String::from_utf8_lossy(&stream)
            );
            // Final lines never change.
            let final_end = usize::try_from(whole.final_lines).expect("small");
            assert_eq!(finals[..], now[..finals.len()], "round {round}");
            finals = now[..final_end].to_vec();
        }
    }
}

#[test]
fn the_redrawn_menu_of_the_issue_is_shown_again() {
    let mut t = Terminal::new(40, 10, 1 << 20, 1 << 16);
    t.feed(b"setup done\r\nPick one:\r\n  > apple\r\n    pear\r\n");
    let seen = t.since(0, JobStatus::Running);
    assert_eq!(seen.next_offset, 4);
    t.feed(b"\x1b[3A\x1b[JPicked: apple\r\nName? ");
    let now = t.since(seen.next_offset, JobStatus::Running);
    assert_eq!(now.rewritten_from, Some(1));
    assert_eq!((now.first_line, now.next_offset), (1, 3));
    assert_eq!(now.output, "Picked: apple\nName? ");
    // Nothing changed since: an empty read at the end.
    let again = t.since(now.next_offset, JobStatus::Running);
    assert_eq!((again.output.as_str(), again.rewritten_from), ("", None));
}
