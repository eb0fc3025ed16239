//! `ptyjobs policy --policy FILE`: what each profile of a policy file enforces on this kernel
//! (its canary run), and `ptyjobs sandbox --policy FILE [--profile NAME] -- CMD…`: one command
//! run under a profile in this terminal, to try a policy before serving it.

use std::ffi::OsString;
use std::path::Path;

use ptyjobs_engine::Policy;

use super::{CmdResult, Failure};

fn load(file: &Path) -> Result<Policy, Failure> {
    let program = std::env::current_exe()
        .map_err(|e| Failure::msg(format!("cannot find this executable: {e}")))?;
    Policy::load(file, &program).map_err(Failure::Message)
}

/// Prints each profile: what is enforced, what is a guardrail, what is not enforced, and
/// whether jobs under it are refused (and why).
pub(crate) fn show(file: &Path) -> CmdResult {
    use std::io::Write as _;
    let policy = load(file)?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "policy file {}", policy.file().display())?;
    let kernel = ptyjobs_engine::sandbox_support();
    writeln!(
        out,
        "this kernel: Landlock ABI {}, seccomp {}",
        kernel.landlock_abi,
        if kernel.seccomp { "yes" } else { "no" }
    )?;
    for name in policy.profile_names() {
        let Some((report, refused)) = policy.describe(name) else {
            continue;
        };
        let state = if refused.is_some() {
            "REFUSED"
        } else {
            "usable"
        };
        writeln!(out, "\n[profiles.{name}]  {state}")?;
        for e in &report.enforced {
            writeln!(out, "  enforced:     {e}")?;
        }
        for g in &report.guardrail {
            writeln!(out, "  guardrail:    {g}")?;
        }
        for n in &report.not_enforced {
            writeln!(out, "  NOT enforced: {n}")?;
        }
        if let Some(why) = refused {
            writeln!(out, "  refused:      {why}")?;
        }
    }
    Ok(())
}

/// Runs `command` (a program and its arguments) under `profile`: never returns when it
/// starts (this process becomes the command).
pub(crate) fn sandbox(file: &Path, profile: &str, command: &[OsString]) -> CmdResult {
    let policy = load(file)?;
    let spec = policy
        .sandbox_spec(profile, Path::new("/bin/sh"))
        .map_err(Failure::Message)?;
    Err(Failure::Message(ptyjobs_engine::exec_sandboxed(
        &spec, command,
    )))
}
