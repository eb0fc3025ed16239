//! What the store trusts on disk: links planted at every file it writes are replaced, never
//! written through; a job directory replaced by a link is neither read nor removed through;
//! a state directory another user could write to is refused.
// Unix only: symlinks, modes and uids planted from the test (Windows: sys/windows unit tests).
#![cfg(unix)]

use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::common::{manager_with, run, wait_for_output, wait_until};
use ptyjobs_engine::{JobManager, JobSpec, JobStatus, Store, StoreConfig};

fn persisted(dir: &Path) -> JobManager {
    manager_with(|c| c.store = Some(StoreConfig::new(dir)))
}

/// Files outside the state directory, each holding "precious", that links will point to.
struct Outside {
    dir: PathBuf,
}

impl Outside {
    fn new(root: &Path) -> Self {
        let dir = root.join("outside");
        std::fs::create_dir(&dir).expect("mkdir outside");
        Self { dir }
    }

    /// Plants a link at `at` to a new outside file named `name`.
    fn plant(&self, at: &Path, name: &str) {
        let target = self.dir.join(name);
        std::fs::write(&target, "precious").expect("write outside");
        let _ = std::fs::remove_file(at);
        symlink(&target, at).expect("plant a link");
    }

    /// Asserts that every outside file still holds exactly "precious".
    fn assert_untouched(&self) {
        let mut n = 0;
        for entry in std::fs::read_dir(&self.dir).expect("read outside") {
            let path = entry.expect("entry").path();
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            assert_eq!(
                text,
                "precious",
                "{} was written through a link",
                path.display()
            );
            n += 1;
        }
        assert!(n > 0, "nothing was planted");
    }
}

fn is_regular(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_file())
}

/// A job directory without a record: the manager's spare.
fn spare_dir(state: &Path) -> Option<PathBuf> {
    std::fs::read_dir(state.join("jobs"))
        .ok()?
        .flatten()
        .map(|e| e.path())
        .find(|p| p.is_dir() && !p.join("meta.json").exists())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn links_planted_in_the_spare_directory_are_replaced_not_written_through() {
    let root = tempfile::tempdir().unwrap();
    let state = root.path().join("state");
    let outside = Outside::new(root.path());
    let m = persisted(&state);
    run(&m, "echo one").await;
    let mut spare = None;
    assert!(
        wait_until(Duration::from_secs(10), || {
            spare = spare_dir(&state);
            spare.is_some()
        })
        .await,
        "no spare directory was made"
    );
    let spare = spare.unwrap();
    let pid = std::process::id();
    // The log and the record's temp file (the fixed name an earlier version used).
    outside.plant(&spare.join("output.log"), "log");
    outside.plant(&spare.join(format!("meta.tmp-{pid}")), "meta-tmp");
    let (job, out) = run(&m, "echo two").await;
    assert_eq!(out, "two");
    assert_eq!(
        spare.file_name().unwrap().to_str(),
        Some(job.id.to_string().as_str()),
        "the job used the planted spare"
    );
    outside.assert_untouched();
    assert!(is_regular(&spare.join("output.log")));
    assert!(is_regular(&spare.join("meta.json")));
    // The log holds the job's output: a later manager reads it back.
    m.shutdown().await;
    drop(m);
    let later = persisted(&state);
    assert_eq!(later.output(job.id, None, None).unwrap().output, "two");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn links_planted_at_a_running_jobs_files_are_replaced_not_written_through() {
    let root = tempfile::tempdir().unwrap();
    let state = root.path().join("state");
    let outside = Outside::new(root.path());
    let m = persisted(&state);
    let job = m
        .execute(JobSpec::new("echo ready; read x; echo done"))
        .unwrap();
    wait_for_output(&m, job.id, "ready").await;
    let dir = state.join("jobs").join(job.id.to_string());
    let pid = std::process::id();
    for (name, target) in [
        (format!("meta.tmp-{pid}"), "meta-tmp"),
        (format!("screen.tmp-{pid}"), "screen-tmp"),
        ("screen.json".to_owned(), "screen"),
        ("meta.json".to_owned(), "meta"),
    ] {
        outside.plant(&dir.join(name), target);
    }
    // The job is quiet (waiting for input): its screen is saved, over the planted link.
    let saved = wait_until(Duration::from_secs(10), || {
        is_regular(&dir.join("screen.json"))
    })
    .await;
    m.write(job.id, b"x\r").unwrap();
    let info = m.wait(job.id, Some(Duration::from_secs(20))).await.unwrap();
    assert_eq!(info.status, JobStatus::Completed);
    outside.assert_untouched();
    assert!(saved, "the screen was never saved as a file of its own");
    assert!(is_regular(&dir.join("meta.json")));
    let reader = Store::open_reader(StoreConfig::new(&state)).unwrap();
    assert_eq!(
        reader.load(job.id).unwrap().record.status,
        JobStatus::Completed
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kill_request_planted_as_a_link_is_replaced_not_written_through() {
    let root = tempfile::tempdir().unwrap();
    let state = root.path().join("state");
    let outside = Outside::new(root.path());
    let m = persisted(&state);
    let job = m.execute(JobSpec::new("echo up; sleep 1000")).unwrap();
    wait_for_output(&m, job.id, "up").await;
    outside.plant(
        &state
            .join("jobs")
            .join(job.id.to_string())
            .join("kill-request"),
        "kill-request",
    );
    let reader = Store::open_reader(StoreConfig::new(&state)).unwrap();
    let id = job.id;
    tokio::task::spawn_blocking(move || reader.kill(id, Duration::from_millis(500)))
        .await
        .unwrap()
        .unwrap();
    let info = m.wait(job.id, Some(Duration::from_secs(20))).await.unwrap();
    assert_eq!(info.status, JobStatus::Killed);
    outside.assert_untouched();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_directory_replaced_by_a_link_is_neither_read_nor_removed_through() {
    let root = tempfile::tempdir().unwrap();
    let state = root.path().join("state");
    let m = persisted(&state);
    let (job, _) = run(&m, "echo x").await;
    m.shutdown().await;
    drop(m);
    // The job's directory moves out; a link to it takes its place.
    let elsewhere = root.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let name = job.id.to_string();
    std::fs::rename(state.join("jobs").join(&name), elsewhere.join(&name)).unwrap();
    symlink(elsewhere.join(&name), state.join("jobs").join(&name)).unwrap();
    let m = manager_with(|c| {
        c.store = Some(StoreConfig {
            keep_jobs: 0,
            ..StoreConfig::new(&state)
        });
    });
    assert!(
        m.list().iter().all(|j| j.id != job.id),
        "the link was followed"
    );
    assert!(m.remove(job.id).is_err());
    let store = m.store().unwrap();
    store.prune();
    let reader = Store::open_reader(StoreConfig::new(&state)).unwrap();
    assert!(reader.remove(job.id).is_err());
    reader.prune();
    assert!(elsewhere.join(&name).join("meta.json").is_file());
    assert!(elsewhere.join(&name).join("output.log").is_file());
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_state_directory_others_can_write_to_is_refused() {
    let root = tempfile::tempdir().unwrap();
    let state = root.path().join("state");
    std::fs::create_dir(&state).unwrap();
    chmod(&state, 0o777);
    let cfg = |c: &mut ptyjobs_engine::EngineConfig| c.store = Some(StoreConfig::new(&state));
    let mut config = ptyjobs_engine::EngineConfig::default();
    cfg(&mut config);
    let e = JobManager::new(config.clone()).unwrap_err().to_string();
    assert!(
        e.contains("writable by group or others") && e.contains("0777"),
        "{e}"
    );
    assert!(
        !state.join("jobs").exists(),
        "nothing is made in a refused directory"
    );
    // Its jobs/ too, and the CLI's reader as well as a server.
    chmod(&state, 0o700);
    std::fs::create_dir(state.join("jobs")).unwrap();
    chmod(&state.join("jobs"), 0o775);
    let e = JobManager::new(config.clone()).unwrap_err().to_string();
    assert!(
        e.contains("jobs") && e.contains("writable by group or others"),
        "{e}"
    );
    let e = Store::open_reader(StoreConfig::new(&state))
        .unwrap_err()
        .to_string();
    assert!(e.contains("writable by group or others"), "{e}");
    chmod(&state.join("jobs"), 0o700);
    assert!(JobManager::new(config).is_ok());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_state_directory_of_another_user_is_refused() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: giving a directory to another user needs root");
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let state = root.path().join("state");
    std::fs::create_dir(&state).unwrap();
    chmod(&state, 0o700);
    std::os::unix::fs::chown(&state, Some(65534), Some(65534)).unwrap();
    let config = ptyjobs_engine::EngineConfig {
        store: Some(StoreConfig::new(&state)),
        ..Default::default()
    };
    let e = JobManager::new(config).unwrap_err().to_string();
    assert!(e.contains("owned by uid 65534"), "{e}");
    // A jobs/ of another user inside a directory of one's own is refused too.
    std::os::unix::fs::chown(&state, Some(0), Some(0)).unwrap();
    std::fs::create_dir(state.join("jobs")).unwrap();
    chmod(&state.join("jobs"), 0o700);
    std::os::unix::fs::chown(state.join("jobs"), Some(65534), Some(65534)).unwrap();
    let e = Store::open_reader(StoreConfig::new(&state))
        .unwrap_err()
        .to_string();
    assert!(e.contains("owned by uid 65534"), "{e}");
}

/// Sets the modification time of `path` itself (a link is not followed) to two hours ago.
fn age(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).expect("path");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs();
    let old = libc::timespec {
        // `as _`: `time_t` is a deprecated alias on musl (it is changing to 64 bits there).
        tv_sec: (now - 7200) as _,
        tv_nsec: 0,
    };
    let times = [old, old];
    // SAFETY: a valid C path and two timespecs; utimensat only reads them.
    let r = unsafe {
        libc::utimensat(
            libc::AT_FDCWD,
            c.as_ptr(),
            times.as_ptr(),
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    assert_eq!(r, 0, "utimensat {}", path.display());
}

/// The sweep of forgotten spare directories removes an old one, never through a link: a link
/// in place of a spare is left alone, one inside a spare is unlinked, their targets stay.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sweep_of_old_spares_never_follows_a_link() {
    let root = tempfile::tempdir().unwrap();
    let state = root.path().join("state");
    let outside = Outside::new(root.path());
    let m = persisted(&state);
    run(&m, "true").await;
    let store = m.store().unwrap();
    let jobs = state.join("jobs");
    // A link named like a job, to a directory that looks like a spare (no record).
    let target = root.path().join("target-dir");
    std::fs::create_dir(&target).unwrap();
    std::fs::write(target.join("output.log"), "keep").unwrap();
    let linked = jobs.join("0b0b0b0b-0000-4000-8000-000000000001");
    symlink(&target, &linked).unwrap();
    age(&linked);
    // A real old spare holding a link to a file outside.
    let spare = jobs.join("0b0b0b0b-0000-4000-8000-000000000002");
    std::fs::create_dir(&spare).unwrap();
    outside.plant(&spare.join("output.log"), "in-spare");
    age(&spare);
    store.maintain();
    assert!(!spare.exists(), "the old spare is swept");
    assert!(
        target.join("output.log").is_file(),
        "a link's target is left alone"
    );
    outside.assert_untouched();
}
