//! The order of everything written to a job's input: a caller's writes and the terminal's
//! replies to queries.

use std::sync::Mutex;
use std::time::Instant;

use tokio::sync::{Semaphore, SemaphorePermit};

use crate::sync::lock;
use crate::sys::pty;

/// Reply bytes kept while they cannot be written; beyond this, replies are dropped (a program
/// flooding queries without reading its input, as a real terminal's input queue would).
const MAX_PENDING_REPLIES: usize = 64 * 1024;

/// A job's input: one writer at a time, and the terminal's replies to queries queued behind a
/// caller's write in progress, so a reply never lands inside a caller's input (and never
/// before input written earlier).
#[derive(Debug)]
pub(crate) struct InputQueue {
    state: Mutex<QueueState>,
    /// The writer's turn: one permit. Callers that wait for it queue in order and are woken
    /// when it is given back, instead of polling.
    writer: Semaphore,
}

impl Default for InputQueue {
    fn default() -> Self {
        Self {
            state: Mutex::default(),
            writer: Semaphore::new(1),
        }
    }
}

#[derive(Debug, Default)]
struct QueueState {
    /// A caller's write is under way; replies wait for its end.
    busy: bool,
    /// Replies not yet written.
    pending: Vec<u8>,
}

impl QueueState {
    /// Writes what the terminal takes now of the pending replies.
    fn flush(&mut self, master: &pty::Master) {
        while !self.pending.is_empty() {
            match pty::write_some(master, &self.pending) {
                Ok(n) if n > 0 => {
                    self.pending.drain(..n);
                }
                Ok(_) => return, // the input queue is full: retried on the next output or write
                Err(_) => {
                    self.pending.clear(); // the terminal is gone
                    return;
                }
            }
        }
    }
}

/// A caller's turn to write; the replies queued meanwhile follow when it ends.
pub(crate) struct Turn<'a> {
    queue: &'a InputQueue,
    master: &'a pty::Master,
    /// Given back after `drop` has flushed the replies (fields drop after `Drop::drop`), so the
    /// next writer's input follows them.
    _permit: SemaphorePermit<'a>,
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        let mut q = lock(&self.queue.state);
        q.busy = false;
        q.flush(self.master);
    }
}

impl InputQueue {
    /// Queues the terminal's replies and writes them unless a caller's write is under way.
    /// Called by the job's reader after each batch of output (also with no replies, to retry
    /// what the terminal did not take before).
    pub(crate) fn reply(&self, master: &pty::Master, replies: &[u8]) {
        let mut q = lock(&self.state);
        if q.pending.len() + replies.len() <= MAX_PENDING_REPLIES {
            q.pending.extend_from_slice(replies);
        }
        if !q.busy {
            q.flush(master);
        }
    }

    /// Writes what the terminal takes now of the pending replies; true when none is left.
    pub(crate) fn flush(&self, master: &pty::Master) -> bool {
        let mut q = lock(&self.state);
        q.flush(master);
        q.pending.is_empty()
    }

    /// Takes the writer's turn if it is free (replies already queued are written first).
    pub(crate) fn try_turn<'a>(&'a self, master: &'a pty::Master) -> Option<Turn<'a>> {
        let permit = self.writer.try_acquire().ok()?;
        Some(self.start_turn(master, permit))
    }

    /// Waits (until `until`) for the writer's turn.
    pub(crate) async fn turn<'a>(
        &'a self,
        master: &'a pty::Master,
        until: Instant,
    ) -> Option<Turn<'a>> {
        let permit = tokio::time::timeout_at(until.into(), self.writer.acquire())
            .await
            .ok()?
            .ok()?; // never closed
        Some(self.start_turn(master, permit))
    }

    /// The turn `permit` grants: replies are held from now on, those already queued written
    /// first.
    fn start_turn<'a>(&'a self, master: &'a pty::Master, permit: SemaphorePermit<'a>) -> Turn<'a> {
        let mut q = lock(&self.state);
        q.busy = true;
        q.flush(master);
        Turn {
            queue: self,
            master,
            _permit: permit,
        }
    }
}
