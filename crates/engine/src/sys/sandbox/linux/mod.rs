//! The Linux sandbox: no_new_privs, Landlock (file system, TCP ports, scopes) and a seccomp
//! filter for what Landlock leaves open (see `filter.rs`): made ready by the server
//! (`prepared.rs`) and applied by a job's clone child before it execs the shell
//! (`sys/unix/spawn_sandboxed.rs`), or applied in-process by the trampoline (`ptyjobs sandbox`)
//! and the canary.

mod answer;
mod canary;
mod connect;
mod filter;
pub(super) mod handoff;
mod landlock;
mod notify;
pub(super) mod prepared;
mod refusal;
pub(super) mod supervisor;
mod truncate;

use std::ffi::OsString;
use std::os::unix::process::CommandExt;

use super::{SandboxSpec, Support};

/// Variables that point at sockets a sandboxed job may not use: removed from its environment.
const SOCKET_VARS: [&str; 2] = ["SSH_AUTH_SOCK", "DBUS_SESSION_BUS_ADDRESS"];

/// The path of the object file this function was loaded from (the addon, or the executable).
pub(super) fn own_object_path() -> Option<std::path::PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    let mut info = empty_dl_info();
    let here = own_object_path as *const libc::c_void;
    // SAFETY: dladdr only writes `info`, whose strings point into the loader's tables, which
    // live as long as the object (copied out at once).
    if unsafe { libc::dladdr(here, &mut info) } == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: dli_fname is a NUL-terminated string owned by the loader.
    let name = unsafe { std::ffi::CStr::from_ptr(info.dli_fname) };
    let path = std::path::Path::new(std::ffi::OsStr::from_bytes(name.to_bytes()));
    path.canonicalize().ok()
}

fn empty_dl_info() -> libc::Dl_info {
    libc::Dl_info {
        dli_fname: std::ptr::null(),
        dli_fbase: std::ptr::null_mut(),
        dli_sname: std::ptr::null(),
        dli_saddr: std::ptr::null_mut(),
    }
}

pub(super) fn support() -> Support {
    Support {
        landlock_abi: landlock::kernel_abi(),
        seccomp: filter::available(),
    }
}

pub(super) fn if_asked() {
    let mut args = std::env::args_os().skip(1);
    let Some(first) = args.next() else { return };
    let mode = if first == super::EXEC_ARG {
        Mode::Exec
    } else if first == super::CANARY_ARG {
        Mode::Canary
    } else {
        return;
    };
    let spec: SandboxSpec = match args
        .next()
        .and_then(|j| serde_json::from_str(&j.to_string_lossy()).ok())
    {
        Some(spec) => spec,
        None => fail("the sandbox spec is missing or unreadable"),
    };
    let rest: Vec<OsString> = args.collect();
    match mode {
        Mode::Exec => fail(&exec_sandboxed(&spec, &rest)),
        Mode::Canary => {
            let outside = rest.first().map(std::path::PathBuf::from);
            match canary::run(&spec, outside.as_deref()) {
                Ok(probes) => {
                    let json = serde_json::to_string(&probes).unwrap_or_default();
                    // The canary's answer to the server, on its stdout.
                    let _ = std::io::Write::write_all(&mut std::io::stdout(), json.as_bytes());
                    std::process::exit(0);
                }
                Err(e) => fail(&e),
            }
        }
    }
}

enum Mode {
    Exec,
    Canary,
}

fn fail(msg: &str) -> ! {
    eprintln!("ptyjobs sandbox: {msg}");
    // 126: "found but could not be run", as a shell says it.
    std::process::exit(126)
}

/// Restricts this process to `spec`: Landlock first (it needs no_new_privs, which it sets),
/// then the seccomp filter. `Err` when the kernel cannot enforce something and `spec` is not
/// best-effort.
/// With `spec.handoff` (a job of the server, or its canary), the filter's refusals and the
/// listed sockets' connects go to the server's supervisor (`notify.rs`); without one (a
/// person's `ptyjobs sandbox`) they are refused by the filter, listed sockets included.
pub(super) fn restrict(spec: &SandboxSpec) -> Result<(), String> {
    landlock::apply(spec)?;
    match spec.handoff {
        Some(fd) => notify::install(spec, fd),
        None => filter::apply(&SandboxSpec {
            unix_sockets: Vec::new(),
            ..spec.clone()
        }),
    }
}

pub(super) fn exec_sandboxed(spec: &SandboxSpec, argv: &[OsString]) -> String {
    let Some((program, args)) = argv.split_first() else {
        return "no command to run".into();
    };
    if let Err(e) = restrict(spec) {
        return format!("profile {:?} cannot be enforced: {e}", spec.profile);
    }
    let mut cmd = std::process::Command::new(program);
    cmd.args(args);
    for var in SOCKET_VARS {
        cmd.env_remove(var);
    }
    cmd.env("PTYJOBS_PROFILE", &spec.profile)
        .env("PTYJOBS_NET", spec.net_env());
    if let Some(tmp) = &spec.tmpdir {
        cmd.env("TMPDIR", tmp);
    }
    let e = cmd.exec();
    format!("cannot run {}: {e}", program.to_string_lossy())
}
