//! Kills reach every process of a job, and the running-jobs limit holds.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::util::{DEADLINE, Server, session_processes, wait_no_processes, wait_until};

/// Waits until the job led by `sid` has at least `n` live processes.
async fn wait_processes(sid: u32, n: usize) {
    wait_until(
        &format!("{n} processes in session {sid}"),
        DEADLINE,
        || async { (session_processes(sid).len() >= n).then_some(()) },
    )
    .await;
}

#[tokio::test]
async fn kill_job_takes_down_background_children_too() {
    let s = Server::start(&[]).await;
    let (id, sid) = s.exec("sh -c 'sleep 1000 & sleep 1000'").await;
    wait_processes(sid, 3).await; // the job's shell, the inner sh, its two sleeps (at least 3)
    let k = s.ok("kill_job", json!({ "job_id": id })).await;
    assert_eq!(k["status"], "killed");
    // The kill is verified before it answers; allow only for /proc bookkeeping.
    wait_no_processes(sid, Duration::from_millis(500)).await;
    let st = s.status(&id).await;
    assert_eq!(st["status"], "killed");
}

#[tokio::test]
async fn a_job_that_ignores_sigterm_is_killed_after_the_grace() {
    let s = Server::start(&[]).await;
    let (id, sid) = s.exec(r#"trap "" TERM; sleep 1000 & sleep 1000"#).await;
    wait_processes(sid, 3).await;
    let t = Instant::now();
    let k = s
        .ok("kill_job", json!({ "job_id": id, "grace_ms": 200 }))
        .await;
    assert_eq!(k["status"], "killed");
    assert!(
        t.elapsed() < Duration::from_secs(3),
        "kill took {:?}",
        t.elapsed()
    );
    wait_no_processes(sid, Duration::from_millis(500)).await;
    assert_eq!(s.status(&id).await["status"], "killed");
}

#[tokio::test]
async fn the_running_jobs_limit_holds_and_finished_jobs_do_not_count() {
    let s = Server::start(&["--max-jobs", "2"]).await;
    let (done, _) = s.exec("true").await;
    s.wait_done(&done).await;
    let (a, _) = s.exec("sleep 1000").await;
    let (_b, _) = s.exec("sleep 1000").await;
    let msg = s
        .tool_error("execute_command", json!({ "command": "sleep 1000" }))
        .await;
    assert!(msg.contains("limit"), "{msg}");
    s.assert_serving().await;
    assert_eq!(
        s.ok("kill_job", json!({ "job_id": a })).await["status"],
        "killed"
    );
    // The slot frees once the killed job is final, which kill_job waits for.
    s.exec("sleep 1000").await;
}
