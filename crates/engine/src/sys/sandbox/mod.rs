//! Running a job's shell inside a sandbox: what the server resolves a profile to
//! ([`SandboxSpec`]), the ruleset and filter made ready for a job's spawn (`prepare`), and the
//! hidden modes of the `ptyjobs` executable that apply them to themselves.
//!
//! A sandboxed job is started by `sys/unix/spawn_sandboxed.rs`: the server prepares the Landlock
//! ruleset (an fd) and the compiled seccomp filter, and a `clone(CLONE_VM | CLONE_VFORK)` child
//! sets no_new_privs, restricts itself with both and execs the shell (no second exec, nothing of
//! the server's code but system calls in the child). What it applies cannot be removed by
//! anything it execs. The trampoline mode,
//! `<program> __ptyjobs-sandbox-exec <spec as JSON> <cmd>...`, applies the same in-process and
//! execs `cmd` (the `ptyjobs sandbox` CLI's path); the canary mode tries what must be refused.
//!
//! Only Linux enforces a sandbox; elsewhere [`support`] says so and a policy is refused.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

#[cfg(target_os = "linux")]
mod linux;
mod supervise;

#[cfg(target_os = "linux")]
pub(crate) use linux::handoff::{FdMessage, HANDOFF_FD, Handoff};
pub use supervise::{Refusal, RefusalKind, Supervision};

#[cfg(target_os = "linux")]
pub(crate) use linux::prepared::prepare;

/// The hidden first argument that makes the `ptyjobs` executable a sandbox trampoline.
pub(crate) const EXEC_ARG: &str = "__ptyjobs-sandbox-exec";
/// The hidden first argument that makes it run the start canary (see [`canary`]).
pub(crate) const CANARY_ARG: &str = "__ptyjobs-sandbox-canary";

/// Where no sandbox is enforced (not Linux): a policy is refused when the server starts, so
/// no sandboxed spawn should arrive; if one does, it fails closed instead of running the job
/// unsandboxed.
#[cfg(not(target_os = "linux"))]
pub(crate) fn refuse(sandbox: Option<&(PathBuf, SandboxSpec)>) -> crate::error::Result<()> {
    match sandbox {
        None => Ok(()),
        Some((program, _)) => Err(crate::error::Error::Spawn(format!(
            "this platform cannot sandbox a job (the trampoline `{} {EXEC_ARG}` runs on Linux \
             only); refusing to run it unsandboxed",
            program.display()
        ))),
    }
}

/// What a job may do, resolved to absolute paths, as the trampoline applies it.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct SandboxSpec {
    /// The profile's name (the job sees it as `PTYJOBS_PROFILE`).
    pub profile: String,
    /// Roots where the job may create, change and delete (the job's TMPDIR among them).
    pub write: Vec<PathBuf>,
    /// Roots the job may read.
    pub read: Vec<PathBuf>,
    /// `None`: the network is "on" (not restricted). `Some`: TCP ports it may connect to and
    /// bind; no other socket family but TCP (and netlink) on IP.
    pub net: Option<NetPorts>,
    /// File-path Unix sockets the job may connect to; empty: none.
    pub unix_sockets: Vec<PathBuf>,
    /// The programs the job may exec, when the profile has an allowlist (the shell and the
    /// ELF interpreter are added).
    pub exec: Option<Vec<PathBuf>>,
    /// The job's own TMPDIR (made by the server; also in `write`).
    pub tmpdir: Option<PathBuf>,
    /// Run even when the kernel cannot enforce all of it.
    pub best_effort: bool,
    /// The fd the trampoline hands its seccomp listener back on (set per spawn by the
    /// server; `None`: no supervisor, the filter refuses alone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handoff: Option<i32>,
}

/// TCP ports a job may use when its network is not "on".
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct NetPorts {
    /// Ports it may connect to.
    pub connect: Vec<u16>,
    /// Ports it may bind.
    pub bind: Vec<u16>,
}

impl SandboxSpec {
    /// What the job sees as `PTYJOBS_NET`: `on`, `off` (no port at all) or `ports`.
    pub fn net_env(&self) -> &'static str {
        match &self.net {
            None => "on",
            Some(p) if p.connect.is_empty() && p.bind.is_empty() => "off",
            Some(_) => "ports",
        }
    }
}

/// What this kernel can enforce.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Support {
    /// The Landlock ABI version (0: no Landlock).
    pub landlock_abi: i32,
    /// Whether seccomp filters can be installed.
    pub seccomp: bool,
}

/// What this kernel can enforce (off Linux: nothing).
pub fn support() -> Support {
    #[cfg(target_os = "linux")]
    {
        linux::support()
    }
    #[cfg(not(target_os = "linux"))]
    {
        Support::default()
    }
}

/// The file `name` in the directory of the shared object (or executable) this code was loaded
/// from: the Node addon's `ptyjobs` binary ships beside the `.node` file. `None` off Linux or
/// when the loader cannot tell.
pub fn beside_this_library(name: &str) -> Option<PathBuf> {
    #[cfg(target_os = "linux")]
    {
        linux::own_object_path().map(|p| p.with_file_name(name))
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = name;
        None
    }
}

/// Whether this platform can enforce a policy at all: Linux only, for now.
pub const PLATFORM_ENFORCES: bool = cfg!(target_os = "linux");

/// When this process was started as a sandbox trampoline or canary, does that and never
/// returns; otherwise returns at once.
pub(crate) fn if_asked() {
    #[cfg(target_os = "linux")]
    linux::if_asked();
}

/// Restricts this process to `spec` and execs `argv` (the sandbox CLI and the trampoline):
/// returns only with the reason it could not.
pub fn exec_sandboxed(spec: &SandboxSpec, argv: &[std::ffi::OsString]) -> String {
    #[cfg(target_os = "linux")]
    {
        linux::exec_sandboxed(spec, argv)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (spec, argv);
        "a policy is enforced only on Linux for now".into()
    }
}

/// One probe of the start canary: what was tried and whether the sandbox refused it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Probe {
    /// What was tried, in a few words.
    pub what: String,
    /// Whether it was refused (it must be).
    pub refused: bool,
    /// The error or outcome.
    pub detail: String,
}

/// Runs `program` as the start canary under `spec`: a process that applies the sandbox and
/// tries what it must refuse (write `outside`, a TCP connect to an unlisted port, a file-path
/// Unix socket, UDP). Returns each probe's result, or why the canary could not run.
pub fn canary(
    program: &std::path::Path,
    spec: &SandboxSpec,
    outside: &std::path::Path,
) -> Result<Vec<Probe>, String> {
    // Off Linux no handoff is set (nor can a policy be: `refuse`).
    #[cfg_attr(not(target_os = "linux"), allow(unused_mut))]
    let mut spec = spec.clone();
    let mut cmd = std::process::Command::new(program);
    // On Linux the canary runs under the server's supervisor, as a job does.
    #[cfg(target_os = "linux")]
    let handoff = {
        let h = Handoff::new().map_err(|e| format!("the canary's handoff socket: {e}"))?;
        h.prepare(&mut cmd);
        spec.handoff = Some(HANDOFF_FD);
        h
    };
    let json = serde_json::to_string(&spec).map_err(|e| e.to_string())?;
    let ran = |e: std::io::Error| format!("cannot run the canary {}: {e}", program.display());
    let child = cmd
        .arg(CANARY_ARG)
        .arg(json)
        .arg(outside)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(ran)?;
    #[cfg(target_os = "linux")]
    let _supervision = handoff.supervise(&spec);
    let out = child.wait_with_output().map_err(ran)?;
    serde_json::from_slice(&out.stdout).map_err(|_| {
        format!(
            "the canary ({}) failed: {}",
            program.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )
    })
}
