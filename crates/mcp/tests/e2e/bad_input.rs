//! Every bad input gets a clear answer, and the server keeps serving after each one.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::util::Server;

const BAD_IDS: [&str; 5] = [
    "",
    "not-a-uuid",
    "../../etc/passwd",
    "   ",
    "123e4567-e89b-12d3-a456",
];
const UNKNOWN_ID: &str = "123e4567-e89b-42d3-a456-426614174000";

#[tokio::test]
async fn malformed_and_unknown_job_ids_say_to_call_list_jobs() {
    let s = Server::start(&[]).await;
    for id in BAD_IDS.into_iter().chain([UNKNOWN_ID]) {
        for (tool, extra) in [
            ("get_job_status", json!({})),
            ("get_job_output", json!({})),
            ("tail_job_output", json!({})),
            ("interact_with_job", json!({ "input": "x" })),
        ] {
            let mut args = extra;
            args["job_id"] = json!(id);
            let msg = s.tool_error(tool, args).await;
            assert!(msg.contains("list_jobs"), "{tool}({id:?}): {msg}");
            s.assert_serving().await;
        }
        // kill_job answers like the Python server does.
        let k = s.ok("kill_job", json!({ "job_id": id })).await;
        assert_eq!(k["status"], "not_found", "kill_job({id:?})");
    }
}

#[tokio::test]
async fn bad_commands_sizes_and_directories_are_refused_clearly() {
    let s = Server::start(&[]).await;
    for (args, needle) in [
        (json!({ "command": "" }), "empty"),
        (json!({ "command": "  \n\t " }), "empty"),
        (json!({ "command": "true", "cols": 0 }), "cols"),
        (json!({ "command": "true", "cols": 5000 }), "cols"),
        (json!({ "command": "true", "rows": 0 }), "rows"),
        (json!({ "command": "true", "cols": -1 }), ""),
        (json!({ "command": "true", "cols": "wide" }), ""),
        (
            json!({ "command": "true", "timeout_secs": -1 }),
            "timeout_secs",
        ),
        (
            json!({ "command": "true", "cwd": "/no/such/dir/ptyjobs" }),
            "/no/such/dir/ptyjobs",
        ),
        (
            json!({ "command": "true", "cwd": "/etc/passwd" }),
            "not a directory",
        ),
        (json!({ "cols": 80 }), "command"),
    ] {
        let msg = s.refused("execute_command", args.clone()).await;
        assert!(msg.contains(needle), "{args}: {msg}");
        s.assert_serving().await;
    }
    assert_eq!(
        s.ok("list_jobs", json!({})).await["jobs"],
        json!([]),
        "nothing started"
    );
}

#[tokio::test]
async fn out_of_range_reads_and_bad_signals_are_refused() {
    let s = Server::start(&[]).await;
    let (id, _) = s.exec("sleep 1000").await;
    for (tool, args, needle) in [
        (
            "tail_job_output",
            json!({ "job_id": id, "lines": 0 }),
            "lines",
        ),
        (
            "tail_job_output",
            json!({ "job_id": id, "lines": 1001 }),
            "lines",
        ),
        (
            "tail_job_output",
            json!({ "job_id": id, "lines": -5 }),
            "lines",
        ),
        (
            "get_job_output",
            json!({ "job_id": id, "limit": 0 }),
            "limit",
        ),
        ("get_job_output", json!({ "job_id": id, "offset": -1 }), ""),
        (
            "kill_job",
            json!({ "job_id": id, "signal": "NOPE" }),
            "signal",
        ),
        ("kill_job", json!({ "job_id": id, "signal": 999 }), "signal"),
        ("interact_with_job", json!({ "job_id": id }), "input"),
    ] {
        let msg = s.refused(tool, args.clone()).await;
        assert!(msg.contains(needle), "{tool}({args}): {msg}");
        s.assert_serving().await;
    }
    assert_eq!(
        s.status(&id).await["status"],
        "running",
        "the job was not touched"
    );
}

#[tokio::test]
async fn writing_to_an_ended_job_is_a_clear_error() {
    let s = Server::start(&[]).await;
    let (id, _) = s.exec("true").await;
    s.wait_done(&id).await;
    let msg = s
        .tool_error(
            "interact_with_job",
            json!({ "job_id": id, "input": "hello" }),
        )
        .await;
    assert!(msg.contains("not running"), "{msg}");
    s.assert_serving().await;
}

#[tokio::test]
async fn interact_with_a_job_that_never_reads_returns_by_its_deadline() {
    let s = Server::start(&[]).await;
    let (id, _) = s.exec("sleep 1000").await;
    // Far more than a terminal's input buffer holds: the write cannot complete.
    let input = "x".repeat(200_000);
    let t = Instant::now();
    let (r, listed) = tokio::join!(
        s.ok(
            "interact_with_job",
            json!({ "job_id": id, "input": input, "raw": true, "wait_ms": 1000 })
        ),
        async {
            // Other calls are answered while the interaction waits.
            let t = Instant::now();
            s.assert_serving().await;
            t.elapsed()
        }
    );
    let took = t.elapsed();
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_secs(4),
        "{took:?}"
    );
    assert!(
        listed < Duration::from_millis(900),
        "list_jobs waited {listed:?}"
    );
    // Linux drops input past a canonical-mode line's 4 KiB instead of blocking, so the count
    // may be anything up to the whole input; what matters is the deadline above.
    assert!(r["bytes_written"].as_u64().is_some_and(|n| n <= 200_000));
    assert_eq!(r["status"], "running");

    // A small write to a job that does not read also ends at the deadline, fully written.
    let (id, _) = s.exec("sleep 1000").await;
    let t = Instant::now();
    let r = s
        .ok(
            "interact_with_job",
            json!({ "job_id": id, "input": "y", "wait_ms": 500 }),
        )
        .await;
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
    assert_eq!(r["bytes_written"], 2);
}
