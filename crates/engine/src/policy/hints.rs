//! A job's refused calls, as its answers carry them: each kind of call with the command that
//! made it and how often, and one line per kind of refusal that names the profile and what the
//! person would set in the policy file to allow it (or says that nothing can). The agent reads
//! this instead of guessing from "Operation not permitted" in the output.

use std::collections::BTreeMap;
use std::path::Path;

use crate::job::RefusedCall;
use crate::sys::sandbox::{Refusal, RefusalKind};

/// What the answers say of `refusals` of a job under `profile` of the policy `file`.
pub(super) fn report(
    refusals: &[Refusal],
    profile: &str,
    file: &Path,
) -> (Vec<RefusedCall>, Vec<String>) {
    let calls = refusals
        .iter()
        .map(|r| RefusedCall {
            syscall: r.syscall.clone(),
            command: r.command.clone(),
            count: r.count,
        })
        .collect();
    // One hint per kind, with every command that met it.
    let mut kinds: BTreeMap<&RefusalKind, (&str, Vec<&str>)> = BTreeMap::new();
    for r in refusals {
        let (_, commands) = kinds.entry(&r.kind).or_insert((&r.syscall, Vec::new()));
        if !commands.contains(&r.command.as_str()) {
            commands.push(&r.command);
        }
    }
    let hints = kinds
        .into_iter()
        .map(|(kind, (syscall, commands))| hint(kind, syscall, &commands.join(", "), profile, file))
        .collect();
    (calls, hints)
}

fn hint(kind: &RefusalKind, syscall: &str, commands: &str, profile: &str, file: &Path) -> String {
    let table = format!("[profiles.{profile}] of {}", file.display());
    let net = format!("to allow, set network = \"on\" in {table}");
    let (what, fix) = match kind {
        RefusalKind::Udp => ("UDP sockets".to_owned(), net),
        RefusalKind::NonTcp => ("non-TCP IP sockets (MPTCP, SCTP, raw)".to_owned(), net),
        RefusalKind::Family => (
            "sockets of a family other than Unix, IP and netlink".to_owned(),
            net,
        ),
        RefusalKind::Unix => (
            "Unix sockets".to_owned(),
            format!("to allow connecting to one, add its path to unix_sockets in {table}"),
        ),
        RefusalKind::UnixPath(path) => (
            format!("a connect to the Unix socket {path}"),
            format!("to allow, add {path:?} to unix_sockets in {table}"),
        ),
        RefusalKind::UnixDatagram => (
            "Unix datagram sockets".to_owned(),
            "cannot be allowed on this kernel (below Landlock ABI 9 nothing can tell which \
             path a datagram goes to)"
                .to_owned(),
        ),
        RefusalKind::UnixAbstract => (
            "a connect to an abstract Unix socket".to_owned(),
            "cannot be allowed while unix_sockets is set on this kernel (below Landlock ABI 9)"
                .to_owned(),
        ),
        RefusalKind::IoUring => (
            "io_uring".to_owned(),
            "cannot be allowed (its operations bypass the sandbox's checks)".to_owned(),
        ),
        RefusalKind::Terminal => (
            "typing into a terminal (TIOCSTI, TIOCLINUX)".to_owned(),
            "cannot be allowed".to_owned(),
        ),
        RefusalKind::Memfd => (
            "an executable memfd".to_owned(),
            format!("allowed only without an exec allowlist: remove exec from {table}"),
        ),
        RefusalKind::TruncatePath(path) => (
            format!("truncating {path}, outside the write roots"),
            format!("to allow, add a directory holding it to write in {table}"),
        ),
        RefusalKind::ReadOnlyTruncate => (
            "an open with O_TRUNC but without write access".to_owned(),
            "cannot be allowed (open the file for writing to truncate it)".to_owned(),
        ),
        RefusalKind::Openat2 => (
            "openat2 (answered ENOSYS: callers fall back to openat)".to_owned(),
            "cannot be allowed (its flags cannot be checked)".to_owned(),
        ),
        RefusalKind::Other => (syscall.to_owned(), "cannot be allowed".to_owned()),
    };
    format!("profile {profile:?} refused {what} ({commands}): {fix}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(syscall: &str, kind: RefusalKind, command: &str, count: u64) -> Refusal {
        Refusal {
            syscall: syscall.into(),
            kind,
            command: command.into(),
            count,
        }
    }

    /// Each kind gets one hint naming the profile, the commands and the key to set.
    #[test]
    fn one_hint_per_kind_names_the_profile_the_commands_and_the_key() {
        let file = Path::new("/etc/p.toml");
        let (calls, hints) = report(
            &[
                refusal(
                    "socket(AF_INET, SOCK_DGRAM)",
                    RefusalKind::Udp,
                    "python3",
                    2,
                ),
                refusal("socket(AF_INET6, SOCK_DGRAM)", RefusalKind::Udp, "curl", 1),
                refusal("io_uring_setup", RefusalKind::IoUring, "python3", 1),
            ],
            "default",
            file,
        );
        assert_eq!(calls.len(), 3);
        assert_eq!(calls[0].count, 2);
        assert_eq!(
            hints,
            [
                "profile \"default\" refused UDP sockets (python3, curl): to allow, set \
                 network = \"on\" in [profiles.default] of /etc/p.toml",
                "profile \"default\" refused io_uring (python3): cannot be allowed (its \
                 operations bypass the sandbox's checks)",
            ]
        );
    }
}
