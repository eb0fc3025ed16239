use ptyjobs_engine::*;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn smoke() {
    let m = JobManager::new(EngineConfig::default()).unwrap();
    let j = m
        .execute(JobSpec::new(
            "printf '\\033[31mred\\033[0m\\n'; test -t 0 && test -t 1 && echo tty; exit 3",
        ))
        .unwrap();
    let info = m.wait(j.id, Some(Duration::from_secs(10))).await.unwrap();
    assert_eq!(info.exit_code, Some(3), "{info:?}");
    assert_eq!(info.status, JobStatus::Failed);
    assert_eq!(m.output(j.id, None, None).unwrap().output, "red\ntty");
    let j = m.execute(JobSpec::new("sleep 1000 & sleep 1000")).unwrap();
    let t = std::time::Instant::now();
    assert_eq!(m.kill(j.id, Signal::TERM, None).await, KillOutcome::Killed);
    eprintln!("kill took {:?}", t.elapsed());
    assert_eq!(m.status(j.id).unwrap().status, JobStatus::Killed);
}
