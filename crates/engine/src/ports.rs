//! The TCP listeners that are a job's own, and who holds a port that is not.
//!
//! A job's processes are the kill path's (every process of its session, and the escapees that
//! carry its job marker: [`crate::kill::members_of`]), found by one process scan; their
//! listeners come from one look at the machine's listening sockets ([`crate::sys::net`]). Any
//! number of jobs cost one look and one scan together ([`of`]).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::job::{JobId, Listener};
use crate::kill::{self, Target};
use crate::procs;
use crate::sys::net::{self, Listening};

/// A process that holds a port a job waited for, when it is not the job's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct PortHolder {
    /// The process that holds the listening socket.
    pub pid: u32,
    /// Its command line, when it can be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Its working directory, when it can be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<PathBuf>,
    /// The ptyjobs job it belongs to (its environment carries that job's marker), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job_id: Option<JobId>,
    /// That job's name, if it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job_name: Option<String>,
}

/// The URL a person would open for a listener on `port`: `http://localhost:<port>/`.
pub fn url_of(port: u16) -> String {
    format!("http://localhost:{port}/")
}

/// How long the answer for a job is reused while the machine's listening sockets have not
/// changed. A job's ports change without a listening socket opening or closing only when a
/// socket moves between processes (its holder exits and a child outside the job keeps it, or
/// a new job inherits one): an answer is at most this old then.
const REUSE: Duration = Duration::from_secs(1);

/// The last answers, valid for one fingerprint of the listening sockets.
struct Cache {
    fingerprint: Vec<(u16, u64)>,
    at: Instant,
    jobs: HashMap<JobId, Vec<Listener>>,
}

static CACHE: Mutex<Option<Cache>> = Mutex::new(None);

/// The listeners of each of `targets`, in the same order: one look at the machine's listening
/// sockets and (only when one of them could be a job's, and the answer is not known for this
/// look already, see [`REUSE`]) one process scan for them all. Blocking (reads the process
/// table): call it off the async runtime.
pub(crate) fn of(targets: &[Target]) -> Vec<Vec<Listener>> {
    let look = net::listening();
    let Some(fingerprint) = fingerprint(&look) else {
        return of_in(&look, targets);
    };
    let mut out = vec![None; targets.len()];
    {
        let cache = CACHE.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(c) = cache.as_ref()
            && c.fingerprint == fingerprint
            && c.at.elapsed() < REUSE
        {
            for (t, o) in targets.iter().zip(&mut out) {
                *o = c.jobs.get(&t.id()).cloned();
            }
        }
    }
    let missing: Vec<Target> = targets
        .iter()
        .zip(&out)
        .filter(|(_, o)| o.is_none())
        .map(|(t, _)| t.clone())
        .collect();
    if missing.is_empty() {
        return out.into_iter().map(Option::unwrap_or_default).collect();
    }
    let found = of_in(&look, &missing);
    let mut cache = CACHE.lock().unwrap_or_else(PoisonError::into_inner);
    let c = match cache.take() {
        Some(c) if c.fingerprint == fingerprint && c.at.elapsed() < REUSE => cache.insert(c),
        _ => cache.insert(Cache {
            fingerprint,
            at: Instant::now(),
            jobs: HashMap::new(),
        }),
    };
    let mut found = missing.iter().zip(found);
    for o in &mut out {
        if o.is_none()
            && let Some((t, ports)) = found.next()
        {
            c.jobs.insert(t.id(), ports.clone());
            *o = Some(ports);
        }
    }
    out.into_iter().map(Option::unwrap_or_default).collect()
}

/// [`of`] within a look already taken.
pub(crate) fn of_in(look: &Listening, targets: &[Target]) -> Vec<Vec<Listener>> {
    let mut out = vec![Vec::new(); targets.len()];
    if targets.is_empty() || (Listening::COMPLETE && !look.may_hold_ours()) {
        return out;
    }
    let scan = procs::since(Instant::now());
    let members: Vec<Vec<u32>> = targets.iter().map(|t| kill::members_of(t, &scan)).collect();
    let mut all: Vec<u32> = members.concat();
    all.sort_unstable();
    all.dedup();
    let mut held = look.owned_by(&all);
    held.sort_by_key(|&(address, port, pid)| (port, address, pid));
    for (pids, listeners) in members.iter().zip(&mut out) {
        for &(address, port, pid) in &held {
            // A socket shared by a parent and its child is one listener: the first pid holds it.
            if pids.contains(&pid)
                && !listeners
                    .iter()
                    .any(|l: &Listener| l.address == address && l.port == port)
            {
                listeners.push(Listener { address, port, pid });
            }
        }
    }
    out
}

/// Whether anything listens on `port`, when the platform can tell from one look (Linux,
/// Windows); `None` where it cannot (macOS).
pub(crate) fn in_use(look: &Listening, port: u16) -> Option<bool> {
    Listening::COMPLETE.then(|| look.sockets().iter().any(|s| s.port == port))
}

/// A summary of the listening sockets that could be a job's (this user's, on Linux) that
/// changes when one opens or closes (where the platform has a machine-wide table).
pub(crate) fn fingerprint(look: &Listening) -> Option<Vec<(u16, u64)>> {
    Listening::COMPLETE.then(|| {
        let mut f: Vec<(u16, u64)> = look.ours().map(|s| (s.port, s.inode)).collect();
        f.sort_unstable();
        f
    })
}

/// The processes that hold a listener on `port`, each with its command line, working
/// directory and job marker (names are the caller's to add). Blocking: a walk of every
/// process's descriptors on Linux.
pub(crate) fn holders(look: &Listening, port: u16) -> Vec<PortHolder> {
    look.holders(port)
        .into_iter()
        .map(|pid| {
            let (command, cwd) = net::describe(pid);
            PortHolder {
                pid,
                command,
                cwd,
                job_id: procs::marker_of(pid),
                job_name: None,
            }
        })
        .collect()
}

/// Fills [`crate::JobInfo::ports`] of each running job of `infos` whose target is given (the
/// same order), with one look and one scan for them all.
pub(crate) fn fill(infos: &mut [crate::JobInfo], targets: Vec<Option<Target>>) {
    let (at, targets): (Vec<usize>, Vec<Target>) = targets
        .into_iter()
        .enumerate()
        .filter(|(i, t)| t.is_some() && !infos[*i].status.is_final())
        .filter_map(|(i, t)| Some((i, t?)))
        .unzip();
    if targets.is_empty() {
        return;
    }
    for (i, ports) in at.into_iter().zip(of(&targets)) {
        infos[i].ports = ports;
    }
}

/// The port a job started with `auto_port` gets: the `PORT` of its own environment when it sets
/// one (the caller's explicit choice wins; it must be a port number), else a TCP port free on
/// every IPv4 and IPv6 address right now (the system picks it; it stays free until the job or
/// another program binds it).
///
/// # Errors
/// [`crate::Error::InvalidArgument`] for a `PORT` that is not a port number; [`crate::Error::Io`]
/// when no port can be bound.
pub(crate) fn auto_port(env: &std::collections::BTreeMap<String, String>) -> crate::Result<u16> {
    if let Some(p) = env.get("PORT") {
        return p
            .trim()
            .parse::<u16>()
            .ok()
            .filter(|&p| p > 0)
            .ok_or_else(|| {
                crate::Error::InvalidArgument(format!(
                    "auto_port with env PORT={p:?}: PORT must be a port number (1..=65535)"
                ))
            });
    }
    let mut last = None;
    for _ in 0..16 {
        // One at a time (a dual-stack `::` would conflict with a held `0.0.0.0`): free on
        // IPv6, then on IPv4 too, or a server that binds either would find it taken.
        let Ok(v6) = std::net::TcpListener::bind(("::", 0)) else {
            // No IPv6 on this machine: the IPv4 port is what counts.
            return Ok(std::net::TcpListener::bind(("0.0.0.0", 0))?
                .local_addr()?
                .port());
        };
        let port = v6.local_addr()?.port();
        drop(v6);
        match std::net::TcpListener::bind(("0.0.0.0", port)) {
            Ok(_) => return Ok(port),
            Err(e) => last = Some(e),
        }
    }
    Err(crate::Error::Io(last.unwrap_or_else(|| {
        std::io::Error::other("no free TCP port found")
    })))
}
