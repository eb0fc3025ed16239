//! `onData` / `onExit`: one watcher task per job that has listeners.
//!
//! # Contract
//! * `onData` delivers the job's clean transcript (the same text as `output()`), never a line
//!   twice and never a line that may still change. While the job runs, a line is delivered
//!   once it is *final* — it has scrolled off the emulated screen or was cleared from it (the
//!   engine's `final_lines` boundary) — as that line plus `\n`.
//!   When the job ends, the rest (the lines still on screen) is delivered in one last chunk
//!   without a trailing newline. So the concatenation of all chunks a listener received equals
//!   `output(jobId).output` read after the end, provided no line was evicted by
//!   `transcriptBytes` before it was delivered. A listener registered late, even after the
//!   end, starts from the first line still held.
//! * `onExit` fires once, after every `onData` listener of the job received its last chunk and
//!   after that callback returned: data is never delivered after exit.
//! * Like a child process's listeners, the callbacks of a running job keep Node's event loop
//!   alive; they are released (and stop holding it) as soon as the job has ended and they ran,
//!   so `close()`, which ends every job, always lets the process exit.
//!
//! Text that is still on screen (a prompt waiting for input) is not streamed: read it with
//! `tail()`, `output()` or `screen()`.
//!
//! Each data listener holds its own engine [`Follow`] (the engine's one "final lines since
//! N" stream); this module only schedules deliveries and orders them before `onExit`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use napi::Status;
use napi::bindgen_prelude::JsValuesTupleIntoVec;
use napi::threadsafe_function::{
    ThreadsafeFunction, ThreadsafeFunctionCallMode, UnknownReturnValue,
};
use ptyjobs_engine::{Follow, JobId, JobManager};
use tokio::runtime::Handle;
use tokio::sync::{Notify, watch};

use crate::types::JobInfo;

/// A thread-safe JS callback taking one argument; it holds the event loop until dropped.
pub type Callback<T> = ThreadsafeFunction<T, UnknownReturnValue, T, Status, false, false>;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The listeners of every job of one manager, and a count of running watcher tasks.
pub struct Streams {
    jobs: Mutex<HashMap<JobId, Arc<Stream>>>,
    watchers: watch::Sender<usize>,
}

impl Default for Streams {
    fn default() -> Self {
        Self {
            jobs: Mutex::default(),
            watchers: watch::channel(0).0,
        }
    }
}

#[derive(Default)]
struct Stream {
    listeners: Mutex<Listeners>,
    wake: Notify,
}

#[derive(Default)]
struct Listeners {
    data: Vec<DataListener>,
    exit: Vec<Callback<JobInfo>>,
    /// A watcher task is running for this job.
    active: bool,
}

struct DataListener {
    callback: Callback<String>,
    /// The listener's place in the job's transcript; `None` when the job could not be
    /// followed (it was forgotten meanwhile): nothing is delivered then.
    follow: Option<Follow<'static>>,
}

impl Streams {
    /// Adds an `onData` listener of `id` (which the caller has checked exists).
    pub fn on_data(
        self: &Arc<Self>,
        jobs: &JobManager,
        rt: &Handle,
        id: JobId,
        cb: Callback<String>,
    ) {
        // Made before the listeners' locks are taken: for a stored job it reads the disk.
        let follow = jobs.follow(id, None).ok();
        self.add(jobs, rt, id, |l| {
            l.data.push(DataListener {
                callback: cb,
                follow,
            })
        });
    }

    /// Adds an `onExit` listener of `id` (which the caller has checked exists).
    pub fn on_exit(
        self: &Arc<Self>,
        jobs: &JobManager,
        rt: &Handle,
        id: JobId,
        cb: Callback<JobInfo>,
    ) {
        self.add(jobs, rt, id, |l| l.exit.push(cb));
    }

    fn add(
        self: &Arc<Self>,
        jobs: &JobManager,
        rt: &Handle,
        id: JobId,
        push: impl FnOnce(&mut Listeners),
    ) {
        let mut map = lock(&self.jobs);
        let stream = map.entry(id).or_default().clone();
        let mut l = lock(&stream.listeners);
        push(&mut l);
        if l.active {
            stream.wake.notify_one();
        } else {
            l.active = true;
            self.watchers.send_modify(|n| *n += 1);
            rt.spawn(watch_job(jobs.clone(), id, stream.clone(), self.clone()));
        }
    }

    /// Waits until no watcher task runs (every listener of an ended job was called).
    pub async fn idle(&self) {
        let mut rx = self.watchers.subscribe();
        let _ = rx.wait_for(|n| *n == 0).await;
    }

    /// Ends the watcher of `id` unless listeners arrived meanwhile; true if it ended.
    fn retire(&self, id: JobId, stream: &Stream) -> bool {
        let mut map = lock(&self.jobs);
        let mut l = lock(&stream.listeners);
        if l.data.is_empty() && l.exit.is_empty() {
            l.active = false;
            map.remove(&id);
            self.watchers.send_modify(|n| *n = n.saturating_sub(1));
            true
        } else {
            false
        }
    }
}

/// Calls `cb(value)` on the JS thread and waits until it has returned (or cannot run because
/// the environment is going away). An exception thrown by the callback becomes an uncaught
/// exception of the process, as with any event listener.
async fn deliver<T: 'static + JsValuesTupleIntoVec>(cb: &Callback<T>, value: T) {
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let status = cb.call_with_return_value(
        value,
        ThreadsafeFunctionCallMode::NonBlocking,
        move |ret, _env| {
            let _ = tx.send(());
            ret.map(|_| ())
        },
    );
    if status == Status::Ok {
        let _ = rx.await;
    }
}

/// Delivers what `d`'s follow has now: the final lines it has not had yet, or, once the job
/// has ended, the rest.
async fn deliver_ready(d: &mut DataListener) {
    let Some(follow) = d.follow.as_mut() else {
        return;
    };
    while let Ok(Some(chunk)) = follow.try_next() {
        deliver(&d.callback, chunk.text).await;
    }
}

/// The watcher of one job: streams final lines to the data listeners while the job runs, then
/// the rest, then calls the exit listeners; ends when no listener is left.
async fn watch_job(jobs: JobManager, id: JobId, stream: Arc<Stream>, streams: Arc<Streams>) {
    let mut rx = jobs.subscribe(id).ok();
    loop {
        let finished = rx.as_mut().is_none_or(|rx| rx.borrow_and_update().finished);
        let mut data = std::mem::take(&mut lock(&stream.listeners).data);
        if finished {
            let exits = std::mem::take(&mut lock(&stream.listeners).exit);
            for d in &mut data {
                deliver_ready(d).await;
            }
            drop(data);
            if let Ok(info) = jobs.status(id) {
                for cb in &exits {
                    deliver(cb, JobInfo::from(info.clone())).await;
                }
            }
            drop(exits);
            if streams.retire(id, &stream) {
                return;
            }
            continue;
        }
        for d in &mut data {
            deliver_ready(d).await;
        }
        {
            let mut l = lock(&stream.listeners);
            data.append(&mut l.data);
            l.data = data;
        }
        let Some(r) = rx.as_mut() else { continue };
        tokio::select! {
            changed = r.changed() => if changed.is_err() { rx = None },
            () = stream.wake.notified() => {}
        }
    }
}
