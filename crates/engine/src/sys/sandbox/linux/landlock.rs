//! The Landlock half of the sandbox: write and read roots, the exec allowlist, TCP ports,
//! file-path Unix sockets (ABI 9) and the scopes (abstract Unix sockets, signals: ABI 6).

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, NetPort, PathBeneath,
    PathFd, Ruleset, RulesetAttr, RulesetCreated, RulesetCreatedAttr, RulesetStatus, Scope,
};
use std::path::Path;

use super::super::SandboxSpec;

/// Devices and directories every job may write whatever its profile: without them shells and
/// most tools fail (`2>/dev/null`, a prompt on `/dev/tty`, Python's semaphores in /dev/shm).
pub(super) const ALWAYS_WRITABLE: [&str; 9] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
    "/dev/shm",
];

/// The ELF interpreters an exec allowlist always grants (every dynamically linked program
/// needs one; this is the documented `ld.so` gap).
const LOADERS: [&str; 6] = [
    "/lib64/ld-linux-x86-64.so.2",
    "/lib/ld-linux-aarch64.so.1",
    "/lib/ld-linux-riscv64-lp64d.so.1",
    "/lib/ld-musl-x86_64.so.1",
    "/lib/ld-musl-aarch64.so.1",
    "/lib/ld-linux.so.2",
];

/// The kernel's Landlock ABI version; 0 without Landlock.
pub(super) fn kernel_abi() -> i32 {
    // SAFETY: LANDLOCK_CREATE_RULESET_VERSION takes no attribute (null, size 0) and only
    // returns a number.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            1u32, // LANDLOCK_CREATE_RULESET_VERSION
        )
    };
    i32::try_from(v).unwrap_or(0).max(0)
}

/// The ABI this crate and the kernel both know.
fn abi() -> ABI {
    ABI::from(kernel_abi().min(9))
}

fn err(e: impl std::fmt::Display) -> String {
    format!("Landlock: {e}")
}

/// Applies the Landlock ruleset of `spec` to this process (and so to everything it execs).
/// With a handoff, the filter installed next takes truncation over (see `truncate.rs`).
pub(super) fn apply(spec: &SandboxSpec) -> Result<(), String> {
    let filter_truncates = spec.handoff.is_some() && super::filter::available();
    let Some(created) = build(spec, filter_truncates)? else {
        return Ok(());
    };
    let status = created.restrict_self().map_err(err)?;
    if status.ruleset != RulesetStatus::FullyEnforced && !spec.best_effort {
        return Err(format!("only {:?} on this kernel", status.ruleset));
    }
    Ok(())
}

/// The Landlock ruleset of `spec`, made but not applied: its fd, for a process that restricts
/// itself with `landlock_restrict_self(fd, 0)` after no_new_privs (the sandboxed spawn, see
/// `sys/unix/spawn_sandboxed.rs`). `None` only when the kernel has no Landlock and `spec` is
/// best-effort. Not best-effort, the ruleset is built with `HardRequirement`, so anything the
/// kernel cannot enforce is an error here, as `apply`'s status check makes it.
pub(super) fn prepare(spec: &SandboxSpec) -> Result<Option<std::os::fd::OwnedFd>, String> {
    // The job's notifying filter takes truncation over, where there is one (`truncate.rs`).
    let fd: Option<std::os::fd::OwnedFd> =
        build(spec, super::filter::available())?.and_then(Into::into);
    if fd.is_none() && !spec.best_effort {
        return Err("this kernel has no Landlock".into());
    }
    Ok(fd)
}

/// The ruleset of `spec`, filled; `None` when the kernel has no Landlock and `spec` is
/// best-effort. With `filter_truncates`, truncation is left to the job's seccomp supervisor
/// (`truncate.rs`): handling it here costs a path walk on every open, reads included.
fn build(spec: &SandboxSpec, filter_truncates: bool) -> Result<Option<RulesetCreated>, String> {
    let abi = abi();
    let level = if spec.best_effort {
        CompatLevel::BestEffort
    } else {
        CompatLevel::HardRequirement
    };
    if abi == ABI::Unsupported {
        return if spec.best_effort {
            Ok(None)
        } else {
            Err("this kernel has no Landlock".into())
        };
    }
    let read = AccessFs::from_read(abi);
    let everything = if filter_truncates {
        AccessFs::from_all(abi) & !AccessFs::Truncate
    } else {
        AccessFs::from_all(abi)
    };
    // Reading everything is not restricted, and so not handled: Landlock then checks no
    // open for reading (a path walk each), which is most of a busy job's cost. Exec stays
    // handled when there is an allowlist.
    let reads_all = spec.read.iter().any(|r| r == Path::new("/"));
    let all = if reads_all {
        let unhandled = if spec.exec.is_some() {
            AccessFs::ReadFile | AccessFs::ReadDir
        } else {
            read
        };
        everything & !unhandled
    } else {
        everything
    };
    let read = read & all;
    // Without an allowlist, exec is what reading allows.
    let read_rights = if spec.exec.is_some() {
        read & !AccessFs::Execute
    } else {
        read
    };
    let mut ruleset = Ruleset::default()
        .set_compatibility(level)
        .handle_access(all)
        .map_err(err)?;
    if spec.net.is_some() && abi >= ABI::V4 {
        ruleset = ruleset
            .handle_access(AccessNet::from_all(abi))
            .map_err(err)?;
    }
    if abi >= ABI::V6 {
        ruleset = ruleset
            .scope(Scope::AbstractUnixSocket | Scope::Signal)
            .map_err(err)?;
    }
    let mut created = ruleset.create().map_err(err)?;
    let c = &mut Rules {
        created: &mut created,
        abi,
        handled: all,
    };
    for root in &spec.read {
        add(c, root, read_rights, true)?;
    }
    // Write roots are readable too (they would be useless otherwise).
    let writable = all & !AccessFs::Execute & !resolve_unix();
    let write_rights = if spec.exec.is_some() {
        writable
    } else {
        writable | AccessFs::Execute
    };
    for root in &spec.write {
        add(c, root, write_rights, true)?;
    }
    for dev in ALWAYS_WRITABLE {
        add(c, Path::new(dev), writable, false)?;
    }
    if let Some(programs) = &spec.exec {
        let run = AccessFs::Execute | AccessFs::ReadFile;
        for p in programs {
            add(c, p, run, true)?;
        }
        for l in LOADERS {
            add(c, Path::new(l), run, false)?;
        }
    }
    if abi >= ABI::V9 {
        for s in &spec.unix_sockets {
            add(c, s, resolve_unix(), true)?;
        }
    }
    if let Some(net) = &spec.net
        && abi >= ABI::V4
    {
        let ports = net
            .connect
            .iter()
            .map(|&p| NetPort::new(p, AccessNet::ConnectTcp))
            .chain(
                net.bind
                    .iter()
                    .map(|&p| NetPort::new(p, AccessNet::BindTcp)),
            );
        for rule in ports {
            c.created.add_rule(rule).map_err(err)?;
        }
    }
    Ok(Some(created))
}

/// The ruleset being filled, with what it handles.
struct Rules<'a> {
    created: &'a mut RulesetCreated,
    abi: ABI,
    handled: BitFlags<AccessFs>,
}

/// Grants `rights` beneath `path`, less what the ruleset does not handle (a file: only the
/// rights a file can have; nothing left: no rule). A path that does not exist is an error
/// when `required`, and skipped otherwise.
fn add(
    c: &mut Rules<'_>,
    path: &Path,
    rights: BitFlags<AccessFs>,
    required: bool,
) -> Result<(), String> {
    let (created, abi) = (&mut *c.created, c.abi);
    let rights = rights & c.handled;
    if rights.is_empty() {
        return Ok(());
    }
    let fd = match PathFd::new(path) {
        Ok(fd) => fd,
        Err(_) if !required => return Ok(()),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    let rights = if path.is_dir() {
        rights
    } else {
        rights & AccessFs::from_file(abi)
    };
    created
        .add_rule(PathBeneath::new(fd, rights))
        .map(|_| ())
        .map_err(|e| format!("{}: {e}", path.display()))
}

fn resolve_unix() -> BitFlags<AccessFs> {
    BitFlags::from(AccessFs::ResolveUnix)
}
