//! `ptyjobs wait`: blocks until a job of a live server meets a condition, prints one JSON line
//! and says how it ended in its exit code (0 met, 1 ended without, 2 error, 124 timeout).

use std::os::unix::process::ExitStatusExt;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::harness::{Fixture, Run, wait_until};

/// The one JSON line a wait printed.
fn answer(r: &Run) -> Value {
    assert_eq!(r.stdout.lines().count(), 1, "one line: {r:?}");
    serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("JSON ({e}): {r:?}"))
}

/// Runs a wait that must exit with `code`; returns its answer.
fn wait(f: &Fixture, args: &[&str], code: i32) -> Value {
    let mut all = vec!["wait"];
    all.extend_from_slice(args);
    let r = f.cli(&all);
    assert_eq!(r.code, code, "{r:?}");
    answer(&r)
}

/// Asserts a wait that failed with exit code 2 and one `ptyjobs: ` message naming `needle`.
fn assert_wait_error(r: &Run, needle: &str) {
    assert_eq!(r.code, 2, "{r:?}");
    assert_eq!(r.stdout, "", "{r:?}");
    assert!(r.stderr.starts_with("ptyjobs: "), "{r:?}");
    assert!(r.stderr.contains(needle), "stderr lacks {needle:?}: {r:?}");
}

#[test]
fn a_pattern_is_matched_by_name_on_the_screen_and_in_the_log() {
    let mut f = Fixture::new();
    let (id, _) = f.exec_with(json!({
        "command": "i=0; while [ $i -lt 60 ]; do echo \"line $i\"; i=$((i+1)); done; \
                    sleep 1; echo 'server ready on port 8080'; sleep 300",
        "name": "dev",
    }));
    // The last line stays on the job's screen (it never scrolls off): seen through the
    // screen its server saves.
    let a = wait(
        &f,
        &["dev", "--pattern", r"ready on port \d+", "--timeout", "30"],
        0,
    );
    assert_eq!(a["reason"], "matched", "{a}");
    assert_eq!(a["matched_line"], "server ready on port 8080", "{a}");
    assert_eq!(a["line_number"], 60, "{a}");
    assert_eq!(a["job_id"], id.as_str());
    assert_eq!(a["name"], "dev");
    assert_eq!(a["status"], "running");
    assert_eq!(a["exit_code"], Value::Null);
    let last = a["last_lines"].as_array().expect("last_lines");
    assert!(last.len() <= 10, "{a}");
    assert!(last.iter().any(|l| l == "server ready on port 8080"), "{a}");
    assert!(a["ports"].is_array() && a["waited_ms"].is_u64(), "{a}");

    // A line printed before the wait, scrolled off into the disk log, by an id prefix.
    let a = wait(&f, &[&id[..8], "--pattern", "^line 3$"], 0);
    assert_eq!(
        (a["matched_line"].clone(), a["line_number"].clone()),
        (json!("line 3"), json!(3))
    );
}

#[test]
fn exit_is_the_condition_with_exit_and_without_any() {
    let mut f = Fixture::new();
    let (id, _) = f.exec("echo working; sleep 0.5; exit 3");
    let a = wait(&f, &[&id, "--exit", "--timeout", "30"], 0);
    assert_eq!(a["reason"], "exited", "{a}");
    assert_eq!(a["status"], "failed", "{a}");
    assert_eq!(a["exit_code"], 3, "{a}");
    assert_eq!(a["last_lines"], json!(["working"]), "{a}");
    let a = wait(&f, &[&id], 0);
    assert_eq!(
        (a["reason"].clone(), a["exit_code"].clone()),
        (json!("exited"), json!(3))
    );
}

#[test]
fn a_job_that_ends_without_the_condition_is_exit_code_1() {
    let mut f = Fixture::new();
    let (id, _) = f.exec("echo nothing to see; sleep 0.5; exit 0");
    let a = wait(
        &f,
        &[&id, "--pattern", "zzz", "--input", "--idle-ms", "60000"],
        1,
    );
    assert_eq!(a["reason"], "exited", "{a}");
    assert_eq!(a["status"], "completed", "{a}");
    assert_eq!(a["exit_code"], 0, "{a}");
    assert_eq!(a["matched_line"], Value::Null, "{a}");
    assert_eq!(a["last_lines"], json!(["nothing to see"]), "{a}");
}

#[test]
fn a_finished_job_answers_at_once() {
    let mut f = Fixture::new();
    let (id, _) = f.exec("echo all done; exit 5");
    f.server.wait_done(&id);
    let a = wait(&f, &[&id, "--exit", "--timeout", "30"], 0);
    assert_eq!(
        (a["reason"].clone(), a["exit_code"].clone()),
        (json!("exited"), json!(5))
    );
    assert!(a["waited_ms"].as_u64().is_some_and(|ms| ms < 1000), "{a}");
    // Its lines are all there: a pattern matches them, or the wait ends without a match.
    let a = wait(&f, &[&id, "--pattern", "all d.ne", "--timeout", "30"], 0);
    assert_eq!(a["matched_line"], "all done", "{a}");
    let a = wait(&f, &[&id, "--port", "1", "--timeout", "30"], 1);
    assert_eq!(a["reason"], "exited", "{a}");
}

#[test]
fn unknown_jobs_and_bad_patterns_are_exit_code_2() {
    let mut f = Fixture::new();
    let (id, _) = f.exec_with(json!({ "command": "sleep 300", "name": "sleeper" }));
    assert_wait_error(&f.cli(&["wait", "0123abcd"]), "no job id starts with");
    assert_wait_error(&f.cli(&["wait", "no-such-name", "--exit"]), "no-such-name");
    assert_wait_error(
        &f.cli(&["wait", &id, "--pattern", "ready ("]),
        "invalid pattern",
    );
    assert_wait_error(
        &f.cli(&["wait", "sleeper", "--pattern", "("]),
        "invalid pattern",
    );
    // clap's own errors (a bad --timeout) are 2 as well.
    let r = f.cli(&["wait", &id, "--timeout=0"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(r.stderr.contains("more than 0 seconds"), "{r:?}");
}

#[test]
fn timeout_is_exit_code_124() {
    let mut f = Fixture::new();
    let (id, _) = f.exec("echo started; sleep 300");
    let start = Instant::now();
    let a = wait(&f, &[&id, "--pattern", "never", "--timeout", "0.5"], 124);
    assert!(start.elapsed() >= Duration::from_millis(500));
    assert_eq!(a["reason"], "timeout", "{a}");
    assert_eq!(a["status"], "running", "{a}");
    assert!(a["waited_ms"].as_u64().is_some_and(|ms| ms >= 500), "{a}");
}

#[test]
fn a_prompt_ends_an_input_wait() {
    let mut f = Fixture::new();
    let (id, _) = f.exec(r#"bash -c 'read -p "Your name? " n; echo "hello $n"; sleep 300'"#);
    let a = wait(&f, &[&id, "--input", "--timeout", "30"], 0);
    assert_eq!(a["reason"], "input_wanted", "{a}");
    assert_eq!(a["input"]["prompt"], "Your name?", "{a}");
    assert_eq!(a["input"]["echo"], true, "{a}");
    assert_eq!(a["status"], "running", "{a}");
}

#[test]
fn idle_ends_when_output_stops_and_not_while_it_goes_on() {
    let mut f = Fixture::new();
    let (quiet, _) = f.exec("echo start; sleep 300");
    let a = wait(&f, &[&quiet, "--idle-ms", "500", "--timeout", "30"], 0);
    assert_eq!(a["reason"], "idle", "{a}");
    assert!(a["waited_ms"].as_u64().is_some_and(|ms| ms >= 500), "{a}");

    // A job printing every 0.3 s is never quiet for 1.5 s.
    let (ticking, _) = f.exec("while :; do echo tick; sleep 0.3; done");
    let a = wait(&f, &[&ticking, "--idle-ms", "1500", "--timeout", "4"], 124);
    assert_eq!(a["reason"], "timeout", "{a}");
}

/// A port on localhost nobody listens on now.
fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}

#[test]
fn a_port_that_opens_ends_a_port_wait() {
    let mut f = Fixture::new();
    let port = free_port();
    let (id, _) = f.exec(&format!(
        "sleep 0.5; exec python3 -m http.server {port} --bind 127.0.0.1"
    ));
    let a = wait(
        &f,
        &[&id, "--port", &port.to_string(), "--timeout", "30"],
        0,
    );
    assert_eq!(a["reason"], "port_open", "{a}");
    assert_eq!(a["status"], "running", "{a}");
}

/// Another program's listener on the port is not the job's: the wait runs to its timeout.
#[test]
fn a_port_held_by_another_program_does_not_end_a_port_wait() {
    let mut f = Fixture::new();
    let other = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = other.local_addr().expect("addr").port().to_string();
    let (id, _) = f.exec("sleep 300");
    let a = wait(&f, &[&id, "--port", &port, "--timeout", "0.5"], 124);
    assert_eq!(a["reason"], "timeout", "{a}");
}

#[test]
fn a_job_that_listens_ends_a_listening_wait_and_its_ports_are_in_the_answer() {
    let mut f = Fixture::new();
    let (id, _) = f.exec("exec python3 -m http.server 0 --bind 127.0.0.1");
    let a = wait(&f, &[&id, "--listening", "--timeout", "30"], 0);
    assert_eq!(a["reason"], "listening", "{a}");
    let ports = a["ports"].as_array().expect("ports");
    assert_eq!(ports.len(), 1, "{a}");
    assert_eq!(ports[0]["address"], "127.0.0.1", "{a}");
    let port = ports[0]["port"].as_u64().expect("port").to_string();
    let a = wait(&f, &[&id, "--port", &port, "--timeout", "30"], 0);
    assert_eq!(a["reason"], "port_open", "{a}");
    assert_eq!(a["ports"], json!(ports), "{a}");
}

/// Whether the process sleeps in the kernel (its wait between two looks).
fn sleeping(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/wchan")).is_ok_and(|w| w.contains("sleep"))
}

#[test]
fn a_signal_ends_a_waiting_cli_and_leaves_no_process() {
    let mut f = Fixture::new();
    let (id, _) = f.exec("sleep 300");
    for signal in [libc::SIGTERM, libc::SIGINT] {
        let mut cli = f.spawn_cli(&["wait", &id, "--pattern", "never"]);
        let pid = cli.child.id();
        wait_until("the wait to sleep between looks", || {
            sleeping(pid).then_some(())
        });
        let children =
            std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).expect("children");
        assert_eq!(children.trim(), "", "the wait starts no process");
        crate::procs::kill(pid, signal);
        let status = wait_until("the wait to end", || {
            cli.child.try_wait().expect("try_wait")
        });
        assert_eq!(status.signal(), Some(signal), "{status:?}");
        assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists());
        assert_eq!(cli.stderr(), "");
    }
}

#[test]
fn a_name_means_its_running_job_then_the_one_started_here() {
    let mut f = Fixture::new();
    let (old, _) = f.exec_with(json!({ "command": "echo old", "name": "svc" }));
    f.server.wait_done(&old);
    let elsewhere = tempfile::tempdir().expect("temp dir");
    let away = elsewhere.path().to_str().expect("utf-8 path");
    f.exec_with(json!({ "command": "sleep 300", "name": "svc", "cwd": away }));
    // The running job, not the newest finished one of that name (which would answer at once).
    let a = wait(&f, &["svc", "--timeout", "0.3"], 124);
    assert_eq!(a["status"], "running", "{a}");
    // Two running: the one started in the CLI's directory (the server's, as the test's).
    let (here, _) = f.exec_with(json!({ "command": "sleep 300", "name": "svc" }));
    let a = wait(&f, &["svc", "--timeout", "0.3"], 124);
    assert_eq!(a["job_id"], here.as_str(), "{a}");
    // Two running elsewhere: ambiguous, say which.
    let third = tempfile::tempdir().expect("temp dir");
    let (one, _) = f.exec_with(json!({ "command": "sleep 300", "name": "api", "cwd": away }));
    let (two, _) = f.exec_with(
        json!({ "command": "sleep 300", "name": "api", "cwd": third.path().to_str().unwrap() }),
    );
    let r = f.cli(&["wait", "api"]);
    assert_wait_error(&r, "name \"api\" is live in 2 directories");
    assert!(r.stderr.contains(&one) && r.stderr.contains(&two), "{r:?}");
}
