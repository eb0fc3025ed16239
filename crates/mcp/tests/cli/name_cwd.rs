//! `--cwd` on every subcommand that takes a job (issue 22, point 1): with a name live in two
//! directories, run from a third, each subcommand reaches the job of the directory given
//! (relative to the CLI's working directory), and without `--cwd` answers the candidates.

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::harness::{BIN, Fixture, Run, wait_until};

/// Runs `ptyjobs --state-dir <state> <args>` in the directory `here`.
fn cli_in(here: &Path, state: &Path, args: &[&str]) -> Run {
    let out = Command::new(BIN)
        .current_dir(here)
        .arg("--state-dir")
        .arg(state)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run the ptyjobs cli");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

#[test]
fn every_subcommand_that_takes_a_job_takes_the_cwd_of_its_name() {
    let mut f = Fixture::new();
    let top = tempfile::tempdir().unwrap();
    let (a, b) = (top.path().join("a"), top.path().join("b"));
    std::fs::create_dir(&a).unwrap();
    std::fs::create_dir(&b).unwrap();
    let (in_a, _) = f.exec_with(json!({ "command": "echo hi-a; exec sleep 300",
                                         "name": "web", "cwd": a }));
    let (in_b, _) = f.exec_with(json!({ "command": "echo hi-b; exec sleep 300",
                                         "name": "web", "cwd": b }));
    let state = f.dir().to_owned();
    let run = |args: &[&str]| cli_in(top.path(), &state, args);

    // From a third directory, without --cwd: the candidates, and nothing done.
    for args in [
        &["status", "web"][..],
        &["logs", "web"],
        &["kill", "web"],
        &["rm", "web"],
        &["attach", "web"],
        &["wait", "web", "--exit"],
        &["restart", "web"],
    ] {
        let r = run(args);
        assert_ne!(r.code, 0, "{args:?}: {r:?}");
        for part in [&in_a, &in_b, "hi-a", "hi-b"] {
            assert!(r.stderr.contains(part), "{args:?}: {part:?} missing: {r:?}");
        }
        for dir in [&a, &b] {
            let dir = dir.to_str().unwrap();
            assert!(r.stderr.contains(dir), "{args:?}: {dir} missing: {r:?}");
        }
    }
    assert_eq!(f.server.status(&in_a)["status"], "running");
    assert_eq!(f.server.status(&in_b)["status"], "running");

    // --cwd b, relative to the CLI's directory: b's job each time.
    let r = run(&["status", "web", "--cwd", "b", "--json"]);
    assert_eq!(r.code, 0, "{r:?}");
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["id"], in_b.as_str());
    wait_until("b's line in its logs", || {
        let r = run(&["logs", "web", "--cwd", "b"]);
        (r.code == 0 && r.stdout.contains("hi-b")).then_some(r)
    });
    let r = run(&["logs", "web", "--cwd", "b"]);
    assert!(!r.stdout.contains("hi-a"), "{r:?}");
    let r = run(&["wait", "web", "--cwd", "b", "--pattern", "hi-"]);
    assert_eq!(r.code, 0, "{r:?}");
    let v: Value = serde_json::from_str(r.stdout.trim()).unwrap();
    assert_eq!(v["matched_line"], "hi-b", "{v}");
    let r = run(&["kill", "web", "--cwd", "b"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.contains(&in_b[..8]), "{r:?}");
    assert_eq!(f.server.status(&in_b)["status"], "killed");
    assert_eq!(f.server.status(&in_a)["status"], "running");
    // The name in b is now b's ended job: attach says it is not running (a's is).
    let r = run(&["attach", "web", "--cwd", "b"]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        r.stderr.contains(&format!("job {in_b} is not running")),
        "{r:?}"
    );
    let r = run(&["rm", "web", "--cwd", "b"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(r.stdout.trim(), format!("removed {in_b}"));

    // A --cwd that does not exist, or holds no job of the name: an error that says which.
    let r = run(&["status", "web", "--cwd", "nope"]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("no such directory"), "{r:?}");
    let r = run(&["kill", "web", "--cwd", "b"]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("no job is named \"web\""), "{r:?}");
    assert_eq!(f.server.status(&in_a)["status"], "running");
}
