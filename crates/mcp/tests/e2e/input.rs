//! Input awareness through MCP: get_job_status and list_jobs say when a job waits for input,
//! wait_for_job(input) returns input_wanted with the prompt, and a password typed with echo
//! off reaches neither the output nor the disk log.

use serde_json::json;

use crate::util::{DEADLINE, Server, wait_until};

fn have_python() -> bool {
    std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

#[tokio::test]
async fn a_password_prompt_is_reported_awaited_and_kept_out_of_every_record() {
    if !have_python() {
        eprintln!("skipped: no python3");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start_in(dir.path(), &[]).await;
    let (id, _) = s
        .exec(r#"python3 -c "import getpass; p=getpass.getpass(); print('length', len(p))""#)
        .await;
    let w = s
        .ok(
            "wait_for_job",
            json!({ "job_id": id, "input": true, "timeout_secs": 20 }),
        )
        .await;
    assert_eq!(w["reason"], "input_wanted", "{w}");
    assert_eq!(w["prompt"], "Password:", "{w}");
    assert_eq!(w["echo"], false, "{w}");
    assert_eq!(
        w["mode"], "line",
        "a password is asked for in line mode: {w}"
    );
    assert_eq!(w["status"], "running");

    let st = s.status(&id).await;
    assert_eq!(st["waiting_for_input"], true, "{st}");
    assert_eq!(st["echo"], false, "{st}");
    assert_eq!(st["prompt"], "Password:", "{st}");
    let list = s.ok("list_jobs", json!({})).await;
    let mine = list["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["job_id"] == id.as_str())
        .cloned()
        .expect("the job is listed");
    assert_eq!(mine["waiting_for_input"], true, "{mine}");
    assert_eq!(mine["echo"], false, "{mine}");

    let secret = "Tr0ub4dor-and-3";
    let r = s
        .ok(
            "interact_with_job",
            json!({ "job_id": id, "input": secret, "wait_ms": 5000 }),
        )
        .await;
    assert!(!r.to_string().contains(secret), "{r}");
    let done = s.wait_done(&id).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["waiting_for_input"], false, "{done}");
    assert!(done.get("prompt").is_none(), "no prompt once ended: {done}");
    let out = s.output(&id).await;
    assert!(out.contains("length 15"), "{out}");
    assert!(!out.contains(secret), "{out}");
    let log = std::fs::read_to_string(dir.path().join(format!("jobs/{id}/output.log"))).unwrap();
    assert!(log.contains("length 15"), "{log}");
    assert!(
        !log.contains(secret),
        "the password reached the disk log: {log}"
    );
}

#[tokio::test]
async fn read_with_a_prompt_waits_with_echo_on_and_sleep_never_waits() {
    let s = Server::start(&[]).await;
    let (asking, _) = s.exec("read -p 'Continue? ' x; echo answer=$x").await;
    let (sleeping, _) = s.exec("sleep 100").await;
    let st = wait_until("read -p to count as waiting", DEADLINE, || async {
        let st = s.status(&asking).await;
        (st["waiting_for_input"] == true).then_some(st)
    })
    .await;
    assert_eq!(st["echo"], true, "{st}");
    assert_eq!(st["prompt"], "Continue?", "{st}");
    // The sleeper: never waiting, several looks over a second and more.
    for _ in 0..6 {
        let st = s.status(&sleeping).await;
        assert_eq!(st["waiting_for_input"], false, "{st}");
        assert!(
            st.get("echo").is_none() && st.get("prompt").is_none(),
            "{st}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
    let w = s
        .ok(
            "wait_for_job",
            json!({ "job_id": sleeping, "input": true, "timeout_secs": 1 }),
        )
        .await;
    assert_eq!(w["reason"], "timeout", "{w}");
    s.ok(
        "interact_with_job",
        json!({ "job_id": asking, "input": "yes" }),
    )
    .await;
    s.wait_output(&asking, "answer=yes").await;
}
