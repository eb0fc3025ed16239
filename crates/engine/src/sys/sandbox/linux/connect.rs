//! The supervisor's answers to a job's Unix socket calls while its profile lists file-path
//! Unix sockets on a kernel whose Landlock cannot tell them apart (see `notify.rs`; the
//! notification machinery is `answer.rs`):
//!
//! - **`socket(AF_UNIX, ...)`**: a stream or seqpacket socket is made by the supervisor, bound
//!   to an automatic abstract name and set listening, and handed to the job
//!   (`SECCOMP_IOCTL_NOTIF_ADDFD` with `SEND`: the fd number is `socket`'s result). A
//!   listening socket cannot connect, so the only way a job's Unix socket gets connected to a
//!   path is the supervisor's, below; the job cannot swap one in behind a `connect` let
//!   through for another socket. Datagram sockets (they could `sendto` any path) are refused.
//! - **`connect`**: the supervisor takes a copy of the job's socket (`pidfd_getfd`). Not a Unix
//!   socket: the kernel continues the call (Landlock governs TCP; the socket's family is fixed,
//!   so the address read again cannot make it a Unix connect). A Unix socket: the address is
//!   read once from the job's memory, the notification checked still valid, a path resolved
//!   (relative to `/proc/<pid>/cwd`) and canonicalized; a listed one is connected by the
//!   supervisor to the policy's own copy of the path (opened with `RESOLVE_NO_SYMLINKS`,
//!   connected through `/proc/self/fd`), and the connected socket is installed over the job's
//!   fd number with its flags (`O_NONBLOCK`, `FD_CLOEXEC`), then `connect` answered 0. An
//!   unlisted path or an abstract name is refused (EPERM, counted).

use std::ffi::OsStr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::answer::{Answer, Call, errno};
use super::refusal::describe;
use super::supervisor::JobCtx;
use crate::sys::sandbox::RefusalKind;

fn sockopt(fd: &OwnedFd, opt: libc::c_int) -> Result<libc::c_int, i32> {
    let mut v: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: getsockopt writes one int into `v`.
    let r = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            opt,
            (&mut v as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    if r < 0 { Err(errno()) } else { Ok(v) }
}

fn new_socket(ty: libc::c_int) -> Result<OwnedFd, i32> {
    // SAFETY: socket returns a new fd, owned at once.
    let fd = unsafe { libc::socket(libc::AF_UNIX, ty | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(errno());
    }
    // SAFETY: just made, ours.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `socket(AF_UNIX, type)` under listed sockets: a listening stream or seqpacket socket of
/// ours (see the module doc); a datagram socket is refused.
pub(super) fn unix_socket(call: &Call<'_>, job: &JobCtx) -> Answer {
    let arg = call.n.data.args[1] as libc::c_int;
    let ty = arg & 0xf;
    if ty != libc::SOCK_STREAM && ty != libc::SOCK_SEQPACKET {
        let (syscall, kind) = describe(libc::SYS_socket, &call.n.data.args, true);
        return call.refuse(job, syscall, kind);
    }
    let sock = match new_socket(ty | (arg & libc::SOCK_NONBLOCK)) {
        Ok(s) => s,
        Err(e) => return Answer::Errno(e),
    };
    // SAFETY: a sockaddr of only the family: bind picks a free abstract name (autobind).
    let bound = unsafe {
        let addr = libc::sockaddr_un {
            sun_family: libc::AF_UNIX as libc::sa_family_t,
            sun_path: [0; 108],
        };
        libc::bind(
            sock.as_raw_fd(),
            (&addr as *const libc::sockaddr_un).cast(),
            std::mem::size_of::<libc::sa_family_t>() as libc::socklen_t,
        ) == 0
            && libc::listen(sock.as_raw_fd(), 0) == 0
    };
    if !bound {
        return Answer::Errno(errno());
    }
    match call.add_fd(&sock, None, arg & libc::SOCK_CLOEXEC != 0) {
        Ok(_) | Err(libc::ENOENT) => Answer::Done,
        Err(e) => Answer::Errno(e),
    }
}

/// `connect` under listed sockets (see the module doc).
pub(super) fn connect(call: &Call<'_>, job: &JobCtx) -> Answer {
    let args = call.n.data.args;
    let (fd, addr, len) = (args[0] as RawFd, args[1], args[2] as u32 as usize);
    let pidfd = match call.pidfd() {
        Ok(p) => p,
        Err(a) => return a,
    };
    // SAFETY: pidfd_getfd returns a new fd (close-on-exec), owned at once.
    let sock = unsafe { libc::syscall(libc::SYS_pidfd_getfd, pidfd.as_raw_fd(), fd, 0) };
    if sock < 0 {
        return Answer::Errno(match errno() {
            libc::EBADF => libc::EBADF,
            _ => libc::EPERM,
        });
    }
    // SAFETY: just received, ours.
    let sock = unsafe { OwnedFd::from_raw_fd(sock as RawFd) };
    match sockopt(&sock, libc::SO_DOMAIN) {
        Ok(libc::AF_UNIX) => {}
        // Not a Unix socket, and it stays one of its family whatever the job changes now.
        Ok(_) => return Answer::Continue,
        Err(e) => return Answer::Errno(e),
    }
    let size = std::mem::size_of::<libc::sockaddr_un>();
    if len <= std::mem::size_of::<libc::sa_family_t>() || len > size {
        return Answer::Errno(libc::EINVAL);
    }
    let mut buf = vec![0u8; len];
    let got = call.read_memory(addr, &mut buf);
    if !call.valid() {
        return Answer::Done;
    }
    if got != Ok(len) {
        return Answer::Errno(libc::EFAULT);
    }
    if u16::from_ne_bytes([buf[0], buf[1]]) != libc::AF_UNIX as u16 {
        return Answer::Errno(libc::EINVAL);
    }
    let raw = &buf[2..];
    if raw[0] == 0 {
        let name = String::from_utf8_lossy(&raw[1..]).into_owned();
        return call.refuse(
            job,
            format!("connect(AF_UNIX, \"@{name}\")"),
            RefusalKind::UnixAbstract,
        );
    }
    let path = Path::new(OsStr::from_bytes(
        raw.split(|&b| b == 0).next().unwrap_or_default(),
    ));
    let path = if path.is_relative() {
        match std::fs::read_link(format!("/proc/{}/cwd", call.n.pid)) {
            Ok(cwd) => cwd.join(path),
            Err(_) => return Answer::Errno(libc::ENOENT),
        }
    } else {
        path.to_path_buf()
    };
    let canonical = match path.canonicalize() {
        Ok(c) => c,
        Err(e) => return Answer::Errno(e.raw_os_error().unwrap_or(libc::EPERM)),
    };
    let Some(listed) = job.listed.iter().find(|l| **l == canonical) else {
        return call.refuse(
            job,
            format!("connect(AF_UNIX, {:?})", path.display().to_string()),
            RefusalKind::UnixPath(canonical.display().to_string()),
        );
    };
    match on_behalf(call, &sock, fd, listed) {
        Ok(()) => Answer::Value(0),
        Err(libc::ENOENT) if !call.valid() => Answer::Done,
        Err(e) => Answer::Errno(e),
    }
}

/// Connects a socket of the same type as the job's `sock` to `listed` (the policy's copy of
/// the path) and installs it over the job's `fd`, with its flags.
fn on_behalf(call: &Call<'_>, sock: &OwnedFd, fd: RawFd, listed: &Path) -> Result<(), i32> {
    // SAFETY: sockaddr_storage is plain data; getpeername writes at most its size.
    let connected = unsafe {
        let mut peer: libc::sockaddr_storage = std::mem::zeroed();
        let mut len = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
        libc::getpeername(
            sock.as_raw_fd(),
            (&mut peer as *mut libc::sockaddr_storage).cast(),
            &mut len,
        ) == 0
    };
    if connected {
        // As the kernel answers: a connected socket stays connected to its peer.
        return Err(libc::EISCONN);
    }
    let ty = sockopt(sock, libc::SO_TYPE)?;
    // SAFETY: F_GETFL reads the flags of our copy (the job's open file description).
    let status = unsafe { libc::fcntl(sock.as_raw_fd(), libc::F_GETFL) };
    if status < 0 {
        return Err(errno());
    }
    let cloexec = fd_cloexec(call.n.pid, fd);
    let ours = new_socket(ty | libc::SOCK_NONBLOCK)?;
    let target = open_no_symlinks(listed)?;
    let via = PathBuf::from(format!("/proc/self/fd/{}", target.as_raw_fd()));
    // SAFETY: sockaddr_un is plain data; the path (short, ours) fits with its NUL.
    let connected = unsafe {
        let mut addr: libc::sockaddr_un = std::mem::zeroed();
        addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
        for (d, s) in addr.sun_path.iter_mut().zip(via.as_os_str().as_bytes()) {
            *d = *s as libc::c_char;
        }
        libc::connect(
            ours.as_raw_fd(),
            (&addr as *const libc::sockaddr_un).cast(),
            std::mem::size_of::<libc::sockaddr_un>() as libc::socklen_t,
        ) == 0
    };
    if !connected {
        return Err(errno());
    }
    if status & libc::O_NONBLOCK == 0 {
        // SAFETY: F_SETFL on our own socket.
        unsafe { libc::fcntl(ours.as_raw_fd(), libc::F_SETFL, status & !libc::O_NONBLOCK) };
    }
    call.add_fd(&ours, Some(fd), cloexec).map(drop)
}

/// Whether the job's `fd` is close-on-exec (`/proc/<pid>/fdinfo`); unknown: yes.
fn fd_cloexec(pid: u32, fd: RawFd) -> bool {
    let info = std::fs::read_to_string(format!("/proc/{pid}/fdinfo/{fd}")).unwrap_or_default();
    info.lines()
        .find_map(|l| l.strip_prefix("flags:"))
        .and_then(|f| i64::from_str_radix(f.trim(), 8).ok())
        .is_none_or(|f| f & i64::from(libc::O_CLOEXEC) != 0)
}

/// `path` opened as `O_PATH` with no symbolic link anywhere in it (the policy's paths are
/// canonical): the inode connected is the one at the listed path.
fn open_no_symlinks(path: &Path) -> Result<OwnedFd, i32> {
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).map_err(|_| libc::EINVAL)?;
    // SAFETY: open_how is plain data.
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = (libc::O_PATH | libc::O_CLOEXEC) as u64;
    how.resolve = libc::RESOLVE_NO_SYMLINKS;
    // SAFETY: openat2 reads the path and `how`, returns a new fd, owned at once.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            libc::AT_FDCWD,
            c.as_ptr(),
            &how as *const libc::open_how,
            std::mem::size_of::<libc::open_how>(),
        )
    };
    if fd < 0 {
        return Err(errno());
    }
    // SAFETY: just opened, ours.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}
