//! Seccomp user notification: the filter's refusals and, while a profile lists file-path Unix
//! sockets on a kernel whose Landlock cannot tell them apart (ABI < 9), the job's Unix socket
//! calls go to a supervisor in the server instead of being answered by the filter alone.
//!
//! - **The filter** ([`program`]): the rules of `filter.rs`, compiled with a placeholder
//!   action that is rewritten to `SECCOMP_RET_USER_NOTIF`, plus, when sockets are listed,
//!   `socket(AF_UNIX, ...)` and every `connect`. A job's clone child
//!   (`sys/unix/spawn_sandboxed.rs`) installs it with `SECCOMP_FILTER_FLAG_NEW_LISTENER` (and
//!   `WAIT_KILLABLE_RECV` where the kernel has it: a received call is interrupted only by
//!   SIGKILL) and sends the listener fd to the server before it execs the shell; the canary
//!   (a separate process) does the same through [`install`], on the socket it inherited as
//!   `HANDOFF_FD`.
//! - **The handoff** (`handoff.rs`, in the server's spawn): a socketpair per sandboxed spawn;
//!   the server's end is registered with the supervisor at once, which receives the listener
//!   on it (SCM_RIGHTS).
//! - **The supervisor** (`supervisor.rs`; one thread per server, started with the first
//!   registration): polls
//!   every job's listener and a wake fd; each notification is answered at once and never waits
//!   on the job. A refusal is counted (syscall, `/proc/<pid>/comm`) and answered EPERM; a Unix
//!   `socket` or `connect` is handled in `connect.rs`. A listener whose job ended is closed.
//!
//! Fail closed: when the listener is gone (the job ended, the server died), the kernel answers
//! every notified call with ENOSYS; nothing is ever allowed because nobody answered.

use std::collections::BTreeMap;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};

use seccompiler::{BpfProgram, SeccompAction, SeccompFilter, SeccompRule, TargetArch};

use super::super::SandboxSpec;

/// x86_64's x32 syscalls: the same calls under numbers with this bit set.
pub(super) const X32: i64 = 0x4000_0000;
/// The placeholder return data the filter is compiled with (as `SECCOMP_RET_TRACE | data`)
/// before each such return is rewritten to `SECCOMP_RET_USER_NOTIF`.
const PLACEHOLDER: u32 = 0x5e6;

/// Whether the job's Unix socket calls go to the supervisor: sockets are listed and Landlock
/// cannot control them itself.
pub(super) fn connects_on_behalf(spec: &SandboxSpec, abi: i32) -> bool {
    !spec.unix_sockets.is_empty() && abi < 9
}

fn err(e: impl std::fmt::Display) -> String {
    format!("seccomp: {e}")
}

/// A rule matching when argument `arg`'s low 32 bits, masked with `mask`, equal `value`.
fn flags_rule(arg: u8, value: u64, mask: u64) -> Result<SeccompRule, String> {
    let op = if mask == !0 {
        seccompiler::SeccompCmpOp::Eq
    } else {
        seccompiler::SeccompCmpOp::MaskedEq(mask)
    };
    let cond =
        seccompiler::SeccompCondition::new(arg, seccompiler::SeccompCmpArgLen::Dword, op, value)
            .map_err(err)?;
    SeccompRule::new(vec![cond]).map_err(err)
}

/// The filter of `spec` with every refusal (and the supervised Unix calls) notified.
pub(super) fn program(spec: &SandboxSpec) -> Result<BpfProgram, String> {
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = super::filter::rules(spec)?;
    let mut extra: Vec<(i64, Option<SeccompRule>)> = Vec::new();
    if connects_on_behalf(spec, super::landlock::kernel_abi()) {
        extra.push((
            libc::SYS_socket,
            Some(flags_rule(0, libc::AF_UNIX as u64, !0)?),
        ));
        extra.push((libc::SYS_connect, None));
    }
    // Truncation (`truncate.rs`): `truncate` and `openat2` always, an open only when it
    // truncates without write access (its flags: argument 1 of `open`, 2 of the others).
    extra.push((libc::SYS_truncate, None));
    extra.push((libc::SYS_openat2, None));
    let opens = [
        (libc::SYS_openat, 2),
        (libc::SYS_open_by_handle_at, 2),
        #[cfg(target_arch = "x86_64")]
        (libc::SYS_open, 1),
    ];
    let trunc_mask = (libc::O_TRUNC | libc::O_ACCMODE) as u64;
    for (nr, arg) in opens {
        for mode in [libc::O_RDONLY as u64, 3] {
            let rule = flags_rule(arg, libc::O_TRUNC as u64 | mode, trunc_mask)?;
            extra.push((nr, Some(rule)));
        }
    }
    #[cfg(target_arch = "x86_64")]
    {
        let x32: Vec<_> = extra.iter().map(|(nr, r)| (nr | X32, r.clone())).collect();
        extra.extend(x32);
    }
    for (nr, rule) in extra {
        match rule {
            // Any one matching rule notifies; an empty list notifies always.
            Some(r) => match rules.get_mut(&nr) {
                // Already notified always.
                Some(list) if list.is_empty() => {}
                Some(list) => list.push(r),
                None => {
                    rules.insert(nr, vec![r]);
                }
            },
            None => {
                rules.insert(nr, vec![]);
            }
        }
    }
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(err)?;
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Trace(PLACEHOLDER),
        arch,
    )
    .map_err(err)?;
    let mut program: BpfProgram = filter
        .try_into()
        .map_err(|e: seccompiler::BackendError| err(e))?;
    let placeholder = libc::SECCOMP_RET_TRACE | PLACEHOLDER;
    let ret_k = (libc::BPF_RET | libc::BPF_K) as u16;
    for insn in &mut program {
        if insn.code == ret_k && insn.k == placeholder {
            insn.k = libc::SECCOMP_RET_USER_NOTIF;
        }
    }
    Ok(program)
}

/// In a process of its own (the canary): installs `spec`'s notifying filter on this (only) thread and sends its
/// listener to the server over `handoff`; closes both. After this, every refusal waits for the
/// server's answer (or gets ENOSYS when nobody listens).
pub(super) fn install(spec: &SandboxSpec, handoff: RawFd) -> Result<(), String> {
    // SAFETY: this process owns the inherited handoff fd; taken once, closed on return.
    let handoff = unsafe { OwnedFd::from_raw_fd(handoff) };
    if !super::filter::available() {
        // Best-effort runs without a filter (its answers say so); the supervisor sees the
        // handoff's end of file and forgets the job.
        return if spec.best_effort {
            Ok(())
        } else {
            Err("this kernel has no seccomp filters".into())
        };
    }
    let program = program(spec)?;
    let fprog = libc::sock_fprog {
        len: u16::try_from(program.len()).map_err(|_| err("the filter is too long"))?,
        filter: program.as_ptr().cast_mut().cast(),
    };
    // SAFETY: prctl(PR_SET_NO_NEW_PRIVS) and seccomp(SET_MODE_FILTER) read only `fprog`, which
    // points into `program`, alive across the calls.
    let listener = unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return Err(err(std::io::Error::last_os_error()));
        }
        let set = |flags: libc::c_ulong| {
            libc::syscall(
                libc::SYS_seccomp,
                libc::SECCOMP_SET_MODE_FILTER,
                flags,
                &fprog as *const libc::sock_fprog,
            )
        };
        let mut fd =
            set(libc::SECCOMP_FILTER_FLAG_NEW_LISTENER
                | libc::SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV);
        if fd < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINVAL) {
            // Before Linux 5.19: no WAIT_KILLABLE_RECV.
            fd = set(libc::SECCOMP_FILTER_FLAG_NEW_LISTENER);
        }
        if fd < 0 {
            return Err(err(std::io::Error::last_os_error()));
        }
        OwnedFd::from_raw_fd(fd as RawFd)
    };
    super::handoff::send_fd(&handoff, &listener)
        .map_err(|e| format!("cannot hand the listener back: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `call` returns in a child under `spec`'s notifying filter whose listener is closed
    /// at once (no supervisor): the errno, or 0 if it was allowed.
    fn without_a_supervisor(spec: &SandboxSpec, call: fn() -> libc::c_long) -> i32 {
        let program = program(spec).expect("filter");
        let fprog = libc::sock_fprog {
            len: program.len() as u16,
            filter: program.as_ptr().cast_mut().cast(),
        };
        // SAFETY: the child makes only raw syscalls (no allocation, no lock) and _exits; the
        // parent reaps it.
        unsafe {
            let pid = libc::fork();
            assert!(pid >= 0, "fork");
            if pid == 0 {
                libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
                let fd = libc::syscall(
                    libc::SYS_seccomp,
                    libc::SECCOMP_SET_MODE_FILTER,
                    libc::SECCOMP_FILTER_FLAG_NEW_LISTENER,
                    &fprog as *const libc::sock_fprog,
                );
                if fd < 0 {
                    libc::_exit(100);
                }
                libc::close(fd as RawFd);
                let code = if call() >= 0 {
                    0
                } else {
                    *libc::__errno_location()
                };
                libc::_exit(code);
            }
            let mut status = 0;
            libc::waitpid(pid, &mut status, 0);
            assert!(libc::WIFEXITED(status), "status {status:#x}");
            libc::WEXITSTATUS(status)
        }
    }

    fn udp() -> libc::c_long {
        // SAFETY: a socket call; its fd is left to the child's exit.
        libc::c_long::from(unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM, 0) })
    }

    fn udp_without_a_supervisor(spec: &SandboxSpec) -> i32 {
        without_a_supervisor(spec, udp)
    }

    /// Every refusal of the compiled filter notifies (no placeholder is left), and `connect`
    /// is looked at only when sockets are listed on a kernel that needs it.
    #[test]
    fn the_filter_notifies_and_names_connect_only_for_listed_sockets() {
        let ret = (libc::BPF_RET | libc::BPF_K) as u16;
        let jeq = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
        let names_connect = |p: &BpfProgram| {
            p.iter()
                .any(|i| i.code == jeq && i64::from(i.k) == libc::SYS_connect)
        };
        let closed = SandboxSpec {
            net: Some(Default::default()),
            ..SandboxSpec::default()
        };
        let listed = SandboxSpec {
            unix_sockets: vec!["/run/x.sock".into()],
            ..closed.clone()
        };
        for spec in [&closed, &listed] {
            let p = program(spec).expect("filter");
            assert!(
                p.iter()
                    .any(|i| i.code == ret && i.k == libc::SECCOMP_RET_USER_NOTIF)
            );
            assert!(
                !p.iter().any(|i| i.code == ret
                    && i.k & libc::SECCOMP_RET_ACTION_FULL == libc::SECCOMP_RET_TRACE)
            );
        }
        assert!(!names_connect(&program(&closed).expect("filter")));
        let needed = connects_on_behalf(&listed, super::super::landlock::kernel_abi());
        assert_eq!(names_connect(&program(&listed).expect("filter")), needed);
    }

    /// Fail closed: with nobody listening, a notified call gets ENOSYS from the kernel, never
    /// the call; a call the filter does not name is untouched.
    #[test]
    fn without_a_supervisor_a_notified_call_fails_and_is_never_allowed() {
        if !super::super::filter::available() {
            eprintln!("skipped: no seccomp here");
            return;
        }
        let closed = SandboxSpec {
            net: Some(Default::default()),
            ..SandboxSpec::default()
        };
        assert_eq!(udp_without_a_supervisor(&closed), libc::ENOSYS);
        assert_eq!(udp_without_a_supervisor(&SandboxSpec::default()), 0);
    }

    /// Truncation goes to the supervisor (`truncate.rs`): `truncate` and `openat2` always, an
    /// open only when it has `O_TRUNC` without write access; every other open is untouched.
    #[test]
    fn truncation_is_notified_and_other_opens_are_not() {
        if !super::super::filter::available() {
            eprintln!("skipped: no seccomp here");
            return;
        }
        const DEV_NULL: &std::ffi::CStr = c"/dev/null";
        fn open(flags: libc::c_int) -> libc::c_long {
            // SAFETY: opens /dev/null; the fd is left to the child's exit.
            libc::c_long::from(unsafe { libc::open(DEV_NULL.as_ptr(), flags) })
        }
        let spec = SandboxSpec::default();
        type Call = fn() -> libc::c_long;
        let cases: [(&str, Call, i32); 7] = [
            (
                "O_RDONLY|O_TRUNC",
                || open(libc::O_RDONLY | libc::O_TRUNC),
                libc::ENOSYS,
            ),
            ("mode 3|O_TRUNC", || open(3 | libc::O_TRUNC), libc::ENOSYS),
            (
                "O_WRONLY|O_TRUNC",
                || open(libc::O_WRONLY | libc::O_TRUNC),
                0,
            ),
            ("O_RDWR|O_TRUNC", || open(libc::O_RDWR | libc::O_TRUNC), 0),
            ("O_RDONLY", || open(libc::O_RDONLY | libc::O_CLOEXEC), 0),
            (
                "truncate",
                // SAFETY: truncate of a path we own (the call never reaches the kernel here).
                || libc::c_long::from(unsafe { libc::truncate(DEV_NULL.as_ptr(), 0) }),
                libc::ENOSYS,
            ),
            (
                "openat2",
                || {
                    // SAFETY: open_how is plain data; openat2 reads it and the path.
                    unsafe {
                        let how: libc::open_how = std::mem::zeroed();
                        libc::syscall(
                            libc::SYS_openat2,
                            libc::AT_FDCWD,
                            DEV_NULL.as_ptr(),
                            &how as *const libc::open_how,
                            std::mem::size_of::<libc::open_how>(),
                        )
                    }
                },
                libc::ENOSYS,
            ),
        ];
        for (name, call, want) in cases {
            assert_eq!(without_a_supervisor(&spec, call), want, "{name}");
        }
    }
}
