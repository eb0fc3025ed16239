//! The bypass suite: real jobs under real PTYs, started through the real `ptyjobs` binary over
//! MCP. Each case is a shell command that tries something a profile forbids and prints
//! `PTJ_OK` when it got through or `PTJ_DENIED` when it was refused. Every case must be refused
//! under the policy AND get through on a server without one — so the suite cannot pass by
//! testing nothing. A case whose plain run fails on this machine (a kernel feature it lacks) is
//! skipped with a printed reason.
#![cfg(target_os = "linux")]

#[path = "../common/procs.rs"]
mod procs;
#[path = "../e2e/util.rs"]
#[allow(dead_code)]
mod util;

mod cases;
mod gaps;
mod sockets;
mod truncate;
mod workflows;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use util::Server;

/// A place for one run: the project (the write root), a directory outside every root, the
/// policy file, and servers for the sockets a job must not reach.
pub struct World {
    pub _dir: tempfile::TempDir,
    pub proj: PathBuf,
    pub out: PathBuf,
    pub policy: PathBuf,
    /// A file beside the policy file, the plain run's stand-in for it.
    pub dummy: PathBuf,
    pub tcp: std::net::TcpListener,
    pub unix: std::os::unix::net::UnixListener,
    pub abstract_name: String,
    pub _abstract: std::os::unix::net::UnixListener,
}

/// The policy every case runs under.
pub fn policy_text(proj: &Path) -> String {
    format!(
        "agent_profiles = [\"build\", \"dev\", \"narrow\", \"sockets\"]\n\
         [profiles.default]\n\
         write = [{proj:?}]\n\
         watch = [{hooks:?}]\n\
         [profiles.build]\n\
         write = [{proj:?}]\n\
         exec = [\"sh\", \"cp\", \"cat\", \"/usr/bin/python3\", \"id\"]\n\
         [profiles.dev]\n\
         write = [{proj:?}]\n\
         network = {{ bind = [5173] }}\n\
         [profiles.narrow]\n\
         write = [{proj:?}]\n\
         read = [\"/usr\", \"/etc\", \"/dev\", \"/proc\", {proj:?}]\n\
         [profiles.sockets]\n\
         write = [{proj:?}]\n\
         unix_sockets = [{listed:?}]\n\
         [profiles.open]\n\
         write = [{proj:?}]\n\
         network = \"on\"\n",
        proj = proj.display().to_string(),
        hooks = proj.join(".git/hooks").display().to_string(),
        listed = proj
            .parent()
            .expect("base")
            .join("out/listed.sock")
            .display()
            .to_string(),
    )
}

#[allow(clippy::new_without_default)] // a world is made, not defaulted
impl World {
    pub fn new() -> Self {
        use std::os::linux::net::SocketAddrExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let base = dir.path().canonicalize().expect("canonical");
        let (proj, out, etc) = (base.join("proj"), base.join("out"), base.join("etc"));
        for d in [&proj, &out, &etc] {
            std::fs::create_dir(d).expect("mkdir");
        }
        let policy = etc.join("policy.toml");
        // The socket the `sockets` profile lists, served outside every sandbox.
        crate::sockets::echo_server(&out.join("listed.sock"), b"");
        std::fs::write(&policy, policy_text(&proj)).expect("policy");
        let dummy = etc.join("dummy.toml");
        let tcp = std::net::TcpListener::bind("127.0.0.1:0").expect("tcp listener");
        let unix =
            std::os::unix::net::UnixListener::bind(out.join("served.sock")).expect("unix listener");
        static WORLDS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = WORLDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let abstract_name = format!("ptyjobs-test-{}-{n}", std::process::id());
        let addr = std::os::unix::net::SocketAddr::from_abstract_name(abstract_name.as_bytes())
            .expect("abstract address");
        let abs = std::os::unix::net::UnixListener::bind_addr(&addr).expect("abstract listener");
        Self {
            _dir: dir,
            proj,
            out,
            policy,
            dummy,
            tcp,
            unix,
            abstract_name,
            _abstract: abs,
        }
    }

    /// Files the cases delete, rename or overwrite, made afresh before each run.
    pub fn refresh(&self) {
        for f in ["victim", "victim2", "victim3"] {
            std::fs::write(self.out.join(f), "x").expect("victim");
        }
        std::fs::write(&self.dummy, "x").expect("dummy");
        let _ = std::fs::remove_file(self.proj.join("hard"));
        let _ = std::fs::remove_file(self.proj.join("tlink"));
        let _ = std::fs::remove_file(self.etc().join("dummy.toml.moved"));
    }

    fn etc(&self) -> PathBuf {
        self.policy.parent().expect("etc").to_path_buf()
    }

    /// The variables every case's command reads.
    pub fn env(&self, server: &Server, under_policy: bool, other: u32) -> BTreeMap<String, String> {
        let port = self.tcp.local_addr().expect("addr").port();
        let target = if under_policy {
            &self.policy
        } else {
            &self.dummy
        };
        [
            ("OUT", self.out.display().to_string()),
            ("PROJ", self.proj.display().to_string()),
            ("TARGET", target.display().to_string()),
            ("PORT_C", port.to_string()),
            ("PORT_B", free_port().to_string()),
            ("SOCK", self.out.join("served.sock").display().to_string()),
            ("ABSTRACT", self.abstract_name.clone()),
            ("SERVER", server.pid.to_string()),
            ("OTHER", other.to_string()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }
}

/// Runs `command` as a job (under `profile` when given) to its end; returns its output.
pub async fn run(
    server: &Server,
    command: &str,
    env: &BTreeMap<String, String>,
    profile: Option<&str>,
) -> String {
    let mut args = json!({ "command": command, "env": env, "wait": true });
    if let Some(p) = profile {
        args["profile"] = Value::from(p);
    }
    let r = server.ok("execute_command", args).await;
    let id = r["job_id"].as_str().expect("job_id").to_owned();
    server.wait_done(&id).await;
    server.output(&id).await
}

/// The server with the policy.
pub async fn with_policy(world: &World) -> Server {
    let file = world.policy.display().to_string();
    Server::start(&["--no-persist", "--policy", &file]).await
}

/// The server without one.
pub async fn plain() -> Server {
    Server::start(&["--no-persist"]).await
}

/// A TCP port nothing listens on now.
pub fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}

/// Whether this kernel enforces every profile of the test policy (Landlock ABI ≥ 6 and
/// seccomp); when not, says why the test is skipped.
pub fn enforceable(world: &World) -> bool {
    let out = std::process::Command::new(util::BIN)
        .arg("policy")
        .arg("--policy")
        .arg(&world.policy)
        .output()
        .expect("ptyjobs policy");
    let text = String::from_utf8_lossy(&out.stdout);
    let ok = out.status.success() && !text.contains("REFUSED");
    if !ok {
        eprintln!(
            "skipped: this kernel cannot enforce the test policy:\n{text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    ok
}
