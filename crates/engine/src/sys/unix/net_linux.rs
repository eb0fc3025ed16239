//! TCP listeners on Linux: which sockets listen (one netlink `sock_diag` dump that the kernel
//! filters to the LISTEN state, IPv4 and IPv6), and which process holds each one (a socket's
//! inode matched against the `socket:[N]` links of `/proc/<pid>/fd`).
//!
//! Why netlink: `/proc/net/tcp` prints every socket of the machine, so on a machine with 10,000
//! open connections reading it costs milliseconds; a LISTEN-only dump walks only the kernel's
//! listening hash. When netlink is refused (a sandbox without `NETLINK_SOCK_DIAG`), the
//! `/proc/net/tcp{,6}` tables are read instead: slower, same answer.

use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use netlink_packet_core::{
    NLM_F_DUMP, NLM_F_REQUEST, NetlinkHeader, NetlinkMessage, NetlinkPayload,
};
use netlink_packet_sock_diag::SockDiagMessage;
use netlink_packet_sock_diag::constants::{AF_INET, AF_INET6, IPPROTO_TCP};
use netlink_packet_sock_diag::inet::{ExtensionFlags, InetRequest, SocketId, StateFlags};
use netlink_sys::{Socket as Netlink, SocketAddr, protocols::NETLINK_SOCK_DIAG};

use crate::sys::net::Socket;

/// TCP's LISTEN state as `/proc/net/tcp` prints it (`st` column).
const PROC_LISTEN: &str = "0A";

/// Every listening TCP socket of the machine (this network namespace), with its inode and
/// owner uid as the kernel reports them.
pub(crate) fn dump() -> Vec<Socket> {
    let mut out = Vec::new();
    if netlink_dump(AF_INET, &mut out).is_ok() && netlink_dump(AF_INET6, &mut out).is_ok() {
        return out;
    }
    out.clear();
    proc_table("/proc/net/tcp", false, &mut out);
    proc_table("/proc/net/tcp6", true, &mut out);
    out
}

/// Appends the listening sockets of one address family, from one netlink dump.
fn netlink_dump(family: u8, out: &mut Vec<Socket>) -> std::io::Result<()> {
    let mut socket = Netlink::new(NETLINK_SOCK_DIAG)?;
    socket.bind_auto()?;
    socket.connect(&SocketAddr::new(0, 0))?;
    let mut header = NetlinkHeader::default();
    header.flags = NLM_F_REQUEST | NLM_F_DUMP;
    let mut request = NetlinkMessage::new(
        header,
        SockDiagMessage::InetRequest(InetRequest {
            family,
            protocol: IPPROTO_TCP,
            extensions: ExtensionFlags::empty(),
            states: StateFlags::LISTEN,
            socket_id: if family == AF_INET {
                SocketId::new_v4()
            } else {
                SocketId::new_v6()
            },
        })
        .into(),
    );
    request.finalize();
    let mut buf = vec![0; request.buffer_len()];
    request.serialize(&mut buf);
    socket.send(&buf, 0)?;
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = socket.recv(&mut &mut buf[..], 0)?;
        if n == 0 {
            return Err(std::io::Error::other("netlink: end of stream before done"));
        }
        let mut at = 0;
        while at < n {
            let msg = NetlinkMessage::<SockDiagMessage>::deserialize(&buf[at..n])
                .map_err(|e| std::io::Error::other(format!("netlink: {e}")))?;
            let len = msg.header.length as usize;
            match msg.payload {
                NetlinkPayload::InnerMessage(SockDiagMessage::InetResponse(r)) => {
                    let id = &r.header.socket_id;
                    out.push(Socket {
                        address: id.source_address,
                        port: id.source_port,
                        inode: u64::from(r.header.inode),
                        uid: r.header.uid,
                    });
                }
                NetlinkPayload::Done(_) => return Ok(()),
                NetlinkPayload::Error(e) => {
                    return Err(std::io::Error::other(format!("netlink: {e:?}")));
                }
                _ => {}
            }
            if len == 0 {
                break;
            }
            at += len;
        }
    }
}

/// Appends the LISTEN rows of `/proc/net/tcp` or `/proc/net/tcp6` (missing table: nothing).
fn proc_table(path: &str, v6: bool, out: &mut Vec<Socket>) {
    let Ok(text) = std::fs::read_to_string(path) else {
        return;
    };
    for line in text.lines().skip(1) {
        let f: Vec<&str> = line.split_ascii_whitespace().collect();
        // sl local rem st tx:rx tr:when retrnsmt uid timeout inode
        if f.len() < 10 || f[3] != PROC_LISTEN {
            continue;
        }
        let Some((addr, port)) = f[1].split_once(':') else {
            continue;
        };
        let (Some(address), Ok(port), Ok(uid), Ok(inode)) = (
            parse_proc_addr(addr, v6),
            u16::from_str_radix(port, 16),
            f[7].parse(),
            f[9].parse(),
        ) else {
            continue;
        };
        out.push(Socket {
            address,
            port,
            inode,
            uid,
        });
    }
}

/// An address as `/proc/net/tcp{,6}` prints it: the bytes of each 32-bit word in host order.
fn parse_proc_addr(hex: &str, v6: bool) -> Option<IpAddr> {
    let words: Vec<u32> = (0..hex.len() / 8)
        .map(|i| u32::from_str_radix(hex.get(i * 8..i * 8 + 8)?, 16).ok())
        .collect::<Option<_>>()?;
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_ne_bytes()).collect();
    match (v6, bytes.len()) {
        (false, 4) => Some(IpAddr::V4(Ipv4Addr::new(
            bytes[0], bytes[1], bytes[2], bytes[3],
        ))),
        (true, 16) => {
            let b: [u8; 16] = bytes.try_into().ok()?;
            Some(IpAddr::V6(Ipv6Addr::from(b)))
        }
        _ => None,
    }
}

/// The inodes of the sockets `pid` has open (its `/proc/<pid>/fd` links `socket:[N]`); empty
/// when the process is gone or not ours to read.
pub(crate) fn socket_inodes(pid: u32, out: &mut HashSet<u64>) {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return;
    };
    for entry in dir.flatten() {
        let Ok(target) = std::fs::read_link(entry.path()) else {
            continue;
        };
        if let Some(inode) = target
            .to_str()
            .and_then(|t| t.strip_prefix("socket:["))
            .and_then(|t| t.strip_suffix(']'))
            .and_then(|t| t.parse().ok())
        {
            out.insert(inode);
        }
    }
}

/// Every process that holds one of `inodes` open (a walk of every process's `/proc/<pid>/fd`:
/// only for the rare question "who holds port N"); processes not ours to read are not seen.
pub(crate) fn holders(inodes: &HashSet<u64>) -> Vec<u32> {
    let mut found = Vec::new();
    let mut held = HashSet::new();
    for pid in super::procfs::pids() {
        held.clear();
        socket_inodes(pid, &mut held);
        if held.iter().any(|i| inodes.contains(i)) {
            found.push(pid);
        }
    }
    found
}

/// The processes of `pids` that hold a socket of `sockets`, as (socket index, pid) pairs.
pub(crate) fn owners(sockets: &[Socket], pids: &[u32]) -> Vec<(usize, u32)> {
    // Jobs run as this user: a socket another user owns is never a job's.
    let me = rustix::process::geteuid().as_raw();
    let by_inode: HashMap<u64, usize> = sockets
        .iter()
        .enumerate()
        .filter(|(_, s)| s.uid == me && s.inode != 0)
        .map(|(i, s)| (s.inode, i))
        .collect();
    let mut found = Vec::new();
    if by_inode.is_empty() {
        return found;
    }
    let mut held = HashSet::new();
    for &pid in pids {
        held.clear();
        socket_inodes(pid, &mut held);
        for inode in &held {
            if let Some(&i) = by_inode.get(inode) {
                found.push((i, pid));
            }
        }
    }
    found
}

/// A process's command line (arguments joined by spaces) and working directory.
pub(crate) fn describe(pid: u32) -> (Option<String>, Option<std::path::PathBuf>) {
    let command = std::fs::read(format!("/proc/{pid}/cmdline")).ok().map(|b| {
        let args: Vec<String> = b
            .split(|&c| c == 0)
            .filter(|a| !a.is_empty())
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        args.join(" ")
    });
    let cwd = std::fs::read_link(format!("/proc/{pid}/cwd")).ok();
    (command.filter(|c| !c.is_empty()), cwd)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_net_addresses_are_words_in_host_order() {
        let lo = parse_proc_addr("0100007F", false);
        if cfg!(target_endian = "little") {
            assert_eq!(lo, Some(IpAddr::V4(Ipv4Addr::LOCALHOST)));
            let any6 = parse_proc_addr("00000000000000000000000001000000", true);
            assert_eq!(any6, Some(IpAddr::V6(Ipv6Addr::LOCALHOST)));
        }
        assert_eq!(parse_proc_addr("zz", false), None);
    }

    /// Both sources see a listener this test opens, with the same inode.
    #[test]
    fn netlink_and_proc_net_agree_on_a_listener() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = l.local_addr().expect("addr").port();
        let mut nl = Vec::new();
        netlink_dump(AF_INET, &mut nl).expect("netlink sock_diag");
        let mut proc = Vec::new();
        proc_table("/proc/net/tcp", false, &mut proc);
        let a = nl.iter().find(|s| s.port == port).expect("netlink sees it");
        let b = proc.iter().find(|s| s.port == port).expect("/proc sees it");
        assert_eq!((a.address, a.inode), (b.address, b.inode));
        let owners = owners(&nl, &[std::process::id()]);
        assert!(owners.iter().any(|&(i, _)| nl[i].port == port));
    }
}
