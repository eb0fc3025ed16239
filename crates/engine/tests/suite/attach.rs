//! The attach socket's protocol, spoken by hand: hello, answer, screen, bytes both ways, and
//! the refusals.
#![cfg(unix)]

use std::time::Duration;

use crate::common::{manager_with, wait_for_output, wait_until};
use ptyjobs_engine::{AttachHello, AttachReply, JobManager, JobSpec, Signal, StoreConfig};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;

const DEADLINE: Duration = Duration::from_secs(10);

fn persisted(dir: &std::path::Path) -> JobManager {
    let dir = dir.to_owned();
    manager_with(|c| c.store = Some(StoreConfig::new(dir)))
}

/// Connects, sends `hello` as one line, and returns the answer and the stream after it.
async fn hello(path: &std::path::Path, line: &str) -> (AttachReply, BufReader<UnixStream>) {
    let mut s = UnixStream::connect(path).await.expect("connect");
    s.write_all(line.as_bytes()).await.expect("hello");
    let mut s = BufReader::new(s);
    let mut answer = String::new();
    tokio::time::timeout(DEADLINE, s.read_line(&mut answer))
        .await
        .expect("an answer in time")
        .expect("read the answer");
    (
        serde_json::from_str(&answer).unwrap_or_else(|e| panic!("{answer:?}: {e}")),
        s,
    )
}

/// A version 1 hello: raw keystrokes, the job keeps its size (version 2 is tested through the
/// real `ptyjobs attach` in the MCP crate's e2e tests).
fn hello_for(id: &str) -> String {
    let h = AttachHello {
        version: 1,
        job_id: id.to_owned(),
        cols: 80,
        rows: 24,
        restart: None,
        start: None,
        control: None,
        keep_open: false,
    };
    format!("{}\n", serde_json::to_string(&h).expect("json"))
}

/// Reads from `s` until `needle` has been seen; returns everything read.
async fn read_until(s: &mut BufReader<UnixStream>, seen: &mut Vec<u8>, needle: &str) {
    let mut buf = [0u8; 4096];
    let found = tokio::time::timeout(DEADLINE, async {
        while !String::from_utf8_lossy(seen).contains(needle) {
            let n = s.read(&mut buf).await.expect("read");
            assert!(
                n > 0,
                "closed before {needle:?}: {}",
                String::from_utf8_lossy(seen)
            );
            seen.extend_from_slice(&buf[..n]);
        }
    })
    .await;
    assert!(
        found.is_ok(),
        "{needle:?} never came: {}",
        String::from_utf8_lossy(seen)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn screen_then_live_bytes_and_keys_reach_the_job() {
    let dir = tempfile::tempdir().expect("tempdir");
    let m = persisted(dir.path());
    let guard = m.serve_attach().expect("serve");
    let job = m
        .execute(JobSpec::new(
            "printf 'before\\n'; read -p 'word? ' w; printf '\\033[32mgot %s\\033[0m\\n' \"$w\"; sleep 100",
        ))
        .expect("execute");
    wait_for_output(&m, job.id, "word?").await;
    let (answer, mut s) = hello(guard.path(), &hello_for(&job.id.to_string())).await;
    assert!(answer.ok, "{answer:?}");
    assert_eq!(answer.size, Some((120, 40)));
    let mut seen = Vec::new();
    read_until(&mut s, &mut seen, "word?").await;
    let first = String::from_utf8_lossy(&seen).into_owned();
    assert!(first.starts_with("\x1b[0m\x1b[H\x1b[2J"), "{first:?}");
    assert!(first.contains("before\r\nword?"), "{first:?}");
    s.get_mut().write_all(b"blue\r").await.expect("keys");
    // Live bytes are the job's own, escapes included.
    read_until(&mut s, &mut seen, "\x1b[32mgot blue").await;
    wait_for_output(&m, job.id, "got blue").await;
    // Closing is detaching: the job runs on.
    drop(s);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!m.status(job.id).expect("status").status.is_final());
    m.kill(job.id, Signal::TERM, None).await.expect("kill");
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_hellos_unknown_and_finished_jobs_are_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let m = persisted(dir.path());
    let guard = m.serve_attach().expect("serve");
    let path = guard.path().to_owned();
    let refused = |r: &AttachReply| !r.ok && r.error.is_some();

    let (r, _) = hello(&path, "not json\n").await;
    assert!(
        refused(&r) && r.error.as_deref().unwrap_or("").contains("bad hello"),
        "{r:?}"
    );
    let (r, _) = hello(
        &path,
        "{\"version\":99,\"job_id\":\"x\",\"cols\":1,\"rows\":1}\n",
    )
    .await;
    assert!(
        refused(&r) && r.error.as_deref().unwrap_or("").contains("version"),
        "{r:?}"
    );
    let (r, _) = hello(&path, &hello_for("0f3a9c1e-8b7d-4e2f-a1b2-c3d4e5f60718")).await;
    assert!(
        refused(&r) && r.error.as_deref().unwrap_or("").contains("no job"),
        "{r:?}"
    );
    let done = m.execute(JobSpec::new("true")).expect("execute");
    m.wait(done.id, Some(DEADLINE)).await.expect("wait");
    let (r, _) = hello(&path, &hello_for(&done.id.to_string())).await;
    assert!(
        refused(&r) && r.error.as_deref().unwrap_or("").contains("not running"),
        "{r:?}"
    );

    // The job ending while attached: its last bytes, then a line that says how, then the end.
    let job = m
        .execute(JobSpec::new("read x; echo last-words; exit 4"))
        .expect("execute");
    let (r, mut s) = hello(&path, &hello_for(&job.id.to_string())).await;
    assert!(r.ok, "{r:?}");
    s.get_mut().write_all(b"go\r").await.expect("keys");
    let mut rest = Vec::new();
    tokio::time::timeout(DEADLINE, s.read_to_end(&mut rest))
        .await
        .expect("the server closes")
        .expect("read");
    let rest = String::from_utf8_lossy(&rest);
    assert!(rest.contains("last-words"), "{rest}");
    assert!(rest.contains("ended: failed (exit code 4)]"), "{rest}");

    // Dropping the guard removes the socket.
    drop(guard);
    assert!(!path.exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn without_a_state_directory_there_is_no_socket() {
    let m = manager_with(|_| {});
    assert!(m.serve_attach().is_err());
}

/// A version 2 hello from a terminal of `cols` × `rows`.
fn hello_v2(id: &str, cols: u16, rows: u16) -> String {
    let h = AttachHello {
        version: 2,
        job_id: id.to_owned(),
        cols,
        rows,
        restart: None,
        start: None,
        control: None,
        keep_open: false,
    };
    format!("{}\n", serde_json::to_string(&h).expect("json"))
}

#[tokio::test(flavor = "multi_thread")]
async fn two_people_the_latest_size_wins_the_other_is_shown_the_screen_again_and_the_size_comes_back()
 {
    let dir = tempfile::tempdir().expect("tempdir");
    let m = persisted(dir.path());
    let guard = m.serve_attach().expect("serve");
    let job = m
        .execute(JobSpec::new("echo two-viewers; sleep 100"))
        .expect("execute");
    wait_for_output(&m, job.id, "two-viewers").await;
    let own = m.status(job.id).expect("status").size;
    let id = job.id.to_string();
    let (a, mut first) = hello(guard.path(), &hello_v2(&id, 100, 30)).await;
    assert_eq!(a.size, Some((100, 30)), "{a:?}");
    let mut seen_first = Vec::new();
    read_until(&mut first, &mut seen_first, "two-viewers").await;
    let (b, mut second) = hello(guard.path(), &hello_v2(&id, 90, 20)).await;
    assert_eq!(b.size, Some((90, 20)), "the latest person's size: {b:?}");
    // The first person is told: the job's screen again, at its new size.
    seen_first.clear();
    read_until(&mut first, &mut seen_first, "\x1b[2J").await;
    read_until(&mut first, &mut seen_first, "two-viewers").await;
    // The second resizes its window with a frame; the first is shown the screen again.
    second
        .get_mut()
        .write_all(&ptyjobs_engine::attach_resize_frame(132, 43))
        .await
        .expect("resize");
    let resized = wait_until(DEADLINE, || {
        m.status(job.id).expect("status").size == (132, 43)
    })
    .await;
    assert!(resized, "the job resized");
    seen_first.clear();
    read_until(&mut first, &mut seen_first, "\x1b[2J").await;
    // Both leave: the job has its own size back.
    drop(first);
    drop(second);
    let restored = wait_until(DEADLINE, || m.status(job.id).expect("status").size == own).await;
    assert!(restored, "the size restored");
    m.kill(job.id, Signal::TERM, None).await.expect("kill");
}
