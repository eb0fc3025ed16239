//! Many concurrent kills share the kill path's looks at the process table: killing a hundred
//! and fifty jobs with a hundred and fifty concurrent `kill` calls costs a bounded number of
//! `/proc` scans (a few per round of the shared kill sequence), not a few per job — which is
//! what made killing a thousand jobs take 24 s — and every job is still killed, verified, with
//! nothing left.
//!
//! Alone in its test binary: it counts the scans of the whole process.

mod common;

use std::collections::HashSet;
use std::time::Duration;

use common::*;
use ptyjobs_engine::{JobSpec, JobStatus, KillOutcome, Signal, process_scans};

const JOBS: usize = 150;
/// Scans the kills may cost together. Each round of the shared sequence is one scan and a job
/// needs about three rounds once it has joined (its signal; the look that finds it gone, which
/// also verifies the SIGKILL round), plus the rounds during which the calls arrive. One kill
/// sequence per call (the design before the shared killer) cost 187 here.
const MAX_SCANS: u64 = 40;

/// Live (non-zombie) processes in any of `sessions`, in one walk of `/proc`.
fn alive_in(sessions: &HashSet<u32>) -> Vec<u32> {
    processes_where(|_, f| {
        f.len() > 3 && f[0] != "Z" && f[3].parse().is_ok_and(|s| sessions.contains(&s))
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_concurrent_kills_share_their_looks_at_the_process_table() {
    let m = manager_with(|c| c.max_running = JOBS + 10);
    // Two processes per job (the shell and its background sleep), as in most real jobs.
    let jobs: Vec<_> = (0..JOBS)
        .map(|_| {
            m.execute(JobSpec::new("sleep 1000 & wait"))
                .expect("execute")
        })
        .collect();
    let sessions: HashSet<u32> = jobs.iter().map(|j| j.pid).collect();
    assert!(
        wait_until(Duration::from_secs(60), || alive_in(&sessions).len()
            >= 2 * JOBS)
        .await,
        "only {} of the jobs' {} processes started",
        alive_in(&sessions).len(),
        2 * JOBS
    );

    let before = process_scans();
    let kills: Vec<_> = jobs
        .iter()
        .map(|j| {
            let (m, id) = (m.clone(), j.id);
            tokio::spawn(async move { m.kill(id, Signal::TERM, None).await })
        })
        .collect();
    for k in kills {
        let report = k.await.expect("kill task").expect("kill");
        assert_eq!(report.outcome, KillOutcome::Killed);
        assert_eq!(report.survivors, Vec::<u32>::new());
    }
    let scans = process_scans() - before;

    assert_eq!(alive_in(&sessions), Vec::<u32>::new());
    for j in &jobs {
        assert_eq!(m.status(j.id).unwrap().status, JobStatus::Killed);
    }
    eprintln!("{JOBS} concurrent kills: {scans} scans of the process table");
    assert!(
        scans <= MAX_SCANS,
        "{JOBS} concurrent kills cost {scans} scans of the process table (at most {MAX_SCANS})"
    );
}
