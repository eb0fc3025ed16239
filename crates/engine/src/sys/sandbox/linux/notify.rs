//! Seccomp user notification: the filter's refusals and, while a profile lists file-path Unix
//! sockets on a kernel whose Landlock cannot tell them apart (ABI < 9), the job's Unix socket
//! calls go to a supervisor in the server instead of being answered by the filter alone.
//!
//! - **The filter** (`install`, in the trampoline): the rules of `filter.rs`, compiled with a
//!   placeholder action that is rewritten to `SECCOMP_RET_USER_NOTIF`, plus, when sockets are
//!   listed, `socket(AF_UNIX, ...)` and every `connect`. Installed with
//!   `SECCOMP_FILTER_FLAG_NEW_LISTENER` (and `WAIT_KILLABLE_RECV` where the kernel has it: a
//!   received call is interrupted only by SIGKILL), it yields the listener fd, which the
//!   trampoline sends back to the server over the socket it inherited as [`HANDOFF_FD`].
//! - **The handoff** ([`Handoff`], in the server's spawn): a socketpair per sandboxed spawn; the
//!   child's end becomes fd [`HANDOFF_FD`] in the trampoline (a posix_spawn dup2); the server's
//!   end is registered with the supervisor at once, which receives the listener on it
//!   (SCM_RIGHTS) when the trampoline sends it: the spawn never waits for the trampoline.
//! - **The supervisor** (one thread per server, started with the first registration): polls
//!   every job's listener and a wake fd; each notification is answered at once and never waits
//!   on the job. A refusal is counted (syscall, `/proc/<pid>/comm`) and answered EPERM; a Unix
//!   `socket` or `connect` is handled in `connect.rs`. A listener whose job ended is closed.
//!
//! Fail closed: when the listener is gone (the job ended, the server died), the kernel answers
//! every notified call with ENOSYS; nothing is ever allowed because nobody answered.

use std::collections::BTreeMap;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use seccompiler::{BpfProgram, SeccompAction, SeccompFilter, SeccompRule, TargetArch};

use super::super::{Refusal, RefusalKind, SandboxSpec};

/// x86_64's x32 syscalls: the same calls under numbers with this bit set.
pub(super) const X32: i64 = 0x4000_0000;
/// Most distinct (call, command) pairs counted per job; more are counted as one.
const MAX_KINDS: usize = 64;
/// The fd the trampoline finds its end of the handoff socket on.
pub(crate) const HANDOFF_FD: RawFd = 3;
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

/// The filter of `spec` with every refusal (and the supervised Unix calls) notified.
fn program(spec: &SandboxSpec) -> Result<BpfProgram, String> {
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = super::filter::rules(spec)?;
    if connects_on_behalf(spec, super::landlock::kernel_abi()) {
        let unix = SeccompRule::new(vec![
            seccompiler::SeccompCondition::new(
                0,
                seccompiler::SeccompCmpArgLen::Dword,
                seccompiler::SeccompCmpOp::Eq,
                libc::AF_UNIX as u64,
            )
            .map_err(err)?,
        ])
        .map_err(err)?;
        let mut extra = vec![(libc::SYS_socket, Some(unix)), (libc::SYS_connect, None)];
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

/// In the trampoline: installs `spec`'s notifying filter on this (only) thread and sends its
/// listener to the server over `handoff`; closes both. After this, every refusal waits for the
/// server's answer (or gets ENOSYS when nobody listens).
pub(super) fn install(spec: &SandboxSpec, handoff: RawFd) -> Result<(), String> {
    // SAFETY: the trampoline owns the inherited handoff fd; taken once, closed on return.
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
    send_fd(&handoff, &listener).map_err(|e| format!("cannot hand the listener back: {e}"))
}

fn send_fd(sock: &OwnedFd, fd: &OwnedFd) -> std::io::Result<()> {
    let mut byte = [0u8; 1];
    // SAFETY: the control buffer is sized by CMSG_SPACE for one fd and aligned for cmsghdr;
    // every pointer handed to sendmsg points into locals alive across the call.
    unsafe {
        let mut iov = libc::iovec {
            iov_base: byte.as_mut_ptr().cast(),
            iov_len: 1,
        };
        let space = libc::CMSG_SPACE(std::mem::size_of::<RawFd>() as u32) as usize;
        let mut control = vec![0u64; space.div_ceil(8)];
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = space as _;
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<RawFd>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<RawFd>(), fd.as_raw_fd());
        if libc::sendmsg(sock.as_raw_fd(), &msg, libc::MSG_NOSIGNAL) < 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

fn recv_fd(sock: RawFd) -> std::io::Result<Option<OwnedFd>> {
    let mut byte = [0u8; 1];
    // SAFETY: as in send_fd; a received fd is owned at once (MSG_CMSG_CLOEXEC).
    unsafe {
        let mut iov = libc::iovec {
            iov_base: byte.as_mut_ptr().cast(),
            iov_len: 1,
        };
        let space = libc::CMSG_SPACE(std::mem::size_of::<RawFd>() as u32) as usize;
        let mut control = vec![0u64; space.div_ceil(8)];
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = space as _;
        let n = loop {
            let n = libc::recvmsg(sock, &mut msg, libc::MSG_CMSG_CLOEXEC | libc::MSG_DONTWAIT);
            if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            break n;
        };
        if n < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        if n == 0 || cmsg.is_null() || (*cmsg).cmsg_type != libc::SCM_RIGHTS {
            return Ok(None);
        }
        let fd = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast::<RawFd>());
        Ok(Some(OwnedFd::from_raw_fd(fd)))
    }
}

/// The server's side of one sandboxed spawn's handoff socket (see the module doc).
#[derive(Debug)]
pub(crate) struct Handoff {
    ours: OwnedFd,
    theirs: OwnedFd,
}

impl Handoff {
    /// A new socketpair (both ends close-on-exec: the child's end is dup'd to
    /// [`HANDOFF_FD`], which clears the flag on that copy only).
    pub(crate) fn new() -> std::io::Result<Self> {
        let mut fds = [0; 2];
        // SAFETY: socketpair writes two new fds, owned at once.
        unsafe {
            if libc::socketpair(
                libc::AF_UNIX,
                libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
                0,
                fds.as_mut_ptr(),
            ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(Self {
                ours: OwnedFd::from_raw_fd(fds[0]),
                theirs: OwnedFd::from_raw_fd(fds[1]),
            })
        }
    }

    /// The end the child inherits (as [`HANDOFF_FD`]).
    pub(crate) fn child_end(&self) -> RawFd {
        self.theirs.as_raw_fd()
    }

    /// Makes `cmd`'s child inherit the child's end as [`HANDOFF_FD`] (the canary: a
    /// `Command`, run once per profile at start; a job's spawn uses a posix_spawn dup2).
    pub(crate) fn prepare(&self, cmd: &mut std::process::Command) {
        use std::os::unix::process::CommandExt;
        let fd = self.child_end();
        // SAFETY: the closure runs between fork and exec and calls only dup2 and fcntl
        // (async-signal-safe).
        unsafe {
            cmd.pre_exec(move || {
                let ok = if fd == HANDOFF_FD {
                    libc::fcntl(fd, libc::F_SETFD, 0) == 0
                } else {
                    libc::dup2(fd, HANDOFF_FD) >= 0
                };
                if ok {
                    Ok(())
                } else {
                    Err(std::io::Error::last_os_error())
                }
            });
        }
    }

    /// After the spawn: registers the job of `spec` with the supervisor, which receives
    /// the trampoline's listener on our end when it comes (the spawn does not wait for the
    /// trampoline). `None` when the supervisor cannot start: the job is then fail-closed
    /// (every notified call gets ENOSYS).
    pub(crate) fn supervise(self, spec: &SandboxSpec) -> Option<super::super::Supervision> {
        let Self { ours, theirs } = self;
        // The trampoline has its copy now: without ours, its exit is our end of file.
        drop(theirs);
        register(ours, spec).map(|inner| super::super::Supervision { inner })
    }
}

/// A job's side of the supervisor: its listed sockets and its refusals.
#[derive(Debug)]
pub(super) struct JobCtx {
    /// The file-path Unix sockets it may connect to (canonical), when connected on its behalf.
    pub(super) listed: Vec<PathBuf>,
    refusals: Mutex<Vec<Refusal>>,
}

impl JobCtx {
    pub(super) fn count(&self, syscall: String, kind: RefusalKind, command: String) {
        let mut r = self.refusals.lock().unwrap_or_else(|p| p.into_inner());
        // A job that tries many paths must not grow the server: past the bound, one entry.
        let (syscall, kind, command) = if r.len() >= MAX_KINDS
            && !r
                .iter()
                .any(|x| x.syscall == syscall && x.command == command)
        {
            (
                "other refused calls".to_owned(),
                RefusalKind::Other,
                "*".to_owned(),
            )
        } else {
            (syscall, kind, command)
        };
        match r
            .iter_mut()
            .find(|x| x.syscall == syscall && x.command == command)
        {
            Some(x) => x.count += 1,
            None => r.push(Refusal {
                syscall,
                kind,
                command,
                count: 1,
            }),
        }
    }
}

#[derive(Debug)]
struct Entry {
    fd: Mutex<Waiting>,
    job: Arc<JobCtx>,
}

/// What the supervisor waits on for a job: its handoff socket until the trampoline sends the
/// listener, then the listener. Replaced only by the supervisor thread, so an fd it polls
/// stays open while it polls it.
#[derive(Debug)]
enum Waiting {
    Handoff(OwnedFd),
    Listener(OwnedFd),
}

/// A registered job: its refusals, and its listener until closed.
#[derive(Debug)]
pub(crate) struct Handle {
    entry: Arc<Entry>,
}

impl Handle {
    pub(crate) fn refusals(&self) -> Vec<Refusal> {
        self.entry
            .job
            .refusals
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    pub(crate) fn close(&self) {
        if let Some(Ok(s)) = SUPERVISOR.get() {
            s.remove(&self.entry);
        }
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        self.close();
    }
}

/// The server's one supervisor: the registered listeners, and the eventfd that wakes its
/// thread when they change.
struct Supervisor {
    entries: Mutex<Vec<Arc<Entry>>>,
    wake: OwnedFd,
}

static SUPERVISOR: OnceLock<Result<Supervisor, String>> = OnceLock::new();

impl Supervisor {
    fn get() -> Result<&'static Supervisor, String> {
        let s = SUPERVISOR.get_or_init(|| {
            // SAFETY: eventfd returns a new fd, owned at once.
            let wake = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
            if wake < 0 {
                return Err(std::io::Error::last_os_error().to_string());
            }
            Ok(Supervisor {
                entries: Mutex::new(Vec::new()),
                // SAFETY: just made, owned here.
                wake: unsafe { OwnedFd::from_raw_fd(wake) },
            })
        });
        let s = s.as_ref().map_err(Clone::clone)?;
        static THREAD: OnceLock<Result<(), String>> = OnceLock::new();
        THREAD
            .get_or_init(|| {
                std::thread::Builder::new()
                    .name("ptyjobs-seccomp".into())
                    .spawn(move || s.run())
                    .map(drop)
                    .map_err(|e| e.to_string())
            })
            .clone()?;
        Ok(s)
    }

    fn entries(&self) -> std::sync::MutexGuard<'_, Vec<Arc<Entry>>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn wake(&self) {
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a local to our eventfd (a full counter only delays
        // nothing: the thread is awake then).
        unsafe { libc::write(self.wake.as_raw_fd(), (&one as *const u64).cast(), 8) };
    }

    fn remove(&self, entry: &Arc<Entry>) {
        self.entries().retain(|e| !Arc::ptr_eq(e, entry));
        self.wake();
    }

    /// The thread: poll every listener and the wake fd; answer what is ready.
    fn run(&self) {
        loop {
            let snapshot: Vec<Arc<Entry>> = self.entries().clone();
            let waiting: Vec<(RawFd, bool)> = snapshot
                .iter()
                .map(|e| match &*e.fd.lock().unwrap_or_else(|p| p.into_inner()) {
                    Waiting::Handoff(fd) => (fd.as_raw_fd(), true),
                    Waiting::Listener(fd) => (fd.as_raw_fd(), false),
                })
                .collect();
            let mut fds: Vec<libc::pollfd> = std::iter::once(self.wake.as_raw_fd())
                .chain(waiting.iter().map(|w| w.0))
                .map(|fd| libc::pollfd {
                    fd,
                    events: libc::POLLIN,
                    revents: 0,
                })
                .collect();
            // SAFETY: fds is a valid array of fds.len() pollfds; the fds stay open while the
            // snapshot holds their entries.
            let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, -1) };
            if n < 0 {
                continue; // EINTR
            }
            if fds[0].revents != 0 {
                let mut count = 0u64;
                // SAFETY: reads 8 bytes into a local from our nonblocking eventfd.
                unsafe { libc::read(self.wake.as_raw_fd(), (&mut count as *mut u64).cast(), 8) };
            }
            for ((e, p), &(fd, handoff)) in snapshot.iter().zip(&fds[1..]).zip(&waiting) {
                if p.revents == 0 {
                    continue;
                }
                if handoff {
                    // The listener, or the trampoline's end of file (it failed before
                    // sending one: it says why and exits 126).
                    let mut fd_of = e.fd.lock().unwrap_or_else(|p| p.into_inner());
                    match recv_fd(fd) {
                        Ok(Some(listener)) => *fd_of = Waiting::Listener(listener),
                        Err(err) if err.kind() == std::io::ErrorKind::WouldBlock => {}
                        _ => {
                            drop(fd_of);
                            self.entries().retain(|x| !Arc::ptr_eq(x, e));
                        }
                    }
                } else if p.revents & libc::POLLIN != 0 {
                    super::connect::answer_one(fd, &e.job);
                } else {
                    // POLLHUP: every process under the filter has ended.
                    self.entries().retain(|x| !Arc::ptr_eq(x, e));
                }
            }
        }
    }
}

/// Registers the job under `spec` whose listener comes on `handoff`; `None` (the handoff
/// dropped, so the listener is never received: fail closed) when the supervisor cannot run.
fn register(handoff: OwnedFd, spec: &SandboxSpec) -> Option<Handle> {
    let s = match Supervisor::get() {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!("the seccomp supervisor cannot start: {e}");
            return None;
        }
    };
    let entry = Arc::new(Entry {
        fd: Mutex::new(Waiting::Handoff(handoff)),
        job: Arc::new(JobCtx {
            listed: if connects_on_behalf(spec, super::landlock::kernel_abi()) {
                spec.unix_sockets.clone()
            } else {
                Vec::new()
            },
            refusals: Mutex::new(Vec::new()),
        }),
    });
    s.entries().push(Arc::clone(&entry));
    s.wake();
    Some(Handle { entry })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `socket(AF_INET, SOCK_DGRAM)` returns in a child under `spec`'s notifying filter
    /// whose listener is closed at once (no supervisor): the errno, or 0 if it was allowed.
    fn udp_without_a_supervisor(spec: &SandboxSpec) -> i32 {
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
                let s = libc::socket(libc::AF_INET, libc::SOCK_DGRAM, 0);
                let code = if s >= 0 { 0 } else { *libc::__errno_location() };
                libc::_exit(code);
            }
            let mut status = 0;
            libc::waitpid(pid, &mut status, 0);
            assert!(libc::WIFEXITED(status), "status {status:#x}");
            libc::WEXITSTATUS(status)
        }
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
}
