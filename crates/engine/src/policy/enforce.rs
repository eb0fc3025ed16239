//! What this kernel enforces of a profile, said in words for its jobs' answers, and the start
//! canary that proves it. A profile the kernel cannot fully enforce is refused (fail closed)
//! unless it says `enforce = "best-effort"`; then every answer lists what is not enforced.

use std::path::{Path, PathBuf};

use super::{Policy, Profile};
use crate::sys::sandbox::{self, Support};

fn list(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

fn ports(p: &[u16]) -> String {
    if p.is_empty() {
        "none".into()
    } else {
        p.iter().map(u16::to_string).collect::<Vec<_>>().join(", ")
    }
}

/// Fills in `profile`'s report for `support`: what is enforced, what is a guardrail, what is
/// missing (which refuses the profile unless it is best-effort).
pub(super) fn describe(profile: &mut Profile, support: Support) {
    let s = &profile.spec;
    let abi = support.landlock_abi;
    let mut enforced = Vec::new();
    let mut missing = Vec::new();
    let mut need = |ok: bool, what: String, why: &str| {
        if ok {
            enforced.push(what);
        } else {
            missing.push(format!("{what} ({why})"));
        }
    };
    let no_landlock = format!("needs Landlock; this kernel has ABI {abi}");
    need(
        abi >= 3,
        format!(
            "writes, deletes and renames only under: {}, and the job's own TMPDIR",
            list(&s.write)
        ),
        &format!("needs Landlock ABI 3; this kernel has {abi}"),
    );
    need(
        abi >= 1,
        format!("reads only under: {}", list(&s.read)),
        &no_landlock,
    );
    need(
        abi >= 1,
        "no ptrace of, and no /proc/<pid>/mem of, processes outside the job".into(),
        &no_landlock,
    );
    need(
        abi >= 6,
        "no signals to processes outside the job; no abstract Unix sockets outside it".into(),
        &format!("needs Landlock ABI 6; this kernel has {abi}"),
    );
    let sc = support.seccomp;
    let no_seccomp = "needs seccomp";
    need(
        sc,
        "no io_uring; no TIOCSTI or TIOCLINUX".into(),
        no_seccomp,
    );
    if let Some(net) = &s.net {
        need(
            abi >= 4,
            format!(
                "TCP connect only to ports: {}; bind only: {}",
                ports(&net.connect),
                ports(&net.bind)
            ),
            &format!("needs Landlock ABI 4; this kernel has {abi}"),
        );
        need(
            sc,
            "no UDP (QUIC), MPTCP, raw or other non-TCP IP sockets".into(),
            no_seccomp,
        );
    }
    if s.unix_sockets.is_empty() {
        if abi >= 9 {
            enforced.push("no file-path Unix socket connects".into());
        } else {
            need(
                sc,
                "no Unix sockets at all (a stream socketpair works): Landlock < ABI 9 cannot tell paths"
                    .into(),
                no_seccomp,
            );
        }
    } else if abi >= 9 {
        enforced.push(format!(
            "file-path Unix socket connects only to: {}",
            list(&s.unix_sockets)
        ));
    } else {
        need(
            sc,
            format!(
                "file-path Unix socket connects only to: {} (seccomp connect-on-behalf: the \
                 server connects them for the job; no Unix datagram sockets, no abstract Unix \
                 socket connects, no Unix socket servers)",
                list(&s.unix_sockets)
            ),
            no_seccomp,
        );
    }
    let mut guardrail = Vec::new();
    if let Some(exec) = &s.exec {
        if abi >= 1 && sc {
            guardrail.push(format!(
                "exec only: {}, the shell and the ELF loader; no executable memfd (a guardrail: \
                 `ld.so PROGRAM` runs any readable program, and mapped code is not checked)",
                list(exec)
            ));
        } else {
            missing.push("the exec allowlist (needs Landlock and seccomp)".into());
        }
    }
    let report = &mut profile.report;
    report.enforced = enforced;
    report.guardrail = guardrail;
    if !missing.is_empty() {
        if s.best_effort {
            report.not_enforced = missing;
        } else {
            profile.refused = Some(format!(
                "this kernel cannot enforce: {}; add enforce = \"best-effort\" to the profile to \
                 run its jobs anyway",
                missing.join("; ")
            ));
        }
    }
}

/// A fresh directory outside every write root, where the canary tries to write (removed when
/// dropped). Under the temporary directory when that lies outside every root, otherwise beside
/// the policy file (which must lie outside them).
pub(super) struct CanaryDir(PathBuf);

impl CanaryDir {
    pub(super) fn new(policy: &Policy) -> Result<Self, String> {
        let inside_a_root = |dir: &Path| {
            let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
            policy
                .profiles
                .values()
                .any(|p| p.spec.write.iter().any(|w| dir.starts_with(w)))
        };
        let tmp = std::env::temp_dir();
        let parent = if inside_a_root(&tmp) {
            policy.file.parent().unwrap_or(Path::new("/")).to_path_buf()
        } else {
            tmp
        };
        let dir = parent.join(format!(".ptyjobs-canary-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir(&dir)
            .map_err(|e| format!("cannot make the canary's directory {}: {e}", dir.display()))?;
        Ok(Self(dir))
    }

    pub(super) fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for CanaryDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Says what the kernel enforces of `profile`, then (unless that already refuses it) runs its
/// canary with `program`: a probe that gets through refuses the profile, or with best-effort
/// is listed as not enforced.
pub(super) fn check(profile: &mut Profile, program: &Path, outside: &Path) {
    describe(profile, sandbox::support());
    if profile.refused.is_some() {
        return;
    }
    let through: Vec<String> = match sandbox::canary(program, &profile.spec, outside) {
        Ok(probes) => probes
            .into_iter()
            .filter(|p| !p.refused)
            .map(|p| format!("{}: {}", p.what, p.detail))
            .collect(),
        Err(e) => vec![e],
    };
    if through.is_empty() {
        return;
    }
    if profile.spec.best_effort {
        profile.report.not_enforced.extend(
            through
                .into_iter()
                .map(|t| format!("the canary got through: {t}")),
        );
    } else {
        profile.refused = Some(format!(
            "the start canary got through the sandbox: {}",
            through.join("; ")
        ));
    }
}
