//! Taking over a dead server's `running` records never signals a process that is not provably
//! the job's. Run inside a new PID namespace (`unshare --pid --fork --mount-proc`), so pids can
//! be planted in records and a mistaken kill cannot reach anything outside the test.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use crate::util::{BIN, DEADLINE, wait_until};

/// The namespace's side: plants the victims, writes their pids, waits for `go`, runs a server
/// on the state directory until `stop`, then says which victims are still alive.
const SCRIPT: &str = r#"
set -u
cd "$D"
# a: a session whose leader exited, leaving a process behind (a double-forked daemon)
setsid sh -c 'sleep 1000 & echo "$$ $!" > a.tmp; mv a.tmp a' &
# b: an unrelated session leader that now has a recorded pid
setsid sleep 1000 & echo $! > b
# c: a process in the server's own process group
sleep 1000 & echo $! > c
# e: a process that escaped a job's session, carrying the job's id: the one to end
PTYJOBS_JOB_ID="$E_ID" setsid sleep 1000 & echo $! > e
while [ ! -f a ]; do sleep 0.02; done
echo ready > ready
while [ ! -f go ]; do sleep 0.02; done
(while [ ! -f stop ]; do sleep 0.05; done) | "$BIN" --state-dir "$STATE" >/dev/null 2>server.log &
server=$!
wait $server
for v in "a $(cut -d' ' -f2 a)" "b $(cat b)" "c $(cat c)" "e $(cat e)"; do
  set -- $v
  if kill -0 "$2" 2>/dev/null; then echo "$1 alive"; else echo "$1 dead"; fi
done > result.tmp
mv result.tmp result
"#;

/// A running record of a dead server naming `process` (`start_ticks` may be null).
fn record(id: &str, pid: i64, start_ticks: Value) -> Value {
    json!({
        "format": 1,
        "id": id,
        "name": null,
        "command": "sleep 1000",
        "cwd": "/",
        "env_names": [],
        "process": { "pid": pid, "start_ticks": start_ticks },
        "status": "running",
        "exit_code": null,
        "signal": null,
        "started": "2020-01-01T00:00:00Z",
        "finished": null,
        "duration_ms": 0,
        "reason": null,
        "size": [120, 40],
        "server": {
            "instance": "0f0f0f0f-dead-4000-8000-000000000000",
            "process": { "pid": 4_000_000, "start_ticks": 1 }
        },
        "log_truncated": false,
        "screen": null
    })
}

fn plant(state: &Path, rec: &Value) {
    let dir = state.join("jobs").join(rec["id"].as_str().expect("id"));
    std::fs::create_dir_all(&dir).expect("job dir");
    std::fs::write(dir.join("meta.json"), rec.to_string()).expect("record");
}

fn read(path: &Path) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

/// Kills the namespace (its init, and with it every process in it) when the test ends.
struct Namespace(Child);

impl Drop for Namespace {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn taking_over_a_dead_servers_records_signals_only_proven_processes() {
    let probe = Command::new("unshare")
        .args(["--pid", "--fork", "--mount-proc", "true"])
        .stderr(Stdio::null())
        .status();
    if !probe.is_ok_and(|s| s.success()) {
        eprintln!("SKIPPED: this kernel or user cannot make a PID namespace (unshare --pid)");
        return;
    }
    let work = tempfile::tempdir().expect("temp dir");
    let state = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir_all(state.path().join("jobs")).expect("jobs dir");
    let e_id = "0e0e0e0e-0000-4000-8000-00000000000e";
    // Its own process group: were the server to signal its own group (a record with pid 0),
    // it must not reach this test.
    use std::os::unix::process::CommandExt;
    let ns = Namespace(
        Command::new("unshare")
            .process_group(0)
            .args([
                "--pid",
                "--fork",
                "--mount-proc",
                "--kill-child",
                "sh",
                "-c",
            ])
            .arg(SCRIPT)
            .env("D", work.path())
            .env("BIN", BIN)
            .env("STATE", state.path())
            .env("E_ID", e_id)
            .stdin(Stdio::null())
            .spawn()
            .expect("unshare"),
    );
    let d = work.path();
    wait_until("the victims", DEADLINE, || async { read(&d.join("ready")) }).await;
    let num = |name: &str, field: usize| -> i64 {
        read(&d.join(name))
            .expect("pid file")
            .split_whitespace()
            .nth(field)
            .expect("field")
            .parse()
            .expect("pid")
    };
    let (a_sid, b) = (num("a", 0), num("b", 0));
    let records = [
        // The leader of session a is gone: its number names a session it never led.
        record("0a0a0a0a-0000-4000-8000-00000000000a", a_sid, json!(1)),
        // Pid b now belongs to another program (its start time is not the recorded one).
        record("0b0b0b0b-0000-4000-8000-00000000000b", b, json!(1)),
        // No start time recorded: the pid alone proves nothing.
        record("0c0c0c0c-0000-4000-8000-00000000000c", b, Value::Null),
        // kill(-0) would be the server's own group, kill(-1) everything it may signal.
        record("0d0d0d0d-0000-4000-8000-000000000000", 0, Value::Null),
        record("0d0d0d0d-0000-4000-8000-000000000001", 1, Value::Null),
        // Its leader is gone too, but one of its processes carries its id: proven, ended.
        record(e_id, 3_999_999, json!(1)),
    ];
    for r in &records {
        plant(state.path(), r);
    }
    std::fs::write(d.join("go"), "").expect("go");
    // The server's upkeep takes the records over a moment after it starts.
    for r in &records {
        let meta = state
            .path()
            .join("jobs")
            .join(r["id"].as_str().expect("id"))
            .join("meta.json");
        let v: Value = wait_until("the takeover of every record", DEADLINE, || async {
            let v: Value = serde_json::from_str(&read(&meta)?).ok()?;
            (v["status"] != "running").then_some(v)
        })
        .await;
        assert_eq!(v["status"], "killed", "{v}");
        assert_eq!(v["reason"], "server stopped", "{v}");
    }
    std::fs::write(d.join("stop"), "").expect("stop");
    let result = wait_until(
        "the victims' fate",
        DEADLINE + Duration::from_secs(5),
        || async { read(&d.join("result")) },
    )
    .await;
    let log = read(&d.join("server.log")).unwrap_or_default();
    assert_eq!(
        result.lines().collect::<Vec<_>>(),
        ["a alive", "b alive", "c alive", "e dead"],
        "server log:\n{log}"
    );
    drop(ns);
}

/// Start time of `pid` in clock ticks since boot (`/proc/<pid>/stat` field 22).
fn start_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("stat");
    stat[stat.rfind(')').expect(")") + 1..]
        .split_whitespace()
        .nth(19)
        .expect("starttime")
        .parse()
        .expect("ticks")
}

/// Kills (and reaps) a victim process when the test ends, whatever happened.
struct Victim(Child);

impl Drop for Victim {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn ptyjobs_kill_signals_nothing_for_a_finished_record_or_an_unproven_process() {
    use std::os::unix::process::CommandExt;
    let state = tempfile::tempdir().expect("temp dir");
    let mut victim = Victim(
        Command::new("sleep")
            .arg("1000")
            .process_group(0)
            .spawn()
            .expect("sleep"),
    );
    let pid = victim.0.id();
    let ticks = start_ticks(pid);
    // A finished job whose recorded process (pid and start time) is this live sleep.
    let mut done = record(
        "1a1a1a1a-0000-4000-8000-000000000001",
        i64::from(pid),
        json!(ticks),
    );
    done["status"] = json!("completed");
    done["exit_code"] = json!(0);
    done["finished"] = json!("2020-01-01T00:00:01Z");
    // A running record of a dead server whose pid is the sleep's, with another start time.
    let reused = record(
        "1a1a1a1a-0000-4000-8000-000000000002",
        i64::from(pid),
        json!(ticks - 1),
    );
    for r in [&done, &reused] {
        plant(state.path(), r);
    }
    let kill = |id: &str| {
        Command::new(BIN)
            .arg("--state-dir")
            .arg(state.path())
            .args(["kill", id, "--grace-ms", "100"])
            .stdin(Stdio::null())
            .output()
            .expect("ptyjobs kill")
    };
    for r in [&done, &reused] {
        let out = kill(r["id"].as_str().expect("id"));
        assert!(
            !out.status.success(),
            "{}: {}",
            r["id"],
            String::from_utf8_lossy(&out.stdout)
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("not running"), "{err}");
        assert!(
            victim.0.try_wait().expect("try_wait").is_none(),
            "ptyjobs kill {} signalled an unrelated process",
            r["id"]
        );
    }
    // The dead server's record is rewritten as ended; nothing was signalled for it.
    let meta = state
        .path()
        .join("jobs")
        .join(reused["id"].as_str().expect("id"))
        .join("meta.json");
    let v: Value = serde_json::from_str(&read(&meta).expect("record")).expect("json");
    assert_eq!(v["status"], "killed", "{v}");
    let _ = victim.0.kill();
}
