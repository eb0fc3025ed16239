//! The job's terminal size while people are attached: the person's size at attach and on every
//! resize of their terminal (the most recent one wins when several are attached, as in tmux's
//! `window-size latest`), and the size it had before the first one attached once the last one
//! leaves — unless someone else (an agent's `resize_job`) changed it meanwhile: then theirs is
//! kept. When one person's resize changes the job's size, the job's other viewers are told:
//! their sessions draw the job's screen again at its new size.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::watch;

use crate::job::JobId;
use crate::manager::JobManager;
use crate::sync::lock;

/// The attached people of one job.
#[derive(Debug)]
struct Viewers {
    count: usize,
    /// The size before the first of them attached.
    before: (u16, u16),
    /// The size they set last.
    set: (u16, u16),
    /// The viewer whose resize changed the size last (0: none yet).
    resized_by: watch::Sender<u64>,
}

/// Jobs with someone attached (an entry leaves with its last viewer): a few entries at most.
static VIEWERS: Mutex<Option<HashMap<JobId, Viewers>>> = Mutex::new(None);

/// Ids of viewers, for telling who resized (0 is no one).
static NEXT_VIEWER: AtomicU64 = AtomicU64::new(1);

/// The job's size now, `None` once it is final.
fn size_now(jobs: &JobManager, id: JobId) -> Option<(u16, u16)> {
    let job = jobs.inner.job(id).ok()?;
    let s = lock(&job.state);
    (!s.is_final()).then_some(s.size)
}

/// One person attached to a job: sizes the job to their terminal for as long as it lives, and
/// puts the job's size back when the last person leaves (dropped).
pub(crate) struct Viewer {
    jobs: JobManager,
    id: JobId,
    me: u64,
    /// Resizes of the job by its viewers (`None`: the job was final at attach).
    resizes: Option<watch::Receiver<u64>>,
}

impl Viewer {
    /// A person whose terminal is `size` (`None`: unknown, the job keeps its size) attached.
    pub(crate) fn attach(jobs: &JobManager, id: JobId, size: Option<(u16, u16)>) -> Self {
        let resizes = size_now(jobs, id).map(|now| {
            let mut all = lock(&VIEWERS);
            let v = all
                .get_or_insert_with(HashMap::new)
                .entry(id)
                .or_insert_with(|| Viewers {
                    count: 0,
                    before: now,
                    set: now,
                    resized_by: watch::Sender::new(0),
                });
            v.count += 1;
            v.resized_by.subscribe()
        });
        let viewer = Self {
            jobs: jobs.clone(),
            id,
            me: NEXT_VIEWER.fetch_add(1, Ordering::Relaxed),
            resizes,
        };
        if let Some((cols, rows)) = size {
            viewer.resize(cols, rows);
        }
        viewer
    }

    /// The person's terminal is now `cols` × `rows`: so is the job's (sizes outside what a job
    /// may have are ignored). The job's other viewers are told when its size changed.
    pub(crate) fn resize(&self, cols: u16, rows: u16) {
        let before = size_now(&self.jobs, self.id);
        if self.jobs.resize(self.id, cols, rows).unwrap_or(false) {
            let mut all = lock(&VIEWERS);
            if let Some(v) = all.as_mut().and_then(|m| m.get_mut(&self.id)) {
                v.set = (cols, rows);
                if before != Some((cols, rows)) {
                    v.resized_by.send_replace(self.me);
                }
            }
        }
    }

    /// Resolves when another viewer's resize changed the job's size (never, if the job was
    /// final at attach): this viewer's person should then see the screen again.
    pub(crate) async fn resized_by_another(&mut self) {
        let me = self.me;
        let Some(rx) = self.resizes.as_mut() else {
            return std::future::pending().await;
        };
        loop {
            if rx.changed().await.is_err() {
                return std::future::pending().await;
            }
            let by = *rx.borrow_and_update();
            if by != 0 && by != me {
                return;
            }
        }
    }
}

impl Drop for Viewer {
    fn drop(&mut self) {
        let restore = {
            let mut all = lock(&VIEWERS);
            let Some(map) = all.as_mut() else { return };
            let Some(v) = map.get_mut(&self.id) else {
                return;
            };
            v.count -= 1;
            if v.count > 0 {
                return;
            }
            map.remove(&self.id).filter(|v| v.set != v.before)
        };
        if let Some(v) = restore
            && size_now(&self.jobs, self.id) == Some(v.set)
        {
            let _ = self.jobs.resize(self.id, v.before.0, v.before.1);
        }
    }
}
