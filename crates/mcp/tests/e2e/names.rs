//! Names as keys over MCP: ensure, every tool taking a name as job_id, restart_job, two
//! servers on one state directory (issue 22).

use serde_json::json;

use crate::util::{DEADLINE, Server, alive, wait_no_processes};

#[tokio::test]
async fn ensure_reuses_a_running_service_and_refuses_a_second_copy() {
    let s = Server::start(&[]).await;
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().to_str().unwrap();
    let args = json!({ "command": "echo up; exec sleep 100", "name": "dev", "ensure": true,
                       "cwd": cwd });
    let (id, _) = s.exec_with(args.clone()).await;
    s.wait_output(&id, "up").await;
    let again = s.ok("execute_command", args.clone()).await;
    assert_eq!(again["job_id"], id.as_str());
    assert_eq!(again["reused"], true);
    assert_eq!(again["status"], "running");
    assert!(again["tail"].as_str().unwrap().contains("up"), "{again}");
    // A different command under the name: refused, both commands shown, restart_job named.
    let msg = s
        .tool_error(
            "execute_command",
            json!({ "command": "exec sleep 200", "name": "dev", "ensure": true, "cwd": cwd }),
        )
        .await;
    for part in [
        "echo up; exec sleep 100",
        "exec sleep 200",
        "restart_job",
        &id,
    ] {
        assert!(msg.contains(part), "{part:?} missing: {msg}");
    }
    // Without ensure, a second start is refused naming the running job and what to do.
    let msg = s
        .tool_error(
            "execute_command",
            json!({ "command": "echo up; exec sleep 100", "name": "dev", "cwd": cwd }),
        )
        .await;
    for part in [id.as_str(), cwd, "ensure", "restart_job"] {
        assert!(msg.contains(part), "{part:?} missing: {msg}");
    }
    // Every tool takes the name as job_id.
    assert_eq!(s.status("dev").await["job_id"], id.as_str());
    let w = s
        .ok(
            "wait_for_job",
            json!({ "job_id": "dev", "pattern": "up", "from_start": true, "timeout_secs": 5 }),
        )
        .await;
    assert_eq!(w["reason"], "matched", "{w}");
    let t = s.ok("tail_job_output", json!({ "job_id": "dev" })).await;
    assert!(t["output"].as_str().unwrap().contains("up"));
    // An unknown name: not_found for kill_job, the live names for the others.
    let k = s.ok("kill_job", json!({ "job_id": "nope" })).await;
    assert_eq!(k["status"], "not_found");
    let msg = s
        .tool_error("get_job_status", json!({ "job_id": "nope" }))
        .await;
    assert!(msg.contains("dev") && msg.contains("list_jobs"), "{msg}");
    let k = s.ok("kill_job", json!({ "job_id": "dev" })).await;
    assert_eq!(k["status"], "killed");
    // Ended: the name is free; ensure starts a new job.
    let fresh = s.ok("execute_command", args).await;
    assert_ne!(fresh["job_id"], id.as_str());
    assert!(fresh.get("reused").is_none(), "{fresh}");
    s.track(fresh["pid"].as_u64().unwrap() as u32);
}

#[tokio::test]
async fn bad_names_are_refused_clearly() {
    let s = Server::start(&[]).await;
    let long = "x".repeat(10 * 1024);
    for (name, needle) in [
        ("a\nb", "control"),
        ("\u{1b}[2J", "control"),
        (&long[..], "bytes"),
    ] {
        let msg = s
            .tool_error(
                "execute_command",
                json!({ "command": "true", "name": name }),
            )
            .await;
        assert!(msg.contains(needle) && msg.len() < 400, "{msg}");
    }
    assert_eq!(s.ok("list_jobs", json!({})).await["total_jobs"], 0);
}

#[tokio::test]
async fn a_name_live_in_two_directories_asks_which() {
    let s = Server::start(&[]).await;
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (a_cwd, b_cwd) = (a.path().to_str().unwrap(), b.path().to_str().unwrap());
    let (in_a, _) = s
        .exec_with(json!({ "command": "exec sleep 100", "name": "web", "cwd": a_cwd }))
        .await;
    let (in_b, _) = s
        .exec_with(json!({ "command": "exec sleep 100", "name": "web", "cwd": b_cwd }))
        .await;
    let msg = s
        .tool_error("get_job_status", json!({ "job_id": "web" }))
        .await;
    for part in [&in_a, &in_b, a_cwd, b_cwd] {
        assert!(msg.contains(part), "{part:?} missing: {msg}");
    }
    let r = s
        .ok("restart_job", json!({ "job_id": "web", "cwd": b_cwd }))
        .await;
    assert_eq!(r["replaces"], in_b.as_str());
    s.track(r["pid"].as_u64().unwrap() as u32);
    assert_eq!(s.status(&in_a).await["status"], "running");
    assert_eq!(s.status(&in_b).await["status"], "killed");
}

#[tokio::test]
async fn restart_job_replaces_the_whole_tree_even_one_that_ignores_sigterm() {
    let s = Server::start(&["--kill-grace-ms", "300"]).await;
    let (old, pid) = s
        .exec_with(json!({
            "command": "trap '' TERM; echo \"armed $GREETING\"; sleep 1000 & wait",
            "name": "stubborn",
            "env": { "GREETING": "hi" },
        }))
        .await;
    s.wait_output(&old, "armed hi").await;
    let r = s.ok("restart_job", json!({ "job_id": "stubborn" })).await;
    let new = r["job_id"].as_str().unwrap().to_owned();
    s.track(r["pid"].as_u64().unwrap() as u32);
    assert_ne!(new, old);
    assert_eq!(r["replaces"], old.as_str());
    assert_eq!(r["status"], "running");
    wait_no_processes(pid, DEADLINE).await;
    assert!(!alive(pid));
    assert_eq!(s.status(&old).await["status"], "killed");
    s.wait_output(&new, "armed hi").await;
    // A new command, waited for.
    let r = s
        .ok(
            "restart_job",
            json!({ "job_id": "stubborn", "command": "echo replaced", "wait": true }),
        )
        .await;
    assert_eq!(r["replaces"], new.as_str());
    assert_eq!(r["status"], "completed", "{r}");
    assert!(r["outcome"]["tail"].as_str().unwrap().contains("replaced"));
    // A finished job starts again.
    let again = s
        .ok("restart_job", json!({ "job_id": "stubborn", "wait": true }))
        .await;
    assert_eq!(again["replaces"], r["job_id"]);
    assert!(
        again["outcome"]["tail"]
            .as_str()
            .unwrap()
            .contains("replaced")
    );
}

#[tokio::test]
async fn two_servers_on_one_state_directory_ensure_one_job() {
    let state = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let (a, b) = (
        Server::start_in(state.path(), &[]).await,
        Server::start_in(state.path(), &[]).await,
    );
    let args = json!({ "command": "exec sleep 100", "name": "svc", "ensure": true,
                       "cwd": work.path().to_str().unwrap() });
    let call = |s: &'static str| {
        let server = if s == "a" { &a } else { &b };
        server.ok("execute_command", args.clone())
    };
    let (r1, r2, r3, r4, r5, r6, r7, r8) = tokio::join!(
        call("a"),
        call("b"),
        call("a"),
        call("b"),
        call("a"),
        call("b"),
        call("a"),
        call("b")
    );
    let answers = [r1, r2, r3, r4, r5, r6, r7, r8];
    let mut ids: Vec<&str> = answers
        .iter()
        .map(|r| r["job_id"].as_str().unwrap())
        .collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 1, "{answers:?}");
    let reused = answers.iter().filter(|r| r["reused"] == true).count();
    assert_eq!(reused, 7, "{answers:?}");
    for r in &answers {
        a.track(r["pid"].as_u64().unwrap() as u32);
    }
    // The other server names the job by name too, and cannot start a second copy.
    let msg = b
        .tool_error(
            "execute_command",
            json!({ "command": "exec sleep 5", "name": "svc",
                    "cwd": work.path().to_str().unwrap() }),
        )
        .await;
    assert!(msg.contains(ids[0]), "{msg}");
}

/// restart_job of a server on a fixed port: the old server lets go of the port, the new one
/// takes it, and with `port` the answer comes once the new job itself listens there.
#[tokio::test]
async fn restart_job_with_port_answers_once_the_new_server_listens_on_it() {
    let s = Server::start(&[]).await;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let (old, _) = s
        .exec_with(json!({
            "command": format!("exec python3 -m http.server {port} --bind 127.0.0.1"),
            "name": "web",
        }))
        .await;
    let ready = s
        .ok(
            "wait_for_job",
            json!({ "job_id": "web", "port": port, "timeout_secs": 30 }),
        )
        .await;
    assert_eq!(ready["reason"], "port_open", "{ready}");
    let r = s
        .ok("restart_job", json!({ "job_id": "web", "port": port }))
        .await;
    s.track(r["pid"].as_u64().unwrap() as u32);
    assert_eq!(r["replaces"], old.as_str(), "{r}");
    assert_eq!(r["outcome"]["reason"], "port_open", "{r}");
    assert_eq!(r["outcome"]["ports"][0]["port"], port, "{r}");
    assert_ne!(
        r["outcome"]["ports"][0]["pid"], ready["ports"][0]["pid"],
        "{r}"
    );
    assert_eq!(s.status(&old).await["status"], "killed");
}

/// An ensure that finds the server running answers where it listens, as status does.
#[tokio::test]
async fn ensure_of_a_running_server_answers_its_ports() {
    let s = Server::start(&[]).await;
    let args = json!({
        "command": "exec python3 -m http.server 0 --bind 127.0.0.1",
        "name": "web",
        "ensure": true,
    });
    let first = s.ok("execute_command", args.clone()).await;
    s.track(first["pid"].as_u64().unwrap() as u32);
    let ready = s
        .ok(
            "wait_for_job",
            json!({ "job_id": "web", "listening": true, "timeout_secs": 30 }),
        )
        .await;
    assert_eq!(ready["reason"], "listening", "{ready}");
    let again = s.ok("execute_command", args).await;
    assert_eq!(again["reused"], true, "{again}");
    assert_eq!(again["job_id"], first["job_id"], "{again}");
    assert_eq!(again["ports"], ready["ports"], "{again}");
}
