//! Start a job's shell on a new pseudo console, inside a new Job Object.
//!
//! The order makes a failure leave nothing behind: pipes → pseudo console → Job Object (with
//! `KILL_ON_JOB_CLOSE`) → the launcher (which starts the shell) created *suspended* → assigned
//! to the Job Object → resumed. So nothing of the job can start outside the Job Object, and if
//! anything fails before the launcher runs, it is terminated before its first instruction.
//!
//! Standard handles: the console's direct child is the launcher ([`super::launch`]), which
//! starts the shell with the console's own `CONIN$`/`CONOUT$` as its standard handles (a child
//! started without explicit console handles wrote into the server's stdout under Wine). No
//! handle is inherited by the launcher, and the server's own standard handles are made
//! non-inheritable before any spawn, so no job can ever reach the MCP stream.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle};
use std::path::Path;
use std::sync::Arc;

use windows_sys::Win32::Foundation::{HANDLE, HANDLE_FLAG_INHERIT, SetHandleInformation};
use windows_sys::Win32::System::Console::{
    COORD, CreatePseudoConsole, GetStdHandle, HPCON, STD_ERROR_HANDLE, STD_INPUT_HANDLE,
    STD_OUTPUT_HANDLE,
};
use windows_sys::Win32::System::JobObjects::{
    AssignProcessToJobObject, CreateJobObjectW, JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
    JOBOBJECT_EXTENDED_LIMIT_INFORMATION, JobObjectExtendedLimitInformation,
    SetInformationJobObject,
};
use windows_sys::Win32::System::Pipes::{CreatePipe, PIPE_NOWAIT, SetNamedPipeHandleState};
use windows_sys::Win32::System::Threading::{
    CREATE_SUSPENDED, CREATE_UNICODE_ENVIRONMENT, CreateProcessW, DeleteProcThreadAttributeList,
    EXTENDED_STARTUPINFO_PRESENT, InitializeProcThreadAttributeList, LPPROC_THREAD_ATTRIBUTE_LIST,
    PROC_THREAD_ATTRIBUTE_PSEUDOCONSOLE, PROCESS_INFORMATION, ResumeThread, STARTUPINFOEXW,
    TerminateProcess, UpdateProcThreadAttribute, WaitForSingleObject,
};

use super::pty::{Console, Master};
use super::tree::Tree;
use super::wide;
use crate::error::{Error, Result};
use crate::sys::Leader;
pub(crate) use crate::sys::spawn_spec::{SpawnSpec, Spawned};

/// The shell a job's command runs in unless configured otherwise.
pub(crate) const DEFAULT_SHELL: &str = "cmd.exe";

/// What `GIT_EDITOR`, `EDITOR` and `VISUAL` run in a job unless its own `env` names an editor:
/// an editor would wait forever for keys nobody types, so this one fails at once and says why.
pub(crate) const NO_EDITOR: &str = "cmd.exe /d /c \"echo ptyjobs: no interactive editor in a \
background job; pass the text on the command line (git commit -m ...) 1>&2 & exit /b 1\"";

/// Whether the environment variable named `name` is the one called `wanted`: Windows compares
/// names without regard to case.
pub(crate) fn same_env_name(name: &OsStr, wanted: &str) -> bool {
    name.to_str()
        .is_some_and(|name| name.eq_ignore_ascii_case(wanted))
}

/// The environment block: `K=V\0` entries sorted by name (case-insensitively, as Windows
/// wants), then a final `\0`.
fn env_block(env: &BTreeMap<OsString, OsString>) -> Vec<u16> {
    let mut entries: Vec<(&OsString, &OsString)> = env.iter().collect();
    entries.sort_by_key(|(k, _)| k.to_string_lossy().to_uppercase());
    let mut block = Vec::new();
    for (k, v) in entries {
        let mut entry = k.clone();
        entry.push("=");
        entry.push(v);
        block.extend(wide(&entry));
    }
    block.push(0);
    block
}

/// Quotes one argument the way `CommandLineToArgvW` and the C runtime split it.
fn quote(arg: &str) -> String {
    if !arg.is_empty() && !arg.contains([' ', '\t', '"']) {
        return arg.to_owned();
    }
    let mut out = String::from("\"");
    let mut backslashes = 0;
    for c in arg.chars() {
        match c {
            '\\' => backslashes += 1,
            '"' => {
                out.extend(std::iter::repeat_n('\\', backslashes * 2 + 1));
                out.push('"');
                backslashes = 0;
            }
            c => {
                out.extend(std::iter::repeat_n('\\', backslashes));
                out.push(c);
                backslashes = 0;
            }
        }
    }
    out.extend(std::iter::repeat_n('\\', backslashes * 2));
    out.push('"');
    out
}

/// The command line that runs `command` in `shell`: `cmd.exe /d /s /c "<command>"` (with `/s`,
/// cmd takes everything between the outer quotes verbatim), PowerShell's `-NoProfile -Command`,
/// and `-c` for anything else (Git Bash, a POSIX shell).
pub(crate) fn command_line(shell: &Path, command: &str) -> String {
    let stem = shell
        .file_stem()
        .map(|s| s.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    let exe = quote(&shell.to_string_lossy());
    match stem.as_str() {
        "cmd" => format!("{exe} /d /s /c \"{command}\""),
        "powershell" | "pwsh" => format!("{exe} -NoProfile -Command {}", quote(command)),
        _ => format!("{exe} -c {}", quote(command)),
    }
}

fn os_error(what: &str) -> Error {
    Error::Spawn(format!("{what}: {}", std::io::Error::last_os_error()))
}

/// An owned handle from a raw one just created; an error when it is NULL or invalid.
fn owned(h: HANDLE, what: &str) -> Result<OwnedHandle> {
    if h.is_null() || h == windows_sys::Win32::Foundation::INVALID_HANDLE_VALUE {
        return Err(os_error(what));
    }
    // SAFETY: a fresh handle the caller just created and nobody else owns.
    Ok(unsafe { OwnedHandle::from_raw_handle(h) })
}

fn pipe() -> Result<(OwnedHandle, OwnedHandle)> {
    let (mut r, mut w): (HANDLE, HANDLE) = (std::ptr::null_mut(), std::ptr::null_mut());
    // SAFETY: two out-pointers; no security attributes (the handles are not inheritable).
    if unsafe { CreatePipe(&mut r, &mut w, std::ptr::null(), 64 * 1024) } == 0 {
        return Err(os_error("CreatePipe"));
    }
    Ok((owned(r, "CreatePipe")?, owned(w, "CreatePipe")?))
}

/// Makes the server's standard handles non-inheritable (see the module docs).
fn keep_std_handles() {
    for which in [STD_INPUT_HANDLE, STD_OUTPUT_HANDLE, STD_ERROR_HANDLE] {
        // SAFETY: GetStdHandle returns a handle or NULL/INVALID; SetHandleInformation on a
        // bad handle only fails.
        unsafe {
            let h = GetStdHandle(which);
            if !h.is_null() {
                SetHandleInformation(h, HANDLE_FLAG_INHERIT, 0);
            }
        }
    }
}

/// A process-thread attribute list holding the pseudo console.
struct Attributes(Vec<usize>);

impl Attributes {
    fn with_console(hpc: HPCON) -> Result<Self> {
        let mut size = 0usize;
        // SAFETY: the first call only reports the size needed.
        unsafe { InitializeProcThreadAttributeList(std::ptr::null_mut(), 1, 0, &mut size) };
        let mut list = Self(vec![0usize; size.div_ceil(size_of::<usize>()) + 1]);
        // SAFETY: the buffer holds at least `size` bytes, suitably aligned.
        if unsafe { InitializeProcThreadAttributeList(list.ptr(), 1, 0, &mut size) } == 0 {
            list.0.clear();
            return Err(os_error("InitializeProcThreadAttributeList"));
        }
        // SAFETY: the attribute's value is the HPCON itself (not a pointer to it), as the
        // pseudo console documentation prescribes; it outlives the list.
        let ok = unsafe {
            UpdateProcThreadAttribute(
                list.ptr(),
                0,
                PROC_THREAD_ATTRIBUTE_PSEUDOCONSOLE as usize,
                hpc as *const std::ffi::c_void,
                size_of::<HPCON>(),
                std::ptr::null_mut(),
                std::ptr::null(),
            )
        };
        if ok == 0 {
            return Err(os_error("UpdateProcThreadAttribute"));
        }
        Ok(list)
    }

    fn ptr(&mut self) -> LPPROC_THREAD_ATTRIBUTE_LIST {
        self.0.as_mut_ptr().cast()
    }
}

impl Drop for Attributes {
    fn drop(&mut self) {
        if !self.0.is_empty() {
            // SAFETY: the list was initialised.
            unsafe { DeleteProcThreadAttributeList(self.ptr()) };
        }
    }
}

fn job_object() -> Result<OwnedHandle> {
    // SAFETY: no attributes, no name: a fresh anonymous Job Object.
    let job = owned(
        unsafe { CreateJobObjectW(std::ptr::null(), std::ptr::null()) },
        "CreateJobObject",
    )?;
    // SAFETY: a zeroed plain-data struct with one flag set, read by the call.
    let ok = unsafe {
        let mut limits: JOBOBJECT_EXTENDED_LIMIT_INFORMATION = std::mem::zeroed();
        limits.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
        SetInformationJobObject(
            job.as_raw_handle(),
            JobObjectExtendedLimitInformation,
            (&raw const limits).cast(),
            size_of::<JOBOBJECT_EXTENDED_LIMIT_INFORMATION>() as u32,
        )
    };
    if ok == 0 {
        return Err(os_error("SetInformationJobObject"));
    }
    Ok(job)
}

/// Starts `spec` on a new pseudo console in a new Job Object (see the module docs).
pub(crate) fn spawn(spec: &SpawnSpec) -> Result<Spawned> {
    crate::sys::sandbox::refuse(spec.sandbox.as_ref())?;
    keep_std_handles();
    let (in_read, in_write) = pipe()?;
    let (out_read, out_write) = pipe()?;
    let size = COORD {
        X: i16::try_from(spec.cols).unwrap_or(i16::MAX),
        Y: i16::try_from(spec.rows).unwrap_or(i16::MAX),
    };
    let mut hpc: HPCON = 0;
    // SAFETY: valid pipe handles and an out-pointer; flags 0 (Wine's console host refuses
    // PSEUDOCONSOLE_INHERIT_CURSOR).
    let hr = unsafe {
        CreatePseudoConsole(
            size,
            in_read.as_raw_handle(),
            out_write.as_raw_handle(),
            0,
            &mut hpc,
        )
    };
    if hr < 0 {
        return Err(Error::Spawn(format!(
            "CreatePseudoConsole failed (HRESULT {hr:#010x})"
        )));
    }
    let console = Arc::new(Console::new(hpc));
    let job = job_object()?;
    let mut attrs = Attributes::with_console(hpc)?;
    // The launcher is the console's direct child; it starts the shell with the console's
    // handles (see `launch.rs`).
    let launcher = super::launch::launcher()
        .map_err(|e| Error::Spawn(format!("cannot find the console launcher: {e}")))?;
    let shell_line = command_line(&spec.shell, &spec.command);
    let line = format!(
        "{} {} {}",
        quote(&launcher.to_string_lossy()),
        super::launch::FLAG,
        quote(&shell_line)
    );
    let mut cmdline = wide(OsStr::new(&line));
    let env = env_block(&spec.base_env.with(&spec.env));
    let cwd = wide(spec.cwd.as_os_str());
    // SAFETY: zeroed plain-data structs; the sizes and the attribute list are set below.
    let mut si: STARTUPINFOEXW = unsafe { std::mem::zeroed() };
    si.StartupInfo.cb = size_of::<STARTUPINFOEXW>() as u32;
    si.lpAttributeList = attrs.ptr();
    // SAFETY: as above.
    let mut pi: PROCESS_INFORMATION = unsafe { std::mem::zeroed() };
    // SAFETY: every pointer points into buffers that outlive the call; the command line is
    // mutable as CreateProcessW requires; no handle is inherited.
    let ok = unsafe {
        CreateProcessW(
            std::ptr::null(),
            cmdline.as_mut_ptr(),
            std::ptr::null(),
            std::ptr::null(),
            0,
            EXTENDED_STARTUPINFO_PRESENT | CREATE_UNICODE_ENVIRONMENT | CREATE_SUSPENDED,
            env.as_ptr().cast(),
            cwd.as_ptr(),
            &si.StartupInfo,
            &mut pi,
        )
    };
    if ok == 0 {
        return Err(Error::Spawn(format!(
            "{}: {}",
            spec.shell.display(),
            std::io::Error::last_os_error()
        )));
    }
    drop(attrs);
    let process = owned(pi.hProcess, "CreateProcess")?;
    let thread = owned(pi.hThread, "CreateProcess")?;
    // SAFETY: valid Job Object and process handles.
    if unsafe { AssignProcessToJobObject(job.as_raw_handle(), process.as_raw_handle()) } == 0 {
        let e = os_error("AssignProcessToJobObject");
        // SAFETY: our suspended child, which has not run yet.
        unsafe { TerminateProcess(process.as_raw_handle(), 1) };
        return Err(e);
    }
    // SAFETY: the main thread of our suspended child.
    unsafe { ResumeThread(thread.as_raw_handle()) };
    drop(thread);
    // The console holds its own ends of the pipes now.
    drop((in_read, out_write));
    // No-wait mode: a write to a job that does not read returns what fit instead of blocking.
    // SAFETY: a valid pipe handle and a mode that outlives the call.
    unsafe {
        SetNamedPipeHandleState(
            in_write.as_raw_handle(),
            &PIPE_NOWAIT,
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    Ok(Spawned {
        pid: pi.dwProcessId,
        tree: Tree::new(job, process),
        master: Master {
            input: in_write,
            output: out_read,
            console,
        },
        start: None,
        supervision: None,
    })
}

/// Waits (bounded) for a child whose start was abandoned (its tree was just ended).
pub(crate) fn reap_abandoned(leader: &Leader) {
    leader.reap(|| {
        // SAFETY: the process handle is owned by the leader.
        unsafe { WaitForSingleObject(leader.tree.process(), 5000) };
        Some(())
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_lines_quote_for_each_shell() {
        assert_eq!(
            command_line(Path::new("cmd.exe"), "echo \"a b\" & exit /b 3"),
            "cmd.exe /d /s /c \"echo \"a b\" & exit /b 3\""
        );
        assert_eq!(
            command_line(
                Path::new("C:\\Program Files\\Git\\bin\\bash.exe"),
                "echo \"hi\""
            ),
            "\"C:\\Program Files\\Git\\bin\\bash.exe\" -c \"echo \\\"hi\\\"\""
        );
        assert_eq!(quote("a\\b"), "a\\b");
        assert_eq!(quote("a b\\"), "\"a b\\\\\"");
    }
}
