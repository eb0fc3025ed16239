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

/// Live processes whose environment carries `PTYJOBS_JOB_ID=<id>` (a job's, in its session
/// or not).
fn marked(id: &str) -> Vec<u32> {
    let needle = format!("PTYJOBS_JOB_ID={id}");
    std::fs::read_dir("/proc")
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
                .filter(|pid| crate::util::alive(*pid))
                .filter(|pid| {
                    std::fs::read(format!("/proc/{pid}/environ"))
                        .is_ok_and(|env| env.split(|&b| b == 0).any(|v| v == needle.as_bytes()))
                })
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn kill_job_ends_a_process_that_left_the_jobs_session() {
    let s = Server::start(&[]).await;
    let (id, sid) = s.exec("setsid -f sleep 1000; echo armed; sleep 1000").await;
    s.wait_output(&id, "armed").await;
    let escaped = wait_until("the escaped sleep", DEADLINE, || async {
        let out: Vec<u32> = marked(&id)
            .into_iter()
            .filter(|p| !session_processes(sid).contains(p))
            .collect();
        (!out.is_empty()).then_some(out)
    })
    .await;
    for &pid in &escaped {
        s.track(pid); // killed when the test ends, should it fail
    }
    let k = s
        .ok("kill_job", json!({ "job_id": id, "grace_ms": 200 }))
        .await;
    assert_eq!(k["status"], "killed", "{k}");
    assert!(k.get("survivors").is_none(), "{k}");
    assert_eq!(
        marked(&id),
        Vec::<u32>::new(),
        "the kill answered before its end"
    );
}
