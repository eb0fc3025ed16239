//! wait_for_job: ports, patterns, idle, exit, caps, progress and cancellation.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::util::{DEADLINE, Server, wait_until};

/// A TCP port nobody listens on right now.
fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}

/// The flow "start a server and wait until it listens" takes two calls.
#[tokio::test]
async fn a_server_is_started_and_awaited_in_two_calls() {
    let s = Server::start(&[]).await;
    let port = free_port();
    let before = s.calls();
    let (id, _) = s
        .exec_with(json!({
            "command": format!("exec python3 -m http.server {port} --bind 127.0.0.1"),
            "name": "web",
        }))
        .await;
    let w = s
        .ok("wait_for_job", json!({ "job_id": id, "port": port }))
        .await;
    assert_eq!(s.calls() - before, 2);
    assert_eq!(w["reason"], "port_open", "{w}");
    assert_eq!(w["status"], "running");
    assert_eq!(w["capped"], false);
    assert!(w["next_offset"].is_u64() && w["bytes"].is_u64(), "{w}");
    std::net::TcpStream::connect(("127.0.0.1", port)).expect("the server listens");
    let k = s.ok("kill_job", json!({ "job_id": id })).await;
    assert_eq!(k["status"], "killed");
}

/// Only lines printed after the call count, unless from_start; progress notifications arrive
/// while the wait runs (the first one is what tells this test the wait has begun).
#[tokio::test]
async fn a_pattern_matches_new_lines_unless_from_start() {
    let s = Server::start(&[]).await;
    let (id, _) = s
        .exec("stty -echo; echo early-bird; read x; echo ready-now; exec sleep 30")
        .await;
    s.wait_output(&id, "early-bird").await;
    let wait = s.ok(
        "wait_for_job",
        json!({ "job_id": id, "pattern": "early-bird|ready-now" }),
    );
    let poke = async {
        wait_until("a progress notification", DEADLINE, || async {
            (s.heard.progress_count() > 0).then_some(())
        })
        .await;
        s.ok("interact_with_job", json!({ "job_id": id, "input": "go" }))
            .await;
    };
    let (w, ()) = tokio::join!(wait, poke);
    assert_eq!(w["reason"], "matched", "{w}");
    assert_eq!(
        w["matched_line"], "ready-now",
        "the earlier line must not match: {w}"
    );
    let n = w["line_number"].as_u64().expect("line_number");
    let out = s.output(&id).await;
    assert_eq!(out.lines().nth(n as usize), Some("ready-now"), "{out:?}");
    assert!(
        w["tail"].as_str().unwrap_or("").contains("ready-now"),
        "{w}"
    );

    let p = s.heard.progress.lock().unwrap_or_else(|e| e.into_inner())[0].clone();
    assert!(p.progress >= 0.9 && p.total == Some(50.0), "{p:?}");

    let w = s
        .ok(
            "wait_for_job",
            json!({ "job_id": id, "pattern": "early", "from_start": true }),
        )
        .await;
    assert_eq!(w["reason"], "matched");
    assert_eq!(w["matched_line"], "early-bird");
    assert_eq!(w["line_number"], 0);
}

/// A REPL waiting at its prompt is idle; a job that keeps printing is not.
#[tokio::test]
async fn idle_ms_returns_when_a_repl_waits_at_its_prompt() {
    let s = Server::start(&[]).await;
    let (id, _) = s.exec("exec python3 -i -q").await;
    let w = s
        .ok(
            "wait_for_job",
            json!({ "job_id": id, "pattern": "^>>> ?$", "from_start": true }),
        )
        .await;
    assert_eq!(w["reason"], "matched", "the prompt is a line too: {w}");
    let w = s
        .ok("wait_for_job", json!({ "job_id": id, "idle_ms": 400 }))
        .await;
    assert_eq!(w["reason"], "idle", "{w}");
    assert_eq!(w["status"], "running");
    assert!(w["waited_ms"].as_u64() >= Some(400), "{w}");
    assert_eq!(w["tail"].as_str().map(str::trim_end), Some(">>>"), "{w}");

    let (busy, _) = s.exec("while :; do echo tick; sleep 0.1; done").await;
    let w = s
        .ok(
            "wait_for_job",
            json!({ "job_id": busy, "idle_ms": 500, "timeout_secs": 1 }),
        )
        .await;
    assert_eq!(w["reason"], "timeout", "{w}");
}

/// Without other conditions a wait ends at the exit, with the status and the tail.
#[tokio::test]
async fn a_wait_ends_at_exit_with_status_and_tail() {
    let s = Server::start(&[]).await;
    let (id, _) = s.exec("echo done; exit 4").await;
    let w = s.ok("wait_for_job", json!({ "job_id": id })).await;
    assert_eq!(w["reason"], "exited", "{w}");
    assert_eq!(w["status"], "failed");
    assert_eq!(w["exit_code"], 4);
    assert_eq!(w["tail"], "done");
    assert_eq!(w["next_offset"], 1);
}

/// A timeout longer than the server's cap is capped, says so, and progress is reported.
#[tokio::test]
async fn a_capped_wait_says_to_call_again_and_reports_progress() {
    let s = Server::start(&["--max-wait-secs", "2.2"]).await;
    let (id, _) = s.exec("exec sleep 30").await;
    let w = s
        .ok("wait_for_job", json!({ "job_id": id, "timeout_secs": 600 }))
        .await;
    assert_eq!(w["reason"], "timeout", "{w}");
    assert_eq!(w["capped"], true);
    assert!(w["message"].as_str().unwrap_or("").contains("again"), "{w}");
    assert!(
        s.heard.progress_count() >= 2,
        "progress notifications during a 2.2 s wait: {}",
        s.heard.progress_count()
    );
    let w = s
        .ok("wait_for_job", json!({ "job_id": id, "timeout_secs": 0.2 }))
        .await;
    assert_eq!(w["reason"], "timeout");
    assert_eq!(w["capped"], false);
}

/// A wait the client cancels stops at once, and the server keeps serving.
#[tokio::test]
async fn a_cancelled_wait_stops_and_the_server_keeps_serving() {
    let s = Server::start_logged(&[], "ptyjobs=info").await;
    let (id, _) = s.exec("exec sleep 30").await;
    {
        let call = s.call_raw("wait_for_job", json!({ "job_id": id }));
        let started = wait_until("the wait to report progress", DEADLINE, || async {
            (s.heard.progress_count() > 0).then_some(())
        });
        tokio::select! {
            r = call => panic!("the wait ended by itself: {r:?}"),
            () = started => {}
        }
        // Leaving the block drops the call: rmcp's client sends notifications/cancelled.
    }
    let t = Instant::now();
    wait_until("the server to log the cancellation", DEADLINE, || async {
        s.log().contains("wait_for_job cancelled").then_some(())
    })
    .await;
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    let progress = s.heard.progress_count();
    let st = s.status(&id).await;
    assert_eq!(
        st["status"], "running",
        "cancelling a wait leaves the job alone"
    );
    let w = s
        .ok("wait_for_job", json!({ "job_id": id, "timeout_secs": 0.1 }))
        .await;
    assert_eq!(w["reason"], "timeout");
    assert_eq!(
        s.heard.progress_count(),
        progress,
        "no progress from the cancelled wait"
    );
}

#[tokio::test]
async fn bad_wait_arguments_are_clear_errors() {
    let s = Server::start(&[]).await;
    let (id, _) = s.exec("exec sleep 30").await;
    for (args, needle) in [
        (json!({ "job_id": id, "pattern": "(" }), "pattern"),
        (json!({ "job_id": id, "port": 0 }), "port"),
        (json!({ "job_id": id, "idle_ms": 0 }), "idle_ms"),
        (json!({ "job_id": id, "timeout_secs": -1 }), "timeout_secs"),
        (json!({ "job_id": "nope" }), "list_jobs"),
    ] {
        let msg = s.refused("wait_for_job", args.clone()).await;
        assert!(msg.contains(needle), "{args}: {msg}");
    }
    s.assert_serving().await;
}

/// A match on a line as long as a transcript line (64 KiB) still answers within the budget:
/// the matched line is cut and says so.
#[tokio::test]
async fn a_match_on_a_huge_line_fits_the_answer() {
    let s = Server::start(&[]).await;
    let (id, _) = s
        .exec("python3 -c \"print('x' * 200000 + 'END')\"; sleep 100")
        .await;
    let w = s
        .ok(
            "wait_for_job",
            json!({ "job_id": id, "pattern": "END", "from_start": true }),
        )
        .await;
    assert_eq!(w["reason"], "matched", "{}", &w.to_string()[..200]);
    let line = w["matched_line"].as_str().expect("matched_line");
    assert!(line.ends_with("bytes cut]"), "{}", &line[line.len() - 80..]);
    let size = w.to_string().len();
    assert!(size < 16 * 1024, "the answer is {size} bytes");
    s.ok("kill_job", json!({ "job_id": id })).await;
}
