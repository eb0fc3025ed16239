//! The killer: one thread that ends every job this process is asked to end while it runs —
//! `kill_job`, timeouts, shutdown — in one [`Batch`], so that concurrent kills share each look
//! at the process table instead of each polling `/proc` on its own.
//!
//! A request joins the batch at the killer's next round (at most one pause, 10 ms or the
//! duration of the last look, later; the first request of a burst waits one pause for the
//! rest) and starts its own sequence there; its caller is woken
//! (a oneshot channel) as soon as that sequence is over. Nothing waits for the whole batch.
//!
//! There is one killer per process, not per manager: the look at `/proc` is of the whole
//! machine, so every manager's kills can share it. The thread exists only while a kill is in
//! progress (it ends when its batch is empty and is started again by the next request), so
//! idle servers carry no extra thread.

use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::oneshot;

use super::batch::{Batch, ROUND};
use super::{Ended, Target};
use crate::sync::lock;

/// Requests not yet taken by the killer, and whether its thread is running.
struct Queue {
    pending: Vec<Request>,
    running: bool,
}

/// One job to end, and where to send the result.
struct Request {
    target: Target,
    sig: i32,
    grace: Duration,
    reply: oneshot::Sender<Ended>,
}

static QUEUE: Mutex<Queue> = Mutex::new(Queue {
    pending: Vec::new(),
    running: false,
});

/// Asks the killer to end `targets` with `sig` (SIGKILL after `grace`); each receiver gets its
/// target's result when its sequence is over. Does not block.
pub(crate) fn submit(
    targets: Vec<Target>,
    sig: i32,
    grace: Duration,
) -> Vec<oneshot::Receiver<Ended>> {
    let mut replies = Vec::with_capacity(targets.len());
    let mut q = lock(&QUEUE);
    for target in targets {
        let (reply, rx) = oneshot::channel();
        q.pending.push(Request {
            target,
            sig,
            grace,
            reply,
        });
        replies.push(rx);
    }
    if q.running {
        return replies;
    }
    // The new thread takes the queue's lock first thing: it sees `running` set.
    match std::thread::Builder::new()
        .name("ptyjobs-kill".into())
        .spawn(run)
    {
        Ok(_) => q.running = true,
        Err(e) => {
            // No thread to be had (the system is at its limit): end these jobs on a blocking
            // thread of the runtime, or here. The queue held only them (a killer that is not
            // running has taken everything).
            tracing::warn!("cannot start the kill thread ({e}); ending the jobs without it");
            let mut batch = Batch::new();
            for r in std::mem::take(&mut q.pending) {
                batch.add(r.target, r.sig, r.grace, r.reply);
            }
            drop(q);
            let work = move || {
                batch.finish(|reply, ended| {
                    let _ = reply.send(ended);
                });
            };
            match tokio::runtime::Handle::try_current() {
                Ok(rt) => drop(rt.spawn_blocking(work)),
                Err(_) => work(),
            }
        }
    }
    replies
}

/// Marks the killer stopped if its thread unwinds (a bug), so the next request starts another
/// one; the requests waiting are dropped, which wakes their callers at once.
struct Running;

impl Drop for Running {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let mut q = lock(&QUEUE);
            q.running = false;
            q.pending.clear();
        }
    }
}

/// The killer's thread: rounds until no job is left and no request waits.
fn run() {
    let _running = Running;
    // Kills come in bursts (a shutdown, a client ending many jobs, a batch of timeouts) whose
    // requests arrive over a few milliseconds: gathering them for one round before the first
    // look lets them share it and the next one (two looks for the burst, not three or more),
    // for 10 ms more on a lone kill.
    std::thread::sleep(ROUND);
    let mut batch = Batch::new();
    loop {
        {
            let mut q = lock(&QUEUE);
            for r in q.pending.drain(..) {
                batch.add(r.target, r.sig, r.grace, r.reply);
            }
            if batch.is_empty() {
                // Under the lock: a request that comes after this starts a new thread.
                q.running = false;
                return;
            }
        }
        for (reply, ended) in batch.round() {
            // A caller that gave up waiting (its future was dropped) does not stop the kill.
            let _ = reply.send(ended);
        }
        if !batch.is_empty() {
            std::thread::sleep(batch.pause());
        }
    }
}
