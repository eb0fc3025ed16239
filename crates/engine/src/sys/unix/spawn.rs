//! Start a job's shell as the leader of a new session whose controlling terminal is its PTY.
//!
//! On Linux this is one `posix_spawn` with `POSIX_SPAWN_SETSID`, the slave opened by path as
//! fd 0 (a session leader without a terminal acquires the first one it opens) and dup'd to 1
//! and 2. glibc runs it as `clone(CLONE_VM | CLONE_VFORK)`, so its cost does not grow with the
//! server: `fork()` (which any `pre_exec` hook forces) copies the page tables and took 70 ms per
//! spawn here with 1,000 jobs' reader threads alive, against well under a millisecond.
//! The price is `PR_SET_PDEATHSIG`, which needs code in the child: when the server dies, the
//! PTY hang-up (its masters close) sends SIGHUP to each job's session, and tests prove no
//! process is left.
//!
//! Why not portable-pty: it silently runs a bad `cwd` in `$HOME`, forks through `pre_exec`,
//! signals only the leader, blocks on kill, and its writer sends `\n` + ^D when dropped.

use crate::error::{Error, Result};
use crate::sys::Leader;
use crate::sys::pty;
pub(crate) use crate::sys::spawn_spec::{SpawnSpec, Spawned};
use crate::sys::tree::Tree;

/// The shell a job's command runs in unless configured otherwise.
pub(crate) const DEFAULT_SHELL: &str = "/bin/sh";

/// What `GIT_EDITOR`, `EDITOR` and `VISUAL` run in a job unless its own `env` names an editor:
/// an editor would wait forever for keys nobody types, so this one fails at once and says why.
pub(crate) const NO_EDITOR: &str = "sh -c 'echo \"ptyjobs: no interactive editor in a background job; \
pass the text on the command line (git commit -m ...)\" >&2; exit 1'";

/// Whether the environment variable named `name` is the one called `wanted`: on Unix, names
/// are compared exactly.
pub(crate) fn same_env_name(name: &std::ffi::OsStr, wanted: &str) -> bool {
    name == wanted
}

#[cfg(target_os = "linux")]
fn cstring(bytes: &[u8], what: &str) -> Result<std::ffi::CString> {
    std::ffi::CString::new(bytes)
        .map_err(|_| Error::InvalidArgument(format!("{what} contains a NUL byte")))
}

/// Starts `spec` on a new PTY. Everything that can fail for want of resources (the PTY, its
/// flags) is done before the child starts, so a failure leaves no child.
pub(crate) fn spawn(spec: &SpawnSpec) -> Result<Spawned> {
    let (master, slave_path) = pty::open_pty(spec.cols, spec.rows)?;
    pty::set_nonblocking(&master)?;
    let before = start_clock();
    // Under a policy, also the socket the job's child handed its seccomp listener back on.
    #[cfg(target_os = "linux")]
    let (pid, handoff) = start(spec, &slave_path)?;
    #[cfg(not(target_os = "linux"))]
    let pid = start(spec, &slave_path)?;
    // First: the sooner, the fewer processes the shell can have started with the raised limit.
    crate::sys::limits::restore_for_child(pid);
    let started = before.filter(|&b| start_clock() == Some(b));
    #[cfg(target_os = "linux")]
    let supervision = match (handoff, &spec.sandbox) {
        (Some(h), Some((_, sandbox))) => h.supervise(sandbox),
        _ => None,
    };
    #[cfg(not(target_os = "linux"))]
    let supervision = None;
    Ok(Spawned {
        pid,
        tree: Tree::new(pid),
        master,
        start: started,
        supervision,
    })
}

/// The clock `/proc/<pid>/stat`'s `starttime` is read on, now: clock ticks since boot (the
/// kernel takes a process's start from the boot-time clock when it creates it). A process
/// created between two readings that agree has that start time, so a spawn bracketed so knows
/// its child's start time without reading `/proc` — where the read waits while the child is
/// still in `execve` (about a millisecond of every start here). `None` off Linux.
fn start_clock() -> Option<u64> {
    #[cfg(target_os = "linux")]
    {
        let now = rustix::time::clock_gettime(rustix::time::ClockId::Boottime);
        let hz = rustix::param::clock_ticks_per_second();
        // The kernel's nsec_to_clock_t: whole ticks, rounded down.
        let ns_per_tick = 1_000_000_000u64.checked_div(hz)?;
        let ns =
            u64::try_from(now.tv_sec).ok()? * 1_000_000_000 + u64::try_from(now.tv_nsec).ok()?;
        Some(ns / ns_per_tick)
    }
    #[cfg(not(target_os = "linux"))]
    {
        None
    }
}

/// Reaps a child whose start was abandoned (it has just been sent SIGKILL), so no zombie is
/// left.
pub(crate) fn reap_abandoned(leader: &Leader) {
    // A pid out of range is no child of ours (and `None` would wait for any child).
    let Some(pid) = pty::pid(leader.pid) else {
        return;
    };
    leader.reap(|| {
        loop {
            match rustix::process::waitpid(Some(pid), rustix::process::WaitOptions::empty()) {
                Err(rustix::io::Errno::INTR) => continue,
                _ => break Some(()),
            }
        }
    });
}

/// Starts the job's shell; under a policy, also returns the handoff socket its sandboxed child
/// sends its seccomp listener back on.
#[cfg(target_os = "linux")]
fn start(
    spec: &SpawnSpec,
    slave_path: &str,
) -> Result<(u32, Option<crate::sys::sandbox::Handoff>)> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    use std::ptr::null_mut;

    // Under a policy the child applies the sandbox itself before it execs the shell, and
    // hands its seccomp listener to the server over the handoff socket.
    if let Some((_, sandbox)) = &spec.sandbox {
        return super::spawn_sandboxed::start(spec, sandbox, slave_path)
            .map(|(pid, handoff)| (pid, Some(handoff)));
    }
    let shell = cstring(spec.shell.as_os_str().as_bytes(), "shell")?;
    let args = [
        shell.clone(),
        cstring(b"-c", "")?,
        cstring(spec.command.as_bytes(), "command")?,
    ];
    // The base environment, less what the job's own variables replace, then those.
    let own: Vec<CString> = spec
        .env
        .iter()
        .map(|(k, v)| cstring(format!("{k}={v}").as_bytes(), "environment"))
        .collect::<Result<_>>()?;
    let inherited = spec.base_env.entries_not_in(&spec.env);
    let slave = cstring(slave_path.as_bytes(), "terminal path")?;
    let cwd = cstring(spec.cwd.as_os_str().as_bytes(), "cwd")?;
    let mut argv: Vec<*mut libc::c_char> = args.iter().map(|a| a.as_ptr().cast_mut()).collect();
    argv.push(null_mut());
    let mut envp: Vec<*mut libc::c_char> = inherited
        .chain(&own)
        .map(|e| e.as_ptr().cast_mut())
        .collect();
    envp.push(null_mut());

    let check = |rc: libc::c_int, what: &str| {
        if rc == 0 {
            Ok(())
        } else {
            Err(Error::Spawn(format!(
                "{what}: {}",
                std::io::Error::from_raw_os_error(rc)
            )))
        }
    };
    // SAFETY: the attribute and file-action objects are initialised before use and destroyed
    // on every path below; every pointer handed to posix_spawn points into CStrings and
    // vectors that outlive the call, and argv/envp are NULL-terminated.
    unsafe {
        let mut attr: libc::posix_spawnattr_t = std::mem::zeroed();
        let mut actions: libc::posix_spawn_file_actions_t = std::mem::zeroed();
        check(
            libc::posix_spawnattr_init(&mut attr),
            "posix_spawnattr_init",
        )?;
        if let Err(e) = check(
            libc::posix_spawn_file_actions_init(&mut actions),
            "file actions",
        ) {
            libc::posix_spawnattr_destroy(&mut attr);
            return Err(e);
        }
        let result = (|| {
            // A new session, an empty signal mask, and every signal at its default action
            // (the server ignores SIGPIPE; a job must not inherit that).
            let mut all: libc::sigset_t = std::mem::zeroed();
            let mut none: libc::sigset_t = std::mem::zeroed();
            libc::sigfillset(&mut all);
            libc::sigemptyset(&mut none);
            let flags = libc::POSIX_SPAWN_SETSID
                | libc::POSIX_SPAWN_SETSIGMASK as libc::c_short
                | libc::POSIX_SPAWN_SETSIGDEF as libc::c_short;
            check(libc::posix_spawnattr_setflags(&mut attr, flags), "setflags")?;
            check(
                libc::posix_spawnattr_setsigmask(&mut attr, &none),
                "setsigmask",
            )?;
            check(
                libc::posix_spawnattr_setsigdefault(&mut attr, &all),
                "setsigdefault",
            )?;
            // Opened after setsid, without O_NOCTTY: the slave becomes the controlling
            // terminal of the new session.
            check(
                libc::posix_spawn_file_actions_addopen(
                    &mut actions,
                    0,
                    slave.as_ptr(),
                    libc::O_RDWR,
                    0,
                ),
                "open the terminal",
            )?;
            check(
                libc::posix_spawn_file_actions_adddup2(&mut actions, 0, 1),
                "dup2",
            )?;
            check(
                libc::posix_spawn_file_actions_adddup2(&mut actions, 0, 2),
                "dup2",
            )?;
            check(
                libc::posix_spawn_file_actions_addchdir_np(&mut actions, cwd.as_ptr()),
                "chdir",
            )?;
            let mut pid: libc::pid_t = 0;
            let rc = libc::posix_spawn(
                &mut pid,
                shell.as_ptr(),
                &actions,
                &attr,
                argv.as_ptr(),
                envp.as_ptr(),
            );
            if rc != 0 {
                return Err(Error::Spawn(format!(
                    "{}: {}",
                    spec.shell.display(),
                    std::io::Error::from_raw_os_error(rc)
                )));
            }
            Ok(u32::try_from(pid).unwrap_or_default())
        })();
        libc::posix_spawn_file_actions_destroy(&mut actions);
        libc::posix_spawnattr_destroy(&mut attr);
        result.map(|pid| (pid, None))
    }
}

#[cfg(not(target_os = "linux"))]
fn start(spec: &SpawnSpec, slave_path: &str) -> Result<u32> {
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};

    crate::sys::sandbox::refuse(spec.sandbox.as_ref())?;

    let slave = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(slave_path)
        .map_err(|e| Error::Spawn(format!("opening {slave_path}: {e}")))?;
    let mut cmd = Command::new(&spec.shell);
    cmd.arg("-c")
        .arg(&spec.command)
        .current_dir(&spec.cwd)
        .env_clear()
        .envs(spec.base_env.with(&spec.env))
        .stdin(Stdio::from(slave.try_clone()?))
        .stdout(Stdio::from(slave.try_clone()?))
        .stderr(Stdio::from(slave));
    // SAFETY: the closure runs between fork and exec and calls only async-signal-safe
    // functions (setsid, ioctl).
    unsafe {
        cmd.pre_exec(|| {
            if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            // stdin is the slave: make it this new session's controlling terminal.
            if libc::ioctl(0, libc::TIOCSCTTY as _, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = cmd
        .spawn()
        .map_err(|e| Error::Spawn(format!("{}: {e}", spec.shell.display())))?;
    Ok(child.id())
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use std::sync::Arc;

    use super::*;

    /// The start time a spawn takes from the clock is exactly the one `/proc` gives later (the
    /// kill path proves a recorded job's processes by it), and the clock knows it for most
    /// spawns (only one that straddles a tick falls back to reading `/proc`).
    #[test]
    fn a_spawn_knows_its_childs_start_time_as_proc_gives_it() {
        let id = crate::job::JobId::new();
        let spec = SpawnSpec {
            shell: DEFAULT_SHELL.into(),
            command: "exec sleep 30".into(),
            cwd: std::env::temp_dir(),
            env: crate::jobenv::own(&Default::default(), id),
            cols: 80,
            rows: 24,
            base_env: Arc::new(crate::jobenv::base(None)),
            sandbox: None,
        };
        // Whether both clock readings fall in one tick depends on the machine's load, so how
        // often the spawn knows is not this test's business (bench/ measures the start path):
        // spawn until enough knew it, and check every one that did against /proc.
        let (max_spawns, enough) = (400, 10);
        let (mut spawns, mut known) = (0, 0);
        while spawns < max_spawns && known < enough {
            spawns += 1;
            let child = spawn(&spec).expect("spawn");
            let from_proc = crate::sys::procs::info(child.pid).map(|p| p.start);
            // Ended as a failed start ends its child: the kill path, then the reap.
            let leader = Arc::new(Leader::new(child.pid, child.tree, child.start));
            crate::kill::signal_now(
                &[crate::kill::Target::own(id, &leader)],
                crate::sys::sig::SIGKILL,
            );
            reap_abandoned(&leader);
            if let Some(start) = child.start {
                assert_eq!(Some(start), from_proc, "pid {}", child.pid);
                known += 1;
            }
        }
        assert!(known > 0, "none of {spawns} spawns knew their start time");
    }
}
