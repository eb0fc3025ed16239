//! A finished job of a persisted manager keeps no file open.
//!
//! Alone in its test binary: it counts the open files of the whole process (`/proc/self/fd`),
//! which tests running beside it in one binary would change.

mod common;

use std::time::Duration;

use common::{manager_with, run, wait_until};
use ptyjobs_engine::{JobManager, StoreConfig};

fn persisted(dir: &std::path::Path) -> JobManager {
    manager_with(|c| c.store = Some(StoreConfig::new(dir)))
}

/// Open files of this process, not counting the server's spare job directory under `state`
/// (one directory without a record, made ahead of time: its directory, log and record files
/// are open by design, and it is remade in the background after each start, so it may or may
/// not be there at any moment).
fn open_fds(state: &std::path::Path) -> usize {
    std::fs::read_dir("/proc/self/fd")
        .expect("/proc/self/fd")
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter(|target| !in_spare(state, target))
        .count()
}

/// Whether `target` is the spare directory or inside it.
fn in_spare(state: &std::path::Path, target: &std::path::Path) -> bool {
    let Ok(rest) = target.strip_prefix(state.canonicalize().unwrap_or(state.into())) else {
        return false;
    };
    // <state>/jobs/<id>[/file]
    let mut parts = rest.components();
    match (parts.next(), parts.next()) {
        (Some(jobs), Some(id)) if jobs.as_os_str() == "jobs" => {
            let dir = state.join("jobs").join(id);
            !dir.join("meta.json").exists()
        }
        _ => false,
    }
}

/// A finished job keeps no file open, so hundreds of listed finished jobs cost no descriptors.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finished_jobs_keep_no_file_open() {
    let dir = tempfile::tempdir().unwrap();
    let m = persisted(dir.path());
    run(&m, "true").await; // the spare and the runtime's files exist from here on
    let before = open_fds(dir.path());
    for _ in 0..40 {
        run(&m, "echo x").await;
    }
    // Reader threads close their descriptors as they end; allow them a moment.
    let settled = wait_until(Duration::from_secs(10), || {
        open_fds(dir.path()) <= before + 2
    })
    .await;
    assert!(
        settled,
        "{} open after 40 jobs, {before} before",
        open_fds(dir.path())
    );
    assert_eq!(m.list().len(), 41);
}
