//! A refused call in words (its distinguishing argument: a socket's family and type, an
//! ioctl's request) and why it was refused, for the job's answers.

use crate::sys::sandbox::RefusalKind;

fn family(f: i32) -> String {
    match f {
        libc::AF_UNIX => "AF_UNIX".into(),
        libc::AF_INET => "AF_INET".into(),
        libc::AF_INET6 => "AF_INET6".into(),
        libc::AF_NETLINK => "AF_NETLINK".into(),
        libc::AF_PACKET => "AF_PACKET".into(),
        libc::AF_VSOCK => "AF_VSOCK".into(),
        other => other.to_string(),
    }
}

fn sock_type(t: i32) -> String {
    match t & 0xf {
        libc::SOCK_STREAM => "SOCK_STREAM".into(),
        libc::SOCK_DGRAM => "SOCK_DGRAM".into(),
        libc::SOCK_RAW => "SOCK_RAW".into(),
        libc::SOCK_SEQPACKET => "SOCK_SEQPACKET".into(),
        other => other.to_string(),
    }
}

/// A refused call in words, with why it was refused.
pub(super) fn describe(nr: i64, args: &[u64; 6], supervised: bool) -> (String, RefusalKind) {
    let (a0, a1, a2) = (args[0] as i32, args[1] as i32, args[2] as i32);
    match nr {
        libc::SYS_socket | libc::SYS_socketpair => {
            let name = if nr == libc::SYS_socket {
                "socket"
            } else {
                "socketpair"
            };
            let proto = if a2 != 0 {
                format!(", {a2}")
            } else {
                String::new()
            };
            let text = format!("{name}({}, {}{proto})", family(a0), sock_type(a1));
            let unix_dgram = a1 & 0xf != libc::SOCK_STREAM && a1 & 0xf != libc::SOCK_SEQPACKET;
            let kind = match a0 {
                libc::AF_UNIX if nr == libc::SYS_socketpair || (supervised && unix_dgram) => {
                    RefusalKind::UnixDatagram
                }
                libc::AF_UNIX => RefusalKind::Unix,
                libc::AF_INET | libc::AF_INET6 if a1 & 0xf == libc::SOCK_DGRAM => RefusalKind::Udp,
                libc::AF_INET | libc::AF_INET6 => RefusalKind::NonTcp,
                _ => RefusalKind::Family,
            };
            (text, kind)
        }
        libc::SYS_io_uring_setup | libc::SYS_io_uring_enter | libc::SYS_io_uring_register => {
            let name = match nr {
                libc::SYS_io_uring_setup => "io_uring_setup",
                libc::SYS_io_uring_enter => "io_uring_enter",
                _ => "io_uring_register",
            };
            (name.into(), RefusalKind::IoUring)
        }
        libc::SYS_ioctl | 514 => {
            #[allow(clippy::unnecessary_cast)]
            let req = if args[1] as u32 as u64 == libc::TIOCSTI as u64 {
                "TIOCSTI"
            } else {
                "TIOCLINUX"
            };
            (format!("ioctl({req})"), RefusalKind::Terminal)
        }
        libc::SYS_memfd_create => (
            "memfd_create(without MFD_NOEXEC_SEAL)".into(),
            RefusalKind::Memfd,
        ),
        libc::SYS_openat | libc::SYS_open_by_handle_at => {
            let name = if nr == libc::SYS_openat {
                "openat"
            } else {
                "open_by_handle_at"
            };
            (
                format!("{name}(O_TRUNC without write access)"),
                RefusalKind::ReadOnlyTruncate,
            )
        }
        #[cfg(target_arch = "x86_64")]
        libc::SYS_open => (
            "open(O_TRUNC without write access)".into(),
            RefusalKind::ReadOnlyTruncate,
        ),
        other => (format!("syscall {other}"), RefusalKind::Other),
    }
}
