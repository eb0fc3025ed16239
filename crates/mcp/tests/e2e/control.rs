//! Control of another live server's job: two (or three) real `ptyjobs` servers on one state
//! directory; one starts jobs, another types into them, presses keys, resizes them, reads
//! their live screen, waits on them and kills them — each effect checked at the job's own
//! server. And the faults: what sits at the owner's socket path is not its socket, the owner
//! dies mid-wait, two servers control one job at once.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::util::{DEADLINE, Server, session_processes, wait_until};

/// The attach socket of the server that runs job `id` (from the job's record).
fn owner_socket(state: &Path, id: &str) -> PathBuf {
    let meta = std::fs::read_to_string(state.join("jobs").join(id).join("meta.json"))
        .expect("the job's record");
    let meta: Value = serde_json::from_str(&meta).expect("a JSON record");
    let instance = meta["server"]["instance"].as_str().expect("its server");
    ptyjobs_engine::attach_socket_path(state, instance)
}

/// Connections the server listening at `socket` has accepted and still holds: an accepted
/// Unix socket carries its listener's path in /proc/net/unix, in state 03 (connected).
fn held_connections(socket: &Path) -> usize {
    let path = socket.to_string_lossy();
    std::fs::read_to_string("/proc/net/unix")
        .unwrap_or_default()
        .lines()
        .filter(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            f.len() >= 8 && f[5] == "03" && f[7] == path
        })
        .count()
}

/// Waits until the owner at `socket` holds a request: a forwarded wait is under way there.
async fn request_under_way(socket: &Path) {
    wait_until("a request held at the owner's socket", DEADLINE, || async {
        (held_connections(socket) > 0).then_some(())
    })
    .await;
}

/// The numbers a job printed that are on `screen` (its rows).
fn numbers(screen: &Value) -> Vec<u64> {
    screen["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .filter_map(|r| r.as_str()?.trim().parse().ok())
        .collect()
}

#[tokio::test]
async fn another_server_types_presses_keys_resizes_and_sees_the_live_screen() {
    let state = tempfile::tempdir().expect("temp dir");
    let a = Server::start_in(state.path(), &[]).await;
    let b = Server::start_in(state.path(), &[]).await;
    let (repl, _) = a.exec("exec python3 -i -q").await;
    a.wait_output(&repl, ">>>").await;

    // Input: B types, the REPL (A's job) answers, and B gets the response as A computed it.
    let r = b
        .ok(
            "interact_with_job",
            json!({ "job_id": repl, "input": "print(6 * 7)" }),
        )
        .await;
    assert!(r["output"].as_str().unwrap().contains("42"), "{r}");
    assert_eq!(r["status"], "running");
    a.wait_output(&repl, "42").await;

    // Keys, encoded by the owner: a line typed, then Enter pressed.
    b.ok(
        "interact_with_job",
        json!({ "job_id": repl, "input": "print('k' + 'eys')", "raw": true, "keys": ["Enter"] }),
    )
    .await;
    a.wait_output(&repl, "\nkeys").await;

    // Resize: A's job gets the size (the program sees it), and both servers say so.
    let r = b
        .ok(
            "resize_job",
            json!({ "job_id": repl, "cols": 100, "rows": 30 }),
        )
        .await;
    assert_eq!(
        (r["resized"].clone(), r["cols"].clone(), r["rows"].clone()),
        (json!(true), json!(100), json!(30)),
        "{r}"
    );
    let own = a.ok("get_job_screen", json!({ "job_id": repl })).await;
    assert_eq!(
        (own["cols"].clone(), own["height"].clone()),
        (json!(100), json!(30)),
        "{own}"
    );
    let r = b
        .ok(
            "interact_with_job",
            json!({ "job_id": repl, "input": "import os; print(tuple(os.get_terminal_size()))" }),
        )
        .await;
    assert!(r["output"].as_str().unwrap().contains("(100, 30)"), "{r}");

    // The live screen: a job that never pauses never has its screen saved to disk, so what B
    // sees can only come from A, now.
    let (ticker, _) = a
        .exec("i=0; while :; do i=$((i+1)); echo $i; sleep 0.02; done")
        .await;
    let seen_by_a = wait_until("the ticker to count", DEADLINE, || async {
        let s = a.ok("get_job_screen", json!({ "job_id": ticker })).await;
        numbers(&s).into_iter().max().filter(|&n| n > 5)
    })
    .await;
    let screen = b.ok("get_job_screen", json!({ "job_id": ticker })).await;
    assert_eq!(screen["status"], "running");
    let seen_by_b = numbers(&screen).into_iter().max().unwrap_or(0);
    assert!(
        seen_by_b >= seen_by_a,
        "B's screen {seen_by_b} < A's {seen_by_a}: {screen}"
    );
}

#[tokio::test]
async fn another_server_waits_for_a_pattern_input_listening_and_the_exit() {
    let state = tempfile::tempdir().expect("temp dir");
    let a = Server::start_in(state.path(), &[]).await;
    let b = Server::start_in(state.path(), &[]).await;

    // Input: the REPL waits at its prompt (only its own server can tell).
    let (repl, _) = a.exec("exec python3 -i -q").await;
    let w = b
        .ok(
            "wait_for_job",
            json!({ "job_id": repl, "input": true, "timeout_secs": 20 }),
        )
        .await;
    assert_eq!(w["reason"], "input_wanted", "{w}");

    // A pattern on a line still on the screen (not yet in the disk log).
    let (job, _) = a.exec("read x; echo got-$x; sleep 1000").await;
    let waiter = {
        let b = &b;
        let job = job.clone();
        async move {
            b.ok(
                "wait_for_job",
                json!({ "job_id": job, "pattern": "^got-", "timeout_secs": 20 }),
            )
            .await
        }
    };
    let socket = owner_socket(state.path(), &job);
    let typer = async {
        // Typed at A once B's wait is under way there.
        request_under_way(&socket).await;
        a.ok("interact_with_job", json!({ "job_id": job, "input": "it" }))
            .await
    };
    let (w, _) = tokio::join!(waiter, typer);
    assert_eq!(w["reason"], "matched", "{w}");
    assert_eq!(w["matched_line"], "got-it", "{w}");

    // Idle, and a bounded wait that times out.
    let w = b
        .ok(
            "wait_for_job",
            json!({ "job_id": job, "idle_ms": 300, "timeout_secs": 20 }),
        )
        .await;
    assert_eq!(w["reason"], "idle", "{w}");
    let started = Instant::now();
    let w = b
        .ok(
            "wait_for_job",
            json!({ "job_id": job, "pattern": "never", "timeout_secs": 1 }),
        )
        .await;
    assert_eq!(w["reason"], "timeout", "{w}");
    assert!(started.elapsed() < Duration::from_secs(5));

    // Listening, and the exit.
    let (web, _) = a
        .exec("exec python3 -m http.server 0 --bind 127.0.0.1")
        .await;
    let w = b
        .ok(
            "wait_for_job",
            json!({ "job_id": web, "listening": true, "timeout_secs": 20 }),
        )
        .await;
    assert_eq!(w["reason"], "listening", "{w}");
    let (short, _) = a.exec("read x; exit 3").await;
    b.ok(
        "interact_with_job",
        json!({ "job_id": short, "input": "go", "wait_ms": 10 }),
    )
    .await;
    let w = b
        .ok(
            "wait_for_job",
            json!({ "job_id": short, "timeout_secs": 20 }),
        )
        .await;
    assert_eq!(
        (w["reason"].clone(), w["exit_code"].clone()),
        (json!("exited"), json!(3)),
        "{w}"
    );
}

#[tokio::test]
async fn another_server_kills_a_job_by_name_through_the_owners_kill_path() {
    let state = tempfile::tempdir().expect("temp dir");
    let a = Server::start_in(state.path(), &[]).await;
    let b = Server::start_in(state.path(), &[]).await;
    // A job that ignores SIGTERM and has a child: only TERM → grace → KILL of its whole tree
    // ends it.
    let r = a
        .ok(
            "execute_command",
            json!({ "command": "trap '' TERM; sleep 1000 & sleep 1000", "name": "stubborn" }),
        )
        .await;
    let (id, pid) = (
        r["job_id"].as_str().unwrap().to_owned(),
        r["pid"].as_u64().unwrap() as u32,
    );
    a.track(pid);
    wait_until("the job's child", DEADLINE, || async {
        (session_processes(pid).len() >= 2).then_some(())
    })
    .await;
    let k = b
        .ok("kill_job", json!({ "job_id": "stubborn", "grace_ms": 200 }))
        .await;
    assert_eq!(k["status"], "killed", "{k}");
    assert!(
        session_processes(pid).is_empty(),
        "nothing of the job is left"
    );
    let st = a.status(&id).await;
    assert_eq!(
        (st["status"].clone(), st["reason"].clone()),
        (json!("killed"), json!("killed by request")),
        "{st}"
    );
    // Once ended, it is ended for everyone.
    let k = b.ok("kill_job", json!({ "job_id": id })).await;
    assert_eq!(k["status"], "already_terminated", "{k}");
    let e = b
        .tool_error("interact_with_job", json!({ "job_id": id, "input": "x" }))
        .await;
    assert!(e.contains("not running"), "{e}");
}

/// Types `text` as five lines into job `id` through server `s`.
async fn type_lines(s: &Server, id: &str, text: &str) {
    for _ in 0..5 {
        s.ok(
            "interact_with_job",
            json!({ "job_id": id, "input": text, "wait_ms": 10 }),
        )
        .await;
    }
}

#[tokio::test]
async fn two_servers_controlling_one_job_at_once() {
    let state = tempfile::tempdir().expect("temp dir");
    let a = Server::start_in(state.path(), &[]).await;
    let b = Server::start_in(state.path(), &[]).await;
    let c = Server::start_in(state.path(), &[]).await;
    // Concurrent inputs arrive whole: each line is one writer's.
    let (cat, _) = a.exec("stty -echo; echo ready; exec cat").await;
    a.wait_output(&cat, "ready").await;
    let line = |ch: char| ch.to_string().repeat(60);
    let (lb, lc) = (line('b'), line('c'));
    tokio::join!(type_lines(&b, &cat, &lb), type_lines(&c, &cat, &lc));
    let out = wait_until("every line at A", DEADLINE, || async {
        let out = a.output(&cat).await;
        (out.lines().count() >= 11).then_some(out)
    })
    .await;
    for l in out.lines().skip(1) {
        assert!(
            l == line('b') || l == line('c'),
            "a line was cut: {l:?}\n{out}"
        );
    }
    assert_eq!(out.lines().filter(|l| *l == line('b')).count(), 5, "{out}");
    assert_eq!(out.lines().filter(|l| *l == line('c')).count(), 5, "{out}");

    // Two kills at once: exactly one kills it, the other finds it ended.
    let (job, _) = a.exec("sleep 1000").await;
    let (kb, kc) = tokio::join!(
        b.ok("kill_job", json!({ "job_id": job })),
        c.ok("kill_job", json!({ "job_id": job }))
    );
    let mut outcomes = [kb["status"].to_string(), kc["status"].to_string()];
    outcomes.sort();
    assert_eq!(
        outcomes,
        ["\"already_terminated\"", "\"killed\""],
        "{kb} {kc}"
    );
}

#[tokio::test]
async fn a_wait_on_a_job_whose_server_dies_answers() {
    let state = tempfile::tempdir().expect("temp dir");
    let mut a = Server::start_in(state.path(), &[]).await;
    let b = Server::start_in(state.path(), &[]).await;
    let (job, _) = a.exec("sleep 1000").await;
    let started = Instant::now();
    let waiter = b.ok(
        "wait_for_job",
        json!({ "job_id": job, "pattern": "never", "timeout_secs": 120 }),
    );
    let socket = owner_socket(state.path(), &job);
    let crash = async {
        request_under_way(&socket).await;
        a.crash().await;
    };
    let (w, ()) = tokio::join!(waiter, crash);
    assert!(started.elapsed() < Duration::from_secs(30), "{w}");
    assert_eq!(w["reason"], "exited", "{w}");
    assert_ne!(w["status"], "running", "{w}");
    // Its server is gone: the job is over for every verb, not "another server's".
    let e = b
        .tool_error("interact_with_job", json!({ "job_id": job, "input": "x" }))
        .await;
    assert!(e.contains("not running"), "{e}");
    let k = b.ok("kill_job", json!({ "job_id": job })).await;
    assert_eq!(k["status"], "already_terminated", "{k}");
}

/// What sits at the owner's socket path, if not the owner's socket, is refused: nothing is
/// sent, nothing followed, and the job is untouched.
#[tokio::test]
async fn a_planted_file_link_or_foreign_socket_at_the_owners_path_is_refused() {
    let state = tempfile::tempdir().expect("temp dir");
    let a = Server::start_in(state.path(), &[]).await;
    let b = Server::start_in(state.path(), &[]).await;
    let (job, _) = a.exec("stty -echo; exec cat").await;
    let path = owner_socket(state.path(), &job);
    // A keeps listening on its socket, moved aside: a link to it must not be followed.
    let real = path.with_file_name("moved.sock");
    std::fs::rename(&path, &real).expect("move the socket aside");

    // What is planted there: a file, a link (to A's real socket), a socket of another user.
    let plant = |what: &str| match what {
        "not a socket" => {
            std::fs::write(&path, b"planted").expect("plant a file");
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
            None
        }
        "symbolic link" => {
            std::os::unix::fs::symlink(&real, &path).expect("plant a link");
            None
        }
        _ => {
            let l = std::os::unix::net::UnixListener::bind(&path).expect("bind");
            std::os::unix::fs::chown(&path, Some(65534), Some(65534))
                .expect("chown (tests run as root)");
            Some(l)
        }
    };
    for what in ["not a socket", "symbolic link", "another user"] {
        let _keep = plant(what);
        for (tool, args) in [
            (
                "interact_with_job",
                json!({ "job_id": job, "input": "planted", "wait_ms": 10 }),
            ),
            ("kill_job", json!({ "job_id": job })),
            (
                "resize_job",
                json!({ "job_id": job, "cols": 90, "rows": 20 }),
            ),
        ] {
            let e = b.tool_error(tool, args).await;
            assert!(
                e.contains("refused") && e.contains(what),
                "{what}: {tool}: {e}"
            );
        }
        std::fs::remove_file(&path).expect("remove the plant");
    }
    // Nothing reached the job; with its socket back, B controls it.
    assert_eq!(a.status(&job).await["status"], "running");
    assert!(!a.output(&job).await.contains("planted"));
    std::fs::rename(&real, &path).expect("put the socket back");
    b.ok(
        "interact_with_job",
        json!({ "job_id": job, "input": "back", "wait_ms": 10 }),
    )
    .await;
    a.wait_output(&job, "back").await;
}
