//! Kept jobs' faults (issue 23): the server SIGKILLed under a fast producer, the keeper
//! SIGKILLed, a TTL ending under a wait, planted keeper files, starters racing. The helpers
//! (a state directory of its own, the CLI, records) are `keep.rs`'s.

use std::io::Read;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use serde_json::json;

use crate::keep::{State, alive, marked};
use crate::procs::kill;
use crate::util::{BIN, DEADLINE, session_processes, wait_until};

/// The server SIGKILLed while a kept job prints about 1 MB/s of numbered lines: every line
/// the producer wrote is in the job's log, in order.
#[tokio::test]
async fn no_line_is_lost_when_the_server_dies_under_a_fast_kept_producer() {
    const LINES: usize = 30_000;
    let state = State::new();
    let mut a = state.server().await;
    // 100-byte lines, 10,000 a second: ~1 MB/s for 3 s.
    let producer = format!(
        "python3 -c \"import sys,time\nt=time.time()\nfor i in range({LINES}):\n  \
         sys.stdout.write('%08d %s\\n' % (i, 'x'*91))\n  \
         if i % 100 == 99:\n    sys.stdout.flush(); d=t+(i+1)/10000-time.time()\n    \
         d>0 and time.sleep(d)\nsys.stdout.flush()\""
    );
    let r = a
        .ok(
            "execute_command",
            json!({ "command": producer, "keep": true }),
        )
        .await;
    let id = r["job_id"].as_str().expect("job_id").to_owned();
    a.wait_output(&id, "00001000 ").await;
    a.crash().await;
    let b = state.server().await;
    let deadline = Duration::from_secs(60);
    let done = wait_until("the producer to finish", deadline, || async {
        let s = b.status(&id).await;
        (s["status"] != "running").then_some(s)
    })
    .await;
    assert_eq!(done["status"], "completed", "{done}");
    let (code, out, err) = state.cli(&["logs", &id]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().filter(|l| !l.is_empty()).collect();
    assert_eq!(lines.len(), LINES, "every line, once");
    for (i, line) in lines.iter().enumerate() {
        assert!(
            line.starts_with(&format!("{i:08} ")) && line.len() == 100,
            "line {i} is {line:?}"
        );
    }
}

/// The keeper SIGKILLed: the job's tree ends (a process that ignores the hang-up is ended by
/// the next server), the record says why, and no process is left.
#[tokio::test]
async fn a_sigkilled_keeper_leaves_no_process_and_a_record_that_says_why() {
    let state = State::new();
    let a = state.server().await;
    let r = a
        .ok(
            "execute_command",
            json!({ "command": "trap '' HUP; sleep 1000 & sleep 1001; wait", "keep": true }),
        )
        .await;
    let id = r["job_id"].as_str().expect("job_id").to_owned();
    let pid = r["pid"].as_u64().expect("pid") as u32;
    wait_until("the job's two sleeps", DEADLINE, || async {
        (session_processes(pid).len() >= 3).then_some(())
    })
    .await;
    let keeper = state.owner_pid(&id);
    assert_ne!(keeper, a.pid);
    kill(keeper, libc::SIGKILL);
    wait_until("the keeper to die", DEADLINE, || async {
        (!alive(keeper)).then_some(())
    })
    .await;
    // A new server takes over the dead keeper's records: what ignored the hang-up is ended.
    let b = state.server().await;
    let s = wait_until("the record to say the job ended", DEADLINE, || async {
        let s = b.status(&id).await;
        (s["status"] != "running").then_some(s)
    })
    .await;
    assert_eq!(s["status"], "killed", "{s}");
    assert_eq!(s["reason"], "server stopped", "{s}");
    wait_until("no process of the job left", DEADLINE, || async {
        (session_processes(pid).is_empty() && marked(&id).is_empty()).then_some(())
    })
    .await;
    drop(a);
}

/// A kept job whose TTL ends while a server waits on it: the wait answers that the job ended,
/// killed, with the TTL's reason.
#[tokio::test]
async fn a_wait_on_a_kept_job_answers_when_its_ttl_ends_it() {
    let state = State::new();
    let a = state.server().await;
    let r = a
        .ok(
            "execute_command",
            json!({ "command": "sleep 1000", "keep": true, "keep_ttl_secs": 2 }),
        )
        .await;
    let id = r["job_id"].as_str().expect("job_id").to_owned();
    let w = a
        .ok("wait_for_job", json!({ "job_id": id, "timeout_secs": 30 }))
        .await;
    assert_eq!(w["status"], "killed", "{w}");
    let s = a.status(&id).await;
    assert_eq!(s["status"], "killed", "{s}");
    assert_eq!(s["reason"], "keep_ttl ended", "{s}");
}

/// A planted keeper.lock (a link) and a planted file or link where the keeper's socket should
/// be are refused, never followed.
#[tokio::test]
async fn planted_keeper_files_are_refused_and_never_followed() {
    let state = State::new();
    let a = state.server().await;
    let outside = tempfile::tempdir().expect("outside dir");
    let target = outside.path().join("precious");
    std::fs::write(&target, "precious").expect("write");
    let lock = state.path().join("keeper.lock");
    std::os::unix::fs::symlink(&target, &lock).expect("plant a link");
    let e = a
        .tool_error(
            "execute_command",
            json!({ "command": "sleep 1", "keep": true }),
        )
        .await;
    assert!(e.contains("keeper.lock"), "{e}");
    assert_eq!(std::fs::read_to_string(&target).expect("read"), "precious");
    std::fs::remove_file(&lock).expect("unplant");

    // A keeper.lock held by someone that names an instance whose socket path holds a link
    // to a listening socket elsewhere (and then a plain file).
    let instance = "abcdef0123456789";
    std::fs::write(&lock, instance).expect("write the lock");
    let mut holder = Command::new("python3")
        .arg("-c")
        .arg(
            "import fcntl,sys\nf=open(sys.argv[1])\nfcntl.flock(f,fcntl.LOCK_EX)\n\
             print('held',flush=True)\nsys.stdin.read()",
        )
        .arg(&lock)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("lock holder");
    let mut held = [0u8; 5];
    holder
        .stdout
        .as_mut()
        .expect("stdout")
        .read_exact(&mut held)
        .expect("the lock is held");
    let elsewhere = outside.path().join("listener.sock");
    let listener = std::os::unix::net::UnixListener::bind(&elsewhere).expect("bind");
    listener.set_nonblocking(true).expect("nonblocking");
    let sock_dir = state.path().join("sock");
    std::fs::create_dir_all(&sock_dir).expect("sock dir");
    std::fs::set_permissions(
        &sock_dir,
        std::os::unix::fs::PermissionsExt::from_mode(0o700),
    )
    .expect("chmod");
    let at: PathBuf = sock_dir.join(format!("{instance}.sock"));
    std::os::unix::fs::symlink(&elsewhere, &at).expect("plant a socket link");
    let e = a
        .tool_error(
            "execute_command",
            json!({ "command": "sleep 1", "keep": true }),
        )
        .await;
    assert!(e.contains("refused"), "{e}");
    assert!(
        listener.accept().is_err(),
        "nothing connected through the link"
    );
    std::fs::remove_file(&at).expect("unplant");
    std::fs::write(&at, "x").expect("plant a file");
    let e = a
        .tool_error(
            "execute_command",
            json!({ "command": "sleep 1", "keep": true }),
        )
        .await;
    assert!(e.contains("refused"), "{e}");
    let _ = holder.kill();
    let _ = holder.wait();
}

/// Several starters at once leave one keeper, which runs every job.
#[tokio::test]
async fn starters_racing_leave_one_keeper() {
    let state = State::new();
    let dir = state.path().to_str().expect("utf-8").to_owned();
    let runs: Vec<_> = (0..4)
        .map(|i| {
            Command::new(BIN)
                .args(["--state-dir", &dir, "run", "--keep", "--", "sleep"])
                .arg(format!("{}", 1000 + i))
                .env("PTYJOBS_KEEPER_IDLE_MS", "1000")
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("ptyjobs run")
        })
        .collect();
    for run in runs {
        let out = run.wait_with_output().expect("run ends");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let owners: std::collections::BTreeSet<String> = state
        .records()
        .iter()
        .map(|r| r["server"]["instance"].as_str().unwrap_or("?").to_owned())
        .collect();
    assert_eq!(state.records().len(), 4);
    assert_eq!(owners.len(), 1, "one keeper: {owners:?}");
}
