//! Input awareness: a job says when its foreground process is blocked reading the terminal.
#![cfg(target_os = "linux")]

use std::time::{Duration, Instant};

use crate::common::{manager, manager_with, wait_for_output, wait_until};
use ptyjobs_engine::{JobSpec, Signal, StoreConfig, WaitReason, WaitSpec};

const DEADLINE: Duration = Duration::from_secs(15);

fn have(tool: &str) -> bool {
    std::process::Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

#[tokio::test(flavor = "multi_thread")]
async fn getpass_waits_with_echo_off_and_the_wait_returns_input_wanted() {
    if !have("python3") {
        eprintln!("skipped: no python3");
        return;
    }
    let m = manager();
    let job = m
        .execute(JobSpec::new(
            r#"python3 -c "import getpass; p=getpass.getpass(); print(len(p))""#,
        ))
        .unwrap();
    let spec = WaitSpec {
        input: true,
        timeout: Some(DEADLINE),
        ..WaitSpec::default()
    };
    let out = m.wait_for(job.id, &spec, |_| {}).await.unwrap();
    assert_eq!(out.reason, WaitReason::InputWanted, "{out:?}");
    let wait = out.input.expect("input_wanted carries the prompt");
    assert_eq!(wait.prompt, "Password:");
    assert!(!wait.echo, "getpass turns echo off");
    let info = m.status(job.id).unwrap();
    let input = info.input.expect("status says it waits");
    assert!(!input.echo);
    assert_eq!(input.prompt, "Password:");

    // The answer goes in; the job leaves the prompt and is no longer waiting.
    m.write(job.id, b"hunter2\n").unwrap();
    let done = m.wait(job.id, Some(DEADLINE)).await.unwrap();
    assert!(done.status.is_final());
    assert_eq!(done.input, None, "a finished job never waits");
}

#[tokio::test(flavor = "multi_thread")]
async fn read_prompt_waits_with_echo_on() {
    let m = manager();
    let job = m
        .execute(JobSpec::new("read -p 'Continue? ' x; echo got=$x"))
        .unwrap();
    let mut seen = None;
    assert!(
        wait_until(DEADLINE, || {
            seen = m.status(job.id).unwrap().input;
            seen.is_some()
        })
        .await,
        "read -p never counted as waiting"
    );
    let wait = seen.unwrap();
    assert!(wait.echo);
    assert_eq!(wait.prompt, "Continue?");
    m.write(job.id, b"yes\n").unwrap();
    wait_for_output(&m, job.id, "got=yes").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sleeping_job_never_waits_for_input() {
    let m = manager();
    let job = m.execute(JobSpec::new("echo start; sleep 100")).unwrap();
    wait_for_output(&m, job.id, "start").await;
    // Long past the quiet period, several looks over more than a second.
    let looks = never_waiting(
        &m,
        job.id,
        Duration::from_millis(1500),
        100,
        "sleep is not reading",
    )
    .await;
    assert!(looks >= 5);
    let spec = WaitSpec {
        input: true,
        timeout: Some(Duration::from_millis(800)),
        ..WaitSpec::default()
    };
    let out = m.wait_for(job.id, &spec, |_| {}).await.unwrap();
    assert_eq!(out.reason, WaitReason::Timeout);
    m.kill(job.id, Signal::TERM, None).await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_job_printing_all_the_time_is_not_waiting_even_while_it_reads() {
    // A reader of the terminal with a printer beside it (every 5 ms, one process that does not
    // fork per line, so that a loaded machine does not open 150 ms gaps): never quiet, never
    // waiting.
    if !have("python3") {
        eprintln!("skipped: no python3");
        return;
    }
    let m = manager();
    let job = m
        .execute(JobSpec::new(
            "python3 -u -c 'import time\nwhile 1: print(\"tick\"); time.sleep(0.005)' & read x",
        ))
        .unwrap();
    wait_for_output(&m, job.id, "tick").await;
    never_waiting(
        &m,
        job.id,
        Duration::from_millis(1200),
        50,
        "a printing job",
    )
    .await;
    m.kill(job.id, Signal::TERM, None).await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_program_polling_the_terminal_in_raw_mode_waits() {
    if !have("python3") {
        eprintln!("skipped: no python3");
        return;
    }
    // prompt_toolkit, inquirer and REPLs wait in poll/select on the terminal, not in read.
    let m = manager();
    let script = "import select,sys,tty; tty.setraw(0); sys.stdout.write('key> '); \
                  sys.stdout.flush(); select.select([0],[],[]); print(repr(sys.stdin.read(1)))";
    let job = m
        .execute(JobSpec::new(format!("python3 -c \"{script}\"")))
        .unwrap();
    let spec = WaitSpec {
        input: true,
        timeout: Some(DEADLINE),
        ..WaitSpec::default()
    };
    let out = m.wait_for(job.id, &spec, |_| {}).await.unwrap();
    assert_eq!(out.reason, WaitReason::InputWanted, "{out:?}");
    assert_eq!(out.input.unwrap().prompt, "key>");
    m.write(job.id, b"q").unwrap();
    let done = m.wait(job.id, Some(DEADLINE)).await.unwrap();
    assert!(done.status.is_final());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_password_never_reaches_the_transcript_or_the_disk_log() {
    if !have("python3") {
        eprintln!("skipped: no python3");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().to_owned();
    let m = manager_with(|c| c.store = Some(StoreConfig::new(&state)));
    let job = m
        .execute(JobSpec::new(
            r#"python3 -c "import getpass; p=getpass.getpass(); print('length', len(p))""#,
        ))
        .unwrap();
    let spec = WaitSpec {
        input: true,
        timeout: Some(DEADLINE),
        ..WaitSpec::default()
    };
    let out = m.wait_for(job.id, &spec, |_| {}).await.unwrap();
    assert_eq!(out.reason, WaitReason::InputWanted);
    let secret = "s3cr3t-Pa55word";
    let answer = m
        .interact(job.id, format!("{secret}\n").as_bytes(), DEADLINE)
        .await
        .unwrap();
    assert!(!answer.output.contains(secret), "{answer:?}");
    m.wait(job.id, Some(DEADLINE)).await.unwrap();
    let text = m.output(job.id, None, None).unwrap().output;
    assert!(text.contains("length 15"), "{text}");
    assert!(!text.contains(secret));
    let log = std::fs::read_to_string(state.join(format!("jobs/{}/output.log", job.id))).unwrap();
    assert!(log.contains("length 15"), "{log}");
    assert!(
        !log.contains(secret),
        "the password is in the disk log: {log}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_question_on_the_line_above_the_cursor_is_the_prompt() {
    let m = manager();
    let job = m
        .execute(JobSpec::new("echo 'Type the code we sent you:'; read code"))
        .unwrap();
    let spec = WaitSpec {
        input: true,
        timeout: Some(DEADLINE),
        ..WaitSpec::default()
    };
    let out = m.wait_for(job.id, &spec, |_| {}).await.unwrap();
    assert_eq!(out.reason, WaitReason::InputWanted, "{out:?}");
    let wait = out.input.unwrap();
    assert_eq!(wait.prompt, "Type the code we sent you:");
    assert!(wait.echo);
    m.kill(job.id, Signal::TERM, None).await.unwrap();
}

/// Looks at the job's input state every `step_ms` for `span` (the passing time is what is
/// under test: a job that must never be flagged) and asserts it is never waiting. Returns how
/// many looks were taken.
async fn never_waiting(
    m: &ptyjobs_engine::JobManager,
    id: ptyjobs_engine::JobId,
    span: Duration,
    step_ms: u64,
    what: &str,
) -> usize {
    let end = Instant::now() + span;
    let mut looks = 0;
    while Instant::now() < end {
        assert_eq!(m.status(id).expect("status").input, None, "{what}");
        looks += 1;
        tokio::time::sleep(Duration::from_millis(step_ms)).await;
    }
    looks
}
