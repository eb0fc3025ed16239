//! TCP listeners on macOS, through libproc: a process's descriptors
//! (`proc_pidinfo(PROC_PIDLISTFDS)`), and for each socket its TCP state and local address
//! (`proc_pidfdinfo(PROC_PIDFDSOCKETINFO)`). There is no machine-wide table with owners, so
//! "who holds port N" looks at every process's descriptors.
//!
//! The `socket_fdinfo` layout is declared here (the libc crate does not have it), from
//! `<sys/proc_info.h>`, up to the TCP part of its union; the buffer handed to the kernel is
//! padded past the real size. Compile-checked here (clippy --target aarch64-apple-darwin); it
//! has not run on a Mac.

use std::ffi::{c_int, c_void};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::PathBuf;

use super::procs::all_pids;

/// `PROC_PIDFDSOCKETINFO` of `<sys/proc_info.h>`.
const PROC_PIDFDSOCKETINFO: c_int = 3;
/// `soi_kind` of a TCP socket.
const SOCKINFO_TCP: c_int = 2;
/// `tcpsi_state` of a listening socket.
const TSI_S_LISTEN: c_int = 1;
/// `insi_vflag` bits.
const INI_IPV4: u8 = 0x1;
const INI_IPV6: u8 = 0x2;

#[repr(C)]
#[derive(Clone, Copy)]
struct ProcFileinfo {
    fi_openflags: u32,
    fi_status: u32,
    fi_offset: i64,
    fi_type: i32,
    fi_guardflags: u32,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct VinfoStat {
    vst_dev: u32,
    vst_mode: u16,
    vst_nlink: u16,
    vst_ino: u64,
    vst_uid: u32,
    vst_gid: u32,
    vst_times: [i64; 8],
    vst_size: i64,
    vst_blocks: i64,
    vst_blksize: i32,
    vst_flags: u32,
    vst_gen: u32,
    vst_rdev: u32,
    vst_qspare: [i64; 2],
}

#[repr(C)]
#[derive(Clone, Copy)]
struct SockbufInfo {
    sbi_cc: u32,
    sbi_hiwat: u32,
    sbi_mbcnt: u32,
    sbi_mbmax: u32,
    sbi_lowat: u32,
    sbi_flags: i16,
    sbi_timeo: i16,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct InSockinfo {
    insi_fport: c_int,
    insi_lport: c_int,
    insi_gencnt: u64,
    insi_flags: u32,
    insi_flow: u32,
    insi_vflag: u8,
    insi_ip_ttl: u8,
    rfu_1: u32,
    /// `in4in6_addr` (12 bytes of padding, then the IPv4 address) or `in6_addr`.
    insi_faddr: [u8; 16],
    insi_laddr: [u8; 16],
    insi_v4_tos: u8,
    insi_v6_hlim: u8,
    insi_v6_cksum: c_int,
    insi_v6_ifindex: u16,
    insi_v6_hops: i16,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct TcpSockinfo {
    tcpsi_ini: InSockinfo,
    tcpsi_state: c_int,
    tcpsi_timer: [c_int; 4],
    tcpsi_mss: c_int,
    tcpsi_flags: u32,
    rfu_1: u32,
    tcpsi_tp: u64,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct SocketInfo {
    soi_stat: VinfoStat,
    soi_so: u64,
    soi_pcb: u64,
    soi_type: c_int,
    soi_protocol: c_int,
    soi_family: c_int,
    soi_shorts: [i16; 7],
    soi_error: u16,
    soi_oobmark: u32,
    soi_rcv: SockbufInfo,
    soi_snd: SockbufInfo,
    soi_kind: c_int,
    rfu_1: u32,
    soi_tcp: TcpSockinfo,
    /// The rest of the `soi_proto` union (its largest member is bigger than the TCP one).
    soi_rest: [u8; 1024],
}

#[repr(C)]
#[derive(Clone, Copy)]
struct SocketFdinfo {
    pfi: ProcFileinfo,
    psi: SocketInfo,
}

/// The descriptors of `pid` (empty when it is gone or not ours to read).
fn fds(pid: c_int) -> Vec<libc::proc_fdinfo> {
    let each = std::mem::size_of::<libc::proc_fdinfo>();
    // SAFETY: with a null buffer, proc_pidinfo only returns the size the list needs.
    let need =
        unsafe { libc::proc_pidinfo(pid, libc::PROC_PIDLISTFDS, 0, std::ptr::null_mut(), 0) };
    let Ok(need) = usize::try_from(need) else {
        return Vec::new();
    };
    let mut list = vec![
        libc::proc_fdinfo {
            proc_fd: 0,
            proc_fdtype: 0
        };
        need / each + 16
    ];
    let Ok(bytes) = c_int::try_from(list.len() * each) else {
        return Vec::new();
    };
    // SAFETY: the buffer holds `bytes` bytes of proc_fdinfo, owned by this frame.
    let got = unsafe {
        libc::proc_pidinfo(
            pid,
            libc::PROC_PIDLISTFDS,
            0,
            list.as_mut_ptr().cast::<c_void>(),
            bytes,
        )
    };
    list.truncate(usize::try_from(got).unwrap_or(0) / each);
    list
}

/// The local address and port of descriptor `fd` of `pid` when it is a listening TCP socket.
fn listener(pid: c_int, fd: c_int) -> Option<(IpAddr, u16)> {
    let size = c_int::try_from(std::mem::size_of::<SocketFdinfo>()).ok()?;
    // SAFETY: SocketFdinfo is plain old data, so all-zero is a valid value.
    let mut info: SocketFdinfo = unsafe { std::mem::zeroed() };
    // SAFETY: the buffer is a SocketFdinfo of `size` bytes (more than the kernel writes).
    let got = unsafe {
        libc::proc_pidfdinfo(
            pid,
            fd,
            PROC_PIDFDSOCKETINFO,
            (&raw mut info).cast::<c_void>(),
            size,
        )
    };
    if got <= 0 || info.psi.soi_kind != SOCKINFO_TCP || info.psi.soi_tcp.tcpsi_state != TSI_S_LISTEN
    {
        return None;
    }
    let ini = &info.psi.soi_tcp.tcpsi_ini;
    // The port is in network byte order in the low 16 bits.
    let port = u16::from_be(u16::try_from(ini.insi_lport & 0xffff).ok()?);
    let a = ini.insi_laddr;
    let address = if ini.insi_vflag & INI_IPV6 != 0 {
        IpAddr::V6(Ipv6Addr::from(a))
    } else if ini.insi_vflag & INI_IPV4 != 0 {
        IpAddr::V4(Ipv4Addr::new(a[12], a[13], a[14], a[15]))
    } else {
        return None;
    };
    Some((address, port))
}

/// The listening TCP sockets the processes `pids` hold, as (address, port, pid).
pub(crate) fn owned_by(pids: &[u32]) -> Vec<(IpAddr, u16, u32)> {
    let socket = u32::try_from(libc::PROX_FDTYPE_SOCKET).unwrap_or(u32::MAX);
    let mut out = Vec::new();
    for &pid in pids {
        let Ok(p) = c_int::try_from(pid) else {
            continue;
        };
        for fd in fds(p).iter().filter(|f| f.proc_fdtype == socket) {
            if let Some((address, port)) = listener(p, fd.proc_fd) {
                out.push((address, port, pid));
            }
        }
    }
    out
}

/// Every process that holds a listener on `port` (a look at every process's descriptors).
pub(crate) fn holders(port: u16) -> Vec<u32> {
    let mut pids: Vec<u32> = owned_by(&all_pids())
        .into_iter()
        .filter(|&(_, p, _)| p == port)
        .map(|(_, _, pid)| pid)
        .collect();
    pids.dedup();
    pids
}

/// A process's executable path (macOS tells no command line without `KERN_PROCARGS2`) and
/// working directory.
pub(crate) fn describe(pid: u32) -> (Option<String>, Option<PathBuf>) {
    let Ok(p) = c_int::try_from(pid) else {
        return (None, None);
    };
    let mut path = vec![0u8; 4096];
    // SAFETY: the buffer holds 4096 bytes (PROC_PIDPATHINFO_MAXSIZE), owned by this frame.
    let n = unsafe { libc::proc_pidpath(p, path.as_mut_ptr().cast::<c_void>(), 4096) };
    let command = usize::try_from(n).ok().filter(|&n| n > 0).map(|n| {
        path.truncate(n);
        String::from_utf8_lossy(&path).into_owned()
    });
    let size = c_int::try_from(std::mem::size_of::<libc::proc_vnodepathinfo>()).unwrap_or(0);
    // SAFETY: proc_vnodepathinfo is plain old data, so all-zero is a valid value.
    let mut info: libc::proc_vnodepathinfo = unsafe { std::mem::zeroed() };
    // SAFETY: the buffer is a proc_vnodepathinfo of exactly `size` bytes, owned by this frame.
    let got = unsafe {
        libc::proc_pidinfo(
            p,
            libc::PROC_PIDVNODEPATHINFO,
            0,
            (&raw mut info).cast::<c_void>(),
            size,
        )
    };
    let cwd = (got == size)
        .then(|| {
            let raw: Vec<u8> = info
                .pvi_cdir
                .vip_path
                .iter()
                .flatten()
                .map(|&c| c.cast_unsigned())
                .take_while(|&c| c != 0)
                .collect();
            (!raw.is_empty()).then(|| PathBuf::from(String::from_utf8_lossy(&raw).into_owned()))
        })
        .flatten();
    (command, cwd)
}
