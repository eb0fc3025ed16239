//! The server's own life: how it ends, what it leaves behind (nothing), what it writes to stdout.

use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use rmcp::ServiceExt;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::util::{
    BIN, DEADLINE, Server, alive, session_processes, signal, wait_no_processes, wait_until,
};

/// Starts two jobs, one of which ignores SIGTERM, and waits until both are up.
async fn start_jobs(s: &Server) -> [u32; 2] {
    let (_, a) = s.exec("sleep 1000 & sleep 1000").await;
    let (_, b) = s.exec(r#"trap "" TERM; sleep 1000"#).await;
    for sid in [a, b] {
        wait_until("job processes", DEADLINE, || async {
            (session_processes(sid).len() >= 2).then_some(())
        })
        .await;
    }
    [a, b]
}

#[tokio::test]
async fn stdin_eof_kills_every_job_and_exits_within_the_grace() {
    let mut s = Server::start(&["--kill-grace-ms", "500"]).await;
    let jobs = start_jobs(&s).await;
    // rmcp's client closes stdin, waits up to 3 s, and only then sends SIGTERM: an exit
    // well under 3 s is the server's own doing.
    let took = s.close().await;
    assert!(
        took < Duration::from_millis(2500),
        "exit took {took:?}, grace 500 ms"
    );
    assert!(!alive(s.pid));
    assert_no_job_survives(&jobs);
}

#[tokio::test]
async fn sigterm_kills_every_job_and_exits_within_the_grace() {
    let s = Server::start(&["--kill-grace-ms", "500"]).await;
    let jobs = start_jobs(&s).await;
    let t = Instant::now();
    signal(s.pid, libc::SIGTERM);
    wait_until("the server to exit", Duration::from_secs(5), || async {
        (!alive(s.pid)).then_some(())
    })
    .await;
    assert!(
        t.elapsed() < Duration::from_millis(2500),
        "exit took {:?}",
        t.elapsed()
    );
    assert_no_job_survives(&jobs);
}

#[tokio::test]
async fn a_sigkilled_server_takes_its_jobs_with_it() {
    let s = Server::start(&[]).await;
    let jobs = start_jobs(&s).await;
    signal(s.pid, libc::SIGKILL);
    for sid in jobs {
        wait_no_processes(sid, Duration::from_secs(5)).await;
    }
}

/// SIGKILLs the raw-stdout test's server however the test ends.
struct KillGuard(u32);

impl Drop for KillGuard {
    fn drop(&mut self) {
        signal(self.0, libc::SIGKILL);
    }
}

/// Every line the server writes to stdout is JSON, even with debug logging on and a job
/// writing to its terminal: the client's stdio is teed through a line checker.
#[tokio::test]
async fn stdout_carries_only_json_rpc() {
    let state = tempfile::tempdir().expect("temp state dir");
    let mut child = tokio::process::Command::new(BIN)
        .arg("--state-dir")
        .arg(state.path())
        .env("RUST_LOG", "debug")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn ptyjobs");
    let _guard = KillGuard(child.id().expect("pid"));
    let (stdin, stdout) = (
        child.stdin.take().expect("stdin"),
        child.stdout.take().expect("out"),
    );
    let (client_end, mut tee_end) = tokio::io::duplex(1 << 20);
    let (lines_seen, bad) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (seen, bad2) = (lines_seen.clone(), bad.clone());
    tokio::spawn(async move {
        let mut lines = BufReader::new(stdout).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            seen.fetch_add(1, Ordering::SeqCst);
            if serde_json::from_str::<serde_json::Value>(&line).is_err() {
                bad2.fetch_add(1, Ordering::SeqCst);
            }
            let _ = tee_end.write_all(format!("{line}\n").as_bytes()).await;
        }
    });
    let (read_half, _) = tokio::io::split(client_end);
    let client = ().serve((read_half, stdin)).await.expect("handshake");
    let args = json!({ "command": "echo to-the-terminal; echo to-stderr >&2" });
    let serde_json::Value::Object(args) = args else {
        unreachable!()
    };
    let r = client
        .call_tool(rmcp::model::CallToolRequestParams::new("execute_command").with_arguments(args))
        .await
        .expect("execute_command");
    let id = r.structured_content.expect("structured")["job_id"]
        .as_str()
        .expect("id")
        .to_owned();
    let serde_json::Value::Object(args) = json!({ "job_id": id }) else {
        unreachable!()
    };
    wait_until("the job to end", DEADLINE, || {
        let args = args.clone();
        let client = &client;
        async move {
            let r = client
                .call_tool(
                    rmcp::model::CallToolRequestParams::new("get_job_status").with_arguments(args),
                )
                .await
                .expect("status");
            (r.structured_content.expect("structured")["status"] != "running").then_some(())
        }
    })
    .await;
    let _ = client.cancel().await;
    let _ = tokio::time::timeout(DEADLINE, child.wait()).await;
    assert!(lines_seen.load(Ordering::SeqCst) >= 3);
    assert_eq!(bad.load(Ordering::SeqCst), 0, "non-JSON lines on stdout");
}

#[test]
fn version_help_and_bad_flags() {
    let run = |args: &[&str]| {
        std::process::Command::new(BIN)
            .args(args)
            .output()
            .expect("run")
    };
    let v = run(&["--version"]);
    assert!(v.status.success());
    assert_eq!(
        String::from_utf8_lossy(&v.stdout),
        format!("ptyjobs {}\n", env!("CARGO_PKG_VERSION"))
    );
    let h = run(&["--help"]);
    let help = String::from_utf8_lossy(&h.stdout);
    for flag in [
        "--max-jobs",
        "--max-finished",
        "--transcript-bytes",
        "--kill-grace-ms",
        "--cols",
        "--rows",
        "--shell",
        "--state-dir",
        "--no-persist",
        "PTYJOBS_STATE_DIR",
        "PTYJOBS_MAX_JOBS",
        "PTYJOBS_SHELL",
    ] {
        assert!(help.contains(flag), "--help lacks {flag}");
    }
    let bad = run(&["--cols", "0"]);
    assert!(!bad.status.success());
    assert!(bad.stdout.is_empty(), "errors go to stderr");
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--cols"));
}

/// Every process of every job in `jobs` (session ids) is gone.
fn assert_no_job_survives(jobs: &[u32]) {
    for &sid in jobs {
        assert_eq!(
            session_processes(sid),
            Vec::<u32>::new(),
            "job {sid} survived"
        );
    }
}
