//! The server's one seccomp supervisor thread (see `notify.rs`): it polls every sandboxed
//! job's handoff socket (until the listener comes) and listener, plus a wake fd, and answers
//! each notification at once (`connect.rs`). A job's listener is dropped when the job ends
//! ([`Handle::close`]) or when every process under its filter has ended (POLLHUP).

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use super::super::{Refusal, RefusalKind, SandboxSpec};
use super::handoff::recv_fd;
use super::notify::connects_on_behalf;

/// Most distinct (call, command) pairs counted per job; more are counted as one.
const MAX_KINDS: usize = 64;

/// A job's side of the supervisor: its listed sockets, its write roots and its refusals.
#[derive(Debug)]
pub(super) struct JobCtx {
    /// The file-path Unix sockets it may connect to (canonical), when connected on its behalf.
    pub(super) listed: Vec<PathBuf>,
    /// Where it may truncate a file by path (`truncate.rs`): its write roots and the devices
    /// every job may write (canonical paths: the check compares resolved ones).
    pub(super) writable: Vec<PathBuf>,
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
                    super::answer::answer_one(fd, &e.job);
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
pub(super) fn register(handoff: OwnedFd, spec: &SandboxSpec) -> Option<Handle> {
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
            // The policy's roots and the job's TMPDIR are canonical already (`policy/`).
            writable: spec
                .write
                .iter()
                .cloned()
                .chain(super::landlock::ALWAYS_WRITABLE.iter().map(PathBuf::from))
                .collect(),
            refusals: Mutex::new(Vec::new()),
        }),
    });
    s.entries().push(Arc::clone(&entry));
    s.wake();
    Some(Handle { entry })
}
