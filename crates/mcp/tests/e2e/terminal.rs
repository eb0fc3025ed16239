//! Clean text: what the terminal shows, as a person would have read it, through the MCP tools.

use std::cell::Cell;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::util::{Server, rss_kib, wait_until};

/// Runs `command` to completion (optionally at `cols` columns) and returns its transcript.
async fn transcript(s: &Server, command: &str, cols: Option<u16>) -> String {
    let mut args = json!({ "command": command });
    if let Some(c) = cols {
        args["cols"] = json!(c);
    }
    let (id, _) = s.exec_with(args).await;
    let st = s.wait_done(&id).await;
    assert_eq!(st["status"], "completed", "{command}: {st}");
    let out = s.output(&id).await;
    assert!(!out.contains('\x1b'), "escape sequence left in {out:?}");
    out
}

#[tokio::test]
async fn colours_and_escapes_are_stripped() {
    let s = Server::start(&[]).await;
    let out = transcript(
        &s,
        r"printf '\033[31mred\033[0m \033[1;4mbold\033[0m \033]0;title\007\033[?2004hdone\n'",
        None,
    )
    .await;
    assert_eq!(out, "red bold done");
}

#[tokio::test]
async fn carriage_return_progress_collapses_to_its_final_state() {
    let s = Server::start(&[]).await;
    let out = transcript(
        &s,
        r"printf 'load 10%%\rload 55%%\rload 100%%\nnext\n'",
        None,
    )
    .await;
    assert_eq!(out, "load 100%\nnext");
}

#[tokio::test]
async fn a_line_wrapped_by_the_terminal_is_joined_again() {
    let s = Server::start(&[]).await;
    let out = transcript(
        &s,
        r"head -c 50 /dev/zero | tr '\0' x; echo; echo end",
        Some(20),
    )
    .await;
    assert_eq!(out, format!("{}\nend", "x".repeat(50)));
}

#[tokio::test]
async fn a_screen_clear_keeps_what_was_cleared() {
    let s = Server::start(&[]).await;
    let out = transcript(&s, r"printf 'before\n\033[2J\033[Hafter\n'", None).await;
    assert!(out.contains("before") && out.contains("after"), "{out:?}");
    assert!(out.find("before") < out.find("after"), "{out:?}");
}

#[tokio::test]
async fn the_alternate_screen_stays_out_of_the_transcript() {
    let s = Server::start(&[]).await;
    let out = transcript(
        &s,
        r"printf 'pre\n\033[?1049hSECRET\033[?1049lpost\n'",
        None,
    )
    .await;
    assert!(out.contains("pre") && out.contains("post"), "{out:?}");
    assert!(!out.contains("SECRET"), "{out:?}");
}

#[tokio::test]
async fn invalid_utf8_becomes_replacement_characters() {
    let s = Server::start(&[]).await;
    // Octal escapes: dash's printf has no \x.
    let out = transcript(&s, r"printf '\377\376 ok\n'", None).await;
    assert!(out.contains('\u{FFFD}') && out.ends_with(" ok"), "{out:?}");
    s.assert_serving().await;
}

/// Size of the endless line: 50 MB as the issue asks when the binary is optimized. A debug
/// build (vt100, vte and the engine optimized, the rest not) still takes 9-10 s for 50 MB
/// (measured with 2 busy cores), too long for the suite, so a debug run uses 8 MB, still 8x
/// the transcript cap below.
const BIG_LINE: u64 = if cfg!(debug_assertions) {
    8_000_000
} else {
    50_000_000
};

/// A 50 MB line without a newline: the server's memory stays bounded by the transcript cap,
/// and tail answers fast with a bounded result while the flood runs and after it.
#[tokio::test]
async fn a_50_mb_line_keeps_memory_and_answers_bounded() {
    const CAP: u64 = 1024 * 1024;
    let s = Server::start(&["--transcript-bytes", &CAP.to_string()]).await;
    let (warm, _) = s.exec("echo warm").await;
    s.wait_done(&warm).await;
    let before = rss_kib(s.pid);
    let (id, _) = s
        .exec(&format!("head -c {BIG_LINE} /dev/zero | tr '\\0' a"))
        .await;
    let peak = Cell::new(before);
    let tails = Cell::new(0);
    wait_until("the 50 MB job to end", Duration::from_secs(60), || async {
        peak.set(peak.get().max(rss_kib(s.pid)));
        let t = Instant::now();
        let r = s
            .ok("tail_job_output", json!({ "job_id": id, "lines": 1000 }))
            .await;
        let took = t.elapsed();
        assert!(took < Duration::from_secs(1), "tail took {took:?}");
        let len = r["output"].as_str().map_or(0, str::len) as u64;
        assert!(len <= 256 * 1024, "tail returned {len} bytes");
        tails.set(tails.get() + 1);
        (r["status"] != "running").then_some(())
    })
    .await;
    let grown = peak.get().max(rss_kib(s.pid)).saturating_sub(before);
    // The cap, the emulator's screen, read buffers and allocator slack: "a little" is 16 MiB.
    assert!(
        grown <= CAP / 1024 + 16 * 1024,
        "server grew by {grown} KiB (cap {CAP} B)"
    );
    assert!(tails.get() >= 1);
    let st = s.status(&id).await;
    assert_eq!(st["status"], "completed", "{st}");
    let out = s.ok("get_job_output", json!({ "job_id": id })).await;
    assert!(
        out["dropped_lines"].as_u64().unwrap_or(0) > 0,
        "the cap evicted lines"
    );
    assert!(out["output"].as_str().map_or(0, str::len) <= 256 * 1024);
    // Only the line's text, and the marker standing for what did not fit the answer.
    let text = out["output"].as_str().unwrap_or("");
    assert!(
        text.lines()
            .all(|l| l.bytes().all(|b| b == b'a') || l.contains("omitted")),
        "{}",
        &text[..text.len().min(300)]
    );
}

/// A 200 MB unterminated OSC (issue 11, finding 4): the server does not buffer it, the output
/// after it is right once it ends, and a 30 MB title comes back small.
#[tokio::test]
async fn huge_escape_strings_keep_the_server_small() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start_in(dir.path(), &[]).await;
    let (warm, _) = s.exec("echo warm").await;
    s.wait_done(&warm).await;
    let before = rss_kib(s.pid);
    let (id, _) = s
        .exec(
            "printf '\\033]0;'; head -c 200000000 /dev/zero | tr '\\0' x; printf '\\007'; \
             echo after; printf '\\033]2;'; head -c 30000000 /dev/zero | tr '\\0' t; \
             printf '\\007'; echo end",
        )
        .await;
    let peak = Cell::new(before);
    wait_until(
        "the 230 MB of strings to pass",
        Duration::from_secs(120),
        || async {
            peak.set(peak.get().max(rss_kib(s.pid)));
            (s.status(&id).await["status"] != "running").then_some(())
        },
    )
    .await;
    let grown_mb = peak.get().max(rss_kib(s.pid)).saturating_sub(before) / 1024;
    assert!(grown_mb < 40, "server grew by {grown_mb} MB");
    assert_eq!(s.output(&id).await, "after\nend");
    let screen = s.ok("get_job_screen", json!({ "job_id": id })).await;
    let len = serde_json::to_string(&screen).map_or(usize::MAX, |j| j.len());
    assert!(len < 16 * 1024, "the screen answer is {len} bytes");
}

/// A program asking for the cursor position gets the answer through the server.
#[tokio::test]
async fn a_cursor_position_query_is_answered() {
    let s = Server::start(&[]).await;
    let (id, _) = s
        .exec(
            "stty raw -echo; printf 'abc\\033[6n'; \
             r=$(dd bs=1 count=6 2>/dev/null | od -An -c | tr -d ' \\n'); \
             stty sane; echo; echo \"reply $r\"",
        )
        .await;
    s.wait_done(&id).await;
    let out = s.output(&id).await;
    assert!(out.contains("reply 033[1;4R"), "{out}");
}
