//! The terminal side: the screen view, named keys, resizing, and the watcher flow.

use serde_json::{Value, json};

use crate::util::{DEADLINE, Server, wait_until};

/// A full-screen program drawn with cursor addressing on the alternate screen.
#[tokio::test]
async fn the_screen_of_a_full_screen_program() {
    let s = Server::start(&[]).await;
    let draw = r"printf '\033]0;my-tui\007\033[?1049h\033[2J\033[1;1HTOP\033[5;10HMID\033[3;7H'; exec sleep 30";
    let (id, _) = s
        .exec_with(json!({ "command": draw, "cols": 40, "rows": 10 }))
        .await;
    let screen: Value = wait_until("the screen to be drawn", DEADLINE, || async {
        let r = s.ok("get_job_screen", json!({ "job_id": id })).await;
        (r["rows"][4].as_str() == Some("         MID")).then_some(r)
    })
    .await;
    assert_eq!(screen["alternate_screen"], true, "{screen}");
    assert_eq!(screen["rows"][0], "TOP");
    assert_eq!(screen["rows"].as_array().map(Vec::len), Some(10));
    assert_eq!(screen["cursor_row"], 2);
    assert_eq!(screen["cursor_col"], 6);
    assert_eq!(screen["cols"], 40);
    assert_eq!(screen["height"], 10);
    assert_eq!(screen["title"], "my-tui");
    assert_eq!(screen["status"], "running");
    assert!(
        !s.output(&id).await.contains("MID"),
        "the alternate screen stays out of the transcript"
    );
}

/// `C-c` interrupts `sleep` through the terminal's line discipline: death by SIGINT.
#[tokio::test]
async fn ctrl_c_interrupts_sleep() {
    let s = Server::start(&[]).await;
    let (id, _) = s.exec("exec sleep 30").await;
    let r = s
        .ok(
            "interact_with_job",
            json!({ "job_id": id, "keys": ["C-c"] }),
        )
        .await;
    assert_eq!(r["bytes_written"], 1, "{r}");
    let w = s.ok("wait_for_job", json!({ "job_id": id })).await;
    assert_eq!(w["reason"], "exited", "{w}");
    assert_eq!(w["status"], "failed");
    assert_eq!(w["signal"], "SIGINT");
}

/// Arrow keys follow the program's application cursor mode (`ESC O A`, not `ESC [ A`).
#[tokio::test]
async fn arrow_keys_reach_a_program_in_application_cursor_mode() {
    let s = Server::start(&[]).await;
    let (id, _) = s
        .exec(r"stty raw -echo; printf '\033[?1hready\r\n'; head -c 3 | od -An -c")
        .await;
    s.ok(
        "wait_for_job",
        json!({ "job_id": id, "pattern": "ready", "from_start": true }),
    )
    .await;
    s.ok("interact_with_job", json!({ "job_id": id, "keys": ["Up"] }))
        .await;
    let w = s.ok("wait_for_job", json!({ "job_id": id })).await;
    assert_eq!(w["status"], "completed", "{w}");
    let od: Vec<String> = s
        .output(&id)
        .await
        .split_whitespace()
        .map(str::to_owned)
        .collect();
    assert!(
        od.ends_with(&["033".into(), "O".into(), "A".into()]),
        "{od:?}"
    );
}

/// The job sees the new size (SIGWINCH and the terminal's size); a finished job is a no-op.
#[tokio::test]
async fn resize_is_seen_by_stty_size() {
    let s = Server::start(&[]).await;
    let (id, _) = s.exec("read x; stty size").await;
    let r = s
        .ok(
            "resize_job",
            json!({ "job_id": id, "cols": 100, "rows": 30 }),
        )
        .await;
    assert_eq!(r["resized"], true, "{r}");
    assert_eq!(
        (r["cols"].as_u64(), r["rows"].as_u64()),
        (Some(100), Some(30))
    );
    s.ok("interact_with_job", json!({ "job_id": id, "input": "" }))
        .await;
    let w = s.ok("wait_for_job", json!({ "job_id": id })).await;
    assert_eq!(w["status"], "completed", "{w}");
    assert!(s.output(&id).await.ends_with("30 100"));
    let screen = s.ok("get_job_screen", json!({ "job_id": id })).await;
    assert_eq!(
        (screen["cols"].as_u64(), screen["height"].as_u64()),
        (Some(100), Some(30))
    );

    let r = s
        .ok(
            "resize_job",
            json!({ "job_id": id, "cols": 50, "rows": 20 }),
        )
        .await;
    assert_eq!(r["resized"], false);
    assert!(r["message"].as_str().unwrap_or("").contains("ended"), "{r}");
    let msg = s
        .refused("resize_job", json!({ "job_id": id, "cols": 0, "rows": 20 }))
        .await;
    assert!(msg.contains("cols"), "{msg}");
}

/// Keys are validated before anything is written; input and keys need a running job.
#[tokio::test]
async fn bad_keys_and_ended_jobs_are_clear_errors() {
    let s = Server::start(&[]).await;
    let (id, _) = s.exec("read x; echo got $x").await;
    let msg = s
        .tool_error(
            "interact_with_job",
            json!({ "job_id": id, "input": "a", "keys": ["Enter", "Hyper-Q"] }),
        )
        .await;
    assert!(
        msg.contains("unknown key") && msg.contains("Hyper-Q"),
        "{msg}"
    );
    let msg = s
        .tool_error("interact_with_job", json!({ "job_id": id }))
        .await;
    assert!(msg.contains("keys"), "{msg}");
    // Text and keys together: the text first, then the keys.
    let r = s
        .ok(
            "interact_with_job",
            json!({ "job_id": id, "input": "a", "raw": true, "keys": ["b", "Enter"], "wait_ms": 500 }),
        )
        .await;
    assert!(r["output"].as_str().unwrap_or("").contains("got ab"), "{r}");
    s.wait_done(&id).await;
    for args in [
        json!({ "job_id": id, "input": "late" }),
        json!({ "job_id": id, "keys": ["q"] }),
    ] {
        let msg = s.tool_error("interact_with_job", args.clone()).await;
        assert!(msg.contains("not running"), "{args}: {msg}");
    }
    s.assert_serving().await;
}

/// The flow "run a test watcher, read the result, quit it with a key" takes three calls.
#[tokio::test]
async fn a_watcher_is_run_read_and_quit_in_at_most_four_calls() {
    let s = Server::start(&[]).await;
    let watcher = r#"echo 'running 3 tests'; sleep 0.2; echo 'PASS 3 passed, 0 failed'; echo 'press q to quit'; stty raw -echo; while :; do k=$(dd bs=1 count=1 2>/dev/null); [ "$k" = q ] && break; done; stty sane; echo bye"#;
    let before = s.calls();
    let (id, _) = s
        .exec_with(json!({ "command": watcher, "name": "tests" }))
        .await;
    let w = s
        .ok(
            "wait_for_job",
            json!({ "job_id": id, "pattern": "PASS|FAIL", "from_start": true }),
        )
        .await;
    assert_eq!(w["reason"], "matched", "{w}");
    assert_eq!(w["matched_line"], "PASS 3 passed, 0 failed");
    let r = s
        .ok("interact_with_job", json!({ "job_id": id, "keys": ["q"] }))
        .await;
    assert!(r["output"].as_str().unwrap_or("").contains("bye"), "{r}");
    if r["status"] == "running" {
        // The response came; the exit is a moment behind it.
        let w = s.ok("wait_for_job", json!({ "job_id": id })).await;
        assert_eq!(w["status"], "completed", "{w}");
    } else {
        assert_eq!(r["status"], "completed", "{r}");
    }
    assert!(s.calls() - before <= 4, "{} calls", s.calls() - before);
}
