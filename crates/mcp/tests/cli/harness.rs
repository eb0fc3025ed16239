//! The harness of the CLI tests: a real `ptyjobs` server spoken to in plain newline-delimited
//! JSON-RPC (to create real jobs on a state directory), runs of the CLI with a deadline, polling
//! with a deadline, and guards that leave no process behind, even when a test panics.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::procs::kill;
pub use crate::procs::session_processes;

/// Path of the binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_ptyjobs");

/// Generous deadline for anything that should take well under a second.
pub const DEADLINE: Duration = Duration::from_secs(15);

/// Polls `check` every 20 ms until it yields `Some`, or panics naming `what` after
/// [`DEADLINE`]. The one way these tests wait for something: never a fixed sleep.
pub fn wait_until<T>(what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let end = Instant::now() + DEADLINE;
    loop {
        if let Some(v) = check() {
            return v;
        }
        assert!(
            Instant::now() < end,
            "timed out after {DEADLINE:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A state directory with one server on it. Fields drop in order: the server (and its jobs)
/// goes before the directory is deleted.
pub struct Fixture {
    pub server: Server,
    dir: tempfile::TempDir,
}

impl Fixture {
    /// A fresh state directory and a server on it.
    pub fn new() -> Self {
        let dir = tempfile::tempdir().expect("temp state dir");
        Self {
            server: Server::start(dir.path()),
            dir,
        }
    }

    /// The state directory.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Runs the CLI on this state directory.
    pub fn cli(&self, args: &[&str]) -> Run {
        cli(self.dir(), args)
    }

    /// Starts a job with these execute_command arguments and waits until the CLI sees its
    /// record; returns `(job_id, pid)`.
    pub fn exec_with(&mut self, args: Value) -> (String, u32) {
        let (id, pid) = self.server.exec_with(args);
        wait_until(&format!("the record of job {id}"), || {
            (self.cli(&["status", "--json", &id]).code == 0).then_some(())
        });
        (id, pid)
    }

    /// Starts `command` as a job (see [`Fixture::exec_with`]).
    pub fn exec(&mut self, command: &str) -> (String, u32) {
        self.exec_with(json!({ "command": command }))
    }

    /// Starts the CLI on this state directory without waiting for it.
    pub fn spawn_cli(&self, args: &[&str]) -> Spawned {
        Spawned::start(self.dir(), args)
    }
}

/// A `ptyjobs` server on stdio. Dropping it SIGKILLs the server and every process of every job
/// the test started through it.
pub struct Server {
    child: Child,
    stdin: ChildStdin,
    messages: Receiver<Value>,
    next_id: u64,
    jobs: Vec<u32>,
    /// The server's pid.
    pub pid: u32,
}

impl Server {
    /// Starts `ptyjobs --state-dir <dir>` and completes the MCP handshake.
    pub fn start(dir: &Path) -> Self {
        let mut child = Command::new(BIN)
            .arg("--state-dir")
            .arg(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(if std::env::var_os("PTYJOBS_TEST_STDERR").is_some() {
                Stdio::inherit()
            } else {
                Stdio::null()
            })
            .spawn()
            .expect("spawn the ptyjobs server");
        let pid = child.id();
        let stdin = child.stdin.take().expect("server stdin");
        let stdout = child.stdout.take().expect("server stdout");
        let (tx, messages) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let Ok(message) = serde_json::from_str::<Value>(&line) else {
                    continue;
                };
                if tx.send(message).is_err() {
                    break;
                }
            }
        });
        let mut server = Self {
            child,
            stdin,
            messages,
            next_id: 0,
            jobs: Vec::new(),
            pid,
        };
        server.request(
            "initialize",
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": { "name": "ptyjobs-cli-tests", "version": "0" },
            }),
        );
        server.send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));
        server
    }

    fn send(&mut self, message: &Value) {
        let mut line = message.to_string();
        line.push('\n');
        self.stdin
            .write_all(line.as_bytes())
            .and_then(|()| self.stdin.flush())
            .expect("write to the server");
    }

    /// Sends a request and returns its `result`; panics on an error answer or after the
    /// deadline. Notifications and other messages in between are skipped.
    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }));
        let end = Instant::now() + DEADLINE;
        loop {
            let left = end.saturating_duration_since(Instant::now());
            let message = match self.messages.recv_timeout(left) {
                Ok(m) => m,
                Err(RecvTimeoutError::Timeout) => panic!("no answer to {method} in {DEADLINE:?}"),
                Err(RecvTimeoutError::Disconnected) => panic!("the server exited during {method}"),
            };
            if message["id"] != json!(id) {
                continue;
            }
            assert!(message.get("error").is_none(), "{method} failed: {message}");
            return message["result"].clone();
        }
    }

    /// Calls `tool` and returns its structured result, asserting that it succeeded.
    pub fn call(&mut self, tool: &str, args: Value) -> Value {
        let r = self.request("tools/call", json!({ "name": tool, "arguments": args }));
        assert_ne!(
            r["isError"],
            json!(true),
            "{tool}({args}) returned an error: {r}"
        );
        r["structuredContent"].clone()
    }

    /// Starts a job with these execute_command arguments; returns `(job_id, pid)`. The job's
    /// processes are killed when the server is dropped.
    pub fn exec_with(&mut self, args: Value) -> (String, u32) {
        let r = self.call("execute_command", args);
        let pid = u32::try_from(r["pid"].as_u64().expect("pid")).expect("pid fits");
        self.jobs.push(pid);
        (r["job_id"].as_str().expect("job_id").to_owned(), pid)
    }

    /// The job's status as the server reports it.
    pub fn status(&mut self, id: &str) -> Value {
        self.call("get_job_status", json!({ "job_id": id }))
    }

    /// Waits until the server reports the job final; returns its status.
    pub fn wait_done(&mut self, id: &str) -> Value {
        wait_until(&format!("job {id} to end"), || {
            let s = self.status(id);
            (s["status"] != "running").then_some(s)
        })
    }

    /// SIGKILLs the server and reaps it (its jobs lose their terminal and die with it).
    pub fn crash(&mut self) {
        kill(self.pid, libc::SIGKILL);
        let _ = self.child.wait();
    }

    /// The job's whole output as the server gives it.
    pub fn output(&mut self, id: &str) -> String {
        let r = self.call("get_job_output", json!({ "job_id": id }));
        r["output"].as_str().expect("output").to_owned()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        kill(self.pid, libc::SIGKILL);
        for &sid in &self.jobs {
            for pid in session_processes(sid) {
                kill(pid, libc::SIGKILL);
            }
        }
        let _ = self.child.wait();
    }
}

/// What one run of the CLI did.
#[derive(Debug)]
pub struct Run {
    /// Exit code (-1 when a signal ended it).
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `ptyjobs --state-dir <dir> <args>` to its end (panics after the deadline).
pub fn cli(dir: &Path, args: &[&str]) -> Run {
    let mut spawned = Spawned::start(dir, args);
    let mut stdout = spawned.child.stdout.take().expect("cli stdout");
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    let code = spawned.wait();
    Run {
        code,
        stdout: reader.join().expect("stdout reader"),
        stderr: spawned.stderr(),
    }
}

/// A CLI process started without waiting; killed if still running when dropped.
pub struct Spawned {
    pub child: Child,
    stderr: Option<std::thread::JoinHandle<String>>,
    what: String,
}

impl Spawned {
    /// Starts `ptyjobs --state-dir <dir> <args>` with stdout piped and stderr collected.
    pub fn start(dir: &Path, args: &[&str]) -> Self {
        let mut child = Command::new(BIN)
            .arg("--state-dir")
            .arg(dir)
            .args(args)
            .env_remove("NO_COLOR")
            .env_remove("CLICOLOR_FORCE")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn the ptyjobs cli");
        let mut err = child.stderr.take().expect("cli stderr");
        let stderr = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = err.read_to_string(&mut s);
            s
        });
        Self {
            child,
            stderr: Some(stderr),
            what: format!("ptyjobs {}", args.join(" ")),
        }
    }

    /// Takes stdout as a channel of lines, read as they come.
    pub fn lines(&mut self) -> Receiver<String> {
        let stdout = self.child.stdout.take().expect("cli stdout");
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        rx
    }

    /// Waits for the exit (panics after the deadline); returns the exit code.
    pub fn wait(&mut self) -> i32 {
        let what = self.what.clone();
        let status = wait_until(&format!("`{what}` to exit"), || {
            self.child.try_wait().expect("try_wait")
        });
        status.code().unwrap_or(-1)
    }

    /// Everything it wrote on stderr (after it exited).
    pub fn stderr(&mut self) -> String {
        self.stderr
            .take()
            .map(|h| h.join().expect("stderr reader"))
            .unwrap_or_default()
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Receives the next line within the deadline.
pub fn next_line(lines: &Receiver<String>, what: &str) -> String {
    lines
        .recv_timeout(DEADLINE)
        .unwrap_or_else(|e| panic!("no line for {what} in {DEADLINE:?}: {e}"))
}
