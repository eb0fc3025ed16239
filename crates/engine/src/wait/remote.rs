//! A wait on a running job of another live server, for the conditions only that server can
//! tell exactly (a pattern in lines still on its screen, quiet, input, a readiness URL): the
//! wait is that server's, asked over its attach socket, bounded by this caller's timeout;
//! dropping the future closes the connection, which cancels it there.

use std::time::{Duration, Instant};

use super::{TICK, WaitOutcome, WaitProgress, WaitReason, WaitSpec};
use crate::control::{ControlOp, ControlWait, Remote, SLACK};
use crate::error::Result;

/// Whether `spec` asks for something the job's record and processes cannot tell.
pub(super) fn needs_owner(spec: &WaitSpec) -> bool {
    spec.pattern.is_some() || spec.idle.is_some() || spec.input || spec.url.is_some()
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Has `remote`'s server wait for `spec` on its job, for at most what is left of `total`
/// since `start`; `progress` is called about once a second meanwhile.
///
/// # Errors
/// As [`Remote::ask`].
pub(super) async fn wait_remote(
    remote: &Remote,
    spec: &WaitSpec,
    total: Duration,
    capped: bool,
    start: Instant,
    progress: &mut impl FnMut(WaitProgress),
) -> Result<WaitOutcome> {
    let left = total.saturating_sub(start.elapsed());
    let op = ControlOp::Wait(ControlWait {
        pattern: spec.pattern.as_ref().map(|re| re.as_str().to_owned()),
        from_start: spec.from_start,
        idle_ms: spec.idle.map(millis),
        port: spec.port,
        listening: spec.listening,
        url: spec.url.clone(),
        expect_status: spec.expect_status,
        input: spec.input,
        timeout_ms: Some(millis(left)),
    });
    let ask = remote.ask::<WaitOutcome>(&op, left.saturating_add(SLACK));
    tokio::pin!(ask);
    let mut out = loop {
        tokio::select! {
            r = &mut ask => break r?,
            () = tokio::time::sleep(TICK) => progress(WaitProgress {
                elapsed: start.elapsed(),
                total,
                bytes: 0,
            }),
        }
    };
    // The owner's view, made this caller's: the job is not this server's, the cap is ours.
    out.info.this_server = false;
    out.capped = capped && out.reason == WaitReason::Timeout;
    out.waited_ms = millis(start.elapsed());
    Ok(out)
}
