//! Readiness that cannot be fooled: a wait for a port, for "listening anywhere", or for an
//! HTTP answer counts only the job's own listeners ([`crate::ports`]), and says who holds a port
//! the job wanted when it is someone else.
//!
//! A [`Probe`] takes one cheap look at the machine's listening sockets per call; only when the
//! look changed (a socket opened or closed) or the port asked for is in use does it scan the
//! process table, so a wait can look every few milliseconds and wake within one period of the
//! job starting to listen.

use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::job::Listener;
use crate::kill::Target;
use crate::ports::{self, PortHolder};
use crate::sys::net;

/// How often a wait for a port, a listener or a URL looks at the listening sockets.
pub(crate) const LOOK_EVERY: Duration = Duration::from_millis(5);
/// How long an unchanged look is trusted before the job's processes are scanned again (a
/// process of the job may have inherited a socket that opened earlier).
const RESCAN_EVERY: Duration = Duration::from_millis(250);
/// The longest one HTTP readiness request may take: a server that accepts and never answers
/// costs the wait this, then it asks again.
pub(crate) const HTTP_TIMEOUT: Duration = Duration::from_secs(2);
/// The pause after an HTTP answer that was not the one waited for (or no answer).
pub(crate) const HTTP_RETRY: Duration = Duration::from_millis(20);

/// What a probe waits for.
#[derive(Debug, Clone)]
pub(crate) enum Want {
    /// A listener of the job on this port.
    Port(u16),
    /// A listener of the job on any port (`Some`: only this one, the job's `auto_port`).
    Listening(Option<u16>),
}

/// What one look found.
#[derive(Debug)]
pub(crate) enum Seen {
    /// The job listens as wanted: all its listeners.
    Ready(Vec<Listener>),
    /// Another process holds the wanted port.
    Taken(Vec<PortHolder>),
    /// Not yet.
    No,
}

/// One wait's looks at the job's listeners.
#[derive(Debug)]
pub(crate) struct Probe {
    target: Target,
    want: Want,
    /// The last look's fingerprint and when the job's processes were last scanned for it.
    last: Option<(Vec<(u16, u64)>, Instant)>,
}

impl Probe {
    /// A probe of `target`'s listeners for `want`.
    pub(crate) fn new(target: Target, want: Want) -> Self {
        Self {
            target,
            want,
            last: None,
        }
    }

    /// One look. Blocking (reads the process table when the look changed): off the runtime.
    pub(crate) fn look(&mut self) -> Seen {
        let look = net::listening();
        let port = match self.want {
            Want::Port(p) | Want::Listening(Some(p)) => Some(p),
            Want::Listening(None) => None,
        };
        if let Some(p) = port {
            if ports::in_use(&look, p) == Some(false) {
                return Seen::No;
            }
            let mine = ports::of_in(&look, std::slice::from_ref(&self.target)).remove(0);
            if mine.iter().any(|l| l.port == p) {
                return Seen::Ready(mine);
            }
            let holders = ports::holders(&look, p);
            return if holders.is_empty() {
                Seen::No
            } else {
                Seen::Taken(holders)
            };
        }
        let fingerprint = ports::fingerprint(&look);
        if let (Some(f), Some((last, at))) = (&fingerprint, &self.last)
            && f == last
            && at.elapsed() < RESCAN_EVERY
        {
            return Seen::No;
        }
        let mine = ports::of_in(&look, std::slice::from_ref(&self.target)).remove(0);
        if !mine.is_empty() {
            return Seen::Ready(mine);
        }
        self.last = fingerprint.map(|f| (f, Instant::now()));
        Seen::No
    }
}

/// A readiness URL checked: its port. Only `http://` to this machine (`localhost`, a loopback
/// address, or the unspecified address) is accepted: the port must be one a job can own.
///
/// # Errors
/// [`Error::InvalidArgument`] naming what is wrong.
pub(crate) fn url_port(url: &str) -> Result<u16> {
    let bad = |why: &str| Error::InvalidArgument(format!("url {url:?}: {why}"));
    let uri: ureq::http::Uri = url.parse().map_err(|e| bad(&format!("not a URL ({e})")))?;
    match uri.scheme_str() {
        Some("http") => {}
        Some(other) => return Err(bad(&format!("only http:// is checked, not {other}://"))),
        None => return Err(bad("no scheme: write http://localhost:PORT/...")),
    }
    let host = uri.host().unwrap_or_default();
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let local = host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|a| a.is_loopback() || a.is_unspecified());
    if !local {
        return Err(bad(
            "the host must be this machine (localhost or a loopback address)",
        ));
    }
    Ok(uri.port_u16().unwrap_or(80))
}

/// One HTTP GET of `url` (no redirects followed, no proxy, at most `timeout`): its status, or
/// `None` when it got no answer. Blocking: off the runtime.
pub(crate) fn http_status(url: &str, timeout: Duration) -> Option<u16> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .max_redirects(0)
        .http_status_as_error(false)
        .proxy(None)
        .timeout_global(Some(timeout))
        .build()
        .into();
    agent.get(url).call().ok().map(|r| r.status().as_u16())
}

/// Whether an HTTP status counts as ready: `expect` exactly when given, else below 500.
pub(crate) fn status_ready(status: u16, expect: Option<u16>) -> bool {
    expect.map_or(status < 500, |e| status == e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readiness_urls_are_local_http_with_a_port() {
        assert_eq!(url_port("http://localhost:3000/health").ok(), Some(3000));
        assert_eq!(url_port("http://127.0.0.1/").ok(), Some(80));
        assert_eq!(url_port("http://[::1]:8080/x").ok(), Some(8080));
        for bad in [
            "https://localhost:3000/",
            "localhost:3000",
            "http://example.com:3000/",
            "not a url",
        ] {
            assert!(url_port(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_status_below_500_or_the_expected_one_is_ready() {
        assert!(status_ready(200, None));
        assert!(status_ready(302, None));
        assert!(!status_ready(503, None));
        assert!(!status_ready(200, Some(204)));
        assert!(status_ready(503, Some(503)));
    }
}
