//! The seccomp half of the sandbox: what Landlock cannot refuse (on this kernel's ABI), refused
//! with EPERM by a filter installed after no_new_privs and kept across every exec:
//!
//! - io_uring (its operations bypass the socket and file hooks the rest relies on);
//! - the `TIOCSTI` and `TIOCLINUX` ioctls (typing into a terminal, the job's own included);
//! - while the network is not "on": every IP socket but TCP (UDP, QUIC, raw, SCTP, MPTCP)
//!   and every socket family but Unix, IP and netlink (packet, vsock, ...);
//! - while no file-path Unix socket is listed and Landlock cannot refuse their connects
//!   (ABI < 9): creating any Unix socket (a stream or seqpacket `socketpair` stays allowed: it
//!   reaches nobody); and on ABI < 9 always a datagram `socketpair` (it can `sendto` a path);
//! - with an exec allowlist: a memfd that could be executed (one without `MFD_NOEXEC_SEAL`).
//!
//! Arguments are compared as the kernel reads them (an `int` or `unsigned int` argument by its
//! low 32 bits), so high bits set by the caller change nothing.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen as Len, SeccompCmpOp as Op, SeccompCondition,
    SeccompFilter, SeccompRule, TargetArch,
};

use super::super::SandboxSpec;

const MFD_NOEXEC_SEAL: u64 = 8;
const IPPROTO_TCP: u64 = 6;
/// x86_64's x32 syscalls: the same calls under numbers with this bit set.
#[cfg(target_arch = "x86_64")]
const X32: i64 = 0x4000_0000;

pub(super) fn available() -> bool {
    // SAFETY: PR_GET_SECCOMP only reads this process's mode.
    unsafe { libc::prctl(libc::PR_GET_SECCOMP, 0, 0, 0, 0) >= 0 }
}

fn cond(arg: u8, op: Op, value: u64) -> Result<SeccompCondition, String> {
    SeccompCondition::new(arg, Len::Dword, op, value).map_err(|e| e.to_string())
}

fn rule(conds: Vec<SeccompCondition>) -> Result<SeccompRule, String> {
    SeccompRule::new(conds).map_err(|e| e.to_string())
}

/// Whether the filter refuses Unix sockets for `spec` on a kernel of Landlock ABI `abi`.
pub(super) fn denies_unix_sockets(spec: &SandboxSpec, abi: i32) -> bool {
    spec.unix_sockets.is_empty() && abi < 9
}

/// The rules of `spec`'s filter: syscall number → rules (any one matching refuses the call;
/// an empty list refuses it always).
pub(super) fn rules(spec: &SandboxSpec) -> Result<BTreeMap<i64, Vec<SeccompRule>>, String> {
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for nr in [
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
    ] {
        rules.insert(nr, vec![]);
    }
    // The request's type differs between targets (an `unsigned long` or an `int`).
    #[allow(clippy::unnecessary_cast)]
    let (tiocsti, tioclinux) = (libc::TIOCSTI as u64, libc::TIOCLINUX as u64);
    rules.insert(
        libc::SYS_ioctl,
        vec![
            rule(vec![cond(1, Op::Eq, tiocsti)?])?,
            rule(vec![cond(1, Op::Eq, tioclinux)?])?,
        ],
    );
    let mut socket = Vec::new();
    if denies_unix_sockets(spec, super::landlock::kernel_abi()) {
        socket.push(rule(vec![cond(0, Op::Eq, libc::AF_UNIX as u64)?])?);
    }
    if spec.net.is_some() {
        // Only Unix, IP and netlink sockets (netlink: getaddrinfo and `ip` read interfaces).
        socket.push(rule(
            [
                libc::AF_UNIX,
                libc::AF_INET,
                libc::AF_INET6,
                libc::AF_NETLINK,
            ]
            .iter()
            .map(|&f| cond(0, Op::Ne, f as u64))
            .collect::<Result<_, _>>()?,
        )?);
        for family in [libc::AF_INET, libc::AF_INET6] {
            let family = family as u64;
            // Any type but a stream (its low four bits; the rest are flags).
            for ty in [
                libc::SOCK_DGRAM,
                libc::SOCK_RAW,
                libc::SOCK_RDM,
                libc::SOCK_SEQPACKET,
                10, // SOCK_PACKET (deprecated in libc)
            ] {
                socket.push(rule(vec![
                    cond(0, Op::Eq, family)?,
                    cond(1, Op::MaskedEq(0xf), ty as u64)?,
                ])?);
            }
            // A stream of any protocol but TCP (MPTCP is 262, SCTP 132).
            socket.push(rule(vec![
                cond(0, Op::Eq, family)?,
                cond(2, Op::Gt, IPPROTO_TCP)?,
            ])?);
            socket.push(rule(vec![
                cond(0, Op::Eq, family)?,
                cond(2, Op::Gt, 0)?,
                cond(2, Op::Lt, IPPROTO_TCP)?,
            ])?);
        }
    }
    if !socket.is_empty() {
        rules.insert(libc::SYS_socket, socket);
    }
    if super::landlock::kernel_abi() < 9 {
        // A Unix datagram socket, even of a pair, can `sendto` any path (SOCK_RAW is one too).
        let dgram = [libc::SOCK_DGRAM, libc::SOCK_RAW].map(|ty| {
            rule(vec![
                cond(0, Op::Eq, libc::AF_UNIX as u64)?,
                cond(1, Op::MaskedEq(0xf), ty as u64)?,
            ])
        });
        rules.insert(
            libc::SYS_socketpair,
            dgram.into_iter().collect::<Result<_, _>>()?,
        );
    }
    if spec.exec.is_some() {
        rules.insert(
            libc::SYS_memfd_create,
            vec![rule(vec![cond(1, Op::MaskedEq(MFD_NOEXEC_SEAL), 0)?])?],
        );
    }
    #[cfg(target_arch = "x86_64")]
    {
        // The x32 numbers of the same calls (x32's own ioctl is 514).
        let mut x32: Vec<(i64, Vec<SeccompRule>)> =
            rules.iter().map(|(&nr, r)| (nr | X32, r.clone())).collect();
        if let Some(ioctl) = rules.get(&libc::SYS_ioctl) {
            x32.push((514 | X32, ioctl.clone()));
        }
        rules.extend(x32);
    }
    Ok(rules)
}

/// Installs `spec`'s filter on this thread (the trampoline has only one).
pub(super) fn apply(spec: &SandboxSpec) -> Result<(), String> {
    match program(spec)? {
        Some(program) => seccompiler::apply_filter(&program).map_err(|e| format!("seccomp: {e}")),
        None => Ok(()),
    }
}

/// `spec`'s filter, compiled (for a process that installs it itself, see
/// `sys/unix/spawn_sandboxed.rs`); `None` only when the kernel has no seccomp filters and
/// `spec` is best-effort.
pub(super) fn program(spec: &SandboxSpec) -> Result<Option<BpfProgram>, String> {
    if !available() {
        return if spec.best_effort {
            Ok(None)
        } else {
            Err("this kernel has no seccomp filters".into())
        };
    }
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(|e| e.to_string())?;
    let filter = SeccompFilter::new(
        rules(spec)?,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(|e| e.to_string())?;
    let program: BpfProgram = filter
        .try_into()
        .map_err(|e: seccompiler::BackendError| e.to_string())?;
    Ok(Some(program))
}
