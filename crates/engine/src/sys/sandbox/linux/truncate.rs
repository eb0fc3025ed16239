//! Truncation, checked by the supervisor instead of by Landlock (see `notify.rs`).
//!
//! Why: a Landlock ruleset that handles `TRUNCATE` (ABI 3) makes the kernel walk every opened
//! file's path to the root — reads included — to record whether it may be truncated later;
//! on a syscall-heavy job (`find /usr`) that walk was most of the sandbox's cost (+7–10 %). So
//! a job's filter takes truncation over, and Landlock handles it only where no supervisor does
//! (the `ptyjobs sandbox` trampoline, or best-effort without seccomp):
//!
//! - `ftruncate` needs a file opened for writing, which Landlock's `WRITE_FILE` governs.
//! - `open`/`openat`/`open_by_handle_at` with `O_TRUNC` but without write access (`O_RDONLY`,
//!   or the access mode 3) would truncate without `WRITE_FILE` being asked: the filter
//!   notifies exactly those (a flags check in the filter, so every other open is untouched)
//!   and they are refused, counted.
//! - `openat2`'s flags are in memory the job can change after a check: refused with ENOSYS,
//!   counted (callers fall back to `openat`, as on a kernel before 5.6).
//! - `truncate(path, length)`: done here on the job's behalf. The path is read once from the
//!   job's memory and opened (`O_PATH`) as the job would resolve it (from `/proc/<pid>/cwd`
//!   or `/proc/<pid>/root`); the check is on the opened file's own path, which the job cannot
//!   change any more, so a symbolic link swapped in after the read changes nothing. A regular
//!   file under a write root is then reopened for writing through that descriptor and
//!   truncated; anything else is refused (EACCES, as Landlock answers), counted.

use std::ffi::OsStr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::answer::{Answer, Call, errno};
use super::supervisor::JobCtx;
use crate::sys::sandbox::RefusalKind;

/// The longest path the kernel takes (with its NUL).
const PATH_MAX: usize = 4096;

/// `truncate(path, length)` on the job's behalf (see the module doc).
pub(super) fn truncate(call: &Call<'_>, job: &JobCtx) -> Answer {
    let args = call.n.data.args;
    let path = match read_c_string(call, args[0]) {
        Ok(p) => p,
        Err(e) => return Answer::Errno(e),
    };
    if !call.valid() {
        return Answer::Done;
    }
    let file = match open_as_job(call.n.pid, &path) {
        Ok(f) => f,
        Err(e) => return Answer::Errno(e),
    };
    // The descriptor was opened through the caller's /proc entries: still the caller's?
    if !call.valid() {
        return Answer::Done;
    }
    let real = match std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())) {
        Ok(r) if r.is_absolute() && !r.as_os_str().as_bytes().ends_with(b" (deleted)") => r,
        _ => return Answer::Errno(libc::ENOENT),
    };
    // SAFETY: stat is plain data; fstat writes one.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstat on our own descriptor.
    if unsafe { libc::fstat(file.as_raw_fd(), &mut st) } != 0 {
        return Answer::Errno(errno());
    }
    match st.st_mode & libc::S_IFMT {
        libc::S_IFREG => {}
        libc::S_IFDIR => return Answer::Errno(libc::EISDIR),
        _ => return Answer::Errno(libc::EINVAL),
    }
    if !job.writable.iter().any(|root| real.starts_with(root)) {
        let shown = real.display().to_string();
        // EACCES, as Landlock answers a write outside the roots.
        return call.refuse_with(
            job,
            format!("truncate({shown:?})"),
            RefusalKind::TruncatePath(shown),
            libc::EACCES,
        );
    }
    match reopen_and_truncate(&file, args[1] as i64) {
        Ok(()) => Answer::Value(0),
        Err(e) => Answer::Errno(e),
    }
}

/// Reads the NUL-terminated string at `addr` in the caller's memory, a page at a time (a
/// string may end just before an unmapped page).
fn read_c_string(call: &Call<'_>, addr: u64) -> Result<PathBuf, i32> {
    let mut out = Vec::new();
    let mut at = addr;
    while out.len() < PATH_MAX {
        let room = 4096 - (at % 4096) as usize;
        let mut buf = vec![0u8; room.min(PATH_MAX - out.len())];
        let got = call.read_memory(at, &mut buf)?;
        let got = &buf[..got];
        if let Some(end) = got.iter().position(|&b| b == 0) {
            out.extend_from_slice(&got[..end]);
            if out.is_empty() {
                return Err(libc::ENOENT);
            }
            return Ok(PathBuf::from(OsStr::from_bytes(&out)));
        }
        out.extend_from_slice(got);
        at += got.len() as u64;
    }
    Err(libc::ENAMETOOLONG)
}

/// `path` opened `O_PATH` as the job resolves it: relative to its working directory, or from
/// its root; symbolic links followed, as `truncate(2)` follows them; `/proc/self` is the job's.
fn open_as_job(pid: u32, path: &Path) -> Result<OwnedFd, i32> {
    let mut full = match path.strip_prefix("/proc/self") {
        Ok(rest) => format!("/proc/{pid}/")
            .into_bytes()
            .into_iter()
            .chain(rest.as_os_str().as_bytes().iter().copied())
            .collect(),
        Err(_) => {
            let base = if path.is_absolute() { "root" } else { "cwd" };
            let mut full = format!("/proc/{pid}/{base}/").into_bytes();
            full.extend_from_slice(path.as_os_str().as_bytes());
            full
        }
    };
    if full.ends_with(b"/") && !path.as_os_str().as_bytes().ends_with(b"/") {
        full.pop();
    }
    let c = std::ffi::CString::new(full).map_err(|_| libc::EINVAL)?;
    // SAFETY: open reads the path and returns a new descriptor, owned at once.
    let fd = unsafe { libc::open(c.as_ptr(), libc::O_PATH | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(errno());
    }
    // SAFETY: just opened, ours.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// Opens the regular file behind `file` (an `O_PATH` descriptor) for writing and truncates it.
fn reopen_and_truncate(file: &OwnedFd, length: i64) -> Result<(), i32> {
    let via = std::ffi::CString::new(format!("/proc/self/fd/{}", file.as_raw_fd()))
        .map_err(|_| libc::EINVAL)?;
    // SAFETY: open returns a new descriptor, owned at once.
    let fd = unsafe {
        libc::open(
            via.as_ptr(),
            libc::O_WRONLY | libc::O_CLOEXEC | libc::O_NOCTTY | libc::O_NONBLOCK,
        )
    };
    if fd < 0 {
        return Err(errno());
    }
    // SAFETY: just opened, ours.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: ftruncate on our own descriptor.
    if unsafe { libc::ftruncate(fd.as_raw_fd(), length) } != 0 {
        return Err(errno());
    }
    Ok(())
}
