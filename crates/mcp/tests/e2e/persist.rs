//! Job history on disk: restarts, crashes, two servers on one directory, paging from disk,
//! caps and retention, permissions, and `--no-persist`.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::util::{DEADLINE, Server, jobs_stay_in_memory, wait_no_processes, wait_until};

/// Every file and directory under `dir`.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).expect("read dir").flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        }
        out.push(path);
    }
    out
}

fn job_dir(state: &Path, id: &str) -> PathBuf {
    state.join("jobs").join(id)
}

/// The jobs of a `list_jobs` answer, by id.
async fn listed(s: &Server) -> Vec<Value> {
    s.ok("list_jobs", json!({})).await["jobs"]
        .as_array()
        .expect("jobs")
        .clone()
}

fn find<'a>(jobs: &'a [Value], id: &str) -> &'a Value {
    jobs.iter()
        .find(|j| j["job_id"] == id)
        .unwrap_or_else(|| panic!("job {id} not listed in {jobs:?}"))
}

async fn output_and_tail(s: &Server, id: &str) -> (String, String) {
    let out = s.output(id).await;
    let tail = s
        .ok("tail_job_output", json!({ "job_id": id, "lines": 2 }))
        .await;
    (out, tail["output"].as_str().expect("tail").to_owned())
}

#[tokio::test]
async fn a_restart_after_a_crash_keeps_every_job_and_its_output() {
    let state = tempfile::tempdir().expect("temp dir");
    let mut a = Server::start_in(state.path(), &[]).await;
    let (done, _) = a.exec("printf 'one\\ntwo\\nthree\\n'").await;
    let (failed, _) = a.exec("echo oops; exit 3").await;
    let (running, running_pid) = a.exec("echo started; sleep 1000").await;
    a.wait_done(&done).await;
    a.wait_done(&failed).await;
    a.wait_output(&running, "started").await;
    let before_done = output_and_tail(&a, &done).await;
    let before_failed = output_and_tail(&a, &failed).await;
    // The running job's last line is still on its screen: it reaches the disk once the job
    // has been quiet for a moment.
    let screen = job_dir(state.path(), &running).join("screen.json");
    wait_until("the running job's screen on disk", DEADLINE, || async {
        std::fs::read_to_string(&screen)
            .is_ok_and(|t| t.contains("started"))
            .then_some(())
    })
    .await;

    a.crash().await;
    // Its terminal died with the server: so did the job.
    wait_no_processes(running_pid, DEADLINE).await;

    let b = Server::start_in(state.path(), &[]).await;
    let jobs = listed(&b).await;
    assert_eq!(jobs.len(), 3, "{jobs:?}");
    for j in &jobs {
        assert_eq!(j["this_server"], false, "{j}");
    }
    assert_eq!(find(&jobs, &done)["status"], "completed");
    assert_eq!(find(&jobs, &failed)["status"], "failed");
    assert_eq!(find(&jobs, &failed)["exit_code"], 3);
    let st = b.status(&running).await;
    assert_eq!(st["status"], "killed", "{st}");
    assert_eq!(st["reason"], "server stopped", "{st}");
    assert!(st["finished"].is_string(), "{st}");
    assert_eq!(output_and_tail(&b, &done).await, before_done);
    assert_eq!(output_and_tail(&b, &failed).await, before_failed);
    assert_eq!(b.output(&running).await, "started");
    let screen = b.ok("get_job_screen", json!({ "job_id": done })).await;
    assert_eq!(screen["rows"][0], "one", "{screen}");

    // The new server's own jobs are marked as its own, and listed first.
    let (mine, _) = b.exec("true").await;
    let jobs = listed(&b).await;
    assert_eq!(jobs[0]["job_id"], mine.as_str());
    assert_eq!(jobs[0]["this_server"], true);
    // Earlier jobs cannot be controlled, only read.
    let e = b
        .tool_error(
            "interact_with_job",
            json!({ "job_id": failed, "input": "x" }),
        )
        .await;
    assert!(e.contains("not running"), "{e}");
    let k = b.ok("kill_job", json!({ "job_id": running })).await;
    assert_eq!(k["status"], "already_terminated");
}

#[tokio::test]
async fn records_survive_a_crash_at_any_moment() {
    let state = tempfile::tempdir().expect("temp dir");
    for round in 0..6u64 {
        let mut s = Server::start_in(state.path(), &[]).await;
        for i in 0..4 {
            s.exec(&format!("sleep 0.0{}; exit {}", (round + i) % 10, i % 2))
                .await;
        }
        // Crash while some of them are changing status.
        if round % 2 == 0 {
            s.exec("true").await;
        }
        s.crash().await;
        for path in walk(state.path()) {
            if path.file_name().is_some_and(|n| n == "meta.json") {
                let text = std::fs::read_to_string(&path).expect("read record");
                let v: Value = serde_json::from_str(&text)
                    .unwrap_or_else(|e| panic!("torn record {}: {e}\n{text}", path.display()));
                assert!(v["status"].is_string(), "{v}");
            }
        }
    }
    let s = Server::start_in(state.path(), &[]).await;
    let jobs = listed(&s).await;
    assert_eq!(jobs.len(), 6 * 4 + 3, "every job is listed");
    for j in &jobs {
        assert_ne!(j["status"], "running", "{j}");
    }
}

#[tokio::test]
async fn two_servers_share_a_directory_and_forget_only_their_own_jobs() {
    let state = tempfile::tempdir().expect("temp dir");
    let a = Server::start_in(state.path(), &[]).await;
    let b = Server::start_in(state.path(), &[]).await;
    let (ja, _) = a.exec("echo from-a; sleep 1000").await;
    let (jb, _) = b.exec("echo from-b; sleep 1000").await;
    a.wait_output(&ja, "from-a").await;
    b.wait_output(&jb, "from-b").await;

    for (s, own, other) in [(&a, &ja, &jb), (&b, &jb, &ja)] {
        let jobs = listed(s).await;
        assert_eq!(find(&jobs, own)["this_server"], true);
        let theirs = find(&jobs, other);
        assert_eq!(theirs["this_server"], false);
        assert_eq!(
            theirs["status"], "running",
            "another live server's job runs"
        );
        // Only its own server forgets it (control goes through that server: control.rs).
        let e = s.tool_error("remove_job", json!({ "job_id": other })).await;
        assert!(e.contains("another ptyjobs server"), "remove_job: {e}");
    }
    // Reading the other's job works (its output reaches the disk once it is quiet).
    wait_until("b's output read by a", DEADLINE, || async {
        a.output(&jb).await.contains("from-b").then_some(())
    })
    .await;
    // Each still controls its own.
    let k = a.ok("kill_job", json!({ "job_id": ja })).await;
    assert_eq!(k["status"], "killed");
    let st = wait_until("a's kill seen by b", DEADLINE, || async {
        let st = b.status(&ja).await;
        (st["status"] != "running").then_some(st)
    })
    .await;
    assert_eq!(st["status"], "killed");
    assert_eq!(st["reason"], "killed by request");
}

#[tokio::test]
async fn old_lines_are_paged_from_disk_after_memory_let_them_go() {
    let s = Server::start(&["--transcript-bytes", "4096"]).await;
    let (id, _) = s.exec("seq 1 5000").await;
    s.wait_done(&id).await;
    let head = s.ok("get_job_output", json!({ "job_id": id })).await;
    assert!(
        head["dropped_lines"].as_u64().expect("dropped") > 4000,
        "{head}"
    );
    let r = s
        .ok(
            "get_job_output",
            json!({ "job_id": id, "offset": 0, "limit": 3 }),
        )
        .await;
    assert_eq!(r["output"], "1\n2\n3", "{r}");
    assert_eq!(r["next_offset"], 3);
    // A page that runs from disk into memory is seamless.
    let first_held = head["first_line"].as_u64().expect("first line");
    let r = s
        .ok(
            "get_job_output",
            json!({ "job_id": id, "offset": first_held - 2, "limit": 4 }),
        )
        .await;
    let want: Vec<String> = (first_held - 1..first_held + 3)
        .map(|n| n.to_string())
        .collect();
    assert_eq!(r["output"], want.join("\n"), "{r}");
}

#[tokio::test]
async fn the_disk_log_stops_at_its_cap_with_a_marker() {
    let state = tempfile::tempdir().expect("temp dir");
    let mut a = Server::start_in(state.path(), &["--job-log-mb", "1"]).await;
    let (id, _) = a.exec("seq 1 400000").await; // ~2.7 MB
    a.wait_done(&id).await;
    a.crash().await;
    let log = job_dir(state.path(), &id).join("output.log");
    let size = std::fs::metadata(&log).expect("log").len();
    assert!(size <= (1 << 20) + 200, "log of {size} bytes over its cap");
    let b = Server::start_in(state.path(), &[]).await;
    let tail = b
        .ok("tail_job_output", json!({ "job_id": id, "lines": 2 }))
        .await;
    let text = tail["output"].as_str().expect("tail");
    assert!(text.ends_with("later lines were not saved]"), "{text}");
    let first = b
        .ok(
            "get_job_output",
            json!({ "job_id": id, "offset": 0, "limit": 2 }),
        )
        .await;
    assert_eq!(first["output"], "1\n2");
}

#[tokio::test]
async fn retention_prunes_the_oldest_finished_jobs() {
    let state = tempfile::tempdir().expect("temp dir");
    let a = Server::start_in(state.path(), &[]).await;
    let mut ids = Vec::new();
    for i in 0..4 {
        let (id, _) = a.exec(&format!("echo job{i}")).await;
        a.wait_done(&id).await;
        ids.push(id);
    }
    drop(a);
    // Pruning runs as the server starts, beside its first requests.
    let b = Server::start_in(state.path(), &["--keep-jobs", "2"]).await;
    // A pruned job leaves the listing when its record goes, and its directory a moment
    // later (the upkeep removes it in slices): wait for both.
    let jobs = wait_until("the prune at start", DEADLINE, || async {
        let jobs = listed(&b).await;
        let gone =
            !job_dir(state.path(), &ids[0]).exists() && !job_dir(state.path(), &ids[1]).exists();
        (jobs.len() == 2 && gone).then_some(jobs)
    })
    .await;
    let kept: Vec<&str> = jobs.iter().filter_map(|j| j["job_id"].as_str()).collect();
    assert_eq!(kept, [ids[3].as_str(), ids[2].as_str()], "newest two kept");
    drop(b);
    let c = Server::start_in(state.path(), &["--keep-days", "0"]).await;
    wait_until(
        "everything finished pruned as too old",
        DEADLINE,
        || async { listed(&c).await.is_empty().then_some(()) },
    )
    .await;
}

#[tokio::test]
async fn remove_job_deletes_a_finished_job_and_refuses_a_running_one() {
    let state = tempfile::tempdir().expect("temp dir");
    let s = Server::start_in(state.path(), &[]).await;
    let (done, _) = s.exec("echo bye").await;
    let (running, _) = s.exec("sleep 1000").await;
    s.wait_done(&done).await;
    let r = s.ok("remove_job", json!({ "job_id": done })).await;
    assert_eq!(r["removed"], true);
    assert!(!job_dir(state.path(), &done).exists());
    let e = s
        .tool_error("get_job_status", json!({ "job_id": done }))
        .await;
    assert!(e.contains("no job"), "{e}");
    let e = s
        .tool_error("remove_job", json!({ "job_id": running }))
        .await;
    assert!(e.contains("still running"), "{e}");
}

#[tokio::test]
async fn records_are_private_and_hold_no_environment_values() {
    let state = tempfile::tempdir().expect("temp dir");
    let dir = state.path().join("nested/state");
    let s = Server::start_in(&dir, &[]).await;
    let (id, _) = s
        .exec_with(json!({
            "command": "echo visible",
            "env": { "API_TOKEN": "s3cr3t-value-31337" },
        }))
        .await;
    s.wait_done(&id).await;
    let mode = |p: &Path| std::fs::metadata(p).expect("stat").permissions().mode() & 0o777;
    assert_eq!(mode(&dir), 0o700);
    let files = walk(&dir);
    assert!(files.iter().any(|p| p.ends_with("output.log")));
    for path in &files {
        let want = if path.is_dir() { 0o700 } else { 0o600 };
        assert_eq!(mode(path), want, "{}", path.display());
        if path.is_file() {
            let bytes = std::fs::read(path).expect("read");
            let text = String::from_utf8_lossy(&bytes);
            assert!(
                !text.contains("s3cr3t-value-31337"),
                "secret in {}",
                path.display()
            );
        }
    }
    let meta = std::fs::read_to_string(job_dir(&dir, &id).join("meta.json")).expect("meta");
    assert!(
        meta.contains("API_TOKEN"),
        "the variable's name is kept: {meta}"
    );
}

#[tokio::test]
async fn no_persist_writes_nothing_and_the_default_dir_follows_xdg() {
    let home = tempfile::tempdir().expect("temp dir");
    let xdg = home.path().join("xdg-state");
    let env = [("XDG_STATE_HOME", xdg.as_path()), ("HOME", home.path())];
    let s = Server::start_env(&["--no-persist"], &env).await;
    let (id, _) = s.exec("echo kept in memory").await;
    s.wait_done(&id).await;
    assert_eq!(s.output(&id).await, "kept in memory");
    drop(s);
    assert!(
        walk(home.path()).is_empty(),
        "--no-persist wrote {:?}",
        walk(home.path())
    );

    let s = Server::start_env(&[], &env).await;
    let (id, _) = s.exec("echo kept on disk").await;
    s.wait_done(&id).await;
    let log = xdg.join("ptyjobs/jobs").join(&id).join("output.log");
    assert_eq!(std::fs::read_to_string(log).expect("log"), "kept on disk\n");
}

#[tokio::test]
async fn a_corrupt_record_is_skipped_with_a_warning() {
    let state = tempfile::tempdir().expect("temp dir");
    let torn = state
        .path()
        .join("jobs/0b0b0b0b-0000-4000-8000-000000000000");
    std::fs::create_dir_all(&torn).expect("mkdir");
    std::fs::write(torn.join("meta.json"), "{\"format\": 1, \"id\": ").expect("write");
    let dir = state.path().to_str().expect("utf-8");
    let s = Server::start_logged(&["--state-dir", dir], "warn").await;
    assert!(listed(&s).await.is_empty());
    let (id, _) = s.exec("echo still serving").await;
    s.wait_done(&id).await;
    assert_eq!(listed(&s).await.len(), 1);
    assert!(s.log().contains("skipping job 0b0b0b0b"), "{}", s.log());
}

#[tokio::test]
async fn a_job_that_outlived_its_crashed_server_is_ended_by_the_next_one() {
    let state = tempfile::tempdir().expect("temp dir");
    let mut a = Server::start_in(state.path(), &[]).await;
    // Ignores the hang-up, so it survives its server's death.
    let (id, pid) = a.exec("trap '' HUP; echo armed; sleep 1000").await;
    a.wait_output(&id, "armed").await;
    a.crash().await;
    assert!(
        !crate::util::session_processes(pid).is_empty(),
        "the job should have outlived the crash for this test to mean anything"
    );
    let b = Server::start_in(state.path(), &[]).await;
    wait_no_processes(pid, DEADLINE).await;
    let st = b.status(&id).await;
    assert_eq!(st["status"], "killed");
    assert_eq!(st["reason"], "server stopped");
}

#[tokio::test]
async fn an_unusable_state_dir_leaves_the_jobs_in_memory_with_a_warning() {
    let state = tempfile::tempdir().expect("temp dir");
    let blocked = state.path().join("a-file");
    std::fs::write(&blocked, "not a directory").expect("write");
    let log = jobs_stay_in_memory(blocked.to_str().expect("utf-8")).await;
    assert!(log.contains("a-file"), "{log}");
}

/// A job that prints 300 lines of 999 characters on a 1000×1000 screen, then fails with exit code 3: its final record (which
/// holds the final screen) is large, so writing it takes a while.
fn big_final_screen() -> Value {
    json!({
        "command": "head -c 299700 /dev/zero | tr '\\0' x | fold -w 999; exit 3",
        "cols": 1000,
        "rows": 1000,
    })
}

#[tokio::test]
async fn a_final_status_once_answered_survives_a_crash_right_after() {
    let state = tempfile::tempdir().expect("temp dir");
    for round in 0..20 {
        let mut a = Server::start_in(state.path(), &[]).await;
        let (id, _) = a.exec_with(big_final_screen()).await;
        // Ask as fast as possible, so the first final answer is seen as early as it can be.
        let deadline = std::time::Instant::now() + DEADLINE * 3;
        let seen = loop {
            let st = a.status(&id).await;
            if st["status"] != "running" {
                break st;
            }
            assert!(std::time::Instant::now() < deadline, "job {id} never ended");
        };
        a.crash().await;
        assert_eq!(
            (&seen["status"], &seen["exit_code"]),
            (&json!("failed"), &json!(3))
        );
        let b = Server::start_in(state.path(), &[]).await;
        let after = b.status(&id).await;
        assert_eq!(
            (&after["status"], &after["exit_code"], &after["reason"]),
            (&seen["status"], &seen["exit_code"], &seen["reason"]),
            "round {round}: answered {seen}, after the crash {after}"
        );
    }
}

#[tokio::test]
async fn remove_job_racing_the_jobs_end_never_resurrects_its_record() {
    let state = tempfile::tempdir().expect("temp dir");
    let s = Server::start_in(state.path(), &[]).await;
    for round in 0..15 {
        let (id, _) = s.exec_with(big_final_screen()).await;
        // Remove it the moment it is allowed: right as the job ends.
        let deadline = std::time::Instant::now() + DEADLINE * 3;
        loop {
            let r = s
                .call_raw("remove_job", json!({ "job_id": id }))
                .await
                .expect("remove_job answers");
            let text = crate::util::text(&r);
            if r.is_error != Some(true) {
                break;
            }
            assert!(text.contains("still running"), "round {round}: {text}");
            assert!(std::time::Instant::now() < deadline, "job {id} never ended");
        }
        // Another job start to end: whatever the first one's end still had to do is done.
        let (other, _) = s.exec("true").await;
        s.wait_done(&other).await;
        assert!(
            !job_dir(state.path(), &id).exists(),
            "round {round}: the removed job's directory came back: {:?}",
            walk(&job_dir(state.path(), &id))
        );
        let e = s
            .tool_error("get_job_status", json!({ "job_id": id }))
            .await;
        assert!(e.contains("no job"), "round {round}: {e}");
    }
}
