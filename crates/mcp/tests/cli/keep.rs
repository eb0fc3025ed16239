//! `ptyjobs run --keep`, `ptyjobs services --start` and `ptyjobs kill --kept`: kept jobs
//! started from a terminal outlive the command that started them and are found by name.

use serde_json::Value;

use crate::harness::{cli, session_processes, wait_until};

/// A state directory whose kept jobs are killed when it is dropped (also when a test fails).
struct State(tempfile::TempDir);

impl State {
    fn new() -> Self {
        Self(tempfile::tempdir().expect("temp state dir"))
    }

    fn cli(&self, args: &[&str]) -> crate::harness::Run {
        cli(self.0.path(), args)
    }

    fn status(&self, job: &str) -> Value {
        let r = self.cli(&["status", "--json", job]);
        assert_eq!(r.code, 0, "{r:?}");
        serde_json::from_str(&r.stdout).expect("status JSON")
    }
}

impl Drop for State {
    fn drop(&mut self) {
        let _ = self.cli(&["kill", "--kept", "--grace-ms", "200"]);
    }
}

#[test]
fn run_keep_starts_a_job_that_outlives_the_cli_and_is_found_by_name() {
    let s = State::new();
    let r = s.cli(&["run", "--keep", "--name", "nap", "--", "sleep", "1000"]);
    assert_eq!(r.code, 0, "{r:?}");
    let id = r.stdout.trim().to_owned();
    assert_eq!(id.len(), 36, "the id: {r:?}");
    // The CLI has exited; its job runs on, kept, found by its name.
    let st = s.status("nap");
    assert_eq!(st["id"], id.as_str(), "{st}");
    assert_eq!(st["status"], "running", "{st}");
    assert_eq!(st["kept"], true, "{st}");
    assert!(st["keep_until"].is_string(), "{st}");
    let pid = st["pid"].as_u64().expect("pid") as u32;
    assert!(!session_processes(pid).is_empty());
    let list = s.cli(&["list"]);
    assert!(list.stdout.contains("running (kept)"), "{list:?}");
    let text = s.cli(&["status", "nap"]);
    assert!(text.stdout.contains("kept:"), "{text:?}");
    // A second start under that name is refused; an ensure of it answers it.
    let again = s.cli(&["run", "--keep", "--name", "nap", "--", "sleep", "1000"]);
    assert_eq!(again.code, 1, "{again:?}");
    assert!(again.stderr.contains("nap"), "{again:?}");
    let ensured = s.cli(&[
        "run", "--keep", "--name", "nap", "--ensure", "--json", "--", "sleep", "1000",
    ]);
    assert_eq!(ensured.code, 0, "{ensured:?}");
    let job: Value = serde_json::from_str(&ensured.stdout).expect("job JSON");
    assert_eq!(job["id"], id.as_str(), "{job}");
    assert_eq!(job["kept"], true, "{job}");

    // kill --kept ends it through the kill path; prune then forgets it like any other.
    let k = s.cli(&["kill", "--kept"]);
    assert_eq!(k.code, 0, "{k:?}");
    assert!(k.stdout.contains(&format!("killed {id}")), "{k:?}");
    wait_until("the job's processes to go", || {
        session_processes(pid).is_empty().then_some(())
    });
    let st = wait_until("the record to say killed", || {
        let st = s.status(&id);
        (st["status"] == "killed").then_some(st)
    });
    assert_eq!(st["kept"], true, "{st}");
    let none = s.cli(&["kill", "--kept"]);
    assert!(none.stdout.contains("no kept job"), "{none:?}");
    let p = s.cli(&["--keep-jobs", "0", "prune"]);
    assert!(p.stdout.contains(&format!("removed {id}")), "{p:?}");
}

#[test]
fn run_without_keep_says_why() {
    let s = State::new();
    let r = s.cli(&["run", "--", "true"]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("--keep"), "{r:?}");
}

#[test]
fn services_start_keeps_the_service_and_an_ensure_finds_it_again() {
    let s = State::new();
    let project = tempfile::tempdir().expect("project");
    std::fs::write(project.path().join("Procfile"), "web: sleep 300\n").expect("Procfile");
    let at = project.path().to_str().expect("utf-8");
    let r = s.cli(&["services", "--dir", at, "--start", "web"]);
    assert_eq!(r.code, 0, "{r:?}");
    let id = r.stdout.trim().to_owned();
    let st = s.status("web");
    assert_eq!(st["id"], id.as_str(), "{st}");
    assert_eq!(st["status"], "running", "{st}");
    assert_eq!(st["kept"], true, "{st}");
    assert_eq!(st["command"], "sleep 300", "{st}");
    let again = s.cli(&["services", "--dir", at, "--start", "web"]);
    assert_eq!(again.stdout.trim(), id, "{again:?}");
    let unknown = s.cli(&["services", "--dir", at, "--start", "nope"]);
    assert_eq!(unknown.code, 1, "{unknown:?}");
    assert!(unknown.stderr.contains("nope"), "{unknown:?}");
}

/// `kill --kept` also ends what a SIGKILLed keeper left behind (a process that ignored the
/// hang-up), proven as the job's, and the record says the job was killed.
#[test]
fn kill_kept_ends_what_a_dead_keeper_left() {
    let s = State::new();
    let r = s.cli(&[
        "run",
        "--keep",
        "--name",
        "stubborn",
        "--",
        "trap '' HUP; sleep 1000 & sleep 1001; wait",
    ]);
    assert_eq!(r.code, 0, "{r:?}");
    let st = s.status("stubborn");
    let pid = st["pid"].as_u64().expect("pid") as u32;
    let keeper = st["server_pid"].as_u64().expect("server pid") as u32;
    wait_until("the job's two sleeps", || {
        (session_processes(pid).len() >= 3).then_some(())
    });
    crate::procs::kill(keeper, libc::SIGKILL);
    wait_until("the keeper to die", || {
        matches!(crate::procs::stat(keeper), None | Some(('Z' | 'X', _))).then_some(())
    });
    // The whole job ignored the hang-up: its record reads killed ("server stopped"), its
    // processes live on until something ends them.
    assert!(
        session_processes(pid).len() >= 3,
        "the job ignored the hang-up"
    );
    let k = s.cli(&["kill", "--kept", "--grace-ms", "500"]);
    assert_eq!(k.code, 0, "{k:?}");
    wait_until("nothing of the job left", || {
        session_processes(pid).is_empty().then_some(())
    });
    let st = s.status(r.stdout.trim());
    assert_eq!(st["status"], "killed", "{st}");
}

/// Starts that race a keeper's exit (it leaves as soon as it is idle here) are answered by a
/// new keeper: every one succeeds.
#[test]
fn starts_racing_the_keepers_exit_all_succeed() {
    let s = State::new();
    for i in 0..12 {
        let out = std::process::Command::new(crate::harness::BIN)
            .arg("--state-dir")
            .arg(s.0.path())
            .args(["run", "--keep", "--", "true"])
            .env("PTYJOBS_KEEPER_IDLE_MS", "0")
            .output()
            .expect("ptyjobs run");
        assert!(
            out.status.success(),
            "start {i}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        // Vary the moment of the next start against the keeper's looks (every 250 ms).
        std::thread::sleep(std::time::Duration::from_millis(40 * (i % 8)));
    }
}
