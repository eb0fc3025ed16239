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

/// Open files of this process.
fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .expect("/proc/self/fd")
        .count()
}

/// A finished job keeps no file open, so hundreds of listed finished jobs cost no descriptors.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finished_jobs_keep_no_file_open() {
    let dir = tempfile::tempdir().unwrap();
    let m = persisted(dir.path());
    run(&m, "true").await; // the spare and the runtime's files exist from here on
    let before = open_fds();
    for _ in 0..40 {
        run(&m, "echo x").await;
    }
    // Reader threads close their descriptors as they end; allow them a moment.
    let settled = wait_until(Duration::from_secs(10), || open_fds() <= before + 2).await;
    assert!(
        settled,
        "{} open after 40 jobs, {before} before",
        open_fds()
    );
    assert_eq!(m.list().len(), 41);
}
