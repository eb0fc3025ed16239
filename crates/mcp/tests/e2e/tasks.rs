//! MCP tasks: with a client that declares `io.modelcontextprotocol/tasks`, execute_command with
//! `wait` is answered as a task whose id is the job id; tasks/get reads the job (even after a
//! restart), tasks/cancel kills it. Clients without the extension get today's answers.

use rmcp::ServiceError;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, GetTaskParams,
    TaskPayload, TaskStatus,
};
use serde_json::{Value, json};

use crate::util::{DEADLINE, Dialect, Server, wait_no_processes, wait_until};

const TASKS: Dialect = Dialect {
    tasks: true,
    protocol_2026: false,
};

/// Calls execute_command with `args` and returns the task id it answered with.
async fn start_task(s: &Server, args: Value) -> String {
    let Value::Object(map) = args else {
        panic!("object")
    };
    let r = s
        .client()
        .call_tool_once(CallToolRequestParams::new("execute_command").with_arguments(map))
        .await
        .expect("execute_command");
    let CallToolResponse::Task(created) = r else {
        panic!("expected a task, got {r:?}")
    };
    assert_eq!(created.task.status, TaskStatus::Working);
    assert_eq!(created.task.poll_interval_ms, Some(1000));
    created.task.task_id
}

/// Polls tasks/get until the task is terminal and returns its payload.
async fn finished(s: &Server, task_id: &str) -> TaskPayload {
    wait_until("the task to end", DEADLINE, || async {
        let t = s
            .client()
            .peer()
            .get_task(GetTaskParams::new(task_id.to_owned()))
            .await
            .expect("tasks/get");
        assert_eq!(t.task.task.task_id, task_id);
        t.task.status().is_terminal().then_some(t.task.payload)
    })
    .await
}

fn result_of(payload: TaskPayload) -> Value {
    let TaskPayload::Completed { result } = payload else {
        panic!("expected a completed task, got {payload:?}")
    };
    let r: CallToolResult = serde_json::from_value(Value::Object(result)).expect("a tool result");
    assert_ne!(r.is_error, Some(true), "{r:?}");
    r.structured_content.expect("structured content")
}

#[tokio::test]
async fn a_task_is_the_job_and_outlives_a_restart() {
    let dir = tempfile::tempdir().expect("temp dir");
    let state = dir.path().to_str().expect("utf-8");
    let s = Server::start_as(&["--state-dir", state], TASKS).await;
    let id = start_task(
        &s,
        json!({ "command": "echo first; sleep 0.3; echo last; exit 3", "wait": true }),
    )
    .await;
    // The task id is the job id.
    let job = s.status(&id).await;
    s.track(job["pid"].as_u64().expect("pid") as u32);
    let done = result_of(finished(&s, &id).await);
    assert_eq!(done["job_id"], id.as_str());
    assert_eq!(done["status"], "failed");
    assert_eq!(done["outcome"]["reason"], "exited");
    assert_eq!(done["outcome"]["exit_code"], 3);
    let tail = done["outcome"]["tail"].as_str().expect("tail");
    assert!(tail.contains("first") && tail.contains("last"), "{tail}");
    drop(s);

    // A new server on the same state directory answers from disk.
    let s = Server::start_as(&["--state-dir", state], TASKS).await;
    let again = result_of(finished(&s, &id).await);
    assert_eq!(again["outcome"]["exit_code"], 3);
    assert!(
        again["outcome"]["tail"]
            .as_str()
            .expect("tail")
            .contains("last")
    );
}

#[tokio::test]
async fn cancelling_a_task_kills_its_job() {
    let s = Server::start_as(&[], TASKS).await;
    let id = start_task(&s, json!({ "command": "sleep 1000", "wait": true })).await;
    let pid = s.status(&id).await["pid"].as_u64().expect("pid") as u32;
    s.track(pid);
    let t = s
        .client()
        .peer()
        .get_task(GetTaskParams::new(id.clone()))
        .await
        .expect("tasks/get");
    assert_eq!(t.task.status(), TaskStatus::Working);
    assert_eq!(t.task.task.poll_interval_ms, Some(1000));
    s.client()
        .peer()
        .cancel_task(CancelTaskParams::new(id.clone()))
        .await
        .expect("tasks/cancel");
    assert!(matches!(finished(&s, &id).await, TaskPayload::Cancelled));
    assert_eq!(s.status(&id).await["status"], "killed");
    wait_no_processes(pid, DEADLINE).await;
}

#[tokio::test]
async fn unknown_tasks_are_invalid_params() {
    let s = Server::start_as(&[], TASKS).await;
    for id in ["nope", "123e4567-e89b-42d3-a456-426614174000"] {
        let e = s
            .client()
            .peer()
            .get_task(GetTaskParams::new(id.to_owned()))
            .await
            .expect_err("no such task");
        let ServiceError::McpError(e) = e else {
            panic!("{e}")
        };
        assert_eq!(e.code.0, -32602, "{e:?}");
    }
    s.assert_serving().await;
}

#[tokio::test]
async fn clients_without_tasks_get_plain_answers() {
    let s = Server::start(&[]).await;
    // Without `wait`: at once, as always.
    let r = s
        .ok("execute_command", json!({ "command": "sleep 1000" }))
        .await;
    s.track(r["pid"].as_u64().expect("pid") as u32);
    assert_eq!(r["status"], "running");
    assert!(r.get("outcome").is_none(), "{r}");
    // With `wait`: the call waits for the end.
    let r = s
        .ok(
            "execute_command",
            json!({ "command": "echo hi; exit 2", "wait": true }),
        )
        .await;
    assert_eq!(r["status"], "failed");
    assert_eq!(r["outcome"]["exit_code"], 2);
    assert!(r["outcome"]["tail"].as_str().expect("tail").contains("hi"));
    // And tasks/* are refused: this client did not declare the extension.
    let e = s
        .client()
        .peer()
        .get_task(GetTaskParams::new(
            r["job_id"].as_str().expect("id").to_owned(),
        ))
        .await
        .expect_err("tasks need the capability");
    assert!(matches!(e, ServiceError::McpError(_)), "{e}");
}

#[tokio::test]
async fn tasks_work_on_the_2026_protocol_too() {
    let s = Server::start_as(
        &[],
        Dialect {
            tasks: true,
            protocol_2026: true,
        },
    )
    .await;
    let id = start_task(&s, json!({ "command": "echo done-2026", "wait": true })).await;
    let done = result_of(finished(&s, &id).await);
    assert_eq!(done["outcome"]["exit_code"], 0);
    assert!(
        done["outcome"]["tail"]
            .as_str()
            .expect("tail")
            .contains("done-2026")
    );
}

#[tokio::test]
async fn a_waiting_execute_without_tasks_is_capped_and_reports_progress() {
    let s = Server::start(&["--max-wait-secs", "2.2"]).await;
    let r = s
        .ok(
            "execute_command",
            json!({ "command": "exec sleep 30", "wait": true }),
        )
        .await;
    s.track(r["pid"].as_u64().expect("pid") as u32);
    assert_eq!(r["status"], "running", "{r}");
    assert_eq!(r["outcome"]["capped"], true, "{r}");
    assert_eq!(r["outcome"]["reason"], "timeout", "{r}");
    assert!(
        s.heard.progress_count() >= 2,
        "progress notifications during a 2.2 s wait: {}",
        s.heard.progress_count()
    );
}
