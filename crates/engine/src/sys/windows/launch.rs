//! The console launcher: the direct child of every job's pseudo console.
//!
//! Why: a process started on a pseudo console without explicit standard handles gets the
//! server's (measured under Wine: the job's output went into the MCP stream on the server's
//! stdout, even with the server's handles made non-inheritable, and the job read the client's
//! requests), and one started with `STARTF_USESTDHANDLES` and NULL or invalid handles writes
//! nowhere. The launcher, attached to the pseudo console, opens `CONIN$` and `CONOUT$` (which
//! are that console's) and starts the job's shell with them as its standard handles, then waits
//! for it and exits with its exit code. This works the same on Wine and on Windows.
//!
//! The launcher is an executable that calls [`if_asked`] first thing in `main` (the `ptyjobs`
//! server does), started with [`FLAG`]: `PTYJOBS_CONPTY_LAUNCHER` when set; else the current
//! executable when the engine is linked into it (the server); else, when the engine lives in a
//! DLL (the Node addon inside `node.exe`), the `ptyjobs.exe` beside that DLL, as the win32
//! platform package ships them. It is in the job's Job Object like the rest of the tree.

use std::ffi::{OsStr, OsString};
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle};

use windows_sys::Win32::Foundation::{GENERIC_READ, GENERIC_WRITE, INVALID_HANDLE_VALUE};
use windows_sys::Win32::Security::SECURITY_ATTRIBUTES;
use windows_sys::Win32::Storage::FileSystem::{
    CreateFileW, FILE_SHARE_READ, FILE_SHARE_WRITE, OPEN_EXISTING,
};
use windows_sys::Win32::System::Console::SetConsoleCtrlHandler;
use windows_sys::Win32::System::Threading::{
    CreateProcessW, GetExitCodeProcess, INFINITE, PROCESS_INFORMATION, STARTF_USESTDHANDLES,
    STARTUPINFOW, WaitForSingleObject,
};

use super::wide;

/// The argument that makes an executable the launcher; the next argument is the command line
/// to run.
pub(crate) const FLAG: &str = "--ptyjobs-conpty-launch";

/// The executable to start as the launcher (see the module docs).
pub(crate) fn launcher() -> std::io::Result<OsString> {
    if let Some(path) = std::env::var_os("PTYJOBS_CONPTY_LAUNCHER").filter(|p| !p.is_empty()) {
        return Ok(path);
    }
    let exe = std::env::current_exe()?;
    match this_module() {
        Some(module) if module != exe => Ok(module.with_file_name("ptyjobs.exe").into_os_string()),
        _ => Ok(exe.into_os_string()),
    }
}

/// The path of the module (executable or DLL) this code is linked into.
fn this_module() -> Option<std::path::PathBuf> {
    use std::os::windows::ffi::OsStringExt;
    use windows_sys::Win32::System::LibraryLoader::{
        GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS, GET_MODULE_HANDLE_EX_FLAG_UNCHANGED_REFCOUNT,
        GetModuleFileNameW, GetModuleHandleExW,
    };
    let mut module = std::ptr::null_mut();
    let here = this_module as *const () as *const u16;
    // SAFETY: looks up the module containing this function's address; no reference is taken.
    let ok = unsafe {
        GetModuleHandleExW(
            GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS | GET_MODULE_HANDLE_EX_FLAG_UNCHANGED_REFCOUNT,
            here,
            &mut module,
        )
    };
    if ok == 0 {
        return None;
    }
    let mut buf = vec![0u16; 32 * 1024];
    // SAFETY: a valid module handle and a buffer of the given length.
    let n = unsafe { GetModuleFileNameW(module, buf.as_mut_ptr(), buf.len() as u32) } as usize;
    (n > 0 && n < buf.len()).then(|| OsString::from_wide(&buf[..n]).into())
}

/// Opens a console buffer (`CONIN$` / `CONOUT$`) as an inheritable handle.
fn console(name: &str) -> Option<OwnedHandle> {
    let sa = SECURITY_ATTRIBUTES {
        nLength: size_of::<SECURITY_ATTRIBUTES>() as u32,
        lpSecurityDescriptor: std::ptr::null_mut(),
        bInheritHandle: 1,
    };
    let name = wide(OsStr::new(name));
    // SAFETY: a NUL-terminated name and attributes that outlive the call.
    let h = unsafe {
        CreateFileW(
            name.as_ptr(),
            GENERIC_READ | GENERIC_WRITE,
            FILE_SHARE_READ | FILE_SHARE_WRITE,
            &sa,
            OPEN_EXISTING,
            0,
            std::ptr::null_mut(),
        )
    };
    // SAFETY: a valid return is a fresh handle that we now own.
    (!h.is_null() && h != INVALID_HANDLE_VALUE).then(|| unsafe { OwnedHandle::from_raw_handle(h) })
}

/// Ctrl-C on the console reaches every process attached to it: the launcher stays (its child
/// decides what Ctrl-C means, and the launcher reports its exit). A handler, not "ignore", so
/// that the child does not inherit the ignoring.
unsafe extern "system" fn stay(_ctrl: u32) -> windows_sys::core::BOOL {
    1
}

/// If this process was started as the launcher (`<exe> --ptyjobs-conpty-launch <command line>`),
/// runs the command line on this process's console and exits with its exit code; otherwise
/// returns at once.
pub(crate) fn if_asked() {
    let mut args = std::env::args_os().skip(1);
    if args.next().as_deref() != Some(OsStr::new(FLAG)) {
        return;
    }
    let Some(command) = args.next() else {
        std::process::exit(127);
    };
    std::process::exit(run(&command));
}

fn run(command: &OsStr) -> i32 {
    // SAFETY: installs a handler function that lives as long as the process.
    unsafe { SetConsoleCtrlHandler(Some(stay), 1) };
    let (Some(input), Some(output)) = (console("CONIN$"), console("CONOUT$")) else {
        return 126;
    };
    // SAFETY: zeroed plain-data structs; the size and handles are set below.
    let mut si: STARTUPINFOW = unsafe { std::mem::zeroed() };
    si.cb = size_of::<STARTUPINFOW>() as u32;
    si.dwFlags = STARTF_USESTDHANDLES;
    si.hStdInput = input.as_raw_handle();
    si.hStdOutput = output.as_raw_handle();
    si.hStdError = output.as_raw_handle();
    // SAFETY: as above.
    let mut pi: PROCESS_INFORMATION = unsafe { std::mem::zeroed() };
    let mut line = wide(command);
    // SAFETY: a mutable NUL-terminated command line and structs that outlive the call; the
    // environment and directory are the launcher's own (the job's).
    let ok = unsafe {
        CreateProcessW(
            std::ptr::null(),
            line.as_mut_ptr(),
            std::ptr::null(),
            std::ptr::null(),
            1,
            0,
            std::ptr::null(),
            std::ptr::null(),
            &si,
            &mut pi,
        )
    };
    if ok == 0 {
        let e = std::io::Error::last_os_error();
        let msg = format!(
            "ptyjobs: cannot start {}: {e}\r\n",
            command.to_string_lossy()
        );
        let _ = std::io::Write::write_all(&mut ConsoleOut(&output), msg.as_bytes());
        return 127;
    }
    // SAFETY: fresh handles from CreateProcessW that we now own.
    let (process, _thread) = unsafe {
        (
            OwnedHandle::from_raw_handle(pi.hProcess),
            OwnedHandle::from_raw_handle(pi.hThread),
        )
    };
    drop((input, output));
    let mut code = 1u32;
    // SAFETY: a valid process handle and a u32 that outlives the call.
    unsafe {
        WaitForSingleObject(process.as_raw_handle(), INFINITE);
        GetExitCodeProcess(process.as_raw_handle(), &mut code);
    }
    code as i32
}

/// Writes to a console handle.
struct ConsoleOut<'a>(&'a OwnedHandle);

impl std::io::Write for ConsoleOut<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut n = 0u32;
        let len = u32::try_from(buf.len()).unwrap_or(u32::MAX);
        // SAFETY: a valid handle and `len` bytes that outlive the call.
        let ok = unsafe {
            windows_sys::Win32::Storage::FileSystem::WriteFile(
                self.0.as_raw_handle(),
                buf.as_ptr(),
                len,
                &mut n,
                std::ptr::null_mut(),
            )
        };
        if ok == 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(n as usize)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
