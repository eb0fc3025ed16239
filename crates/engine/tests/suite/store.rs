//! The state directory through the engine's API: what a later manager reads back, what a
//! dropped manager still writes, and what is skipped.

use std::time::Duration;

use crate::common::{manager_with, run, wait_until};
use ptyjobs_engine::{JobManager, JobSpec, JobStatus, StoreConfig};

fn persisted(dir: &std::path::Path) -> JobManager {
    manager_with(|c| c.store = Some(StoreConfig::new(dir)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_later_manager_reads_the_jobs_of_an_earlier_one() {
    let dir = tempfile::tempdir().unwrap();
    let first = persisted(dir.path());
    let (done, done_out) = run(&first, "printf 'a\\033[31mred\\033[0m\\nb\\n'").await;
    let (failed, _) = run(&first, "exit 7").await;
    let running = first.execute(JobSpec::new("sleep 1000")).unwrap();
    first.shutdown().await;
    drop(first);

    let second = persisted(dir.path());
    let list = second.list();
    assert_eq!(list.len(), 3);
    assert!(list.iter().all(|j| !j.this_server));
    let d = second.status(done.id).unwrap();
    assert_eq!((d.status, d.exit_code), (JobStatus::Completed, Some(0)));
    assert_eq!(second.output(done.id, None, None).unwrap().output, done_out);
    assert_eq!(done_out, "ared\nb");
    assert_eq!(second.tail(done.id, 1).unwrap().output, "b");
    assert_eq!(second.status(failed.id).unwrap().exit_code, Some(7));
    let r = second.status(running.id).unwrap();
    assert_eq!(r.status, JobStatus::Killed);
    assert_eq!(r.reason.as_deref(), Some("shutdown"));
    assert!(matches!(
        second
            .kill(running.id, ptyjobs_engine::Signal::TERM, None)
            .await,
        Ok(r) if r.outcome == ptyjobs_engine::KillOutcome::AlreadyTerminated
    ));
    assert!(matches!(
        second.write(failed.id, b"x"),
        Err(ptyjobs_engine::Error::NotRunning { .. })
    ));
    // Search and wait work on the earlier run's jobs too.
    let re = ptyjobs_engine::compile_pattern("^b$").unwrap();
    let found = second.search(done.id, &re, 1, 10).unwrap();
    assert_eq!(found.total_matches, 1);
    assert_eq!(found.matches[0].line, 1);
    assert_eq!(found.matches[0].before, ["ared"]);
    let waited = second
        .wait_for(done.id, &ptyjobs_engine::WaitSpec::default(), |_| {})
        .await
        .unwrap();
    assert_eq!(waited.reason, ptyjobs_engine::WaitReason::Exited);
    assert_eq!(waited.tail.output, "ared\nb");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_manager_still_finishes_its_records() {
    let dir = tempfile::tempdir().unwrap();
    let first = persisted(dir.path());
    let job = first.execute(JobSpec::new("echo up; sleep 1000")).unwrap();
    crate::common::wait_for_output(&first, job.id, "up").await;
    drop(first);
    let second = persisted(dir.path());
    // The first manager's readers write the final record after it is gone.
    let ended = wait_until(Duration::from_secs(10), || {
        second
            .status(job.id)
            .is_ok_and(|j| j.status == JobStatus::Killed)
    })
    .await;
    assert!(ended, "{:?}", second.status(job.id));
    assert_eq!(
        second.status(job.id).unwrap().reason.as_deref(),
        Some("manager dropped")
    );
    assert_eq!(second.output(job.id, None, None).unwrap().output, "up");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_later_manager_in_the_same_process_owns_what_a_dropped_one_left() {
    let dir = tempfile::tempdir().unwrap();
    let first = persisted(dir.path());
    let (job, _) = run(&first, "echo done").await;
    let keep = persisted(dir.path());
    // While the first manager lives, its job is its own, even in the same process.
    assert!(matches!(
        keep.remove(job.id),
        Err(ptyjobs_engine::Error::NotOwner { .. })
    ));
    drop(first);
    let removed = wait_until(Duration::from_secs(10), || keep.remove(job.id).is_ok()).await;
    assert!(removed, "the job of a dropped manager can be removed");
    assert!(matches!(
        keep.status(job.id),
        Err(ptyjobs_engine::Error::JobNotFound(_))
    ));
}

/// Job directories are made ahead of time; the spare one is never listed, and a manager that
/// goes away takes its spare with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_spare_job_directory_stays_invisible_and_leaves_with_its_manager() {
    let dir = tempfile::tempdir().unwrap();
    let dirs = || std::fs::read_dir(dir.path().join("jobs")).unwrap().count();
    let m = persisted(dir.path());
    let (job, _) = run(&m, "echo one").await;
    assert!(
        wait_until(Duration::from_secs(10), || dirs() == 2).await,
        "the job's directory and the next job's spare"
    );
    assert_eq!(m.list().len(), 1);
    let store = m.store().unwrap();
    assert_eq!(store.records().len(), 1);
    assert!(store.resolve("").is_err());
    let first_char = &job.id.to_string()[..1];
    assert_eq!(store.resolve(first_char).ok(), Some(job.id));
    m.shutdown().await;
    drop(m);
    assert!(
        wait_until(Duration::from_secs(10), || dirs() == 1).await,
        "the spare is removed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreadable_records_are_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let first = persisted(dir.path());
    let (good, _) = run(&first, "echo fine").await;
    drop(first);
    let bad = dir.path().join("jobs/0b0b0b0b-0000-4000-8000-000000000000");
    std::fs::create_dir_all(&bad).unwrap();
    std::fs::write(bad.join("meta.json"), "{ torn").unwrap();
    std::fs::write(dir.path().join("jobs/not-a-job"), "x").unwrap();
    let second = persisted(dir.path());
    let list = second.list();
    assert_eq!(list.len(), 1);
    assert_eq!(list[0].id, good.id);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_store_nothing_is_found_after_a_restart() {
    let first = manager_with(|_| {});
    let (job, _) = run(&first, "true").await;
    drop(first);
    let second = manager_with(|_| {});
    assert!(matches!(
        second.status(job.id),
        Err(ptyjobs_engine::Error::JobNotFound(_))
    ));
}

/// A busy manager applies the retention by the number of jobs too, not only every ten minutes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_busy_manager_prunes_as_it_goes() {
    let dir = tempfile::tempdir().unwrap();
    let m = manager_with(|c| {
        c.store = Some(StoreConfig {
            keep_jobs: 5,
            ..StoreConfig::new(dir.path())
        });
    });
    for _ in 0..210 {
        run(&m, "true").await;
    }
    let store = m.store().unwrap();
    // The upkeep reads and removes in slices that yield to the machine: on a loaded one it takes
    // seconds (the deadline only bounds a failure).
    let pruned = wait_until(Duration::from_secs(90), || store.records().len() <= 15).await;
    assert!(pruned, "{} records kept", store.records().len());
}

/// A read within a byte budget covers its whole range from disk and memory alike, but reads
/// and returns only the head and tail that fit, saying what it left out; a stored job reads
/// the same as the live one did.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bounded_reads_span_disk_and_memory_and_keep_head_and_tail() {
    let dir = tempfile::tempdir().unwrap();
    let m = manager_with(|c| {
        c.store = Some(StoreConfig::new(dir.path()));
        c.transcript_bytes = 64 * 1024;
    });
    let job = m.execute(JobSpec::new("seq 1 20000; read x")).unwrap();
    let ready = wait_until(Duration::from_secs(20), || {
        m.tail(job.id, 3)
            .is_ok_and(|t| t.output.contains("19999\n20000"))
    })
    .await;
    assert!(ready, "{:?}", m.tail(job.id, 3));
    let check = |s: &ptyjobs_engine::OutputSlice, budget: usize| {
        assert!(s.output.len() <= budget, "{} bytes", s.output.len());
        assert!(s.output.starts_with("1\n2\n3\n"), "{:?}", &s.output[..20]);
        assert!(s.output.contains("19999\n20000"), "the tail is kept");
        assert_eq!((s.first_line, s.next_offset), (0, s.total_lines));
        let head = s
            .output
            .lines()
            .take_while(|l| !l.starts_with("[..."))
            .count() as u64;
        assert_eq!(s.omitted_from, Some(head));
        let kept = s.output.lines().filter(|l| !l.starts_with("[...")).count() as u64;
        assert_eq!(kept + s.omitted_lines, s.line_count);
        assert!(s.omitted_bytes > 50_000);
    };
    let live = m
        .output_within(job.id, Some(0), Some(usize::MAX), 4096)
        .unwrap();
    assert!(
        live.dropped_lines > 0,
        "memory let the head go: it came from disk"
    );
    check(&live, 4096);
    let gap = live.omitted_from.unwrap();
    let next = m.output_within(job.id, Some(gap), Some(2), 4096).unwrap();
    assert_eq!(next.output, format!("{}\n{}", gap + 1, gap + 2));
    assert_eq!(next.omitted_from, None);
    let tail = m.tail_within(job.id, 1000, 1000).unwrap();
    assert!(tail.output.len() <= 1000 && tail.output.contains("19999\n20000"));
    m.write(job.id, b"x\r").unwrap();
    m.wait(job.id, Some(Duration::from_secs(20))).await.unwrap();
    m.shutdown().await;
    drop(m);
    let later = persisted(dir.path());
    let stored = later
        .output_within(job.id, Some(0), Some(usize::MAX), 4096)
        .unwrap();
    check(&stored, 4096);
    let both = |s: &ptyjobs_engine::OutputSlice| s.output.split("[...").next().map(str::to_owned);
    assert_eq!(
        both(&stored),
        both(&live),
        "the same head from disk as from the live job"
    );
    let found = later
        .search_async(
            job.id,
            ptyjobs_engine::compile_pattern("^1234$").unwrap(),
            1,
            5,
        )
        .await
        .unwrap();
    assert_eq!(found.total_matches, 1);
    assert_eq!(found.matches[0].before, ["1233"]);
    assert_eq!(found.matches[0].after, ["1235"]);
}

/// Every chunk a follow hands out, concatenated, until it ends.
async fn followed(mut f: ptyjobs_engine::Follow<'_>) -> String {
    let mut all = String::new();
    while let Some(chunk) = tokio::time::timeout(Duration::from_secs(30), f.next())
        .await
        .expect("the follow ends with its job")
        .expect("every read of the follow succeeds")
    {
        all.push_str(&chunk.text);
    }
    all
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follow_hands_out_every_line_once_live_stored_and_from_a_reader() {
    let dir = tempfile::tempdir().unwrap();
    let first = persisted(dir.path());
    let job = first
        .execute(JobSpec::new(
            "for i in $(seq 1 500); do echo line $i; done; printf last",
        ))
        .unwrap();
    let live = followed(first.follow(job.id, Some(0)).unwrap()).await;
    assert_eq!(live, first.output(job.id, Some(0), None).unwrap().output);
    assert!(live.starts_with("line 1\nline 2\n") && live.ends_with("line 500\nlast"));
    first.shutdown().await;
    drop(first);

    let second = persisted(dir.path());
    let stored = followed(second.follow(job.id, Some(100)).unwrap()).await;
    assert_eq!(
        stored,
        second.output(job.id, Some(100), None).unwrap().output
    );
    assert!(stored.starts_with("line 101\n"));

    let reader = ptyjobs_engine::Store::open_reader(StoreConfig::new(dir.path())).unwrap();
    let mut f = reader.follow(job.id, Some(490)).unwrap();
    let rest = f.try_next().unwrap().unwrap();
    assert!(rest.last);
    assert_eq!((rest.first_line, rest.line_count), (490, 11));
    assert_eq!(
        rest.text,
        (491..=500)
            .map(|i| format!("line {i}\n"))
            .collect::<String>()
            + "last"
    );
    assert!(f.ended() && f.try_next().unwrap().is_none());
}
