//! A job's tap: its raw output, for attached clients (see [`crate::attach`]).

use std::sync::{Arc, Mutex};

use tokio::sync::broadcast;

use crate::sync::lock;

/// The raw output of a job, for attached clients. Nothing is allocated until someone attaches.
#[derive(Default)]
pub(crate) struct Tap(Mutex<Option<broadcast::Sender<Arc<[u8]>>>>);

/// Output batches an attached client may lag behind before it is sent the screen again.
const TAP_BATCHES: usize = 64;

impl Tap {
    /// Hands `bytes` to the attached clients, if any. Called with the job's state locked, right
    /// after the bytes were fed to its terminal: a client that subscribed under the same lock
    /// sees each byte either in its first screen or in the stream, never in both.
    pub(crate) fn send(&self, bytes: &[u8]) {
        let tap = lock(&self.0);
        if let Some(tx) = tap.as_ref()
            && tx.receiver_count() > 0
        {
            let _ = tx.send(Arc::from(bytes));
        }
    }

    /// A receiver of the output from now on (call with the job's state locked).
    pub(crate) fn subscribe(&self) -> broadcast::Receiver<Arc<[u8]>> {
        lock(&self.0)
            .get_or_insert_with(|| broadcast::channel(TAP_BATCHES).0)
            .subscribe()
    }
}
