//! The CLI takes job names (issue 22): status, logs, kill by name; ambiguous and unknown
//! names answered with the candidates; `ptyjobs restart` has the live server restart a job.

use serde_json::{Value, json};

use crate::harness::{Fixture, session_processes, wait_until};

#[test]
fn status_logs_and_kill_take_a_name() {
    let mut f = Fixture::new();
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (in_a, pid_a) = f.exec_with(json!({ "command": "echo hi-a; exec sleep 300",
                                             "name": "web", "cwd": a.path() }));
    let (in_b, _) = f.exec_with(json!({ "command": "echo hi-b; exec sleep 300",
                                         "name": "web", "cwd": b.path() }));
    // Live in two directories: the error lists both.
    let r = f.cli(&["status", "web"]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        r.stderr.contains(&in_a) && r.stderr.contains(&in_b),
        "{r:?}"
    );
    // --cwd of restart picks one; status by id and by name agree once one is gone.
    let r = f.cli(&["kill", &in_b]);
    assert_eq!(r.code, 0, "{r:?}");
    let r = f.cli(&["status", "--json", "web"]);
    assert_eq!(r.code, 0, "{r:?}");
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["id"], in_a.as_str());
    wait_until("hi-a in the logs", || {
        let r = f.cli(&["logs", "web"]);
        (r.code == 0 && r.stdout.contains("hi-a")).then_some(())
    });
    let r = f.cli(&["status", "nope"]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("web"), "the live names are listed: {r:?}");
    let r = f.cli(&["kill", "web"]);
    assert_eq!(r.code, 0, "{r:?}");
    wait_until("the session of web to end", || {
        session_processes(pid_a).is_empty().then_some(())
    });
}

#[test]
fn restart_has_the_live_server_start_the_job_again() {
    let mut f = Fixture::new();
    let (old, pid) = f.exec_with(json!({
        "command": "trap '' TERM; echo \"up $GREETING\"; sleep 1000 & wait",
        "name": "svc",
        "env": { "GREETING": "there" },
    }));
    wait_until("the job to print", || {
        f.server.output(&old).contains("up there").then_some(())
    });
    let r = f.cli(&["restart", "svc", "--json"]);
    assert_eq!(r.code, 0, "{r:?}");
    let new: Value = serde_json::from_str(&r.stdout).unwrap();
    let new_id = new["id"].as_str().unwrap().to_owned();
    assert_eq!(new["replaces"], old.as_str());
    assert_ne!(new_id, old);
    assert!(session_processes(pid).is_empty(), "the old tree is gone");
    // The server owns the new job: it outlives the CLI, with the job's environment.
    let s = f.server.status(&new_id);
    assert_eq!(s["status"], "running", "{s}");
    assert_eq!(s["this_server"], true);
    wait_until("the new job to print", || {
        f.server.output(&new_id).contains("up there").then_some(())
    });
    assert_eq!(f.server.status(&old)["status"], "killed");
    // A new command; then a finished job starts again.
    let r = f.cli(&["restart", "svc", "--command", "echo second"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.contains(&format!("replaces {new_id}")), "{r:?}");
    let third = r.stdout.split_whitespace().next().unwrap().to_owned();
    f.server.wait_done(&third);
    let r = f.cli(&["restart", &third]);
    assert_eq!(r.code, 0, "{r:?}");
    let fourth = r.stdout.split_whitespace().next().unwrap().to_owned();
    wait_until("the restarted finished job to print", || {
        f.server.output(&fourth).contains("second").then_some(())
    });
    let r = f.cli(&["restart", "svc", "--env", "NOEQUALS"]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("KEY=VALUE"), "{r:?}");
}
