//! Open-file limits: the server raises its soft limit to the hard one at start, so hundreds of
//! jobs run under the usual soft default of 1024, while each job gets the limit the server
//! started with; when descriptors truly run out, a start is refused with a clean "limit
//! reached" and the server keeps serving.

use std::collections::HashSet;
use std::time::Duration;

use serde_json::json;

use crate::util::{DEADLINE, Server, wait_until};

/// Sessions (job pids) of `pids` that still have a live process: one pass over `/proc`.
fn live_sessions(pids: &[u32]) -> usize {
    let wanted: HashSet<u32> = pids.iter().copied().collect();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return 0;
    };
    let live: HashSet<u32> = dir
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| match crate::procs::stat(pid) {
            Some((st, sid)) if st != 'Z' && st != 'X' && wanted.contains(&sid) => Some(sid),
            _ => None,
        })
        .collect();
    live.len()
}

/// Every job's processes gone, polled with a deadline.
async fn all_gone(pids: &[u32], deadline: Duration) {
    wait_until("no job process left", deadline, || async {
        (live_sessions(pids) == 0).then_some(())
    })
    .await;
}

#[tokio::test]
async fn hundreds_of_jobs_run_under_a_low_soft_fd_limit() {
    // Each job holds at least one descriptor in the server (its terminal; today about three:
    // terminal, process handle, log). Under a soft limit of 256 (macOS's default; Linux's is
    // 1024) 400 jobs need more than the soft limit however few a job holds, and less than the
    // hard limit.
    const JOBS: usize = 400;
    const SOFT: usize = 256;
    let mut s = Server::start_fd_limited(&["--max-jobs", "1000"], SOFT as u64, 4096).await;
    let mut pids = Vec::with_capacity(JOBS);
    for i in 0..JOBS {
        let r = s
            .call_raw("execute_command", json!({ "command": "sleep 1000" }))
            .await
            .expect("execute_command answered");
        assert_ne!(
            r.is_error,
            Some(true),
            "job #{} failed to start: {}",
            i + 1,
            crate::util::text(&r)
        );
        let job = r.structured_content.expect("structured content");
        let pid = job["pid"].as_u64().expect("pid") as u32;
        s.track(pid);
        pids.push(pid);
    }
    let listed = s
        .ok(
            "list_jobs",
            json!({ "status": "running", "max_bytes": 1024 }),
        )
        .await;
    assert_eq!(listed["total_jobs"], JOBS, "every job is running");
    assert_eq!(live_sessions(&pids), JOBS, "every job has its process");
    let fds = std::fs::read_dir(format!("/proc/{}/fd", s.pid))
        .expect("the server's fds")
        .count();
    assert!(
        fds > SOFT,
        "the test must need more than the soft limit: {fds} fds open"
    );
    s.close().await;
    all_gone(&pids, Duration::from_secs(20)).await;
}

#[tokio::test]
async fn running_out_of_descriptors_is_a_clean_limit_reached() {
    let mut s = Server::start_fd_limited(&["--max-jobs", "100"], 64, 64).await;
    let mut pids = Vec::new();
    let refusal = loop {
        assert!(pids.len() < 100, "64 descriptors cannot hold 100 jobs");
        let r = s
            .call_raw("execute_command", json!({ "command": "sleep 1000" }))
            .await
            .expect("execute_command answered, not a protocol error");
        if r.is_error == Some(true) {
            break crate::util::text(&r);
        }
        let job = r.structured_content.expect("structured content");
        let pid = job["pid"].as_u64().expect("pid") as u32;
        s.track(pid);
        pids.push(pid);
    };
    assert!(
        refusal.starts_with("limit reached"),
        "a clean LIMIT_REACHED, got: {refusal}"
    );
    assert!(!pids.is_empty(), "some jobs started before the limit");
    // The refused start left nothing behind, and the server goes on serving.
    s.assert_serving().await;
    assert_eq!(
        live_sessions(&pids),
        pids.len(),
        "the started jobs still run"
    );
    // Once a job is killed and its descriptors are closed, a start succeeds again.
    let listed = s.ok("list_jobs", json!({})).await;
    let newest = listed["jobs"][0]["job_id"].clone();
    let k = s.ok("kill_job", json!({ "job_id": newest })).await;
    assert_eq!(k["status"], "killed");
    let started = wait_until("a start after a kill", DEADLINE, || async {
        let r = s
            .call_raw("execute_command", json!({ "command": "sleep 1000" }))
            .await
            .expect("execute_command answered");
        (r.is_error != Some(true)).then(|| r.structured_content.expect("structured content"))
    })
    .await;
    let pid = started["pid"].as_u64().expect("pid") as u32;
    s.track(pid);
    pids.push(pid);
    s.close().await;
    all_gone(&pids, DEADLINE).await;
}

/// The soft and hard open-files limits of `pid`, from `/proc/<pid>/limits`.
fn open_files_limit(pid: u32) -> Option<(String, String)> {
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    let mut fields = line["Max open files".len()..].split_whitespace();
    Some((fields.next()?.to_string(), fields.next()?.to_string()))
}

#[tokio::test]
async fn a_job_gets_the_open_files_limit_the_server_started_with() {
    let s = Server::start_fd_limited(&[], 256, 4096).await;
    let limit = |soft: &str, hard: &str| Some((soft.to_string(), hard.to_string()));
    assert_eq!(
        open_files_limit(s.pid),
        limit("4096", "4096"),
        "the server raised its own soft limit"
    );
    // The shell prints its limits once the test has had the answer, so after the server set
    // them: what a process it starts then inherits.
    let (id, pid) = s.exec("read go; ulimit -Sn; ulimit -Hn").await;
    assert_eq!(
        open_files_limit(pid),
        limit("256", "4096"),
        "the job's shell"
    );
    s.ok("interact_with_job", json!({ "job_id": id, "input": "go" }))
        .await;
    let out = s.wait_output(&id, "4096").await;
    let printed: Vec<&str> = out.lines().map(str::trim).collect();
    assert!(
        printed.windows(2).any(|w| w == ["256", "4096"]),
        "ulimit in the job: {out:?}"
    );
}
