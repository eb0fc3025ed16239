//! TCP listeners: which sockets of the machine listen, and which processes hold them — the
//! platform's side of [`crate::ports`]. Linux: one netlink `sock_diag` dump (LISTEN only) and
//! the socket inodes of `/proc/<pid>/fd`; Windows: the TCP table with owner pids
//! (`GetExtendedTcpTable`); macOS: each process's descriptors through libproc (no machine-wide
//! table, so [`Listening::complete`] is false there).

use std::net::IpAddr;
use std::path::PathBuf;

#[cfg(target_os = "linux")]
use super::unix::net_linux as os;
#[cfg(target_os = "macos")]
use super::unix::net_macos as os;
#[cfg(windows)]
use super::windows::net as os;

/// One listening TCP socket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Socket {
    /// The local address it is bound to.
    pub address: IpAddr,
    /// The local port.
    pub port: u16,
    /// What identifies it on this platform: its inode on Linux; on Windows the pid that owns it.
    pub inode: u64,
    /// Its owner's uid (Linux; 0 elsewhere).
    pub uid: u32,
}

/// One look at the machine's listening sockets.
#[derive(Debug, Default)]
pub(crate) struct Listening {
    sockets: Vec<Socket>,
}

/// Takes one look at the machine's listening TCP sockets (IPv4 and IPv6).
pub(crate) fn listening() -> Listening {
    #[cfg(any(target_os = "linux", windows))]
    let sockets = os::dump();
    #[cfg(not(any(target_os = "linux", windows)))]
    let sockets = Vec::new();
    Listening { sockets }
}

impl Listening {
    /// Whether [`Self::sockets`] lists every listener of the machine (Linux, Windows); on macOS
    /// it is empty and only [`Self::owned_by`] and [`Self::holders`] answer.
    pub(crate) const COMPLETE: bool = cfg!(any(target_os = "linux", windows));

    /// The machine's listening sockets (empty where not [`Self::COMPLETE`]).
    pub(crate) fn sockets(&self) -> &[Socket] {
        &self.sockets
    }

    /// Whether a socket of this look could be held by a process of this user (a job's): on
    /// Linux one owned by this uid; elsewhere any.
    pub(crate) fn may_hold_ours(&self) -> bool {
        !Self::COMPLETE || self.ours().next().is_some()
    }

    /// The sockets that could be held by a process of this user (a job's): on Linux those
    /// owned by this uid; elsewhere all.
    pub(crate) fn ours(&self) -> impl Iterator<Item = &Socket> {
        #[cfg(target_os = "linux")]
        let me = rustix::process::geteuid().as_raw();
        #[cfg(not(target_os = "linux"))]
        let me = 0;
        self.sockets.iter().filter(move |s| s.uid == me)
    }

    /// The listeners held by the processes `pids`, as (address, port, pid).
    pub(crate) fn owned_by(&self, pids: &[u32]) -> Vec<(IpAddr, u16, u32)> {
        #[cfg(any(target_os = "linux", windows))]
        {
            os::owners(&self.sockets, pids)
                .into_iter()
                .map(|(i, pid)| (self.sockets[i].address, self.sockets[i].port, pid))
                .collect()
        }
        #[cfg(target_os = "macos")]
        {
            os::owned_by(pids)
        }
        #[cfg(not(any(target_os = "linux", target_os = "macos", windows)))]
        {
            let _ = pids;
            Vec::new()
        }
    }

    /// Every process that holds a listener on `port` (any user's that can be read).
    pub(crate) fn holders(&self, port: u16) -> Vec<u32> {
        #[cfg(target_os = "linux")]
        {
            let inodes = self
                .sockets
                .iter()
                .filter(|s| s.port == port)
                .map(|s| s.inode)
                .collect();
            os::holders(&inodes)
        }
        #[cfg(windows)]
        {
            let mut pids: Vec<u32> = self
                .sockets
                .iter()
                .filter(|s| s.port == port)
                .filter_map(|s| u32::try_from(s.inode).ok())
                .collect();
            pids.dedup();
            pids
        }
        #[cfg(target_os = "macos")]
        {
            os::holders(port)
        }
        #[cfg(not(any(target_os = "linux", target_os = "macos", windows)))]
        {
            let _ = port;
            Vec::new()
        }
    }
}

/// A process's command line and working directory, where the platform tells them.
pub(crate) fn describe(pid: u32) -> (Option<String>, Option<PathBuf>) {
    #[cfg(any(target_os = "linux", target_os = "macos", windows))]
    {
        os::describe(pid)
    }
    #[cfg(not(any(target_os = "linux", target_os = "macos", windows)))]
    {
        let _ = pid;
        (None, None)
    }
}
