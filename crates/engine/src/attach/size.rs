//! The job's terminal size while people are attached: the person's size at attach and on every
//! resize of their terminal (the most recent one wins when several are attached, as in tmux's
//! `window-size latest`), and the size it had before the first one attached once the last one
//! leaves — unless someone else (an agent's `resize_job`) changed it meanwhile: then theirs is
//! kept.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::job::JobId;
use crate::manager::{JobManager, lock};

/// The attached people of one job.
#[derive(Debug)]
struct Viewers {
    count: usize,
    /// The size before the first of them attached.
    before: (u16, u16),
    /// The size they set last.
    set: (u16, u16),
}

/// Jobs with someone attached (an entry leaves with its last viewer): a few entries at most.
static VIEWERS: Mutex<Option<HashMap<JobId, Viewers>>> = Mutex::new(None);

/// The job's size now, `None` once it is final.
fn size_now(jobs: &JobManager, id: JobId) -> Option<(u16, u16)> {
    let job = jobs.inner.job(id).ok()?;
    let s = lock(&job.state);
    (!s.status.is_final()).then_some(s.size)
}

/// One person attached to a job: sizes the job to their terminal for as long as it lives, and
/// puts the job's size back when the last person leaves (dropped).
pub(crate) struct Viewer {
    jobs: JobManager,
    id: JobId,
}

impl Viewer {
    /// A person whose terminal is `size` (`None`: unknown, the job keeps its size) attached.
    pub(crate) fn attach(jobs: &JobManager, id: JobId, size: Option<(u16, u16)>) -> Self {
        if let Some(now) = size_now(jobs, id) {
            let mut all = lock(&VIEWERS);
            let v = all
                .get_or_insert_with(HashMap::new)
                .entry(id)
                .or_insert(Viewers {
                    count: 0,
                    before: now,
                    set: now,
                });
            v.count += 1;
        }
        let viewer = Self {
            jobs: jobs.clone(),
            id,
        };
        if let Some((cols, rows)) = size {
            viewer.resize(cols, rows);
        }
        viewer
    }

    /// The person's terminal is now `cols` × `rows`: so is the job's (sizes outside what a job
    /// may have are ignored).
    pub(crate) fn resize(&self, cols: u16, rows: u16) {
        if self.jobs.resize(self.id, cols, rows).unwrap_or(false) {
            let mut all = lock(&VIEWERS);
            if let Some(v) = all.as_mut().and_then(|m| m.get_mut(&self.id)) {
                v.set = (cols, rows);
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
