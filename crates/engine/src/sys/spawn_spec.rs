//! What every platform's spawn is given: one [`SpawnSpec`] and one [`BaseEnv`], the same on
//! every platform. What goes into the environment (the job environment policy) is decided
//! above this layer, in `crate::jobenv`; a spawn only passes it on.

use std::collections::BTreeMap;
use std::ffi::{CString, OsString};
use std::path::PathBuf;
use std::sync::Arc;

use super::pty::Master;
use super::tree::Tree;

/// Everything needed to start one job's process.
#[derive(Debug, Clone)]
pub(crate) struct SpawnSpec {
    pub shell: PathBuf,
    pub command: String,
    pub cwd: PathBuf,
    /// The job's own variables, final: each replaces the base variable of the same name (and
    /// the job's marker is among them).
    pub env: BTreeMap<String, String>,
    pub cols: u16,
    pub rows: u16,
    /// The manager's base environment.
    pub base_env: Arc<BaseEnv>,
    /// Under a policy: the `ptyjobs` executable (the canary's and the `sandbox` CLI's; a job's
    /// spawn does not run it) and the sandbox the job's child applies before it execs the
    /// shell (Linux only: elsewhere a policy is refused before any job starts).
    pub sandbox: Option<(PathBuf, super::sandbox::SandboxSpec)>,
}

/// A started child, as every platform's spawn returns it.
pub(crate) struct Spawned {
    /// Its pid (Unix: also its process group and session id).
    pub pid: u32,
    /// Its process tree: the process group (Unix) or the Job Object (Windows).
    pub tree: Tree,
    /// The terminal's handle, shared by the reader, writes and resizes (made before the child
    /// started): the PTY master (Unix) or the pseudo console's pipes (Windows).
    pub master: Master,
    /// Its start time, when the spawn knows it without asking the process table (Linux: it
    /// fell within one tick of the boot clock); `None` means "read it".
    pub start: Option<u64>,
    /// Under a policy (Linux): the job's seccomp supervision (its refusals, its listener).
    pub supervision: Option<super::sandbox::Supervision>,
}

/// The environment every job of a manager starts from, built once per manager (reading and
/// copying the whole environment on every spawn was part of each start's cost).
#[derive(Debug)]
pub(crate) struct BaseEnv {
    vars: BTreeMap<OsString, OsString>,
    /// `KEY=value` of each entry of `vars`, in the same order, ready for `posix_spawn`.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    entries: Vec<CString>,
}

impl BaseEnv {
    /// The base environment `vars`, less any variable whose name or value holds a NUL byte
    /// (a process environment cannot carry one).
    pub(crate) fn new(mut vars: BTreeMap<OsString, OsString>) -> Self {
        vars.retain(|k, v| {
            !k.as_encoded_bytes().contains(&0) && !v.as_encoded_bytes().contains(&0)
        });
        let entries = vars
            .iter()
            .filter_map(|(k, v)| {
                CString::new([k.as_encoded_bytes(), b"=", v.as_encoded_bytes()].concat()).ok()
            })
            .collect();
        Self { vars, entries }
    }

    /// The variables, by name.
    #[cfg(test)]
    pub(crate) fn vars(&self) -> &BTreeMap<OsString, OsString> {
        &self.vars
    }

    /// The entries (`KEY=value`) of the base variables that `own` does not replace.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    pub(crate) fn entries_not_in<'a>(
        &'a self,
        own: &'a BTreeMap<String, String>,
    ) -> impl Iterator<Item = &'a CString> + 'a {
        self.vars
            .keys()
            .zip(&self.entries)
            .filter(|(k, _)| k.to_str().is_none_or(|k| !own.contains_key(k)))
            .map(|(_, e)| e)
    }

    /// The environment of one job: these variables, then `own` over them.
    #[cfg_attr(target_os = "linux", allow(dead_code))]
    pub(crate) fn with(&self, own: &BTreeMap<String, String>) -> BTreeMap<OsString, OsString> {
        let mut env = self.vars.clone();
        for (k, v) in own {
            env.insert(k.into(), v.into());
        }
        env
    }
}
