//! Jobs as processes: terminal, environment, exit statuses, start failures, limits.

use std::time::Duration;

use crate::common::*;
use ptyjobs_engine::{Error, JobSpec, JobStatus};

#[tokio::test]
async fn every_job_has_a_terminal_on_all_three_streams() {
    let m = manager();
    let (info, out) = run(&m, "test -t 0 && test -t 1 && test -t 2 && echo all-tty").await;
    assert_eq!(info.status, JobStatus::Completed);
    assert_eq!(out, "all-tty");
}

#[tokio::test]
async fn the_environment_has_a_terminal_type_no_pager_and_the_jobs_own_variables() {
    let m = manager();
    let mut spec = JobSpec::new("echo $TERM $PAGER $GIT_PAGER $MY_VAR");
    spec.env.insert("MY_VAR".into(), "hello world".into());
    let job = m.execute(spec).unwrap();
    m.wait(job.id, Some(Duration::from_secs(10))).await.unwrap();
    assert_eq!(
        m.output(job.id, None, None).unwrap().output,
        "xterm-256color cat cat hello world"
    );
}

/// The base environment is built once per manager; a job's own variable replaces a base one
/// (one entry, not two), for every job of the manager.
#[tokio::test]
async fn a_jobs_own_variables_replace_the_inherited_ones_once() {
    let m = manager();
    for pager in ["less", "more"] {
        let mut spec = JobSpec::new("env | grep -c '^PAGER='; echo $PAGER $TERM");
        spec.env.insert("PAGER".into(), pager.into());
        let job = m.execute(spec).unwrap();
        m.wait(job.id, Some(Duration::from_secs(10))).await.unwrap();
        assert_eq!(
            m.output(job.id, None, None).unwrap().output,
            format!("1\n{pager} xterm-256color")
        );
    }
}

#[tokio::test]
async fn the_shell_runs_pipes_quotes_and_globs() {
    let m = manager();
    let (_, out) = run(
        &m,
        "printf 'a b\\nc\\n' | wc -l && echo \"q'uote\" && echo /e*c/host?ame",
    )
    .await;
    assert_eq!(
        out.lines().map(str::trim).collect::<Vec<_>>(),
        ["2", "q'uote", "/etc/hostname"]
    );
}

#[tokio::test]
async fn exit_codes_and_signals_decide_the_status() {
    let m = manager();
    let (ok, _) = run(&m, "true").await;
    assert_eq!((ok.status, ok.exit_code), (JobStatus::Completed, Some(0)));
    let (bad, _) = run(&m, "exit 7").await;
    assert_eq!((bad.status, bad.exit_code), (JobStatus::Failed, Some(7)));
    let (sig, _) = run(&m, "kill -SEGV $$").await;
    assert_eq!(sig.status, JobStatus::Failed);
    assert_eq!(sig.signal.as_deref(), Some("SIGSEGV"));
    assert!(sig.finished.is_some() && sig.finished >= Some(sig.started));
}

#[tokio::test]
async fn a_command_that_does_not_exist_fails_with_127_and_the_shells_message() {
    let m = manager();
    let (info, out) = run(&m, "no-such-command-ptyjobs").await;
    assert_eq!(
        (info.status, info.exit_code),
        (JobStatus::Failed, Some(127))
    );
    assert!(out.contains("not found"), "{out}");
}

#[tokio::test]
async fn a_cwd_that_does_not_exist_is_rejected_not_replaced() {
    let m = manager();
    let mut spec = JobSpec::new("pwd");
    spec.cwd = Some("/no/such/dir".into());
    let err = m.execute(spec).unwrap_err();
    assert!(
        matches!(err, Error::InvalidArgument(ref s) if s.contains("/no/such/dir")),
        "{err}"
    );
    let mut spec = JobSpec::new("pwd");
    spec.cwd = Some("/tmp".into());
    let job = m.execute(spec).unwrap();
    m.wait(job.id, Some(Duration::from_secs(10))).await.unwrap();
    assert_eq!(m.output(job.id, None, None).unwrap().output, "/tmp");
}

#[tokio::test]
async fn bad_arguments_are_clear_errors() {
    let m = manager();
    for cmd in ["", "   ", "\n"] {
        assert!(
            matches!(m.execute(JobSpec::new(cmd)), Err(Error::InvalidArgument(_))),
            "{cmd:?}"
        );
    }
    let spec = JobSpec {
        cols: Some(0),
        ..JobSpec::new("true")
    };
    assert!(matches!(m.execute(spec), Err(Error::InvalidArgument(_))));
    let spec = JobSpec {
        rows: Some(5000),
        ..JobSpec::new("true")
    };
    assert!(matches!(m.execute(spec), Err(Error::InvalidArgument(_))));
    let mut spec = JobSpec::new("true");
    spec.env.insert("A=B".into(), "x".into());
    assert!(matches!(m.execute(spec), Err(Error::InvalidArgument(_))));
    for id in [
        "",
        "../../etc/passwd",
        "1234",
        "not-a-uuid-at-all-but-36-chars-long!",
    ] {
        assert!(
            matches!(
                id.parse::<ptyjobs_engine::JobId>(),
                Err(Error::InvalidJobId(_))
            ),
            "{id}"
        );
    }
    let unknown = ptyjobs_engine::JobId::new();
    assert!(matches!(m.status(unknown), Err(Error::JobNotFound(_))));
    assert!(matches!(
        m.output(unknown, None, None),
        Err(Error::JobNotFound(_))
    ));
}

#[tokio::test]
async fn the_running_limit_counts_only_running_jobs() {
    let m = manager_with(|c| c.max_running = 2);
    let a = m.execute(JobSpec::new("sleep 100")).unwrap();
    // b runs until it reads a line: `true` could end (and free its slot) before the next call.
    let b = m.execute(JobSpec::new("read line")).unwrap();
    assert!(matches!(
        m.execute(JobSpec::new("true")),
        Err(Error::LimitReached(_))
    ));
    m.write(b.id, b"\n").unwrap();
    m.wait(b.id, Some(Duration::from_secs(10))).await.unwrap();
    // b finished, so a slot is free again
    let c = m.execute(JobSpec::new("true")).unwrap();
    m.wait(c.id, Some(Duration::from_secs(10))).await.unwrap();
    m.kill(a.id, ptyjobs_engine::Signal::KILL, None)
        .await
        .unwrap();
}

#[tokio::test]
async fn finished_jobs_are_listed_newest_first_up_to_the_cap() {
    let m = manager_with(|c| c.max_finished = 3);
    let mut ids = Vec::new();
    for i in 0..5 {
        let (info, _) = run(&m, &format!("echo {i}")).await;
        ids.push(info.id);
    }
    let listed: Vec<_> = m.list().into_iter().map(|j| j.id).collect();
    assert_eq!(listed, [ids[4], ids[3], ids[2]]);
    assert!(m.status(ids[0]).is_err());
}

#[tokio::test]
async fn no_byte_is_missing_once_a_job_is_final() {
    let m = manager_with(|c| c.transcript_bytes = 32 << 20);
    for _ in 0..5 {
        let (info, out) = run(&m, "seq 1 100000").await;
        assert_eq!(info.status, JobStatus::Completed);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 100000);
        assert_eq!(lines.last(), Some(&"100000"));
    }
}

#[tokio::test]
async fn a_hup_ignoring_grandchild_holding_the_terminal_does_not_keep_the_job_running() {
    let m = manager();
    let job = m
        .execute(JobSpec::new(
            "(trap '' HUP; exec sleep 1000) & echo started",
        ))
        .unwrap();
    let info = m.wait(job.id, Some(Duration::from_secs(10))).await.unwrap();
    assert_eq!(info.status, JobStatus::Completed, "{info:?}");
    assert_eq!(m.output(job.id, None, None).unwrap().output, "started");
    assert!(
        wait_until(Duration::from_secs(5), || session_processes(job.pid)
            .is_empty())
        .await
    );
}

#[tokio::test]
async fn a_job_that_closes_its_terminal_early_is_still_awaited() {
    let m = manager();
    let (info, out) = run(
        &m,
        "echo bye; exec >/dev/null 2>&1 </dev/null; sleep 0.3; exit 4",
    )
    .await;
    assert_eq!((info.status, info.exit_code), (JobStatus::Failed, Some(4)));
    assert_eq!(out, "bye");
}
