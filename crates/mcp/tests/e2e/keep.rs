//! Kept jobs (issue 23): `execute_command(keep: true)` runs the job in the state directory's
//! keeper, so it outlives its server (SIGKILL included), is listed `kept` by every other
//! server, and ends with its TTL, `ptyjobs kill` or `kill --kept`; a job that was not kept
//! still dies with its server.

use std::io::{Read, Write};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};

use crate::procs::kill;
use crate::util::{BIN, DEADLINE, Server, session_processes, wait_until};

/// A state directory for kept jobs. When dropped (also when a test fails): every kept job is
/// killed (`ptyjobs kill --kept`) and every keeper that held one is SIGKILLed.
pub(crate) struct State(tempfile::TempDir);

impl State {
    pub(crate) fn new() -> Self {
        Self(tempfile::tempdir().expect("temp state dir"))
    }

    pub(crate) fn path(&self) -> &Path {
        self.0.path()
    }

    /// A server on this state directory; its keepers leave 1 s after their last job.
    pub(crate) async fn server(&self) -> Server {
        Server::start_env(
            &["--state-dir", self.path().to_str().expect("utf-8")],
            &[("PTYJOBS_KEEPER_IDLE_MS", Path::new("1000"))],
        )
        .await
    }

    /// Runs the CLI on this state directory: (exit code, stdout, stderr).
    pub(crate) fn cli(&self, args: &[&str]) -> (i32, String, String) {
        let out = Command::new(BIN)
            .arg("--state-dir")
            .arg(self.path())
            .args(args)
            .env("PTYJOBS_KEEPER_IDLE_MS", "1000")
            .output()
            .expect("run the CLI");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// The record of job `id` as it is on disk.
    pub(crate) fn record(&self, id: &str) -> Value {
        let text = std::fs::read_to_string(self.path().join("jobs").join(id).join("meta.json"))
            .expect("the job's record");
        serde_json::from_str(&text).expect("a JSON record")
    }

    /// The pid of the process that owns job `id` (its keeper, for a kept job).
    pub(crate) fn owner_pid(&self, id: &str) -> u32 {
        self.record(id)["server"]["process"]["pid"]
            .as_u64()
            .expect("owner pid") as u32
    }

    /// Every job directory's record.
    pub(crate) fn records(&self) -> Vec<Value> {
        let Ok(dir) = std::fs::read_dir(self.path().join("jobs")) else {
            return Vec::new();
        };
        dir.flatten()
            .filter_map(|e| std::fs::read_to_string(e.path().join("meta.json")).ok())
            .filter_map(|t| serde_json::from_str(&t).ok())
            .collect()
    }
}

impl Drop for State {
    fn drop(&mut self) {
        let _ = self.cli(&["kill", "--kept", "--grace-ms", "200"]);
        for r in self.records() {
            if let (Some(pid), true) = (r["server"]["process"]["pid"].as_u64(), r["kept"] == true) {
                kill(pid as u32, libc::SIGKILL);
            }
            if let Some(pid) = r["pid"].as_u64() {
                for p in session_processes(pid as u32) {
                    kill(p, libc::SIGKILL);
                }
            }
        }
    }
}

pub(crate) fn alive(pid: u32) -> bool {
    matches!(crate::procs::stat(pid), Some((s, _)) if s != 'Z' && s != 'X')
}

/// Live processes whose environment carries the job marker `PTYJOBS_JOB_ID=<id>`.
pub(crate) fn marked(id: &str) -> Vec<u32> {
    let needle = format!("PTYJOBS_JOB_ID={id}");
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| alive(pid))
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|&b| b == 0).any(|kv| kv == needle.as_bytes()))
        })
        .collect()
}

pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// One HTTP GET of `path` on `port`; the status line.
pub(crate) fn http_get(port: u16, path: &str) -> std::io::Result<String> {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(Duration::from_secs(5)))?;
    s.write_all(format!("GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n").as_bytes())?;
    let mut answer = String::new();
    s.read_to_string(&mut answer)?;
    Ok(answer.lines().next().unwrap_or_default().to_owned())
}

/// The "done when": a kept `python3 -m http.server` answers HTTP after its server was
/// SIGKILLed, its output from the gap is in the transcript, a new server lists it running and
/// kept, and it is killed by name with nothing left.
#[tokio::test]
async fn a_kept_http_server_outlives_a_sigkilled_server_and_is_killed_by_name() {
    let state = State::new();
    let mut a = state.server().await;
    let port = free_port();
    let r = a
        .ok(
            "execute_command",
            json!({
                "command": format!("exec python3 -u -m http.server {port} --bind 127.0.0.1"),
                "name": "web",
                "keep": true,
            }),
        )
        .await;
    let id = r["job_id"].as_str().expect("job_id").to_owned();
    let pid = r["pid"].as_u64().expect("pid") as u32;
    let ready = a
        .ok(
            "wait_for_job",
            json!({ "job_id": "web", "port": port, "timeout_secs": 30 }),
        )
        .await;
    assert_eq!(ready["reason"], "port_open", "{ready}");
    let status = a.status(&id).await;
    assert_eq!(status["kept"], true, "{status}");
    assert!(status["keep_until"].is_string(), "{status}");
    assert_ne!(state.owner_pid(&id), a.pid, "a kept job is its keeper's");

    a.crash().await;
    // The gap: no server runs, the job answers and its output goes on being written.
    let line = http_get(port, "/during-the-gap").expect("the kept server answers");
    assert!(line.contains("404"), "{line}");

    let b = state.server().await;
    let list = b.ok("list_jobs", json!({ "status": "running" })).await;
    let web = list["jobs"]
        .as_array()
        .expect("jobs")
        .iter()
        .find(|j| j["job_id"] == id.as_str())
        .cloned()
        .unwrap_or_else(|| panic!("the kept job is listed: {list}"));
    assert_eq!(web["status"], "running", "{web}");
    assert_eq!(web["kept"], true, "{web}");
    assert_eq!(web["this_server"], false, "{web}");
    wait_until("the gap's request in the transcript", DEADLINE, || async {
        let out = b
            .ok("tail_job_output", json!({ "job_id": "web", "lines": 50 }))
            .await;
        out["output"]
            .as_str()
            .is_some_and(|o| o.contains("GET /during-the-gap"))
            .then_some(())
    })
    .await;

    // Killed by name (the kill path of `ptyjobs kill`, which proves the job's processes).
    let (code, out, err) = state.cli(&["kill", "web", "--grace-ms", "1000"]);
    assert_eq!(code, 0, "{out}{err}");
    let done = b.wait_done(&id).await;
    assert_eq!(done["status"], "killed", "{done}");
    wait_until("nothing of the job left", DEADLINE, || async {
        (session_processes(pid).is_empty() && marked(&id).is_empty()).then_some(())
    })
    .await;
    assert!(http_get(port, "/").is_err(), "the port is closed");
}

/// Starts `command` as a kept job named `name` from a server that is then SIGKILLed; returns
/// the job's id and its shell's pid.
async fn kept_then_crash(state: &State, name: &str, command: &str) -> (String, u32) {
    let mut a = state.server().await;
    let r = a
        .ok(
            "execute_command",
            json!({ "command": command, "name": name, "keep": true }),
        )
        .await;
    let id = r["job_id"].as_str().expect("job_id").to_owned();
    let pid = r["pid"].as_u64().expect("pid") as u32;
    a.crash().await;
    (id, pid)
}

/// A new server kills another live server's job (the keeper's) with kill_job by name.
#[tokio::test]
async fn a_new_server_kills_a_kept_job_by_name_with_kill_job() {
    let state = State::new();
    let (id, pid) = kept_then_crash(&state, "sleeper", "sleep 1000").await;
    let b = state.server().await;
    let killed = b.ok("kill_job", json!({ "job_id": "sleeper" })).await;
    assert_eq!(killed["status"], "killed", "{killed}");
    let done = b.wait_done(&id).await;
    assert_eq!(done["status"], "killed", "{done}");
    wait_until("nothing of the job left", DEADLINE, || async {
        (session_processes(pid).is_empty() && marked(&id).is_empty()).then_some(())
    })
    .await;
}

/// Two new servers adopt the same kept job at once, after its own server died: both type into
/// it (each line arrives whole), both read its screen, and of their two concurrent kills
/// exactly one ends it while the other answers that it has already ended.
#[tokio::test]
async fn two_servers_adopting_one_kept_job_at_once() {
    let state = State::new();
    let command = "stty -echo; while read l; do echo got-$l; done";
    let (id, pid) = kept_then_crash(&state, "echo", command).await;
    let (b, c) = (state.server().await, state.server().await);
    let lines: Vec<String> = (0..20)
        .map(|i| format!("line-{i}-{}", "x".repeat(200)))
        .collect();
    let from_b = async {
        for l in lines.iter().step_by(2) {
            b.ok("interact_with_job", json!({ "job_id": "echo", "input": l }))
                .await;
        }
    };
    let from_c = async {
        for l in lines.iter().skip(1).step_by(2) {
            c.ok("interact_with_job", json!({ "job_id": "echo", "input": l }))
                .await;
        }
    };
    tokio::join!(from_b, from_c);
    let out = wait_until("every line echoed", DEADLINE, || async {
        let out = b.output(&id).await;
        (lines.iter().all(|l| out.contains(&format!("got-{l}")))).then_some(out)
    })
    .await;
    for l in &lines {
        assert_eq!(
            out.matches(&format!("got-{l}")).count(),
            1,
            "{l} once, whole"
        );
    }
    let (sb, sc) = tokio::join!(
        b.ok("get_job_screen", json!({ "job_id": "echo" })),
        c.ok("get_job_screen", json!({ "job_id": "echo" }))
    );
    assert!(sb["rows"].to_string().contains("got-line"), "{sb}");
    assert!(sc["rows"].to_string().contains("got-line"), "{sc}");
    let (kb, kc) = tokio::join!(
        b.ok("kill_job", json!({ "job_id": id, "grace_ms": 500 })),
        c.ok("kill_job", json!({ "job_id": id, "grace_ms": 500 }))
    );
    let mut outcomes = [
        kb["status"].as_str().expect("status").to_owned(),
        kc["status"].as_str().expect("status").to_owned(),
    ];
    outcomes.sort();
    assert_eq!(outcomes, ["already_terminated", "killed"], "{kb} {kc}");
    wait_until("nothing of the job left", DEADLINE, || async {
        (session_processes(pid).is_empty() && marked(&id).is_empty()).then_some(())
    })
    .await;
}

/// A new server restarts a kept job by name: the new job is kept too (in the keeper, with the
/// same end of its lifetime) and outlives that server as well.
#[tokio::test]
async fn a_restarted_kept_job_is_kept_and_outlives_the_server_that_restarted_it() {
    let state = State::new();
    let (old, _) = kept_then_crash(&state, "svc", "sleep 1000").await;
    let mut b = state.server().await;
    let until = b.status(&old).await["keep_until"].clone();
    let r = b.ok("restart_job", json!({ "job_id": "svc" })).await;
    let new = r["job_id"].as_str().expect("new id").to_owned();
    assert_ne!(new, old, "{r}");
    assert_eq!(b.status(&new).await["kept"], true, "{r}");
    b.crash().await;
    let c = state.server().await;
    let s = c.status(&new).await;
    assert_eq!(
        (s["status"].as_str(), s["kept"].as_bool()),
        (Some("running"), Some(true)),
        "{s}"
    );
    // The rest of its lifetime, to within the restart's own few milliseconds.
    let at = |v: &Value| {
        chrono::DateTime::parse_from_rfc3339(v.as_str().expect("keep_until")).expect("a time")
    };
    let drift = (at(&s["keep_until"]) - at(&until)).num_milliseconds().abs();
    assert!(drift < 250, "{drift} ms: {s} / {until}");
    assert_eq!(c.status(&old).await["status"], "killed");
    c.ok("kill_job", json!({ "job_id": "svc", "grace_ms": 0 }))
        .await;
}

/// A job that was not kept dies with its server exactly as before; a kept one does not.
#[tokio::test]
async fn only_the_kept_job_survives_its_server() {
    let state = State::new();
    let mut a = state.server().await;
    let (plain, plain_pid) = a.exec("sleep 1000").await;
    let kept = a
        .ok(
            "execute_command",
            json!({ "command": "sleep 1001", "keep": true }),
        )
        .await;
    let kept_pid = kept["pid"].as_u64().expect("pid") as u32;
    assert_eq!(state.owner_pid(&plain), a.pid);
    a.crash().await;
    wait_until("the plain job to die with its server", DEADLINE, || async {
        session_processes(plain_pid).is_empty().then_some(())
    })
    .await;
    assert!(alive(kept_pid), "the kept job runs on");
    let b = state.server().await;
    assert_eq!(b.status(&plain).await["status"], "killed");
    let k = b.status(kept["job_id"].as_str().expect("id")).await;
    assert_eq!(k["status"], "running", "{k}");
    assert_eq!(k["kept"], true, "{k}");
}

/// A kept job started from inside a job (an agent's `ptyjobs run --keep` in a shell job)
/// outlives that job's kill: the keeper does not carry the outer job's marker.
#[tokio::test]
async fn a_job_kept_from_inside_a_job_survives_that_jobs_kill() {
    let state = State::new();
    let a = state.server().await;
    let dir = state.path().to_str().expect("utf-8");
    let (outer, _) = a
        .exec(&format!(
            "{BIN} --state-dir {dir} run --keep --name inner -- sleep 1000; sleep 1000"
        ))
        .await;
    let inner = wait_until("the inner kept job", DEADLINE, || async {
        let list = a.ok("list_jobs", json!({ "status": "running" })).await;
        list["jobs"]
            .as_array()?
            .iter()
            .find(|j| j["name"] == "inner")
            .cloned()
    })
    .await;
    let pid = inner["pid"].as_u64().expect("pid") as u32;
    let killed = a.ok("kill_job", json!({ "job_id": outer })).await;
    assert_eq!(killed["status"], "killed", "{killed}");
    assert!(alive(pid), "the kept job runs on");
    assert!(alive(
        state.owner_pid(inner["job_id"].as_str().expect("id"))
    ));
}

/// `keep` where it cannot be honoured is refused with a reason, never ignored: a server without
/// a state directory, and a service (kept services: `ptyjobs services --start`).
#[tokio::test]
async fn keep_without_a_state_directory_or_with_a_service_is_refused() {
    let s = Server::start(&["--no-persist"]).await;
    let e = s
        .tool_error(
            "execute_command",
            json!({ "command": "sleep 1", "keep": true }),
        )
        .await;
    assert!(e.contains("state directory"), "{e}");
    let project = tempfile::tempdir().expect("project");
    std::fs::write(project.path().join("Procfile"), "web: sleep 300\n").expect("Procfile");
    let e = s
        .tool_error(
            "execute_command",
            json!({ "service": "web", "keep": true, "cwd": project.path() }),
        )
        .await;
    assert!(e.contains("leave out keep"), "{e}");
}
