//! `cwd` beside `job_id` on every tool that names a job (issue 22, point 1): with a name live
//! in two directories, each tool reaches the job of the directory given, and without `cwd`
//! answers the candidates; a `cwd` with no such job is an error that says so.

use serde_json::{Value, json};

use crate::util::Server;

/// Every tool that takes a job, with the arguments it needs besides `job_id` and `cwd`.
fn tools() -> Vec<(&'static str, Value)> {
    vec![
        ("get_job_status", json!({})),
        ("get_job_output", json!({})),
        ("tail_job_output", json!({})),
        ("search_job_output", json!({ "pattern": "marker" })),
        ("get_job_screen", json!({})),
        (
            "wait_for_job",
            json!({ "pattern": "marker", "from_start": true }),
        ),
        ("interact_with_job", json!({ "input": "typed" })),
        ("resize_job", json!({ "cols": 100, "rows": 30 })),
        ("restart_job", json!({})),
        ("kill_job", json!({})),
        ("remove_job", json!({})),
    ]
}

/// `extra` with `job_id` (and `cwd` when given) added.
fn args(extra: &Value, cwd: Option<&str>) -> Value {
    let mut a = extra.clone();
    a["job_id"] = json!("web");
    if let Some(cwd) = cwd {
        a["cwd"] = json!(cwd);
    }
    a
}

#[tokio::test]
async fn every_tool_that_takes_a_job_takes_the_cwd_of_its_name() {
    let s = Server::start(&[]).await;
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (a_cwd, b_cwd) = (a.path().to_str().unwrap(), b.path().to_str().unwrap());
    let (in_a, _) = s
        .exec_with(json!({ "command": "echo marker-A; exec cat", "name": "web", "cwd": a_cwd }))
        .await;
    let (in_b, _) = s
        .exec_with(json!({ "command": "echo marker-B; exec cat", "name": "web", "cwd": b_cwd }))
        .await;
    s.wait_output(&in_a, "marker-A").await;
    s.wait_output(&in_b, "marker-B").await;

    // Without cwd: every tool answers the candidates (id, directory, command), touching none.
    for (tool, extra) in tools() {
        let msg = s.tool_error(tool, args(&extra, None)).await;
        for part in [&in_a, &in_b, a_cwd, b_cwd, "marker-A", "marker-B"] {
            assert!(msg.contains(part), "{tool}: {part:?} missing: {msg}");
        }
    }
    assert_eq!(s.status(&in_a).await["status"], "running");
    assert_eq!(s.status(&in_b).await["status"], "running");

    // With cwd: each reaches b's job, and a's is left alone.
    let only_b = |tool: &str, r: &Value| {
        let text = r.to_string();
        assert!(text.contains("marker-B"), "{tool} read b's job: {r}");
        assert!(
            !text.contains("marker-A"),
            "{tool} did not read a's job: {r}"
        );
    };
    // b's job: restart_job replaces it.
    let mut b_id = in_b.clone();
    for (tool, extra) in tools() {
        let r = s.ok(tool, args(&extra, Some(b_cwd))).await;
        match tool {
            "get_job_status" => assert_eq!(r["job_id"], in_b.as_str(), "{r}"),
            "get_job_output" | "tail_job_output" | "search_job_output" | "get_job_screen" => {
                only_b(tool, &r);
            }
            "wait_for_job" => {
                assert_eq!(r["reason"], "matched", "{r}");
                assert_eq!(r["matched_line"], "marker-B", "{r}");
            }
            "interact_with_job" => {
                assert!(s.output(&in_b).await.contains("typed"), "{r}");
                assert!(!s.output(&in_a).await.contains("typed"), "{r}");
            }
            "resize_job" => {
                let screen = |id: &str| s.ok("get_job_screen", json!({ "job_id": id }));
                assert_eq!(screen(&in_b).await["cols"], 100);
                assert_eq!(screen(&in_a).await["cols"], 120);
            }
            "restart_job" => {
                assert_eq!(r["replaces"], in_b.as_str(), "{r}");
                s.track(r["pid"].as_u64().unwrap() as u32);
                b_id = r["job_id"].as_str().unwrap().to_owned();
            }
            "kill_job" => {
                assert_eq!(r["status"], "killed", "{r}");
                assert_eq!(s.status(&b_id).await["status"], "killed");
                assert_eq!(s.status(&in_a).await["status"], "running");
            }
            // The name in b now stands for b's newest ended job.
            "remove_job" => assert_eq!(r["job_id"], b_id.as_str(), "{r}"),
            _ => unreachable!("{tool}"),
        }
    }
    assert_eq!(s.status(&in_a).await["status"], "running");
}

#[tokio::test]
async fn a_cwd_with_no_job_of_the_name_is_an_error_that_says_so() {
    let s = Server::start(&[]).await;
    let (a, empty) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let a_cwd = a.path().to_str().unwrap();
    let (in_a, _) = s
        .exec_with(json!({ "command": "exec sleep 100", "name": "web", "cwd": a_cwd }))
        .await;
    let missing = empty.path().join("not-there");
    let missing = missing.to_str().unwrap();
    for (tool, extra) in tools() {
        let msg = s.tool_error(tool, args(&extra, Some(missing))).await;
        assert!(
            msg.contains("no job is named \"web\"") && msg.contains("no such directory"),
            "{tool}: {msg}"
        );
        let no_job = empty.path().to_str().unwrap();
        let msg = s.tool_error(tool, args(&extra, Some(no_job))).await;
        assert!(
            msg.contains(no_job) && !msg.contains("no such directory"),
            "{tool}: {msg}"
        );
        assert!(msg.contains("live names: web"), "{tool}: {msg}");
    }
    assert_eq!(s.status(&in_a).await["status"], "running");
}
