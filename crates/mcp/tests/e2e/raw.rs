//! The JSON-RPC boundary, seen from the wire. These are the only tests that write raw lines to
//! the server's stdin and read its raw stdout: malformed JSON-RPC is their point, and only the
//! raw stdout shows that nothing but JSON-RPC is ever written there.
//!
//! - Malformed lines get a JSON-RPC error carrying the request's id where one can be read
//!   (-32700 for truncated JSON, -32602 when `params` or `arguments` is not an object), and the
//!   server keeps serving.
//! - A seeded fuzz run sends a few hundred random and malformed argument objects to every tool
//!   and checks: every request gets exactly one answer (result or error), stdout carries only
//!   JSON-RPC, nothing panics, and `ping` is still answered. `PTYJOBS_FUZZ_SEED` and
//!   `PTYJOBS_FUZZ_CASES` change the run (the seed is printed, to replay a failure).

use std::collections::{BTreeMap, BTreeSet};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::mpsc;

use crate::util::{BIN, DEADLINE, kill_session};

/// The server on raw pipes.
struct Raw {
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::UnboundedReceiver<String>,
    /// Answers read while looking for another id.
    early: BTreeMap<String, Value>,
    stderr: Arc<Mutex<String>>,
    _state: tempfile::TempDir,
    jobs: Vec<u32>,
}

impl Raw {
    /// The server, after the handshake.
    async fn start(args: &[&str]) -> Self {
        let mut raw = Self::spawn(args).await;
        raw.send(
            &json!({
                "jsonrpc": "2.0", "id": "init", "method": "initialize",
                "params": { "protocolVersion": "2025-06-18", "capabilities": {},
                            "clientInfo": { "name": "raw", "version": "0" } }
            })
            .to_string(),
        )
        .await;
        let init = raw.answer(&json!("init"), DEADLINE).await;
        assert!(init.get("result").is_some(), "{init}");
        raw.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
            .await;
        raw
    }

    /// The server, before any line is sent to it.
    async fn spawn(args: &[&str]) -> Self {
        let state = tempfile::tempdir().expect("temp dir");
        let mut child = Command::new(BIN)
            .args(args)
            .arg("--state-dir")
            .arg(state.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn ptyjobs");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let stderr = child.stderr.take().expect("stderr");
        let (tx, lines) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            let mut r = BufReader::new(stdout).lines();
            while let Ok(Some(line)) = r.next_line().await {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        let log = Arc::new(Mutex::new(String::new()));
        let sink = log.clone();
        tokio::spawn(async move {
            let mut r = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = r.next_line().await {
                let mut log = sink.lock().unwrap_or_else(|e| e.into_inner());
                log.push_str(&line);
                log.push('\n');
            }
        });
        Self {
            child,
            stdin,
            lines,
            early: BTreeMap::new(),
            stderr: log,
            _state: state,
            jobs: Vec::new(),
        }
    }

    async fn send(&mut self, line: &str) {
        self.stdin
            .write_all(format!("{line}\n").as_bytes())
            .await
            .expect("write to the server");
        self.stdin.flush().await.expect("flush");
    }

    /// The next stdout line as JSON, asserting it is a JSON-RPC message.
    async fn next(&mut self, deadline: Duration) -> Value {
        let line = tokio::time::timeout(deadline, self.lines.recv())
            .await
            .unwrap_or_else(|_| panic!("no answer within {deadline:?}; stderr:\n{}", self.log()))
            .unwrap_or_else(|| panic!("the server closed stdout; stderr:\n{}", self.log()));
        let v: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout carried a non-JSON line ({e}): {line:?}"));
        assert_eq!(v["jsonrpc"], "2.0", "not JSON-RPC: {line}");
        let answer =
            v.get("id").is_some() && (v.get("result").is_some() != v.get("error").is_some());
        let notification = v.get("method").is_some_and(Value::is_string) && v.get("id").is_none();
        assert!(
            answer || notification,
            "not a JSON-RPC answer or notification: {line}"
        );
        v
    }

    /// The answer to request `id` (notifications and other answers are kept aside).
    async fn answer(&mut self, id: &Value, deadline: Duration) -> Value {
        if let Some(v) = self.early.remove(&id.to_string()) {
            return v;
        }
        loop {
            let v = self.next(deadline).await;
            if v.get("method").is_some() {
                continue;
            }
            if &v["id"] == id {
                return v;
            }
            let key = v["id"].to_string();
            assert!(self.early.insert(key, v).is_none(), "two answers to one id");
        }
    }

    async fn call(&mut self, id: i64, tool: &str, args: Value) -> Value {
        self.send(
            &json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call",
                           "params": { "name": tool, "arguments": args } })
            .to_string(),
        )
        .await;
        self.answer(&json!(id), DEADLINE).await
    }

    async fn assert_pings(&mut self, id: i64) {
        self.send(&json!({ "jsonrpc": "2.0", "id": id, "method": "ping" }).to_string())
            .await;
        let pong = self.answer(&json!(id), DEADLINE).await;
        assert_eq!(pong["result"], json!({}), "{pong}");
    }

    fn log(&self) -> String {
        self.stderr
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn assert_alive(&mut self) {
        assert!(
            matches!(self.child.try_wait(), Ok(None)),
            "the server exited; stderr:\n{}",
            self.log()
        );
        assert!(!self.log().contains("panicked"), "{}", self.log());
    }
}

impl Drop for Raw {
    fn drop(&mut self) {
        for &sid in &self.jobs {
            kill_session(sid);
        }
    }
}

/// The state directory is opened beside the handshake, off its path. A call written right
/// behind `initialize`, in the same write, before any answer is read, must still see it: the
/// job it starts has its record on disk when the call is answered.
#[tokio::test]
async fn a_call_pipelined_behind_initialize_sees_the_state_directory() {
    let mut s = Raw::spawn(&[]).await;
    let lines = [
        json!({ "jsonrpc": "2.0", "id": "init", "method": "initialize",
                "params": { "protocolVersion": "2025-06-18", "capabilities": {},
                            "clientInfo": { "name": "raw", "version": "0" } } }),
        json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }),
        json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": { "name": "execute_command",
                            "arguments": { "command": "echo piped" } } }),
    ]
    .map(|v| v.to_string());
    s.send(&lines.join("\n")).await;
    let init = s.answer(&json!("init"), DEADLINE).await;
    assert!(init.get("result").is_some(), "{init}");
    let started = s.answer(&json!(1), DEADLINE).await;
    let job = &started["result"]["structuredContent"];
    if let Some(pid) = job["pid"].as_u64() {
        s.jobs.push(pid as u32);
    }
    let id = job["job_id"]
        .as_str()
        .unwrap_or_else(|| panic!("{started}"));
    let record = s._state.path().join("jobs").join(id).join("meta.json");
    assert!(
        record.is_file(),
        "no record at {}; stderr:\n{}",
        record.display(),
        s.log()
    );
    assert!(!s.log().contains("in memory only"), "{}", s.log());
    s.assert_pings(2).await;
    s.assert_alive();
}

#[tokio::test]
async fn malformed_lines_get_errors_with_their_ids_and_the_server_keeps_serving() {
    let mut s = Raw::start(&[]).await;
    for (line, id, code) in [
        (
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/li"#,
            json!(3),
            -32700,
        ),
        (
            r#"{"jsonrpc":"2.0","id":"str-id","method":"tools/call","params":{"na"#,
            json!("str-id"),
            -32700,
        ),
        ("this is not json", Value::Null, -32700),
        (
            r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":[1,2]}"#,
            json!(4),
            -32602,
        ),
        (
            r#"{"jsonrpc":"2.0","id":5,"method":"tools/list","params":"x"}"#,
            json!(5),
            -32602,
        ),
        (
            r#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"list_jobs","arguments":5}}"#,
            json!(6),
            -32602,
        ),
        (
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"list_jobs","arguments":[]}}"#,
            json!(7),
            -32602,
        ),
        (
            r#"{"jsonrpc":"2.0","id":8,"method":"resources/read","params":{}}"#,
            json!(8),
            -32602,
        ),
        (
            r#"[{"jsonrpc":"2.0","id":9,"method":"ping"}]"#,
            Value::Null,
            -32600,
        ),
    ] {
        s.send(line).await;
        let a = s.answer(&id, DEADLINE).await;
        assert_eq!(a["error"]["code"], code, "{line} -> {a}");
        s.assert_pings(100).await;
    }
    // A malformed notification has nobody to answer; the next request is answered.
    s.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":7}"#)
        .await;
    s.assert_pings(101).await;
    let r = s.call(10, "list_jobs", json!({})).await;
    assert!(r["result"]["structuredContent"]["jobs"].is_array(), "{r}");
    s.assert_alive();
}

/// xorshift64*: a small seeded generator, so a failing run can be replayed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// A random JSON value: every type, edge numbers, odd strings, and some job ids.
fn value(rng: &mut Rng, ids: &[String], depth: usize) -> Value {
    let strings = [
        "",
        " ",
        "true",
        "echo fuzz",
        "running",
        "TERM",
        "C-c",
        "Enter",
        "../../etc/passwd",
        "\u{0}",
        "é漢字\u{202e}",
        "(?i)err|",
        "[",
        "-1",
        "{}",
        "null",
        "9",
        "ptyjobs://jobs/x",
    ];
    match rng.below(if depth > 2 { 9 } else { 11 }) {
        0 => Value::Null,
        1 => json!(rng.below(2) == 1),
        2 => json!(*rng.pick(&[
            0i64,
            1,
            -1,
            2,
            80,
            1000,
            1001,
            65535,
            65536,
            i64::MAX,
            i64::MIN
        ])),
        3 => json!(*rng.pick(&[0.0f64, 0.5, -0.5, 1e-9, 1e300, 3.0])),
        4 => json!(u64::MAX),
        5 => json!(rng.pick(&strings)),
        6 => json!("x".repeat(rng.below(20_000))),
        7 | 8 if !ids.is_empty() => json!(rng.pick(ids)),
        7 | 8 => json!(rng.pick(&strings)),
        9 => Value::Array(
            (0..rng.below(4))
                .map(|_| value(rng, ids, depth + 1))
                .collect(),
        ),
        _ => Value::Object(
            (0..rng.below(4))
                .map(|i| (format!("k{i}"), value(rng, ids, depth + 1)))
                .collect(),
        ),
    }
}

#[tokio::test]
async fn fuzzed_tool_arguments_always_get_one_json_rpc_answer() {
    let seed = std::env::var("PTYJOBS_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_f00d_u64);
    let cases: usize = std::env::var("PTYJOBS_FUZZ_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(300);
    eprintln!("fuzz: seed {seed}, {cases} cases (PTYJOBS_FUZZ_SEED / PTYJOBS_FUZZ_CASES)");
    let mut rng = Rng(seed.max(1));
    // A short server-side wait cap keeps the run bounded whatever the timeouts drawn.
    let mut s = Raw::start(&["--max-wait-secs", "1", "--kill-grace-ms", "200"]).await;

    // The tools and their parameters, from the server itself.
    s.send(r#"{"jsonrpc":"2.0","id":"tools","method":"tools/list"}"#)
        .await;
    let tools = s.answer(&json!("tools"), DEADLINE).await;
    let tools: Vec<(String, Vec<String>)> = tools["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| {
            let props = t["inputSchema"]["properties"]
                .as_object()
                .map(|p| p.keys().cloned().collect())
                .unwrap_or_default();
            (t["name"].as_str().expect("name").to_owned(), props)
        })
        .collect();
    assert!(tools.len() >= 11);

    // Real targets: a running job and a finished one.
    let mut ids = Vec::new();
    for (n, command) in [(1, "sleep 1000"), (2, "echo done")] {
        let r = s
            .call(n, "execute_command", json!({ "command": command }))
            .await;
        let job = &r["result"]["structuredContent"];
        ids.push(job["job_id"].as_str().expect("job_id").to_owned());
        s.jobs.push(job["pid"].as_u64().expect("pid") as u32);
    }

    let mut pending = BTreeSet::new();
    let mut tally = Tally::default();
    for case in 0..cases {
        let id = 1000 + case as i64;
        let (tool, props) = rng.pick(&tools).clone();
        let tool = if rng.below(20) == 0 {
            "no_such_tool".to_owned()
        } else {
            tool
        };
        let arguments = match rng.below(12) {
            // Not an object at all.
            0 => value(&mut rng, &ids, 3),
            _ => {
                let mut args = serde_json::Map::new();
                for p in &props {
                    if rng.below(3) > 0 {
                        // Mostly well-typed job ids and commands, so calls get past parsing.
                        let v = match p.as_str() {
                            "job_id" if rng.below(2) == 0 => json!(rng.pick(&ids)),
                            "command" if rng.below(2) == 0 => {
                                json!(rng.pick(&["true", "echo fuzz", "printf '\\033]0;t'"]))
                            }
                            _ => value(&mut rng, &ids, 0),
                        };
                        args.insert(p.clone(), v);
                    }
                }
                if rng.below(4) == 0 {
                    args.insert("unexpected".into(), value(&mut rng, &ids, 0));
                }
                Value::Object(args)
            }
        };
        let line = json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call",
                           "params": { "name": tool, "arguments": arguments } })
        .to_string();
        s.send(&line).await;
        pending.insert(id);
        // Keep a bounded number in flight.
        if pending.len() >= 25 {
            let first = *pending.iter().next().expect("pending");
            let a = s.answer(&json!(first), Duration::from_secs(120)).await;
            pending.remove(&first);
            track_jobs(&mut s, &a);
            tally.count(&a);
        }
    }
    for id in std::mem::take(&mut pending) {
        let a = s.answer(&json!(id), Duration::from_secs(120)).await;
        track_jobs(&mut s, &a);
        tally.count(&a);
    }
    eprintln!("fuzz: {tally:?}");
    // The run reached every kind of answer, not only the parser's refusals.
    assert!(
        tally.ok > 0 && tally.tool_error > 0 && tally.rpc_error > 0,
        "{tally:?}"
    );
    assert!(
        s.early.is_empty(),
        "answers to ids never asked: {:?}",
        s.early.keys()
    );
    s.assert_pings(99).await;
    s.assert_alive();
}

/// How the fuzzed calls were answered.
#[derive(Debug, Default)]
struct Tally {
    ok: usize,
    tool_error: usize,
    rpc_error: usize,
}

impl Tally {
    fn count(&mut self, answer: &Value) {
        if answer.get("error").is_some() {
            self.rpc_error += 1;
        } else if answer["result"]["isError"] == true {
            self.tool_error += 1;
        } else {
            self.ok += 1;
        }
    }
}

/// Remembers the session of any job a fuzzed execute_command started, to clean it up.
fn track_jobs(s: &mut Raw, answer: &Value) {
    if let Some(pid) = answer["result"]["structuredContent"]["pid"].as_u64() {
        s.jobs.push(pid as u32);
    }
}
