//! `execute` is all or nothing: starts that fail for want of file descriptors (a low
//! `RLIMIT_NOFILE`, several starts at once, the store creating its files beside them) leave no
//! running slot taken, no child process, no zombie and no job stuck `running`.
//!
//! Alone in its test binary: it lowers the file-descriptor limit of the whole process.
// Unix only: it lowers RLIMIT_NOFILE.
#![cfg(unix)]

mod common;

use std::time::Duration;

use common::*;
use ptyjobs_engine::{Error, JobSpec, JobStatus, Signal, StoreConfig};

fn open_fds() -> u64 {
    std::fs::read_dir("/proc/self/fd").expect("fd dir").count() as u64
}

fn set_nofile(soft: u64, hard: u64) {
    let lim = libc::rlimit {
        rlim_cur: soft,
        rlim_max: hard,
    };
    // SAFETY: setrlimit reads one rlimit from a pointer that outlives the call.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) }, 0);
}

fn nofile() -> (u64, u64) {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit to a pointer that outlives the call.
    assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) }, 0);
    (lim.rlim_cur, lim.rlim_max)
}

/// Children of this process that are zombies (`<defunct>`).
fn zombie_children() -> Vec<u32> {
    let me = std::process::id().to_string();
    processes_where(|_, f| f.len() > 1 && f[1] == me && f[0] == "Z")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fd_exhaustion_during_execute_leaks_no_slot_child_or_job() {
    let state = tempfile::tempdir().expect("temp dir");
    let m = manager_with(|c| {
        c.max_running = 4;
        c.store = Some(StoreConfig::new(state.path()));
    });
    let (soft, hard) = nofile();
    let mut failures = 0;
    for round in 0..3 {
        for headroom in 0..16u64 {
            set_nofile(open_fds() + headroom, hard);
            // Several starts at once, each on its own thread, racing for the last descriptors.
            let starts: Vec<_> = (0..6)
                .map(|_| {
                    let m = m.clone();
                    std::thread::spawn(move || m.execute(JobSpec::new("sleep 1000")))
                })
                .collect();
            let results: Vec<_> = starts
                .into_iter()
                .map(|t| t.join().expect("thread"))
                .collect();
            set_nofile(soft, hard);
            for r in results {
                match r {
                    Ok(job) => {
                        m.kill(job.id, Signal::KILL, None).await.expect("kill");
                    }
                    Err(Error::LimitReached(_) | Error::Spawn(_) | Error::Io(_)) => failures += 1,
                    Err(e) => panic!("round {round}, headroom {headroom}: {e}"),
                }
            }
        }
    }
    assert!(failures > 0, "the limit never bit: the test proved nothing");
    // Every job that started has ended: none is stuck running.
    let stuck: Vec<_> = m
        .list()
        .into_iter()
        .filter(|j| j.status == JobStatus::Running)
        .collect();
    assert!(stuck.is_empty(), "stuck running: {stuck:?}");
    // No zombie: every failed start's child was reaped.
    assert!(
        wait_until(Duration::from_secs(5), || zombie_children().is_empty()).await,
        "zombies left: {:?}",
        zombie_children()
    );
    // All four slots are free again.
    let jobs: Vec<_> = (0..4)
        .map(|i| {
            m.execute(JobSpec::new("sleep 1000"))
                .unwrap_or_else(|e| panic!("slot {i} should be free: {e}"))
        })
        .collect();
    assert!(matches!(
        m.execute(JobSpec::new("sleep 1000")),
        Err(Error::LimitReached(_))
    ));
    for job in jobs {
        m.kill(job.id, Signal::KILL, None).await.expect("kill");
        assert!(session_processes(job.pid).is_empty());
    }
}
