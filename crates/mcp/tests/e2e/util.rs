//! The harness: start the real `ptyjobs` binary, talk to it with rmcp's own client, poll with a
//! deadline, and make sure nothing a test started outlives it.

use std::future::Future;
use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, Implementation,
    ProgressNotificationParam, ProtocolVersion, ResourceUpdatedNotificationParam,
};
use rmcp::service::{NotificationContext, RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, ClientLifecycleMode, ClientServiceExt, ServiceError, ServiceExt};
use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt;

pub use crate::procs::session_processes;
use crate::procs::{kill, stat};

/// Path of the binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_ptyjobs");

/// Generous deadline for anything that should take well under a second.
pub const DEADLINE: Duration = Duration::from_secs(10);

/// Polls `check` every 20 ms until it yields `Some`, or panics naming `what` after `deadline`.
/// The one way tests wait for something: never a fixed sleep.
pub async fn wait_until<T, F, Fut>(what: &str, deadline: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let end = Instant::now() + deadline;
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(
            Instant::now() < end,
            "timed out after {deadline:?} waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The client's handler: records the notifications the server sends.
#[derive(Clone, Default)]
pub struct Recorder {
    /// Progress notifications, in arrival order.
    pub progress: Arc<Mutex<Vec<ProgressNotificationParam>>>,
    /// URIs of resource-updated notifications, in arrival order.
    pub updated: Arc<Mutex<Vec<String>>>,
    /// Resource-list-changed notifications received.
    pub list_changed: Arc<AtomicUsize>,
    /// Declare the MCP tasks extension.
    pub tasks: bool,
}

impl Recorder {
    /// Progress notifications received so far.
    pub fn progress_count(&self) -> usize {
        self.progress
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .len()
    }

    /// How many resource-updated notifications named `uri`.
    pub fn updates_of(&self, uri: &str) -> usize {
        let updated = self.updated.lock().unwrap_or_else(|e| e.into_inner());
        updated.iter().filter(|u| *u == uri).count()
    }
}

impl ClientHandler for Recorder {
    fn get_info(&self) -> ClientConfig {
        let caps = if self.tasks {
            ClientCapabilities::builder().enable_tasks().build()
        } else {
            ClientCapabilities::default()
        };
        ClientConfig::new(caps, Implementation::new("ptyjobs-e2e", "0"))
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(params);
    }

    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.updated
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(params.uri);
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.list_changed.fetch_add(1, Ordering::SeqCst);
    }
}

/// What the test client speaks.
#[derive(Debug, Clone, Copy, Default)]
pub struct Dialect {
    /// Declare the MCP tasks extension (`io.modelcontextprotocol/tasks`).
    pub tasks: bool,
    /// Use the 2026-07-28 protocol (`server/discover`, per-request metadata) instead of the
    /// 2025 `initialize` handshake.
    pub protocol_2026: bool,
}

/// A running server and a connected client. Dropping it SIGKILLs the server and every job
/// session the test learned about, so a failing test leaves nothing behind.
pub struct Server {
    client: Option<RunningService<RoleClient, Recorder>>,
    pub pid: u32,
    jobs: Mutex<Vec<u32>>,
    /// What the client heard besides answers.
    pub heard: Recorder,
    calls: AtomicUsize,
    log: Arc<Mutex<String>>,
    /// The state directory the harness made for this server (removed when it is dropped).
    _state: Option<tempfile::TempDir>,
}

impl Server {
    /// Starts `ptyjobs` with `args` and completes the MCP handshake.
    pub async fn start(args: &[&str]) -> Self {
        Self::start_with(args, None, &[]).await
    }

    /// Starts `ptyjobs` with `args` and connects a client speaking `dialect`.
    pub async fn start_as(args: &[&str], dialect: Dialect) -> Self {
        Self::start_full(args, None, &[], dialect, None).await
    }

    /// Starts `ptyjobs` with `args` under an open-files limit of `soft` (and `hard`), as a
    /// login shell's `ulimit -n` would leave it.
    pub async fn start_fd_limited(args: &[&str], soft: u64, hard: u64) -> Self {
        Self::start_full(args, None, &[], Dialect::default(), Some((soft, hard))).await
    }

    /// Starts `ptyjobs` with `args` and these environment variables.
    pub async fn start_env(args: &[&str], env: &[(&str, &std::path::Path)]) -> Self {
        Self::start_with(args, None, env).await
    }

    /// Starts `ptyjobs` on the state directory `dir`, with `args`.
    pub async fn start_in(dir: &std::path::Path, args: &[&str]) -> Self {
        let dir = dir.to_str().expect("utf-8 temp path");
        let mut all = vec!["--state-dir", dir];
        all.extend_from_slice(args);
        Self::start_with(&all, None, &[]).await
    }

    /// Like [`Server::start`], with the server logging at `filter` (a `RUST_LOG` value) into
    /// [`Server::log`].
    pub async fn start_logged(args: &[&str], filter: &str) -> Self {
        Self::start_with(args, Some(filter), &[]).await
    }

    async fn start_with(
        args: &[&str],
        log_filter: Option<&str>,
        env: &[(&str, &std::path::Path)],
    ) -> Self {
        Self::start_full(args, log_filter, env, Dialect::default(), None).await
    }

    async fn start_full(
        args: &[&str],
        log_filter: Option<&str>,
        env: &[(&str, &std::path::Path)],
        dialect: Dialect,
        fd_limit: Option<(u64, u64)>,
    ) -> Self {
        let mut cmd = tokio::process::Command::new(BIN);
        cmd.args(args);
        if let Some((soft, hard)) = fd_limit {
            let limit = libc::rlimit {
                rlim_cur: soft as libc::rlim_t,
                rlim_max: hard as libc::rlim_t,
            };
            // SAFETY: setrlimit is async-signal-safe and touches only the child's limits.
            unsafe {
                cmd.pre_exec(move || {
                    if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        }
        for (k, v) in env {
            cmd.env(k, v);
        }
        // Never the user's state directory: a fresh one per server unless the test picks one.
        let picked = args
            .iter()
            .any(|a| *a == "--state-dir" || *a == "--no-persist")
            || env
                .iter()
                .any(|(k, _)| k.starts_with("PTYJOBS_") || *k == "XDG_STATE_HOME");
        let state = (!picked).then(|| tempfile::tempdir().expect("temp state dir"));
        if let Some(dir) = &state {
            cmd.arg("--state-dir").arg(dir.path());
        }
        if let Some(filter) = log_filter {
            cmd.env("RUST_LOG", filter);
        }
        let (transport, stderr) = TokioChildProcess::builder(cmd)
            .stderr(if log_filter.is_some() {
                Stdio::piped()
            } else if std::env::var_os("PTYJOBS_TEST_STDERR").is_some() {
                Stdio::inherit()
            } else {
                Stdio::null()
            })
            .spawn()
            .expect("spawn ptyjobs");
        let pid = transport.id().expect("server pid");
        // Register the pid before the handshake so a failed handshake still cleans up.
        let guard = KillOnDrop(pid);
        let log = Arc::new(Mutex::new(String::new()));
        if let Some(stderr) = stderr {
            let log = log.clone();
            tokio::spawn(async move {
                let mut lines = tokio::io::BufReader::new(stderr).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    let mut log = log.lock().unwrap_or_else(|e| e.into_inner());
                    log.push_str(&line);
                    log.push('\n');
                }
            });
        }
        let heard = Recorder {
            tasks: dialect.tasks,
            ..Recorder::default()
        };
        let client = if dialect.protocol_2026 {
            heard
                .clone()
                .serve_with_lifecycle(
                    transport,
                    ClientLifecycleMode::Discover {
                        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                    },
                )
                .await
        } else {
            heard.clone().serve(transport).await
        }
        .expect("MCP handshake with ptyjobs");
        std::mem::forget(guard);
        Self {
            client: Some(client),
            pid,
            jobs: Mutex::new(Vec::new()),
            heard,
            calls: AtomicUsize::new(0),
            log,
            _state: state,
        }
    }

    /// The connected client.
    pub fn client(&self) -> &RunningService<RoleClient, Recorder> {
        self.client.as_ref().expect("client still connected")
    }

    /// Tool calls made so far through this harness.
    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

    /// What the server logged so far (only with [`Server::start_logged`]).
    pub fn log(&self) -> String {
        self.log.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Remembers a job's session so it is killed when the test ends.
    pub fn track(&self, pid: u32) {
        self.jobs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(pid);
    }

    /// Closes the client the way MCP clients do (stdin EOF, then a wait for the exit, then
    /// SIGTERM after 3 s) and returns how long the server took to go.
    pub async fn close(&mut self) -> Duration {
        let client = self.client.take().expect("client still connected");
        let t = Instant::now();
        let _ = client.cancel().await;
        t.elapsed()
    }

    /// Calls `tool` with `args`; a protocol-level error is returned as `Err`.
    pub async fn call_raw(&self, tool: &str, args: Value) -> Result<CallToolResult, ServiceError> {
        let Value::Object(map) = args else {
            panic!("tool arguments must be an object")
        };
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.client()
            .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(map))
            .await
    }

    /// Calls `tool` and returns its structured result, asserting that the call succeeded and
    /// that the text content carries the same JSON.
    pub async fn ok(&self, tool: &str, args: Value) -> Value {
        let r = self
            .call_raw(tool, args.clone())
            .await
            .unwrap_or_else(|e| panic!("{tool}({args}) failed with a protocol error: {e}"));
        assert_ne!(
            r.is_error,
            Some(true),
            "{tool}({args}) returned an error: {}",
            text(&r)
        );
        let structured = r.structured_content.clone().expect("structured content");
        let from_text: Value = serde_json::from_str(&text(&r)).expect("text content is JSON");
        assert_eq!(from_text, structured, "text and structured content differ");
        structured
    }

    /// Calls `tool`, asserts an `isError` result, and returns its message.
    pub async fn tool_error(&self, tool: &str, args: Value) -> String {
        let r = self.call_raw(tool, args.clone()).await.unwrap_or_else(|e| {
            panic!("{tool}({args}) failed with a protocol error instead of isError: {e}")
        });
        assert_eq!(
            r.is_error,
            Some(true),
            "{tool}({args}) should fail, got {r:?}"
        );
        text(&r)
    }

    /// Calls `tool` and asserts it was refused, either as invalid params or as an `isError`
    /// result; returns the message.
    pub async fn refused(&self, tool: &str, args: Value) -> String {
        match self.call_raw(tool, args.clone()).await {
            Ok(r) => {
                assert_eq!(
                    r.is_error,
                    Some(true),
                    "{tool}({args}) should be refused: {r:?}"
                );
                text(&r)
            }
            Err(ServiceError::McpError(e)) => {
                assert_eq!(e.code.0, -32602, "{tool}({args}): {e:?}");
                e.message.to_string()
            }
            Err(e) => panic!("{tool}({args}): unexpected failure {e}"),
        }
    }

    /// Starts `command` and returns `(job_id, pid)`; the job is killed when the test ends.
    pub async fn exec(&self, command: &str) -> (String, u32) {
        self.exec_with(json!({ "command": command })).await
    }

    /// Like [`Server::exec`] with every argument given.
    pub async fn exec_with(&self, args: Value) -> (String, u32) {
        let r = self.ok("execute_command", args).await;
        let pid = r["pid"].as_u64().expect("pid") as u32;
        self.track(pid);
        (r["job_id"].as_str().expect("job_id").to_owned(), pid)
    }

    /// The job's status record.
    pub async fn status(&self, id: &str) -> Value {
        self.ok("get_job_status", json!({ "job_id": id })).await
    }

    /// Waits until the job is final and returns its status record.
    pub async fn wait_done(&self, id: &str) -> Value {
        wait_until(&format!("job {id} to end"), DEADLINE, || async {
            let s = self.status(id).await;
            (s["status"] != "running").then_some(s)
        })
        .await
    }

    /// The job's whole transcript.
    pub async fn output(&self, id: &str) -> String {
        let r = self.ok("get_job_output", json!({ "job_id": id })).await;
        r["output"].as_str().expect("output").to_owned()
    }

    /// Waits until the tail of the job's output contains `needle`; returns the tail.
    pub async fn wait_output(&self, id: &str, needle: &str) -> String {
        wait_until(
            &format!("{needle:?} in the output of {id}"),
            DEADLINE,
            || async {
                let r = self
                    .ok("tail_job_output", json!({ "job_id": id, "lines": 1000 }))
                    .await;
                let out = r["output"].as_str().expect("output").to_owned();
                out.contains(needle).then_some(out)
            },
        )
        .await
    }

    /// SIGKILLs the server (its jobs lose their terminal) and waits until it is gone.
    pub async fn crash(&mut self) {
        kill(self.pid, libc::SIGKILL);
        let pid = self.pid;
        wait_until("the server to die", DEADLINE, || async {
            (!alive(pid)).then_some(())
        })
        .await;
        // Reap it: the client's transport owns the child.
        if let Some(client) = self.client.take() {
            let _ = tokio::time::timeout(DEADLINE, client.cancel()).await;
        }
    }

    /// Asserts the server still answers.
    pub async fn assert_serving(&self) {
        self.ok("list_jobs", json!({})).await;
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        kill(self.pid, libc::SIGKILL);
        for &sid in self.jobs.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            kill_session(sid);
        }
    }
}

/// SIGKILLs a pid when dropped (used until the server is fully set up).
struct KillOnDrop(u32);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        kill(self.0, libc::SIGKILL);
    }
}

/// SIGKILLs every live process in session `sid` (a job's processes).
pub fn kill_session(sid: u32) {
    for pid in session_processes(sid) {
        kill(pid, libc::SIGKILL);
    }
}

/// Sends `sig` to `pid`.
pub fn signal(pid: u32, sig: i32) {
    kill(pid, sig);
}

/// Whether `pid` is alive (exists and is not a zombie).
pub fn alive(pid: u32) -> bool {
    matches!(stat(pid), Some((st, _)) if st != 'Z' && st != 'X')
}

/// Waits until no process of the job led by `sid` remains.
pub async fn wait_no_processes(sid: u32, deadline: Duration) {
    wait_until(
        &format!("no process left in session {sid}"),
        deadline,
        || async { session_processes(sid).is_empty().then_some(()) },
    )
    .await;
}

/// Resident set size of `pid` in KiB.
pub fn rss_kib(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("read status");
    s.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS")
}

/// The text content of a result.
pub fn text(r: &CallToolResult) -> String {
    r.content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("")
}

/// Starts a server on `state_dir` that cannot use it, checks that a job still runs and is read
/// back (kept in memory), and returns the server's stderr once it holds the warning.
pub async fn jobs_stay_in_memory(state_dir: &str) -> String {
    let s = Server::start_logged(&["--state-dir", state_dir], "warn").await;
    let (id, _) = s.exec("echo still here").await;
    s.wait_done(&id).await;
    assert_eq!(s.output(&id).await, "still here");
    wait_until("the warning", DEADLINE, || async {
        let log = s.log();
        log.contains("in memory only").then_some(log)
    })
    .await
}
