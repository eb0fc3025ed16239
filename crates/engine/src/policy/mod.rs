//! The person's policy: what jobs may write, read, reach and run, read once from a TOML file
//! at start (`file.rs`), resolved to absolute paths (`resolve.rs`), checked against what this
//! kernel enforces and proven by a canary (`enforce.rs`). A job runs under its profile's
//! sandbox (`crate::sys::sandbox`); nothing a job or an agent passes can widen it: a job may
//! only name a profile the file lists in `agent_profiles`.

mod enforce;
mod file;
mod hints;
mod resolve;
mod watch;

pub(crate) use watch::Watched;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
pub use crate::job::{JobPolicy, RefusedCall};
use crate::sys::sandbox::{NetPorts, SandboxSpec};
use file::{Place, RawNetwork};

/// The profile every job runs under unless it names another.
pub const DEFAULT_PROFILE: &str = "default";

/// A policy file, read, resolved and checked (see the module doc).
#[derive(Debug)]
pub struct Policy {
    file: PathBuf,
    agent_profiles: Vec<String>,
    profiles: BTreeMap<String, Profile>,
}

/// One profile: its sandbox (less the job's own TMPDIR), what it watches, and what this kernel
/// enforces of it.
#[derive(Debug, Clone)]
pub struct Profile {
    spec: SandboxSpec,
    watch: Vec<PathBuf>,
    report: JobPolicy,
    /// Why jobs under it are refused (the kernel cannot enforce it, or its canary got
    /// through), if they are.
    refused: Option<String>,
}

impl Policy {
    /// Reads and checks the policy file `file`; `program` is the executable that runs as each
    /// job's sandbox trampoline (and the canary). Every failure is a start error naming the
    /// file (and, where there is one, the line and the key).
    pub fn load(file: &Path, program: &Path) -> std::result::Result<Self, String> {
        let policy = Self::read(file)?;
        let canary_dir = enforce::CanaryDir::new(&policy)?;
        let mut policy = policy;
        for profile in policy.profiles.values_mut() {
            enforce::check(profile, program, canary_dir.path());
        }
        Ok(policy)
    }

    /// Reads and resolves `file` without asking the kernel anything.
    fn read(file: &Path) -> std::result::Result<Self, String> {
        if !crate::sys::sandbox::PLATFORM_ENFORCES {
            return Err(format!(
                "policy file {}: a policy is enforced only on Linux for now, so the server \
                 refuses to start with one here",
                file.display()
            ));
        }
        let text = std::fs::read_to_string(file)
            .map_err(|e| format!("policy file {}: {e}", file.display()))?;
        let canonical = file
            .canonicalize()
            .map_err(|e| format!("policy file {}: {e}", file.display()))?;
        let place = Place { file, text: &text };
        let raw = file::parse(&place)?;
        let cwd = std::env::current_dir().map_err(|e| e.to_string())?;
        let mut profiles = BTreeMap::new();
        for (name, raw) in raw.profiles.get_ref() {
            let profile = resolve_profile(&place, name, raw, &cwd)?;
            for root in &profile.spec.write {
                if canonical.starts_with(root) {
                    return Err(place.error(
                        raw.span().start,
                        &format!("profiles.{name}.write"),
                        format!(
                            "the policy file lies inside the write root {}: move it out of every \
                             write root, so no job can change it",
                            root.display()
                        ),
                    ));
                }
            }
            profiles.insert(name.clone(), profile);
        }
        if !profiles.contains_key(DEFAULT_PROFILE) {
            return Err(place.error(
                raw.profiles.span().start,
                "profiles",
                "there is no [profiles.default]: every job runs under it unless it names another",
            ));
        }
        let mut agent_profiles = Vec::new();
        for p in &raw.agent_profiles {
            if !profiles.contains_key(p.get_ref()) {
                return Err(place.error(
                    p.span().start,
                    "agent_profiles",
                    format!("there is no profile {:?}", p.get_ref()),
                ));
            }
            agent_profiles.push(p.get_ref().clone());
        }
        Ok(Self {
            file: canonical,
            agent_profiles,
            profiles,
        })
    }

    /// The policy file (canonical).
    pub fn file(&self) -> &Path {
        &self.file
    }

    /// The profile names, in order.
    pub fn profile_names(&self) -> impl Iterator<Item = &str> {
        self.profiles.keys().map(String::as_str)
    }

    /// What profile `name` enforces on this kernel, and why jobs under it are refused if they
    /// are.
    pub fn describe(&self, name: &str) -> Option<(JobPolicy, Option<String>)> {
        let p = self.profiles.get(name)?;
        Some((p.report.clone(), p.refused.clone()))
    }

    /// The profile a job names (`None`: the default). A job may name only the default and the
    /// profiles in `agent_profiles`.
    fn job_profile(&self, name: Option<&str>) -> Result<&Profile> {
        let name = name.unwrap_or(DEFAULT_PROFILE);
        let allowed = name == DEFAULT_PROFILE || self.agent_profiles.iter().any(|p| p == name);
        let profile = self.profiles.get(name).filter(|_| allowed).ok_or_else(|| {
            Error::InvalidArgument(format!(
                "profile {name:?} may not be named by a job: the policy file {} allows {}",
                self.file.display(),
                self.allowed_list()
            ))
        })?;
        if let Some(why) = &profile.refused {
            return Err(Error::Spawn(format!("profile {name:?} is refused: {why}")));
        }
        Ok(profile)
    }

    fn allowed_list(&self) -> String {
        std::iter::once(DEFAULT_PROFILE)
            .chain(self.agent_profiles.iter().map(String::as_str))
            .map(|p| format!("{p:?}"))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The sandbox of profile `name` (any profile: for a person's `ptyjobs sandbox`), its
    /// exec allowlist with `shell`.
    pub fn sandbox_spec(
        &self,
        name: &str,
        shell: &Path,
    ) -> std::result::Result<SandboxSpec, String> {
        let p = self
            .profiles
            .get(name)
            .ok_or_else(|| format!("there is no profile {name:?} in {}", self.file.display()))?;
        if let Some(why) = &p.refused {
            return Err(format!("profile {name:?} is refused: {why}"));
        }
        Ok(with_shell(p.spec.clone(), shell))
    }

    /// The sandbox and the answer of a job that names `profile`, with its own TMPDIR
    /// `tmpdir` (made here, inside no other job's) and `shell` allowed to run.
    pub(crate) fn for_job(
        &self,
        profile: Option<&str>,
        shell: &Path,
        tmpdir: PathBuf,
    ) -> Result<JobSandbox> {
        let p = self.job_profile(profile)?;
        std::fs::create_dir(&tmpdir).map_err(|e| {
            Error::Spawn(format!(
                "cannot make the job's TMPDIR {}: {e}",
                tmpdir.display()
            ))
        })?;
        // Canonical, as every root of the policy is (the supervisor compares resolved paths).
        let tmpdir = tmpdir.canonicalize().unwrap_or(tmpdir);
        let mut spec = with_shell(p.spec.clone(), shell);
        spec.write.push(tmpdir.clone());
        spec.tmpdir = Some(tmpdir);
        Ok(JobSandbox {
            spec,
            report: p.report.clone(),
            watch: p.watch.clone(),
            file: self.file.clone(),
        })
    }
}

/// What a job under a policy starts with.
#[derive(Debug, Clone)]
pub(crate) struct JobSandbox {
    /// What the trampoline applies.
    pub spec: SandboxSpec,
    /// What its answers say.
    pub report: JobPolicy,
    /// The files hashed before and after it.
    pub watch: Vec<PathBuf>,
    /// The policy file (its refusals' hints name it).
    pub file: PathBuf,
}

fn with_shell(mut spec: SandboxSpec, shell: &Path) -> SandboxSpec {
    if let Some(exec) = &mut spec.exec {
        exec.push(shell.to_path_buf());
    }
    spec
}

fn resolve_profile(
    place: &Place<'_>,
    name: &str,
    raw: &toml::Spanned<file::RawProfile>,
    cwd: &Path,
) -> std::result::Result<Profile, String> {
    let key = |k: &str| format!("profiles.{name}.{k}");
    let r = raw.get_ref();
    let write = resolve::existing(place, &key("write"), &r.write, cwd)?;
    let read = match &r.read {
        Some(read) => resolve::existing(place, &key("read"), read, cwd)?,
        None => vec![PathBuf::from("/")],
    };
    let net = match &r.network {
        None => Some(NetPorts::default()),
        Some(n) => match n.get_ref() {
            RawNetwork::Word(w) if w == "off" => Some(NetPorts::default()),
            RawNetwork::Word(w) if w == "on" => None,
            RawNetwork::Word(w) => {
                return Err(place.error(
                    n.span().start,
                    &key("network"),
                    format!("{w:?} is not \"off\", \"on\" or {{ connect = [...], bind = [...] }}"),
                ));
            }
            RawNetwork::Ports(p) => Some(NetPorts {
                connect: p.connect.clone(),
                bind: p.bind.clone(),
            }),
        },
    };
    let unix_sockets = resolve::existing(place, &key("unix_sockets"), &r.unix_sockets, cwd)?;
    let exec = match &r.exec {
        Some(list) => Some(resolve::programs(place, &key("exec"), list, cwd)?),
        None => None,
    };
    let watch = resolve::any(place, &key("watch"), &r.watch, cwd)?;
    let best_effort = match &r.enforce {
        None => false,
        Some(e) if e.get_ref() == "full" => false,
        Some(e) if e.get_ref() == "best-effort" => true,
        Some(e) => {
            return Err(place.error(
                e.span().start,
                &key("enforce"),
                format!("{:?} is not \"full\" or \"best-effort\"", e.get_ref()),
            ));
        }
    };
    let spec = SandboxSpec {
        profile: name.to_string(),
        write,
        read,
        net,
        unix_sockets,
        exec,
        tmpdir: None,
        best_effort,
        handoff: None,
    };
    Ok(Profile {
        report: JobPolicy {
            profile: name.to_string(),
            ..JobPolicy::default()
        },
        spec,
        watch,
        refused: None,
    })
}

#[cfg(test)]
mod tests;
