//! TCP listeners on Windows: the TCP tables with owner pids, listeners only
//! (`GetExtendedTcpTable(TCP_TABLE_OWNER_PID_LISTENER)`), IPv4 and IPv6. A socket's owner is
//! the pid that created it; [`crate::sys::net::Socket::inode`] holds that pid.
//!
//! Not told: a process's command line and working directory (another process's PEB would have
//! to be read); a holder is named by its pid only.

use std::ffi::c_void;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::PathBuf;

use windows_sys::Win32::NetworkManagement::IpHelper::{
    GetExtendedTcpTable, MIB_TCP6ROW_OWNER_PID, MIB_TCPROW_OWNER_PID, TCP_TABLE_OWNER_PID_LISTENER,
};
use windows_sys::Win32::Networking::WinSock::{AF_INET, AF_INET6};

use crate::sys::net::Socket;

/// `ERROR_INSUFFICIENT_BUFFER`: the table grew; ask again with the size given.
const INSUFFICIENT_BUFFER: u32 = 122;

/// One family's listener table as raw bytes (a `u32` row count, then the rows), or `None`.
fn table(family: u16) -> Option<Vec<u32>> {
    let mut size: u32 = 0;
    for _ in 0..4 {
        // u32 elements: the table's rows are u32-aligned.
        let mut buf = vec![0u32; (size as usize).div_ceil(4).max(1)];
        let mut bytes = u32::try_from(buf.len() * 4).ok()?;
        // SAFETY: the buffer holds `bytes` bytes, owned by this frame; the call writes at most
        // that many and says how many it needs when they do not fit.
        let rc = unsafe {
            GetExtendedTcpTable(
                buf.as_mut_ptr().cast::<c_void>(),
                &raw mut bytes,
                0,
                u32::from(family),
                TCP_TABLE_OWNER_PID_LISTENER,
                0,
            )
        };
        match rc {
            0 => return Some(buf),
            INSUFFICIENT_BUFFER => size = bytes + 1024,
            _ => return None,
        }
    }
    None
}

/// The rows of a table of `T` after its `u32` count, within the buffer.
fn rows<T: Copy>(buf: &[u32]) -> Vec<T> {
    let Some(&count) = buf.first() else {
        return Vec::new();
    };
    let each = size_of::<T>();
    let room = (buf.len() * 4).saturating_sub(4) / each;
    let n = (count as usize).min(room);
    // SAFETY: `n` rows of `T` fit in the buffer after the count (checked above), the buffer is
    // u32-aligned as the rows are, and the rows are plain data written by the call.
    (0..n)
        .map(|i| unsafe {
            buf.as_ptr()
                .add(1)
                .cast::<u8>()
                .add(i * each)
                .cast::<T>()
                .read_unaligned()
        })
        .collect()
}

/// A port as the table stores it: network byte order in the low 16 bits.
fn port(raw: u32) -> u16 {
    u16::from_be((raw & 0xffff) as u16)
}

/// Every listening TCP socket of the machine, with its owner pid in `inode`.
pub(crate) fn dump() -> Vec<Socket> {
    let mut out = Vec::new();
    if let Some(buf) = table(AF_INET) {
        for r in rows::<MIB_TCPROW_OWNER_PID>(&buf) {
            out.push(Socket {
                address: IpAddr::V4(Ipv4Addr::from(r.dwLocalAddr.to_ne_bytes())),
                port: port(r.dwLocalPort),
                inode: u64::from(r.dwOwningPid),
                uid: 0,
            });
        }
    }
    if let Some(buf) = table(AF_INET6) {
        for r in rows::<MIB_TCP6ROW_OWNER_PID>(&buf) {
            out.push(Socket {
                address: IpAddr::V6(Ipv6Addr::from(r.ucLocalAddr)),
                port: port(r.dwLocalPort),
                inode: u64::from(r.dwOwningPid),
                uid: 0,
            });
        }
    }
    out
}

/// The sockets of `sockets` owned by one of `pids`, as (socket index, pid).
pub(crate) fn owners(sockets: &[Socket], pids: &[u32]) -> Vec<(usize, u32)> {
    sockets
        .iter()
        .enumerate()
        .filter_map(|(i, s)| {
            let pid = u32::try_from(s.inode).ok()?;
            pids.contains(&pid).then_some((i, pid))
        })
        .collect()
}

/// Not told on Windows (see the module docs).
pub(crate) fn describe(_pid: u32) -> (Option<String>, Option<PathBuf>) {
    (None, None)
}
