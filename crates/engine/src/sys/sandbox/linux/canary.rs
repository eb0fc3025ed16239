//! The start canary: a process that applies a profile's sandbox to itself and tries what the
//! sandbox must refuse. The server runs it once per profile at start; a probe that succeeds
//! means the kernel does not enforce the profile, and jobs under it are refused.

use std::io::ErrorKind;
use std::net::{TcpListener, TcpStream, UdpSocket};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::time::Duration;

use super::super::{Probe, SandboxSpec};

fn probe(what: &str, outcome: std::io::Result<()>) -> Probe {
    match outcome {
        Ok(()) => Probe {
            what: what.into(),
            refused: false,
            detail: "it succeeded".into(),
        },
        Err(e) => Probe {
            what: what.into(),
            // Refused by the sandbox: Landlock answers EACCES, the filter EPERM.
            refused: matches!(e.kind(), ErrorKind::PermissionDenied)
                || e.raw_os_error() == Some(libc::EPERM),
            detail: e.to_string(),
        },
    }
}

/// Sets up what needs the server's rights (a listener on TCP and on a file-path Unix socket
/// in `outside`), applies `spec`, then probes.
pub(super) fn run(spec: &SandboxSpec, outside: Option<&Path>) -> Result<Vec<Probe>, String> {
    let pid = std::process::id();
    let tcp = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let tcp_port = tcp.local_addr().map_err(|e| e.to_string())?.port();
    let sock = outside.map(|d| d.join(format!(".ptyjobs-canary-{pid}.sock")));
    let unix = match &sock {
        Some(p) => Some(UnixListener::bind(p).map_err(|e| format!("{}: {e}", p.display()))?),
        None => None,
    };
    let restricted = super::restrict(spec);
    let mut probes = Vec::new();
    if let Err(e) = restricted {
        probes.push(Probe {
            what: "apply the sandbox".into(),
            refused: false,
            detail: e,
        });
    }
    if let Some(dir) = outside {
        let file = dir.join(format!(".ptyjobs-canary-{pid}"));
        let wrote = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&file)
            .map(drop);
        probes.push(probe(&format!("write {}", file.display()), wrote));
    }
    if let Some(net) = &spec.net
        && !net.connect.contains(&tcp_port)
    {
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], tcp_port));
        let connected = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).map(drop);
        probes.push(probe(&format!("TCP connect to port {tcp_port}"), connected));
    }
    if let Some(path) = &sock
        && !spec.unix_sockets.iter().any(|s| s == path)
    {
        probes.push(probe(
            &format!("connect to the Unix socket {}", path.display()),
            UnixStream::connect(path).map(drop),
        ));
    }
    if spec.net.is_some() {
        probes.push(probe(
            "a UDP socket",
            UdpSocket::bind("127.0.0.1:0").map(drop),
        ));
    }
    drop((tcp, unix));
    Ok(probes)
}
