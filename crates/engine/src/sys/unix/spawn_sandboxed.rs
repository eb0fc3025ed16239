//! Starting a job's shell inside its sandbox with one `clone(CLONE_VM | CLONE_VFORK)` and one
//! `execve`: the child restricts itself and execs the shell, with no second program between.
//!
//! The sandbox used to be applied by a trampoline (the server's own executable run as
//! `ptyjobs __ptyjobs-sandbox-exec <spec> <shell> -c <cmd>`), which cost each job an exec of
//! a large binary, its runtime's start, a JSON parse and the opening of every root: about
//! 1–2 ms (docs/BENCHMARKS.md). Here the server makes the sandbox ready
//! ([`crate::sys::sandbox::prepare`]: the Landlock ruleset fd, the compiled filter) and the
//! child only does what `posix_spawn` does (`spawn.rs`) plus three system calls.
//!
//! The child shares the server's memory (`CLONE_VM`) and runs on a stack of its own while the
//! spawning thread waits (`CLONE_VFORK`) until it has exec'd or exited; the server's other
//! threads go on. So the child must not allocate, lock or unwind: everything it uses is made
//! before the clone, it makes only system calls, and it reports a failure through the shared
//! [`Report`]. Every signal is blocked in the spawning thread across the clone, so no handler
//! of the server ever runs in the child; the child sets every disposition to the default and
//! then unblocks.
//!
//! Fail closed: any step that fails ends the child with `_exit(127)` before the shell runs,
//! and the spawn returns an error naming the step (the child is reaped).

use std::ffi::CString;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::ptr::null_mut;
use std::sync::atomic::{AtomicI32, Ordering};

use crate::error::{Error, Result};
use crate::sys::sandbox::{FdMessage, Handoff, SandboxSpec};
use crate::sys::spawn_spec::SpawnSpec;

/// The child's stack. It runs a few libc calls only; glibc's own `posix_spawn` child uses
/// less.
const STACK: usize = 64 * 1024;

/// The steps of the child, in order (a failure reports its index).
const STEPS: [&str; 9] = [
    "reset the signal actions",
    "start a new session",
    "open the terminal",
    "make the terminal fds 0, 1 and 2",
    "chdir",
    "set no_new_privs",
    "landlock_restrict_self",
    "install the seccomp filter",
    "hand the seccomp listener to the server",
];
const EXEC_STEP: i32 = STEPS.len() as i32;

/// How the child ended before its exec, written by the child, read by the server once the
/// clone has returned (the child has exec'd or exited by then).
struct Report {
    /// The step that failed; -1: none (the exec happened).
    step: AtomicI32,
    /// Its errno.
    errno: AtomicI32,
}

/// Everything the child reads: made before the clone, alive until the clone returns.
struct Child<'a> {
    shell: &'a CString,
    argv: &'a [*mut libc::c_char],
    envp: &'a [*mut libc::c_char],
    slave: &'a CString,
    cwd: &'a CString,
    ruleset: libc::c_int,
    filter: Option<&'a libc::sock_fprog>,
    /// The child's end of the handoff socket (close-on-exec) and the message that carries the
    /// listener over it: made here, its fd slot filled in by the child.
    handoff: libc::c_int,
    msg: &'a libc::msghdr,
    fd_slot: *mut libc::c_int,
    default_action: &'a libc::sigaction,
    empty: &'a libc::sigset_t,
    report: &'a Report,
}

fn cstring(bytes: &[u8], what: &str) -> Result<CString> {
    CString::new(bytes).map_err(|_| Error::InvalidArgument(format!("{what} contains a NUL byte")))
}

/// Starts `spec`'s shell on the terminal `slave_path` as the leader of a new session, inside
/// `sandbox`. Returns its pid once it has exec'd, and the handoff socket its seccomp listener
/// was sent on (for the supervisor); an error (and no job) when the sandbox cannot be made or
/// applied.
pub(crate) fn start(
    spec: &SpawnSpec,
    sandbox: &SandboxSpec,
    slave_path: &str,
) -> Result<(u32, Handoff)> {
    let handoff =
        Handoff::new().map_err(|e| Error::Spawn(format!("the sandbox's handoff socket: {e}")))?;
    let ready = crate::sys::sandbox::prepare(sandbox).map_err(|e| {
        Error::Spawn(format!(
            "profile {:?} cannot be enforced: {e}",
            sandbox.profile
        ))
    })?;
    let shell = cstring(spec.shell.as_os_str().as_bytes(), "shell")?;
    let args = [
        shell.clone(),
        cstring(b"-c", "")?,
        cstring(spec.command.as_bytes(), "command")?,
    ];
    // The job's environment, less the socket variables, with its sandbox's own variables.
    let mut vars = spec.base_env.with(&spec.env);
    for v in ready.env_remove {
        vars.remove(std::ffi::OsStr::new(v));
    }
    for (k, v) in &ready.env_set {
        vars.insert((*k).into(), v.clone());
    }
    let env: Vec<CString> = vars
        .iter()
        .map(|(k, v)| {
            let mut e = k.as_bytes().to_vec();
            e.push(b'=');
            e.extend_from_slice(v.as_bytes());
            cstring(&e, "environment")
        })
        .collect::<Result<_>>()?;
    let slave = cstring(slave_path.as_bytes(), "terminal path")?;
    let cwd = cstring(spec.cwd.as_os_str().as_bytes(), "cwd")?;
    let mut argv: Vec<*mut libc::c_char> = args.iter().map(|a| a.as_ptr().cast_mut()).collect();
    argv.push(null_mut());
    let mut envp: Vec<*mut libc::c_char> = env.iter().map(|e| e.as_ptr().cast_mut()).collect();
    envp.push(null_mut());
    let fprog = match &ready.filter {
        Some(f) => Some(libc::sock_fprog {
            len: u16::try_from(f.len())
                .map_err(|_| Error::Spawn("the seccomp filter is too long".into()))?,
            filter: f.as_ptr().cast_mut(),
        }),
        None => None,
    };
    // SAFETY: zeroed sigaction/sigset_t are valid values; sigemptyset initialises the set.
    let (default_action, empty) = unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = libc::SIG_DFL;
        libc::sigemptyset(&mut action.sa_mask);
        let mut empty: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut empty);
        (action, empty)
    };
    // The message that hands the listener over (one byte, one SCM_RIGHTS fd), whose fd slot
    // the child fills in (it shares this memory).
    let mut message = FdMessage::new();
    let (msg, fd_slot) = message.header();
    let report = Report {
        step: AtomicI32::new(-1),
        errno: AtomicI32::new(0),
    };
    let child = Child {
        shell: &shell,
        argv: &argv,
        envp: &envp,
        slave: &slave,
        cwd: &cwd,
        ruleset: ready.ruleset.as_ref().map_or(-1, |fd| fd.as_raw_fd()),
        filter: fprog.as_ref(),
        handoff: handoff.child_end(),
        msg: &msg,
        fd_slot,
        default_action: &default_action,
        empty: &empty,
        report: &report,
    };
    let mut stack = vec![0u8; STACK];
    // The stack grows down from its end, 16-byte aligned as the ABIs want.
    let top = (stack.as_mut_ptr() as usize + STACK) & !15;
    // SAFETY: every signal is blocked in this thread across the clone (restored below), so no
    // handler runs on the child's stack; the child reads `child` (alive until the clone
    // returns: CLONE_VFORK suspends this thread until the child execs or exits) and makes only
    // system calls; `stack` outlives the child's use of it for the same reason.
    let pid = unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
        let pid = libc::clone(
            run_child,
            top as *mut libc::c_void,
            libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
            std::ptr::from_ref(&child).cast_mut().cast(),
        );
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, null_mut());
        pid
    };
    drop(stack);
    if pid < 0 {
        return Err(Error::Spawn(format!(
            "{}: {}",
            spec.shell.display(),
            std::io::Error::last_os_error()
        )));
    }
    let step = report.step.load(Ordering::Acquire);
    if step >= 0 {
        // The child ended without running the shell: reap it.
        let mut status = 0;
        // SAFETY: waits for our own child only.
        while unsafe { libc::waitpid(pid, &mut status, 0) } < 0
            && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted
        {}
        let errno = std::io::Error::from_raw_os_error(report.errno.load(Ordering::Acquire));
        let what = usize::try_from(step)
            .ok()
            .and_then(|s| STEPS.get(s))
            .copied();
        return Err(Error::Spawn(match what {
            Some(what) => format!(
                "profile {:?}: the job's sandbox could not be applied ({what}: {errno}); \
                 the job did not run",
                sandbox.profile
            ),
            None => format!("{}: {errno}", spec.shell.display()),
        }));
    }
    Ok((u32::try_from(pid).unwrap_or_default(), handoff))
}

/// The child: restricts itself and execs the shell, or reports the step that failed and exits.
/// Only system calls (and their libc wrappers): it shares the server's memory.
extern "C" fn run_child(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the `Child` the server made, alive while this runs (see `start`).
    let c = unsafe { &*(arg as *const Child<'_>) };
    let fail = |step: i32| -> libc::c_int {
        let errno = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
        c.report.errno.store(errno, Ordering::Release);
        c.report.step.store(step, Ordering::Release);
        // SAFETY: _exit ends this process at once (no atexit handlers: they are the server's).
        unsafe { libc::_exit(127) }
    };
    // SAFETY: each call gets pointers into `c`, valid for the call.
    unsafe {
        // Every signal at its default (the server's handlers live in the server's memory and
        // the server ignores SIGPIPE); 32 and 33 are libc's own and refused, harmlessly.
        for sig in 1..libc::SIGRTMAX() + 1 {
            if sig == libc::SIGKILL || sig == libc::SIGSTOP {
                continue;
            }
            if libc::sigaction(sig, c.default_action, null_mut()) < 0
                && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINVAL)
            {
                return fail(0);
            }
        }
        if libc::setsid() < 0 {
            return fail(1);
        }
        // Opened after setsid, without O_NOCTTY: the slave becomes the controlling terminal.
        let fd = libc::open(c.slave.as_ptr(), libc::O_RDWR);
        if fd < 0 {
            return fail(2);
        }
        for target in 0..3 {
            if fd != target && libc::dup2(fd, target) < 0 {
                return fail(3);
            }
        }
        if fd > 2 {
            libc::close(fd);
        }
        if libc::chdir(c.cwd.as_ptr()) < 0 {
            return fail(4);
        }
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 {
            return fail(5);
        }
        if c.ruleset >= 0 && libc::syscall(libc::SYS_landlock_restrict_self, c.ruleset, 0u32) < 0 {
            return fail(6);
        }
        if let Some(prog) = c.filter {
            let set = |flags: libc::c_ulong| {
                libc::syscall(
                    libc::SYS_seccomp,
                    libc::SECCOMP_SET_MODE_FILTER,
                    flags,
                    std::ptr::from_ref(prog),
                )
            };
            // A received call is interrupted only by SIGKILL (see notify.rs); before Linux
            // 5.19 the kernel does not know the flag.
            let mut listener = set(libc::SECCOMP_FILTER_FLAG_NEW_LISTENER
                | libc::SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV);
            if listener < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINVAL)
            {
                listener = set(libc::SECCOMP_FILTER_FLAG_NEW_LISTENER);
            }
            if listener < 0 {
                return fail(7);
            }
            std::ptr::write_unaligned(c.fd_slot, listener as libc::c_int);
            if libc::sendmsg(c.handoff, c.msg, libc::MSG_NOSIGNAL) < 0 {
                return fail(8);
            }
            libc::close(listener as libc::c_int);
        }
        libc::sigprocmask(libc::SIG_SETMASK, c.empty, null_mut());
        libc::execve(
            c.shell.as_ptr(),
            c.argv.as_ptr().cast(),
            c.envp.as_ptr().cast(),
        );
        fail(EXEC_STEP)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::sys::sandbox::NetPorts;

    fn spec(shell: &str, cwd: std::path::PathBuf) -> SpawnSpec {
        SpawnSpec {
            shell: shell.into(),
            command: "true".into(),
            cwd,
            env: Default::default(),
            cols: 80,
            rows: 24,
            base_env: Arc::new(crate::jobenv::base(None)),
            sandbox: None,
        }
    }

    fn sandbox() -> SandboxSpec {
        SandboxSpec {
            profile: "test".into(),
            write: vec![std::env::temp_dir()],
            read: vec!["/".into()],
            net: Some(NetPorts::default()),
            ..Default::default()
        }
    }

    /// A step of the child that fails (here its chdir, then its exec) ends it before the shell
    /// runs: the spawn is an error naming the step, not a job.
    #[test]
    fn a_failing_step_is_an_error_naming_it_and_no_job() {
        let s = crate::sys::sandbox::support();
        if s.landlock_abi < 6 || !s.seccomp {
            eprintln!("skipped: this kernel cannot enforce a sandbox ({s:?})");
            return;
        }
        let (_master, slave) = crate::sys::pty::open_pty(80, 24).expect("pty");
        let gone = std::env::temp_dir().join(format!("ptyjobs-no-such-dir-{}", std::process::id()));
        let e = start(
            &spec(super::super::spawn::DEFAULT_SHELL, gone),
            &sandbox(),
            &slave,
        )
        .expect_err("a missing cwd");
        assert!(e.to_string().contains("chdir"), "{e}");
        let e = start(
            &spec("/no/such/shell", std::env::temp_dir()),
            &sandbox(),
            &slave,
        )
        .expect_err("a missing shell");
        assert!(e.to_string().contains("/no/such/shell"), "{e}");
        let (pid, _handoff) = start(
            &spec(super::super::spawn::DEFAULT_SHELL, std::env::temp_dir()),
            &sandbox(),
            &slave,
        )
        .expect("a good spawn");
        let mut status = 0;
        // SAFETY: waits for the child just started.
        let waited = unsafe { libc::waitpid(pid as libc::pid_t, &mut status, 0) };
        assert_eq!(waited, pid as libc::pid_t);
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "{status}"
        );
    }
}
