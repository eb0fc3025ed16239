//! Agent ergonomics in the engine: waits, keys, search, paste, byte budgets, screen.

use std::time::{Duration, Instant};

use crate::common::*;
use ptyjobs_engine::{JobSpec, JobStatus, WaitReason, WaitSpec, compile_pattern};

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("addr").port()
}

#[tokio::test]
async fn wait_for_a_pattern_printed_after_the_call() {
    let m = manager();
    let job = m
        .execute(JobSpec::new(
            "echo ready-old; read go; sleep 0.3; echo server ready-new; sleep 100",
        ))
        .unwrap();
    wait_for_output(&m, job.id, "ready-old").await;
    let spec = WaitSpec {
        pattern: Some(compile_pattern("ready-\\w+").unwrap()),
        ..WaitSpec::default()
    };
    m.write(job.id, b"\n").unwrap();
    let out = m.wait_for(job.id, &spec, |_| {}).await.unwrap();
    assert_eq!(out.reason, WaitReason::Matched);
    assert_eq!(out.matched_line.as_deref(), Some("server ready-new"));
    assert_eq!(out.line_number, Some(2));
    let from_start = WaitSpec {
        from_start: true,
        ..spec
    };
    let out = m.wait_for(job.id, &from_start, |_| {}).await.unwrap();
    assert_eq!(
        (out.matched_line.as_deref(), out.line_number),
        (Some("ready-old"), Some(0))
    );
    m.kill(job.id, ptyjobs_engine::Signal::KILL, None)
        .await
        .unwrap();
}

#[tokio::test]
async fn wait_for_idle_at_a_prompt_and_for_exit() {
    let m = manager();
    let job = m
        .execute(JobSpec::new(
            "echo working; printf '>>> '; read x; echo bye",
        ))
        .unwrap();
    let spec = WaitSpec {
        idle: Some(Duration::from_millis(300)),
        ..WaitSpec::default()
    };
    let out = m.wait_for(job.id, &spec, |_| {}).await.unwrap();
    assert_eq!(out.reason, WaitReason::Idle);
    assert!(out.tail.output.ends_with(">>> "), "{:?}", out.tail.output);
    m.write(job.id, b"\n").unwrap();
    let out = m
        .wait_for(job.id, &WaitSpec::default(), |_| {})
        .await
        .unwrap();
    assert_eq!(out.reason, WaitReason::Exited);
    assert_eq!(out.info.status, JobStatus::Completed);
}

#[tokio::test]
async fn wait_for_a_port_to_open() {
    let m = manager();
    let port = free_port();
    let cmd = format!(
        "python3 -c \"import socket,time; time.sleep(0.3); s=socket.socket(); \
         s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(('127.0.0.1',{port})); \
         s.listen(); print('listening', flush=True); time.sleep(100)\""
    );
    let job = m.execute(JobSpec::new(cmd)).unwrap();
    let spec = WaitSpec {
        port: Some(port),
        timeout: Some(Duration::from_secs(20)),
        ..WaitSpec::default()
    };
    let out = m.wait_for(job.id, &spec, |_| {}).await.unwrap();
    assert_eq!(out.reason, WaitReason::PortOpen, "{out:?}");
    m.kill(job.id, ptyjobs_engine::Signal::KILL, None)
        .await
        .unwrap();
}

#[tokio::test]
async fn a_wait_times_out_reports_progress_and_is_capped() {
    let m = manager_with(|c| c.max_wait = Duration::from_millis(1500));
    let job = m.execute(JobSpec::new("sleep 100")).unwrap();
    let mut ticks = 0;
    let t = Instant::now();
    let spec = WaitSpec {
        timeout: Some(Duration::from_secs(600)),
        ..WaitSpec::default()
    };
    let out = m.wait_for(job.id, &spec, |_| ticks += 1).await.unwrap();
    assert_eq!(out.reason, WaitReason::Timeout);
    assert!(out.capped);
    assert!(t.elapsed() >= Duration::from_millis(1500) && t.elapsed() < Duration::from_secs(5));
    assert!(ticks >= 1);
    m.kill(job.id, ptyjobs_engine::Signal::KILL, None)
        .await
        .unwrap();
}

#[tokio::test]
async fn ctrl_c_interrupts_the_foreground_program() {
    let m = manager();
    let job = m.execute(JobSpec::new("echo go; exec sleep 100")).unwrap();
    wait_for_output(&m, job.id, "go").await;
    assert!(
        wait_until(Duration::from_secs(5), || {
            std::fs::read_to_string(format!("/proc/{}/comm", job.pid))
                .is_ok_and(|c| c.trim() == "sleep")
        })
        .await
    );
    m.send_keys(job.id, &["C-c"]).await.unwrap();
    let info = m.wait(job.id, Some(Duration::from_secs(5))).await.unwrap();
    assert_eq!(
        (info.status, info.signal.as_deref()),
        (JobStatus::Failed, Some("SIGINT"))
    );
}

#[tokio::test]
async fn arrow_keys_follow_application_cursor_mode() {
    let m = manager();
    let cmd = "stty raw -echo; printf '\\033[?1hready\\r\\n'; head -c 6 | od -An -c";
    let job = m.execute(JobSpec::new(cmd)).unwrap();
    wait_for_output(&m, job.id, "ready").await;
    m.send_keys(job.id, &["Up", "Left"]).await.unwrap();
    m.wait(job.id, Some(Duration::from_secs(5))).await.unwrap();
    let out = m.output(job.id, None, None).unwrap().output;
    let bytes: Vec<&str> = out.lines().last().unwrap().split_whitespace().collect();
    assert_eq!(bytes, ["033", "O", "A", "033", "O", "D"], "{out}");
    assert!(m.send_keys(job.id, &["Nope"]).await.is_err());
}

#[tokio::test]
async fn long_input_is_a_bracketed_paste_when_the_program_asks_for_it() {
    let m = manager();
    let cmd = "stty raw -echo; printf '\\033[?2004hready\\r\\n'; head -c 15 | od -An -tx1";
    let job = m.execute(JobSpec::new(cmd)).unwrap();
    wait_for_output(&m, job.id, "ready").await;
    m.interact(job.id, b"a\nb", Duration::from_secs(3))
        .await
        .unwrap();
    m.wait(job.id, Some(Duration::from_secs(5))).await.unwrap();
    let out = m
        .output(job.id, None, None)
        .unwrap()
        .output
        .replace('\n', " ");
    assert!(
        out.contains("1b 5b 32 30 30 7e 61 0a 62 1b 5b 32 30 31 7e"),
        "{out}"
    );
}

#[tokio::test]
async fn search_with_context_and_byte_budgets() {
    let m = manager();
    let (info, _) = run(
        &m,
        "for i in $(seq 1 300); do echo line $i; done; echo FAIL: boom; echo after",
    )
    .await;
    let re = compile_pattern("^FAIL").unwrap();
    let r = m.search(info.id, &re, 1, 10).unwrap();
    assert_eq!(r.total_matches, 1);
    assert_eq!(r.matches[0].line, 300);
    assert_eq!(r.matches[0].before, ["line 300"]);
    assert_eq!(r.matches[0].after, ["after"]);
    let mut s = m.output(info.id, None, None).unwrap();
    s.fit(500);
    assert!(s.output.len() <= 500 && s.omitted_lines > 0);
    assert!(s.output.starts_with("line 1\n") && s.output.ends_with("after"));
}

#[tokio::test]
async fn the_screen_of_a_full_screen_program() {
    let m = manager();
    let cmd = "printf '\\033]2;my tui\\007\\033[?1049h\\033[H\\033[2J\\033[3;5Hhello\\033[5;1Hstatus'; sleep 100";
    let spec = JobSpec {
        cols: Some(40),
        rows: Some(10),
        ..JobSpec::new(cmd)
    };
    let job = m.execute(spec).unwrap();
    let mut screen = m.screen(job.id).unwrap();
    assert!(
        wait_until(Duration::from_secs(5), || {
            screen = m.screen(job.id).unwrap();
            screen.rows.get(4).is_some_and(|r| r == "status")
        })
        .await
    );
    assert!(screen.alternate_screen);
    assert_eq!(screen.rows[2], "    hello");
    assert_eq!((screen.cursor_row, screen.cursor_col), (4, 6));
    assert_eq!((screen.cols, screen.height), (40, 10));
    assert_eq!(screen.title.as_deref(), Some("my tui"));
    assert!(
        !m.output(job.id, None, None)
            .unwrap()
            .output
            .contains("hello")
    );
    m.kill(job.id, ptyjobs_engine::Signal::KILL, None)
        .await
        .unwrap();
}
