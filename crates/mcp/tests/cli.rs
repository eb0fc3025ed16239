//! The human CLI (`ptyjobs list | logs | status | kill | rm | prune`), driven as a user would:
//! the real binary on a state directory that a real server fills with real jobs.
// Unix only: the harness signals and inspects processes through /proc (Windows: tests/platforms/windows.test.mjs).
#![cfg(unix)]

#[path = "cli/harness.rs"]
mod harness;
#[path = "cli/keep.rs"]
mod keep;
#[path = "cli/name_cwd.rs"]
mod name_cwd;
#[path = "cli/names.rs"]
mod names;
#[path = "cli/ports.rs"]
mod ports;
#[path = "common/procs.rs"]
mod procs;
#[path = "cli/services.rs"]
mod services;
#[path = "cli/times.rs"]
mod times;
#[path = "cli/trust.rs"]
mod trust;
#[path = "cli/wait.rs"]
mod wait;
#[path = "cli/waiting.rs"]
mod waiting;

use std::collections::HashMap;
use std::io::{BufRead, BufReader};

use harness::{Fixture, Run, cli, next_line, session_processes, wait_until};
use serde_json::{Value, json};

/// The 8-character prefix the table shows.
fn short(id: &str) -> &str {
    &id[..8]
}

fn assert_ok(r: &Run) {
    assert_eq!(r.code, 0, "expected success: {r:?}");
}

/// Asserts a failed run: exit code 1, nothing on stdout, one `ptyjobs: ` message containing
/// every one of `needles` on stderr.
fn assert_error(r: &Run, needles: &[&str]) {
    assert_eq!(r.code, 1, "expected exit code 1: {r:?}");
    assert_eq!(r.stdout, "", "an error prints nothing on stdout: {r:?}");
    assert!(r.stderr.starts_with("ptyjobs: "), "{r:?}");
    for needle in needles {
        assert!(r.stderr.contains(needle), "stderr lacks {needle:?}: {r:?}");
    }
}

/// `list --json`, parsed.
fn list_json(f: &Fixture) -> Vec<Value> {
    let r = f.cli(&["list", "--json"]);
    assert_ok(&r);
    let v: Value = serde_json::from_str(&r.stdout).expect("list --json prints JSON");
    v.as_array().expect("a JSON array").clone()
}

fn ids(jobs: &[Value]) -> Vec<&str> {
    jobs.iter().map(|j| j["id"].as_str().expect("id")).collect()
}

/// `status` text as key → value.
fn status_fields(r: &Run) -> HashMap<String, String> {
    r.stdout
        .lines()
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.to_owned(), v.trim().to_owned()))
        .collect()
}

#[test]
fn list_prints_a_table_and_json_newest_first_and_filters_by_status() {
    let mut f = Fixture::new();
    let (done, done_pid) = f.exec_with(json!({ "command": "echo hello", "name": "greeter" }));
    f.server.wait_done(&done);
    let (running, running_pid) = f.exec_with(json!({ "command": "sleep 300", "name": "sleeper" }));

    let r = f.cli(&["list"]);
    assert_ok(&r);
    assert!(!r.stdout.contains('\x1b'), "no colour when piped: {r:?}");
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{r:?}");
    for header in [
        "ID", "NAME", "STATUS", "EXIT", "STARTED", "DURATION", "COMMAND",
    ] {
        assert!(lines[0].contains(header), "header lacks {header}: {r:?}");
    }
    let first: Vec<&str> = lines[1].split_whitespace().collect();
    assert_eq!(
        first[..4],
        [short(&running), "sleeper", "running", "-"],
        "{r:?}"
    );
    assert!(lines[1].ends_with("sleep 300"), "{r:?}");
    let second: Vec<&str> = lines[2].split_whitespace().collect();
    assert_eq!(
        second[..4],
        [short(&done), "greeter", "completed", "0"],
        "{r:?}"
    );
    assert!(lines[2].ends_with("echo hello"), "{r:?}");

    let jobs = list_json(&f);
    assert_eq!(
        ids(&jobs),
        [running.as_str(), done.as_str()],
        "newest first"
    );
    let (r, d) = (&jobs[0], &jobs[1]);
    assert_eq!(r["status"], "running");
    assert_eq!(r["pid"], running_pid);
    assert_eq!(r["exit_code"], Value::Null);
    assert_eq!(r["finished"], Value::Null);
    assert_eq!(d["name"], "greeter");
    assert_eq!(d["command"], "echo hello");
    assert_eq!(d["status"], "completed");
    assert_eq!(d["exit_code"], 0);
    assert_eq!(d["signal"], Value::Null);
    assert_eq!(d["reason"], Value::Null);
    assert_eq!(d["pid"], done_pid);
    assert!(d["finished"].is_string() && d["started"].is_string(), "{d}");
    assert!(d["duration_ms"].is_u64(), "{d}");
    assert!(d["cwd"].as_str().is_some_and(|c| !c.is_empty()), "{d}");
    for job in &jobs {
        assert_eq!(job["owner_alive"], true);
        assert_eq!(job["server_pid"], f.server.pid);
    }

    let r = f.cli(&["list", "--status", "running"]);
    assert_ok(&r);
    assert!(
        r.stdout.contains(short(&running)) && !r.stdout.contains(short(&done)),
        "{r:?}"
    );
    let r = f.cli(&["list", "--status", "completed", "--json"]);
    assert_ok(&r);
    let v: Value = serde_json::from_str(&r.stdout).expect("JSON");
    assert_eq!(v.as_array().map(|a| ids(a)), Some(vec![done.as_str()]));
    let r = f.cli(&["list", "--status", "failed"]);
    assert_ok(&r);
    assert_eq!(
        r.stdout,
        format!("no failed jobs in {}\n", f.dir().display())
    );
    assert_error(
        &f.cli(&["list", "--status", "bogus"]),
        &["bogus", "running, completed"],
    );
}

#[test]
fn an_empty_state_dir_lists_a_friendly_line_and_a_missing_one_is_an_error() {
    let f = Fixture::new();
    let r = f.cli(&["list"]);
    assert_ok(&r);
    assert_eq!(r.stdout, format!("no jobs in {}\n", f.dir().display()));
    let r = f.cli(&["list", "--json"]);
    assert_ok(&r);
    assert_eq!(r.stdout.trim(), "[]");

    let missing = f.dir().join("nowhere");
    let shown = missing.display().to_string();
    assert_error(&cli(&missing, &["list"]), &["no job records in", &shown]);
    assert_error(&cli(&missing, &["logs", "abc"]), &["no job records in"]);
    assert!(
        !missing.exists(),
        "reading never creates the state directory"
    );
}

#[test]
fn logs_print_what_the_server_returns_and_tail_cuts_the_last_lines() {
    let mut f = Fixture::new();
    let (id, _) = f.exec(
        "i=1; while [ $i -le 60 ]; do echo \"line $i\"; i=$((i+1)); done; \
         printf '\\033[32mgreen\\033[0m done\\n'",
    );
    f.server.wait_done(&id);
    let expected = f.server.output(&id);
    assert!(expected.contains("line 60\ngreen done"), "{expected:?}");

    let r = f.cli(&["logs", short(&id)]);
    assert_ok(&r);
    assert_eq!(r.stdout, format!("{expected}\n"));
    assert_eq!(r.stderr, "");
    assert_eq!(
        f.cli(&["logs", &id]).stdout,
        r.stdout,
        "the full id works too"
    );

    let last: Vec<&str> = expected.lines().rev().take(3).collect();
    let tail = format!("{}\n{}\n{}\n", last[2], last[1], last[0]);
    let r = f.cli(&["logs", short(&id), "--tail", "3"]);
    assert_ok(&r);
    assert_eq!(r.stdout, tail);
    assert_eq!(f.cli(&["logs", "-n", "3", short(&id)]).stdout, tail);
    assert_eq!(f.cli(&["logs", "-n", "0", short(&id)]).stdout, "");
    assert_eq!(
        f.cli(&["logs", "-n", "1000", short(&id)]).stdout,
        format!("{expected}\n")
    );
}

#[test]
fn logs_follow_prints_lines_as_they_become_final_and_ends_with_the_job() {
    let mut f = Fixture::new();
    let work = tempfile::tempdir().expect("work dir");
    // On a two-row screen each line is final as soon as the next one is printed.
    let (id, _) = f.exec_with(json!({
        "command": "echo tick 1; echo tick 2; while [ ! -e go ]; do sleep 0.05; done; \
                    for i in 3 4 5; do echo tick $i; sleep 0.2; done",
        "cwd": work.path(),
        "rows": 2,
    }));
    let mut follow = f.spawn_cli(&["logs", "--follow", short(&id)]);
    let lines = follow.lines();
    assert_eq!(next_line(&lines, "the first tick"), "tick 1");
    assert_eq!(
        f.server.status(&id)["status"],
        "running",
        "the line came while the job ran"
    );
    std::fs::write(work.path().join("go"), "").expect("let the job go on");
    let code = follow.wait();
    assert_eq!(code, 0, "stderr: {}", follow.stderr());
    assert_eq!(follow.stderr(), "");
    let mut got = vec!["tick 1".to_owned()];
    got.extend(lines.iter());
    assert_eq!(got, ["tick 1", "tick 2", "tick 3", "tick 4", "tick 5"]);
    assert_eq!(f.server.status(&id)["status"], "completed");
    assert_eq!(
        got.join("\n"),
        f.server.output(&id),
        "exactly the job's output"
    );
}

/// A quiet job's complete lines show while it runs, long before they scroll off its screen
/// (a dev server's "listening" line); a line redrawn later is shown again as it ended.
#[test]
fn logs_follow_shows_a_quiet_jobs_complete_lines_at_once() {
    let mut f = Fixture::new();
    let work = tempfile::tempdir().expect("work dir");
    let (id, _) = f.exec_with(json!({
        "command": "echo listening on :3000; printf 'building...'; \
                    while [ ! -e go ]; do sleep 0.05; done; printf '\\r\\033[Kbuilt\\n'; echo bye",
        "cwd": work.path(),
    }));
    let mut follow = f.spawn_cli(&["logs", "--follow", short(&id)]);
    let lines = follow.lines();
    assert_eq!(
        next_line(&lines, "the listening line"),
        "listening on :3000"
    );
    assert_eq!(f.server.status(&id)["status"], "running");
    std::fs::write(work.path().join("go"), "").expect("let the job go on");
    assert_eq!(follow.wait(), 0, "stderr: {}", follow.stderr());
    // The unfinished "building..." line was never printed; its final text was.
    assert_eq!(lines.iter().collect::<Vec<_>>(), ["built", "bye"]);
    assert_eq!(f.server.output(&id), "listening on :3000\nbuilt\nbye");
}

#[test]
fn logs_follow_on_a_short_job_prints_every_line_once() {
    let mut f = Fixture::new();
    let (id, _) = f.exec("for i in 1 2 3; do echo tick $i; sleep 0.3; done");
    let mut follow = f.spawn_cli(&["logs", "-f", short(&id)]);
    let lines = follow.lines();
    assert_eq!(follow.wait(), 0, "stderr: {}", follow.stderr());
    let got: Vec<String> = lines.iter().collect();
    assert_eq!(got, ["tick 1", "tick 2", "tick 3"]);

    // On a finished job, --follow prints the output and returns.
    let r = f.cli(&["logs", "--follow", "--tail", "1", short(&id)]);
    assert_ok(&r);
    assert_eq!(r.stdout, "tick 3\n");
}

#[test]
fn logs_follow_ends_when_the_jobs_server_dies_with_the_lines_it_saved() {
    let mut f = Fixture::new();
    let (id, _) = f.exec("echo before; sleep 300");
    // The line is still on the screen; the server saves it once the job is quiet.
    wait_until("the screen line to be saved", || {
        (f.cli(&["logs", short(&id)]).stdout == "before\n").then_some(())
    });
    let mut follow = f.spawn_cli(&["logs", "--follow", short(&id)]);
    let lines = follow.lines();
    f.server.crash();
    assert_eq!(follow.wait(), 0, "stderr: {}", follow.stderr());
    assert_eq!(lines.iter().collect::<Vec<_>>(), ["before"]);
    let r = f.cli(&["status", "--json", short(&id)]);
    let v: Value = serde_json::from_str(&r.stdout).expect("JSON");
    assert_eq!(v["status"], "killed");
    assert_eq!(v["reason"], "server stopped");
    assert_eq!(v["owner_alive"], false);
}

#[test]
fn logs_exit_quietly_when_the_reader_goes_away() {
    let mut f = Fixture::new();
    // More output than a pipe holds, like `ptyjobs logs X | head -1`.
    let (big, _) = f.exec("i=0; while [ $i -lt 20000 ]; do echo \"line $i\"; i=$((i+1)); done");
    f.server.wait_done(&big);
    let mut head = f.spawn_cli(&["logs", short(&big)]);
    let stdout = head.child.stdout.take().expect("stdout");
    let mut first = String::new();
    BufReader::new(stdout)
        .read_line(&mut first)
        .expect("read a line");
    assert_eq!(first, "line 0\n");
    // The reader is dropped here: the pipe is closed.
    assert_eq!(head.wait(), 0);
    assert_eq!(head.stderr(), "", "no message, no panic");

    // --follow notices a closed pipe even while the job prints nothing.
    let (quiet, _) = f.exec("sleep 300");
    let mut follow = f.spawn_cli(&["logs", "--follow", short(&quiet)]);
    drop(follow.child.stdout.take());
    assert_eq!(follow.wait(), 0);
    assert_eq!(follow.stderr(), "");
}

#[test]
fn status_prints_the_record_as_text_and_json() {
    let mut f = Fixture::new();
    let (id, pid) = f.exec_with(json!({ "command": "echo out; exit 3", "name": "three" }));
    f.server.wait_done(&id);
    let r = f.cli(&["status", short(&id)]);
    assert_ok(&r);
    let s = status_fields(&r);
    assert_eq!(s["id"], id);
    assert_eq!(s["name"], "three");
    assert_eq!(s["command"], "echo out; exit 3");
    assert_eq!(s["status"], "failed");
    assert_eq!(s["exit code"], "3");
    assert_eq!(s["reason"], "exited with code 3");
    assert_eq!(s["pid"], pid.to_string());
    assert_eq!(s["output"], "1 line");
    assert_eq!(s["server"], format!("pid {} (running)", f.server.pid));
    assert!(
        s.contains_key("started") && s.contains_key("finished"),
        "{r:?}"
    );

    let r = f.cli(&["status", "--json", short(&id)]);
    assert_ok(&r);
    let v: Value = serde_json::from_str(&r.stdout).expect("status --json prints JSON");
    assert_eq!(v["id"], id.as_str());
    assert_eq!(v["name"], "three");
    assert_eq!(v["status"], "failed");
    assert_eq!(v["exit_code"], 3);
    assert_eq!(v["reason"], "exited with code 3");
    assert_eq!(v["pid"], pid);
    assert_eq!(v["output_lines"], 1);
    assert_eq!(v["owner_alive"], true);
    assert_eq!(v["server_pid"], f.server.pid);

    let (running, _) = f.exec("sleep 300");
    let r = f.cli(&["status", short(&running)]);
    assert_ok(&r);
    let s = status_fields(&r);
    assert_eq!(s["status"], "running");
    assert!(
        !s.contains_key("exit code") && !s.contains_key("finished"),
        "{r:?}"
    );
    assert!(s["duration"].ends_with("so far"), "{r:?}");
}

#[test]
fn kill_stops_a_running_job_and_every_process_in_it() {
    let mut f = Fixture::new();
    let (id, pid) = f.exec("sleep 300 & sleep 301; wait");
    wait_until("the job's two sleeps", || {
        (session_processes(pid).len() >= 3).then_some(())
    });
    let r = f.cli(&["kill", "--grace-ms", "2000", short(&id)]);
    assert_ok(&r);
    assert!(
        r.stdout.contains(short(&id)) && r.stdout.contains("killed by ptyjobs kill"),
        "{r:?}"
    );
    wait_until("no process of the job left", || {
        session_processes(pid).is_empty().then_some(())
    });
    let s = f.server.wait_done(&id);
    assert_eq!(s["status"], "killed");
    assert_eq!(s["reason"], "killed by ptyjobs kill");

    assert_error(
        &f.cli(&["kill", short(&id)]),
        &[&id, "not running", "killed"],
    );
}

#[test]
fn kill_of_a_finished_job_is_an_error() {
    let mut f = Fixture::new();
    let (id, _) = f.exec("true");
    f.server.wait_done(&id);
    assert_error(
        &f.cli(&["kill", short(&id)]),
        &[&id, "not running", "completed"],
    );
    assert_eq!(f.server.status(&id)["status"], "completed");
}

#[test]
fn rm_removes_finished_jobs_and_refuses_running_ones() {
    let mut f = Fixture::new();
    let (done, _) = f.exec("echo bye");
    f.server.wait_done(&done);
    let (running, _) = f.exec("sleep 300");

    assert_error(&f.cli(&["rm", short(&running)]), &["still running"]);
    assert_eq!(ids(&list_json(&f)), [running.as_str(), done.as_str()]);

    let r = f.cli(&["rm", short(&done)]);
    assert_ok(&r);
    assert_eq!(r.stdout, format!("removed {done}\n"));
    assert_eq!(ids(&list_json(&f)), [running.as_str()]);
    assert!(!f.cli(&["list"]).stdout.contains(short(&done)));
    assert_error(
        &f.cli(&["status", short(&done)]),
        &["no job id starts with", short(&done)],
    );
    assert_error(&f.cli(&["rm", short(&done)]), &["no job id starts with"]);
}

#[test]
fn prune_keeps_the_newest_finished_jobs_and_every_running_one() {
    let mut f = Fixture::new();
    let mut finished = Vec::new();
    for i in 0..3 {
        let (id, _) = f.exec(&format!("echo job {i}"));
        f.server.wait_done(&id);
        finished.push(id);
    }
    let (running, _) = f.exec("sleep 300");

    let r = f.cli(&["--keep-jobs", "1", "prune"]);
    assert_ok(&r);
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{r:?}");
    assert_eq!(lines[0], format!("removed {}", finished[0]), "oldest first");
    assert_eq!(lines[1], format!("removed {}", finished[1]));
    assert!(
        lines[2].starts_with("pruned 2 jobs, ") && lines[2].ends_with(" freed"),
        "{r:?}"
    );
    assert_eq!(
        ids(&list_json(&f)),
        [running.as_str(), finished[2].as_str()]
    );

    let r = f.cli(&["prune", "--keep-jobs", "1"]);
    assert_ok(&r);
    assert!(r.stdout.starts_with("nothing to prune"), "{r:?}");
}

#[test]
fn ambiguous_and_unknown_prefixes_are_errors() {
    let mut f = Fixture::new();
    // Among 17 ids two share their first hex digit.
    let mut by_first: HashMap<char, String> = HashMap::new();
    let (a, b) = loop {
        let (id, _) = f.exec("true");
        let first = id.chars().next().expect("an id");
        if let Some(earlier) = by_first.insert(first, id.clone()) {
            break (earlier, id);
        }
        assert!(
            by_first.len() <= 16,
            "17 ids cannot all differ in their first digit"
        );
    };
    let prefix = &a[..1];
    for cmd in ["logs", "status", "kill", "rm"] {
        assert_error(&f.cli(&[cmd, prefix]), &["ambiguous", &a, &b]);
    }
    let listed = list_json(&f);
    assert!(ids(&listed).contains(&a.as_str()) && ids(&listed).contains(&b.as_str()));

    // A real id with its last digit changed names no job.
    let mut unknown = b.clone();
    let last = unknown.pop().expect("an id");
    unknown.push(if last == '0' { '1' } else { '0' });
    assert_error(
        &f.cli(&["status", &unknown]),
        &["no job id starts with", &unknown],
    );
    assert_error(&f.cli(&["logs", "not-an-id"]), &["no job id starts with"]);
}

/// Wide names (CJK: two columns a character) are padded by the columns they take, so every
/// column after them starts at the same place on every row.
#[test]
fn list_aligns_the_columns_after_a_wide_name() {
    let mut f = Fixture::new();
    let (wide, _) = f.exec_with(json!({ "command": "echo hi", "name": "构建服务器" }));
    f.server.wait_done(&wide);
    let (narrow, _) = f.exec_with(json!({ "command": "echo hi", "name": "build" }));
    f.server.wait_done(&narrow);
    let r = f.cli(&["list"]);
    assert_ok(&r);
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{r:?}");
    // The display column where STATUS starts, counted as a terminal draws: two for a CJK
    // character, one for the rest.
    let column_of = |line: &str, needle: &str| {
        let at = line
            .find(needle)
            .unwrap_or_else(|| panic!("{needle:?} not in {line:?}"));
        line[..at]
            .chars()
            .map(|c| {
                if ('\u{4e00}'..='\u{9fff}').contains(&c) {
                    2
                } else {
                    1
                }
            })
            .sum::<usize>()
    };
    let status = column_of(lines[0], "STATUS");
    assert_eq!(column_of(lines[1], "completed"), status, "{r:?}");
    assert_eq!(column_of(lines[2], "completed"), status, "{r:?}");
}

/// On a terminal (here `script`'s), the status is coloured; `NO_COLOR` turns that off.
#[test]
fn list_colours_the_status_on_a_terminal_unless_no_color() {
    let mut f = Fixture::new();
    let (id, _) = f.exec("echo hi");
    f.server.wait_done(&id);
    let dir = f.dir().to_str().expect("utf-8 path").to_owned();
    let on_a_tty = |no_color: Option<&str>| {
        let mut cmd = std::process::Command::new("script");
        // A terminal that has colours, whatever the test runs under (CI may set no TERM).
        cmd.env("TERM", "xterm-256color")
            .env_remove("CLICOLOR_FORCE");
        cmd.args([
            "-qec",
            &format!("{} --state-dir {dir} list", harness::BIN),
            "/dev/null",
        ]);
        match no_color {
            Some(v) => cmd.env("NO_COLOR", v),
            None => cmd.env_remove("NO_COLOR"),
        };
        let out = cmd.output().expect("run script (util-linux)");
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let coloured = on_a_tty(None);
    assert!(coloured.contains("completed"), "{coloured:?}");
    assert!(
        coloured.contains("\x1b["),
        "no colour on a terminal: {coloured:?}"
    );
    let plain = on_a_tty(Some("1"));
    assert!(plain.contains("completed"), "{plain:?}");
    assert!(!plain.contains('\x1b'), "NO_COLOR ignored: {plain:?}");
}
