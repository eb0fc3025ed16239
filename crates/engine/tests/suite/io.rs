//! Talking to jobs: clean output, prompts, interaction, writes, resizes.

use std::time::{Duration, Instant};

use crate::common::*;
use ptyjobs_engine::{Error, JobSpec, JobStatus};

#[tokio::test]
async fn colours_progress_bars_and_wrapping_come_out_clean() {
    let m = manager();
    let long = "x".repeat(300);
    let cmd = format!(
        "printf '\\033[1;31mred\\033[0m\\n'; printf '10%%\\r50%%\\r100%%\\n'; echo {long}; \
         printf '\\033]0;title\\007done\\n'"
    );
    let (_, out) = run(&m, &cmd).await;
    assert_eq!(out, format!("red\n100%\n{long}\ndone"));
    assert!(!out.contains('\x1b'));
}

#[tokio::test]
async fn a_screen_clear_keeps_the_text_and_the_alternate_screen_stays_out() {
    let m = manager();
    let (_, out) = run(&m, "printf 'before\\n\\033[2J\\033[Hafter\\n'").await;
    assert_eq!(out, "before\nafter");
    let (_, out) = run(&m, "printf 'pre\\n\\033[?1049hSECRET\\033[?1049lpost\\n'").await;
    assert!(!out.contains("SECRET"), "{out}");
    assert!(out.contains("pre") && out.contains("post"), "{out}");
}

#[tokio::test]
async fn invalid_utf8_becomes_replacement_characters() {
    let m = manager();
    let (_, out) = run(&m, "printf '\\377\\376 ok\\n'").await;
    assert_eq!(out, "\u{fffd}\u{fffd} ok");
}

#[tokio::test]
async fn a_prompt_is_visible_and_interact_answers_it() {
    let m = manager();
    let job = m
        .execute(JobSpec::new("printf 'Name? '; read x; echo \"hi $x\""))
        .unwrap();
    wait_for_output(&m, job.id, "Name?").await;
    assert_eq!(m.tail(job.id, 5).unwrap().output, "Name? ");
    let reply = m
        .interact(job.id, b"Bob\n", Duration::from_secs(5))
        .await
        .unwrap();
    assert!(reply.output.contains("hi Bob"), "{reply:?}");
    assert!(reply.output.starts_with("Name? Bob"), "{reply:?}");
    assert_eq!(reply.bytes_written, 4);
}

#[tokio::test]
async fn interact_catches_a_reply_that_takes_a_second() {
    let m = manager();
    let job = m
        .execute(JobSpec::new("read x; sleep 1; echo \"got $x\"; read y"))
        .unwrap();
    let t = Instant::now();
    let reply = m
        .interact(job.id, b"ping\n", Duration::from_secs(5))
        .await
        .unwrap();
    assert!(reply.output.contains("got ping"), "{reply:?}");
    assert!(
        t.elapsed() < Duration::from_secs(3),
        "took {:?}",
        t.elapsed()
    );
    m.kill(job.id, ptyjobs_engine::Signal::KILL, None)
        .await
        .unwrap();
}

#[tokio::test]
async fn interact_with_a_job_that_does_not_read_returns_by_its_deadline() {
    let m = manager();
    let job = m
        .execute(JobSpec::new("stty raw -echo; echo ready; sleep 1000"))
        .unwrap();
    wait_for_output(&m, job.id, "ready").await;
    // Far more than the terminal takes: in raw mode a full input buffer blocks the writer
    // (in canonical mode the kernel would silently drop the excess instead).
    let big = vec![b'a'; 1 << 20];
    let t = Instant::now();
    let reply = m
        .interact(job.id, &big, Duration::from_millis(700))
        .await
        .unwrap();
    assert!(
        t.elapsed() < Duration::from_secs(2),
        "took {:?}",
        t.elapsed()
    );
    assert!(reply.bytes_written < big.len());
    assert_eq!(reply.status, JobStatus::Running);
    m.kill(job.id, ptyjobs_engine::Signal::KILL, None)
        .await
        .unwrap();
}

#[tokio::test]
async fn writing_to_an_ended_job_is_a_clear_error() {
    let m = manager();
    let (info, _) = run(&m, "true").await;
    assert!(matches!(
        m.write(info.id, b"x"),
        Err(Error::NotRunning { .. })
    ));
    let err = m
        .interact(info.id, b"x\n", Duration::from_secs(1))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NotRunning { .. }));
    assert!(
        !m.resize(info.id, 100, 30).unwrap(),
        "resize of an ended job is a no-op"
    );
}

#[tokio::test]
async fn resize_reaches_the_program() {
    let m = manager();
    let spec = JobSpec {
        cols: Some(90),
        rows: Some(20),
        ..JobSpec::new("stty size; read x; stty size")
    };
    let job = m.execute(spec).unwrap();
    wait_for_output(&m, job.id, "20 90").await;
    assert!(m.resize(job.id, 132, 50).unwrap());
    m.write(job.id, b"\n").unwrap();
    m.wait(job.id, Some(Duration::from_secs(10))).await.unwrap();
    let out = m.output(job.id, None, None).unwrap().output;
    assert!(out.ends_with("50 132"), "{out}");
    assert_eq!(m.screen(job.id).unwrap().cols, 132);
}

#[tokio::test]
async fn output_reads_page_with_absolute_offsets() {
    let m = manager_with(|c| c.transcript_bytes = 4096);
    let (_, _) = run(&m, "seq 1 5000").await;
    let id = m.list()[0].id;
    let all = m.output(id, None, None).unwrap();
    assert!(all.dropped_lines > 0);
    assert_eq!(all.total_lines, 5000);
    assert_eq!(all.output.lines().last(), Some("5000"));
    let page = m.output(id, Some(4990), Some(5)).unwrap();
    assert_eq!(page.output, "4991\n4992\n4993\n4994\n4995");
    assert_eq!(page.next_offset, 4995);
    let tail = m.tail(id, 3).unwrap();
    assert_eq!(tail.output, "4998\n4999\n5000");
}
