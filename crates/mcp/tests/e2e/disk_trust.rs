//! What the server trusts on disk, through the real binary: a state directory another user
//! could write to is refused (jobs stay in memory, the reason on stderr), a huge read of a
//! 100 MB log costs its byte budget and not the log, and searches over such a log run off the
//! async workers (other calls are answered meanwhile).

use std::io::{BufWriter, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use rmcp::model::{ClientRequest, PingRequest};
use serde_json::json;

use crate::util::{Server, jobs_stay_in_memory};

/// `VmHWM` (peak resident set) or `VmRSS` of `pid`, in KiB.
fn vm_kib(pid: u32, field: &str) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("read status");
    s.lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("a memory field")
}

async fn refused_with(state: &Path, reason: &str) {
    let log = jobs_stay_in_memory(state.to_str().expect("utf-8")).await;
    assert!(log.contains(reason), "the warning names the reason: {log}");
    assert!(
        !state.join("jobs").exists(),
        "nothing was written in a refused directory"
    );
}

#[tokio::test]
async fn a_state_dir_others_can_write_to_is_refused_and_jobs_stay_in_memory() {
    let root = tempfile::tempdir().expect("temp dir");
    let state = root.path().join("state");
    std::fs::create_dir(&state).expect("mkdir");
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o777)).expect("chmod");
    refused_with(&state, "writable by group or others (mode 0777)").await;
}

#[tokio::test]
async fn a_state_dir_of_another_user_is_refused_and_jobs_stay_in_memory() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: giving a directory to another user needs root");
        return;
    }
    let root = tempfile::tempdir().expect("temp dir");
    let state = root.path().join("state");
    std::fs::create_dir(&state).expect("mkdir");
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o700)).expect("chmod");
    std::os::unix::fs::chown(&state, Some(65534), Some(65534)).expect("chown");
    refused_with(&state, "owned by uid 65534").await;
}

/// Lines of the big log: ~100 bytes each, a million of them.
const BIG_LINES: u64 = 1_000_000;

fn big_line(i: u64) -> String {
    format!("line {i:08} {}", "x".repeat(86))
}

/// A state directory holding one finished job whose disk log is ~100 MB; returns its id.
async fn big_log(state: &Path) -> String {
    let mut a = Server::start_in(state, &[]).await;
    let (id, _) = a.exec("true").await;
    a.wait_done(&id).await;
    a.close().await;
    let log = state.join("jobs").join(&id).join("output.log");
    let mut w = BufWriter::new(std::fs::File::create(&log).expect("log"));
    for i in 0..BIG_LINES {
        writeln!(w, "{}", big_line(i)).expect("write");
    }
    w.flush().expect("flush");
    id
}

#[tokio::test]
async fn a_huge_limit_on_a_100_mb_log_reads_the_budget_not_the_log() {
    let state = tempfile::tempdir().expect("temp dir");
    let id = big_log(state.path()).await;
    let s = Server::start_in(state.path(), &[]).await;
    // A first small read indexes the log (a streaming scan).
    let first = s
        .ok(
            "get_job_output",
            json!({ "job_id": id, "offset": 0, "limit": 2 }),
        )
        .await;
    assert_eq!(first["output"], format!("{}\n{}", big_line(0), big_line(1)));
    assert_eq!(first["total_lines"], BIG_LINES);
    let before = vm_kib(s.pid, "VmHWM:");
    for max_bytes in [None, Some(10_000)] {
        let mut args = json!({ "job_id": id, "offset": 0, "limit": 1_000_000_000_000_000_i64 });
        if let Some(m) = max_bytes {
            args["max_bytes"] = json!(m);
        }
        let r = s.ok("get_job_output", args).await;
        let out = r["output"].as_str().expect("output");
        assert!(
            out.len() <= max_bytes.unwrap_or(65_536),
            "{} bytes",
            out.len()
        );
        assert!(out.starts_with(&big_line(0)), "the head is kept");
        assert!(out.ends_with(&big_line(BIG_LINES - 1)), "the tail is kept");
        assert_eq!(r["truncated"], true);
        assert_eq!(
            r["next_offset"], BIG_LINES,
            "the read covered the whole range"
        );
        let omitted = r["omitted_lines"].as_u64().expect("omitted_lines");
        let kept = out.lines().filter(|l| l.starts_with("line ")).count() as u64;
        assert_eq!(kept + omitted, BIG_LINES, "{r}");
        let from = r["omitted_from"].as_u64().expect("omitted_from");
        let gap = s
            .ok(
                "get_job_output",
                json!({ "job_id": id, "offset": from, "limit": 1 }),
            )
            .await;
        assert_eq!(
            gap["output"],
            big_line(from),
            "omitted_from names the first line left out"
        );
    }
    let tail = s
        .ok(
            "tail_job_output",
            json!({ "job_id": id, "lines": 1000, "max_bytes": 2000 }),
        )
        .await;
    assert!(tail["output"].as_str().expect("tail").len() <= 2000);
    assert!(
        tail["output"]
            .as_str()
            .expect("tail")
            .ends_with(&big_line(BIG_LINES - 1))
    );
    let grown_mb = vm_kib(s.pid, "VmHWM:").saturating_sub(before) / 1024;
    eprintln!(
        "peak RSS grew by {grown_mb} MB over the huge reads (VmRSS now {} MB)",
        vm_kib(s.pid, "VmRSS:") / 1024
    );
    assert!(
        grown_mb < 50,
        "the server's peak memory grew by {grown_mb} MB"
    );
}

#[tokio::test]
async fn searches_over_a_100_mb_log_do_not_delay_other_calls() {
    let state = tempfile::tempdir().expect("temp dir");
    let id = big_log(state.path()).await;
    let s = Server::start_in(state.path(), &[]).await;
    let ping = || async {
        let t = Instant::now();
        s.client()
            .send_request(ClientRequest::PingRequest(PingRequest {
                method: Default::default(),
                extensions: Default::default(),
            }))
            .await
            .expect("ping");
        t.elapsed()
    };
    let mut unloaded = Duration::ZERO;
    for _ in 0..5 {
        unloaded = unloaded.max(ping().await);
    }
    let done = AtomicUsize::new(0);
    let start = Instant::now();
    let search = |pattern: &'static str| {
        let (s, id, done) = (&s, id.clone(), &done);
        async move {
            let r = s
                .ok(
                    "search_job_output",
                    json!({ "job_id": id, "pattern": pattern, "max_matches": 3 }),
                )
                .await;
            done.fetch_add(1, Ordering::SeqCst);
            (r, start.elapsed())
        }
    };
    // Pings while the searches run: how long each took, and when it was answered.
    let probe = async {
        let mut pings = Vec::new();
        while done.load(Ordering::SeqCst) < 2 {
            pings.push((ping().await, start.elapsed()));
            // Paced, not a synchronisation: a tight loop of pings would take the CPU from
            // the searches it measures.
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        pings
    };
    let ((a, ta), (b, tb), pings) =
        tokio::join!(search("line 0099999[0-9] "), search("NO SUCH LINE"), probe);
    assert_eq!(a["total_matches"], 10, "{a}");
    assert_eq!(b["total_matches"], 0, "{b}");
    let both_running = ta.min(tb);
    let during: Vec<Duration> = pings
        .iter()
        .filter(|(_, at)| *at < both_running)
        .map(|(took, _)| *took)
        .collect();
    let worst = pings
        .iter()
        .map(|(took, _)| *took)
        .max()
        .unwrap_or_default();
    eprintln!(
        "searches took {ta:?} and {tb:?}; {} pings answered while both ran, {} in all, the \
         slowest {worst:?} (unloaded {unloaded:?})",
        during.len(),
        pings.len()
    );
    // Searches held on the async workers stall every call until one of them ends: no ping is
    // answered while both run, and the worst lasts about as long as the shorter search. Off
    // the workers, a ping waits only for the scheduler (a loaded machine's hiccups included).
    assert!(
        during.len() >= 5,
        "only {} pings were answered in the {both_running:?} both searches ran",
        during.len()
    );
    let bound = (Duration::from_millis(300) + unloaded * 5).max(both_running / 2);
    assert!(
        worst < bound,
        "a ping took {worst:?} beside two searches of {ta:?} and {tb:?} (unloaded {unloaded:?})"
    );
}
