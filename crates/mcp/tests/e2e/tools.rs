//! Every tool on its happy path, with the field names the Python server's prompts rely on.

use serde_json::json;

use crate::util::{DEADLINE, Server, wait_until};

const TOOLS: [&str; 13] = [
    "execute_command",
    "get_job_status",
    "get_job_output",
    "tail_job_output",
    "interact_with_job",
    "list_jobs",
    "kill_job",
    "wait_for_job",
    "get_job_screen",
    "resize_job",
    "search_job_output",
    "remove_job",
    "restart_job",
];

#[tokio::test]
async fn tools_are_listed_with_output_schemas_and_annotations() {
    let s = Server::start(&[]).await;
    let info = s.client().peer_info().expect("server info");
    assert_eq!(
        info.server_info.as_ref().map(|i| i.name.as_str()),
        Some("ptyjobs")
    );
    assert!(
        info.instructions
            .as_deref()
            .unwrap_or("")
            .contains("execute_command")
    );
    let tools = s.client().list_all_tools().await.expect("tools/list");
    let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    names.sort_unstable();
    let mut want = TOOLS;
    want.sort_unstable();
    assert_eq!(names, want);
    for t in &tools {
        assert!(t.output_schema.is_some(), "{} has no output schema", t.name);
        assert!(
            t.description.as_deref().is_some_and(|d| !d.is_empty()),
            "{}",
            t.name
        );
        let a = t.annotations.as_ref();
        let read_only = a.and_then(|a| a.read_only_hint) == Some(true);
        let expect_ro = matches!(
            t.name.as_ref(),
            "get_job_status"
                | "get_job_output"
                | "tail_job_output"
                | "list_jobs"
                | "wait_for_job"
                | "get_job_screen"
                | "search_job_output"
        );
        assert_eq!(read_only, expect_ro, "readOnlyHint of {}", t.name);
        if t.name == "kill_job" {
            assert_eq!(a.and_then(|a| a.destructive_hint), Some(true));
        }
    }
}

#[tokio::test]
async fn a_job_runs_and_every_read_tool_reports_it() {
    let s = Server::start(&[]).await;
    let (id, pid) = s.exec("echo one; echo two; exit 3").await;
    assert_eq!(id.len(), 36);
    assert!(pid > 0);

    let st = s.wait_done(&id).await;
    assert_eq!(st["status"], "failed", "non-zero exit is data: {st}");
    assert_eq!(st["exit_code"], 3);
    assert_eq!(st["signal"], serde_json::Value::Null);
    assert_eq!(st["job_id"], id.as_str());
    assert_eq!(st["pid"], pid);
    assert_eq!(st["command"], "echo one; echo two; exit 3");
    for key in ["started", "finished"] {
        let t = st[key].as_str().expect("timestamp");
        assert!(
            t.len() >= 20 && t.contains('T') && t.ends_with('Z'),
            "{key} = {t}"
        );
    }
    assert!(st["duration_ms"].is_u64());

    let out = s.ok("get_job_output", json!({ "job_id": id })).await;
    assert_eq!(out["output"], "one\ntwo");
    assert_eq!(out["first_line"], 0);
    assert_eq!(out["total_lines"], 2);
    assert_eq!(out["dropped_lines"], 0);
    assert_eq!(out["truncated"], false);
    assert_eq!(out["status"], "failed");

    let page = s
        .ok(
            "get_job_output",
            json!({ "job_id": id, "offset": 1, "limit": 1 }),
        )
        .await;
    assert_eq!(page["output"], "two");
    assert_eq!(page["next_offset"], 2);

    let tail = s
        .ok("tail_job_output", json!({ "job_id": id, "lines": 1 }))
        .await;
    assert_eq!(tail["output"], "two");
    assert_eq!(tail["total_lines"], 2);
    assert_eq!(tail["status"], "failed");
    let tail = s.ok("tail_job_output", json!({ "job_id": id })).await;
    assert_eq!(tail["output"], "one\ntwo", "default is 50 lines");

    let list = s.ok("list_jobs", json!({})).await;
    let job = &list["jobs"][0];
    assert_eq!(job["job_id"], id.as_str());
    assert_eq!(job["status"], "failed");
    assert_eq!(job["command"], "echo one; echo two; exit 3");
    assert_eq!(job["exit_code"], 3);
    assert!(job["started"].is_string());

    let k = s.ok("kill_job", json!({ "job_id": id })).await;
    assert_eq!(k["status"], "already_terminated");
}

#[tokio::test]
async fn list_jobs_is_newest_first() {
    let s = Server::start(&[]).await;
    let mut ids = Vec::new();
    for i in 0..3 {
        ids.push(s.exec(&format!("echo {i}")).await.0);
    }
    let list = s.ok("list_jobs", json!({})).await;
    let listed: Vec<&str> = list["jobs"]
        .as_array()
        .expect("jobs")
        .iter()
        .filter_map(|j| j["job_id"].as_str())
        .collect();
    ids.reverse();
    assert_eq!(listed, ids);
}

#[tokio::test]
async fn cwd_env_size_and_name_reach_the_job() {
    let s = Server::start(&[]).await;
    let (id, _) = s
        .exec_with(json!({
            "command": "pwd; echo \"$GREETING\"; stty size; echo \"$TERM\"",
            "cwd": "/tmp",
            "env": { "GREETING": "hello there" },
            "cols": 77,
            "rows": 11,
            "name": "probe",
        }))
        .await;
    assert_eq!(s.wait_done(&id).await["status"], "completed");
    assert_eq!(
        s.output(&id).await,
        "/tmp\nhello there\n11 77\nxterm-256color"
    );
    assert_eq!(s.status(&id).await["name"], "probe");
}

#[tokio::test]
async fn the_job_sees_a_terminal_on_stdin_stdout_and_stderr() {
    let s = Server::start(&[]).await;
    let (id, _) = s
        .exec("test -t 0 && test -t 1 && test -t 2 && echo all-tty")
        .await;
    assert_eq!(s.wait_done(&id).await["status"], "completed");
    assert_eq!(s.output(&id).await, "all-tty");
}

#[tokio::test]
async fn command_not_found_fails_with_127_and_the_shells_message() {
    let s = Server::start(&[]).await;
    let (id, _) = s.exec("no-such-command-ptyjobs-xyz").await;
    let st = s.wait_done(&id).await;
    assert_eq!(st["status"], "failed");
    assert_eq!(st["exit_code"], 127);
    let out = s.output(&id).await;
    assert!(
        out.contains("no-such-command-ptyjobs-xyz") && out.contains("not found"),
        "{out}"
    );
}

#[tokio::test]
async fn timeout_secs_kills_the_job() {
    let s = Server::start(&["--kill-grace-ms", "500"]).await;
    let (id, pid) = s
        .exec_with(json!({ "command": "sleep 1000 & sleep 1000", "timeout_secs": 0.3 }))
        .await;
    let st = s.wait_done(&id).await;
    assert_eq!(st["status"], "killed", "{st}");
    crate::util::wait_no_processes(pid, DEADLINE).await;
}

#[tokio::test]
async fn interact_answers_a_prompt_shown_without_newline() {
    let s = Server::start(&[]).await;
    let (id, _) = s.exec(r#"printf 'Name? '; read x; echo "hi $x""#).await;
    // The prompt has no newline yet is visible in tail and output while the job waits.
    s.wait_output(&id, "Name? ").await;
    assert!(s.output(&id).await.contains("Name? "));
    let r = s
        .ok("interact_with_job", json!({ "job_id": id, "input": "Ada" }))
        .await;
    assert!(r["output"].as_str().unwrap_or("").contains("hi Ada"), "{r}");
    assert_eq!(r["bytes_written"], 4, "a newline is appended");
    wait_until("completed", DEADLINE, || async {
        (s.status(&id).await["status"] == "completed").then_some(())
    })
    .await;
    assert_eq!(s.output(&id).await, "Name? Ada\nhi Ada");
}

#[tokio::test]
async fn interact_catches_a_reply_that_takes_a_second() {
    let s = Server::start(&[]).await;
    let (id, _) = s.exec("read x; sleep 1; echo got $x; sleep 1000").await;
    let t = std::time::Instant::now();
    let r = s
        .ok(
            "interact_with_job",
            json!({ "job_id": id, "input": "ping\n" }),
        )
        .await;
    assert!(
        r["output"].as_str().unwrap_or("").contains("got ping"),
        "{r}"
    );
    assert_eq!(r["bytes_written"], 5, "no second newline");
    assert_eq!(r["status"], "running");
    assert!(
        t.elapsed() < std::time::Duration::from_secs(4),
        "{:?}",
        t.elapsed()
    );
}

#[tokio::test]
async fn kill_job_kills_a_running_job() {
    let s = Server::start(&[]).await;
    let (id, _) = s.exec("sleep 1000").await;
    let k = s
        .ok("kill_job", json!({ "job_id": id, "signal": "INT" }))
        .await;
    assert_eq!(k["status"], "killed");
    assert_eq!(s.status(&id).await["status"], "killed");
    let k = s.ok("kill_job", json!({ "job_id": id, "signal": 9 })).await;
    assert_eq!(k["status"], "already_terminated");
}
