//! Ending jobs: group kill, escalation, timeouts, shutdown; afterwards no process remains.

use std::time::{Duration, Instant};

use crate::common::*;
use ptyjobs_engine::{JobId, JobSpec, JobStatus, KillOutcome, Signal};

#[tokio::test]
async fn kill_takes_down_the_whole_process_group() {
    let m = manager();
    let job = m.execute(JobSpec::new("sleep 1000 & sleep 1000")).unwrap();
    assert!(
        wait_until(Duration::from_secs(5), || session_processes(job.pid).len()
            >= 2)
        .await
    );
    assert_eq!(
        m.kill(job.id, Signal::TERM, None).await.unwrap().outcome,
        KillOutcome::Killed
    );
    assert_eq!(session_processes(job.pid), Vec::<u32>::new());
    let info = m.status(job.id).unwrap();
    assert_eq!(info.status, JobStatus::Killed);
    assert_eq!(
        m.kill(job.id, Signal::TERM, None).await.unwrap().outcome,
        KillOutcome::AlreadyTerminated
    );
    assert_eq!(
        m.kill(JobId::new(), Signal::TERM, None)
            .await
            .unwrap()
            .outcome,
        KillOutcome::NotFound
    );
}

#[tokio::test]
async fn a_job_that_ignores_sigterm_is_killed_after_the_grace_period() {
    let m = manager();
    let job = m
        .execute(JobSpec::new("trap '' TERM; echo armed; sleep 1000 & wait"))
        .unwrap();
    wait_for_output(&m, job.id, "armed").await;
    let t = Instant::now();
    let outcome = m
        .kill(job.id, Signal::TERM, Some(Duration::from_millis(300)))
        .await
        .unwrap();
    assert_eq!(outcome.outcome, KillOutcome::Killed);
    assert!(
        t.elapsed() >= Duration::from_millis(300),
        "escalated too early"
    );
    assert!(
        t.elapsed() < Duration::from_secs(3),
        "took {:?}",
        t.elapsed()
    );
    assert_eq!(session_processes(job.pid), Vec::<u32>::new());
    assert_eq!(m.status(job.id).unwrap().status, JobStatus::Killed);
}

#[tokio::test]
async fn processes_that_made_their_own_group_in_the_session_are_killed_too() {
    let m = manager();
    // `set -m` makes the shell put the background job in a process group of its own.
    let job = m
        .execute(JobSpec::new("set -m; sleep 1000 & echo $! ; wait"))
        .unwrap();
    assert!(
        wait_until(Duration::from_secs(5), || session_processes(job.pid).len()
            >= 2)
        .await
    );
    assert_eq!(
        m.kill(job.id, Signal::TERM, None).await.unwrap().outcome,
        KillOutcome::Killed
    );
    assert_eq!(session_processes(job.pid), Vec::<u32>::new());
}

#[tokio::test]
async fn other_calls_are_not_blocked_while_a_kill_waits() {
    let m = manager_with(|c| c.kill_grace = Duration::from_secs(2));
    let job = m
        .execute(JobSpec::new(
            "trap '' TERM; echo armed; while :; do sleep 1; done",
        ))
        .unwrap();
    wait_for_output(&m, job.id, "armed").await;
    let killer = {
        let m = m.clone();
        tokio::spawn(async move { m.kill(job.id, Signal::TERM, None).await })
    };
    // While the kill sits in its grace period, reads answer at once.
    let t = Instant::now();
    assert!(wait_until(Duration::from_secs(1), || m.status(job.id).is_ok()).await);
    assert_eq!(m.status(job.id).unwrap().status, JobStatus::Running);
    m.list();
    assert!(t.elapsed() < Duration::from_millis(500));
    assert_eq!(killer.await.unwrap().unwrap().outcome, KillOutcome::Killed);
}

#[tokio::test]
async fn a_timeout_kills_the_job() {
    let m = manager();
    let spec = JobSpec {
        timeout: Some(Duration::from_millis(300)),
        ..JobSpec::new("sleep 1000")
    };
    let job = m.execute(spec).unwrap();
    let info = m.wait(job.id, Some(Duration::from_secs(10))).await.unwrap();
    assert_eq!(info.status, JobStatus::Killed);
    assert_eq!(info.reason.as_deref(), Some("timeout"));
    assert!(
        wait_until(Duration::from_secs(3), || session_processes(job.pid)
            .is_empty())
        .await
    );
}

#[tokio::test]
async fn shutdown_kills_every_running_job() {
    let m = manager();
    let jobs: Vec<_> = (0..3)
        .map(|_| m.execute(JobSpec::new("trap '' TERM; sleep 1000")).unwrap())
        .collect();
    let t = Instant::now();
    m.shutdown().await;
    assert!(
        t.elapsed() < Duration::from_secs(3),
        "took {:?}",
        t.elapsed()
    );
    for j in jobs {
        assert_eq!(m.status(j.id).unwrap().status, JobStatus::Killed);
        assert_eq!(session_processes(j.pid), Vec::<u32>::new());
    }
}

#[tokio::test]
async fn dropping_the_manager_leaves_no_orphans() {
    let pid = {
        let m = manager();
        let job = m.execute(JobSpec::new("sleep 1000 & sleep 1000")).unwrap();
        assert!(
            wait_until(Duration::from_secs(5), || session_processes(job.pid).len()
                >= 2)
            .await
        );
        job.pid
    };
    assert!(wait_until(Duration::from_secs(5), || session_processes(pid).is_empty()).await);
}

#[tokio::test]
async fn a_process_that_escaped_the_session_is_found_by_its_job_id_and_killed() {
    let m = manager();
    // `setsid -f` puts the sleep in a session of its own: no group or session kill reaches it.
    let job = m
        .execute(JobSpec::new("setsid -f sleep 1000; echo armed; sleep 1000"))
        .unwrap();
    wait_for_output(&m, job.id, "armed").await;
    let escaped = || {
        marked_processes(job.id)
            .into_iter()
            .filter(|p| !session_processes(job.pid).contains(p))
            .collect::<Vec<_>>()
    };
    assert!(
        wait_until(Duration::from_secs(5), || !escaped().is_empty()).await,
        "the escaped sleep should be running for this test to mean anything"
    );
    let report = m.kill(job.id, Signal::TERM, None).await.unwrap();
    assert_eq!(report.outcome, KillOutcome::Killed);
    assert_eq!(report.survivors, Vec::<u32>::new());
    assert_eq!(marked_processes(job.id), Vec::<u32>::new());
    assert_eq!(m.status(job.id).unwrap().status, JobStatus::Killed);
}

#[tokio::test]
async fn an_escaped_process_holding_the_terminal_is_ended_with_its_job() {
    let m = manager();
    // The shell exits at once; the escaped sleep still holds the terminal open.
    let (info, _) = run(&m, "setsid -f sleep 1000; echo done").await;
    assert_eq!(info.status, JobStatus::Completed, "{info:?}");
    assert!(
        wait_until(Duration::from_secs(5), || marked_processes(info.id)
            .is_empty())
        .await,
        "left behind: {:?}",
        marked_processes(info.id)
    );
}

#[tokio::test]
async fn every_job_carries_its_id_in_its_environment() {
    let m = manager();
    let mut spec = JobSpec::new(format!("echo ${}", ptyjobs_engine::JOB_ID_ENV));
    // A job cannot pose as another one.
    spec.env
        .insert(ptyjobs_engine::JOB_ID_ENV.into(), JobId::new().to_string());
    let job = m.execute(spec).unwrap();
    m.wait(job.id, Some(Duration::from_secs(10))).await.unwrap();
    assert_eq!(
        m.output(job.id, None, None).unwrap().output,
        job.id.to_string()
    );
}

#[tokio::test]
async fn a_huge_grace_is_capped_by_the_engine() {
    let m = manager_with(|c| c.max_kill_grace = Duration::from_millis(300));
    let job = m
        .execute(JobSpec::new("trap '' TERM; echo armed; sleep 1000"))
        .unwrap();
    wait_for_output(&m, job.id, "armed").await;
    let t = Instant::now();
    let report = m
        .kill(job.id, Signal::TERM, Some(Duration::from_secs(1 << 40)))
        .await
        .unwrap();
    assert_eq!(report.outcome, KillOutcome::Killed);
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "took {:?}",
        t.elapsed()
    );
    assert_eq!(session_processes(job.pid), Vec::<u32>::new());
}

/// A process gets the polite signal once per kill. A second SIGTERM or SIGINT turns many
/// programs' graceful exit into an abrupt one (a second Ctrl-C forces npm and vite, interrupts
/// Python's cleanup), so processes that come during the grace get it one by one, and the others
/// do not get it again. Here the shell counts its SIGTERMs while it keeps starting newcomers
/// (one `sleep` every 50 ms) until the grace is over.
#[tokio::test]
async fn each_process_gets_the_polite_signal_once_while_newcomers_come() {
    let m = manager();
    let dir = tempfile::tempdir().unwrap();
    let count = dir.path().join("terms");
    let job = m
        .execute(JobSpec::new(format!(
            "trap 'echo TERM >> {}' TERM; echo armed; while :; do sleep 0.05; done",
            count.display()
        )))
        .unwrap();
    wait_for_output(&m, job.id, "armed").await;
    let outcome = m
        .kill(job.id, Signal::TERM, Some(Duration::from_millis(800)))
        .await
        .unwrap();
    assert_eq!(outcome.outcome, KillOutcome::Killed);
    assert_eq!(session_processes(job.pid), Vec::<u32>::new());
    let terms = std::fs::read_to_string(&count).unwrap_or_default();
    assert_eq!(terms.lines().count(), 1, "the shell's SIGTERMs: {terms:?}");
}
