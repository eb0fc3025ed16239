//! What the server learns from a sandboxed job's supervisor (Linux: seccomp user notification,
//! see `linux/notify.rs`): the syscalls the filter refused, counted per job, and the handle
//! that keeps the job's listener watched until the job ends. Off Linux nothing is supervised:
//! a policy is refused before any job starts.

/// Why the filter refused a syscall: what the policy layer turns into a hint naming the
/// profile key that would allow it (or saying that nothing can).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
// Off Linux nothing is supervised, so nothing makes one.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub enum RefusalKind {
    /// A UDP (QUIC) socket while the network is not "on".
    Udp,
    /// Another non-TCP IP socket (raw, SCTP, MPTCP) while the network is not "on".
    NonTcp,
    /// A socket of another family (packet, vsock, ...) while the network is not "on".
    Family,
    /// A Unix socket while the profile lists none (Landlock below ABI 9 cannot tell paths).
    Unix,
    /// A Unix datagram socket (it could send to any path): refused on Landlock below ABI 9.
    UnixDatagram,
    /// A connect to an abstract Unix socket while Unix sockets are connected on the job's
    /// behalf (letting the kernel connect it would let the job swap in a path).
    UnixAbstract,
    /// A connect to a file-path Unix socket the profile does not list (the path as resolved).
    UnixPath(String),
    /// io_uring: cannot be allowed.
    IoUring,
    /// TIOCSTI or TIOCLINUX: cannot be allowed.
    Terminal,
    /// A memfd that could be executed, under an exec allowlist.
    Memfd,
    /// `truncate(2)` of a file outside the write roots (its path as resolved).
    TruncatePath(String),
    /// An open that truncates without write access (`O_RDONLY | O_TRUNC`): cannot be allowed.
    ReadOnlyTruncate,
    /// `openat2`: its flags cannot be checked; answered ENOSYS (callers fall back to `openat`).
    Openat2,
    /// Anything else the filter names.
    Other,
}

/// One kind of refused call made by one command, and how often.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The call, with its distinguishing argument: `socket(AF_INET, SOCK_DGRAM)`.
    pub syscall: String,
    /// Why it was refused.
    pub kind: RefusalKind,
    /// The process's command (`/proc/<pid>/comm`).
    pub command: String,
    /// How many times.
    pub count: u64,
}

/// A sandboxed job's supervision: its refusals so far, and its listener, watched by the
/// server's supervisor thread until [`Supervision::close`] (the job ended) or drop.
#[derive(Debug)]
pub struct Supervision {
    #[cfg(target_os = "linux")]
    pub(super) inner: super::linux::supervisor::Handle,
    #[cfg(not(target_os = "linux"))]
    _never: std::convert::Infallible,
}

impl Supervision {
    /// The calls refused so far, in the order first seen.
    pub fn refusals(&self) -> Vec<Refusal> {
        #[cfg(target_os = "linux")]
        {
            self.inner.refusals()
        }
        #[cfg(not(target_os = "linux"))]
        {
            match self._never {}
        }
    }

    /// Stops watching the job's listener (it ended): a process it left behind gets ENOSYS
    /// for every notified call from then on, never an allowed one. The counts stay.
    pub fn close(&self) {
        #[cfg(target_os = "linux")]
        self.inner.close();
    }
}
