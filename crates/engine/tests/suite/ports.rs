//! Ports that are the job's own, and readiness that cannot be fooled: real servers (Python's
//! `http.server`, a Node HTTP server, the `tests/fixtures/serve.py` dev server) under real PTYs.

use std::net::IpAddr;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use ptyjobs_engine::{JobManager, JobSpec, Signal, WaitOutcome, WaitReason, WaitSpec};

use crate::common::{manager, wait_for_output};

const SERVE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/serve.py");

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("0.0.0.0:0").expect("bind");
    listener.local_addr().expect("addr").port()
}

fn serve(args: &str) -> String {
    format!("python3 {SERVE} {args}")
}

async fn wait(m: &JobManager, id: ptyjobs_engine::JobId, spec: WaitSpec) -> WaitOutcome {
    let spec = WaitSpec {
        timeout: spec.timeout.or(Some(Duration::from_secs(20))),
        ..spec
    };
    m.wait_for(id, &spec, |_| {}).await.expect("wait_for")
}

async fn end(m: &JobManager, id: ptyjobs_engine::JobId) {
    let _ = m.kill(id, Signal::KILL, None).await;
}

/// A process that is not a job, listening on `port` until dropped.
struct Outsider(Child);

impl Outsider {
    fn listen(port: u16) -> Self {
        let mut child = Command::new("python3")
            .args([SERVE, "--host", "0.0.0.0", "--port", &port.to_string()])
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3");
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(child.stdout.as_mut().expect("stdout")),
            &mut line,
        )
        .expect("read");
        assert!(line.starts_with("listening"), "{line}");
        Self(child)
    }
}

impl Drop for Outsider {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn python_http_server_is_the_jobs_own_port_in_wait_status_and_list() {
    let m = manager();
    let port = free_port();
    let job = m
        .execute(JobSpec::new(format!(
            "python3 -m http.server {port} --bind 127.0.0.1"
        )))
        .unwrap();
    let out = wait(
        &m,
        job.id,
        WaitSpec {
            port: Some(port),
            ..WaitSpec::default()
        },
    )
    .await;
    assert_eq!(out.reason, WaitReason::PortOpen, "{out:?}");
    let l = out.ports.iter().find(|l| l.port == port).expect("listed");
    assert_eq!(l.address, "127.0.0.1".parse::<IpAddr>().unwrap());
    assert_eq!(out.urls, [format!("http://localhost:{port}/")]);
    let status = m.status(job.id).unwrap();
    assert!(status.ports.iter().any(|l| l.port == port), "{status:?}");
    let async_status = m.status_async(job.id).await.unwrap();
    assert_eq!(async_status.ports, status.ports);
    let listed = m.list_async().await.unwrap();
    let mine = listed.iter().find(|j| j.id == job.id).unwrap();
    assert_eq!(mine.ports, status.ports);
    end(&m, job.id).await;
    assert!(m.status(job.id).unwrap().ports.is_empty());
}

#[tokio::test]
async fn listening_answers_where_a_node_server_ended_up() {
    let m = manager();
    let job = m
        .execute(JobSpec::new(
            "node -e \"require('http').createServer((q,s)=>s.end('hi')).listen(0,'127.0.0.1',function(){console.log('port '+this.address().port)})\"",
        ))
        .unwrap();
    let out = wait(
        &m,
        job.id,
        WaitSpec {
            listening: true,
            ..WaitSpec::default()
        },
    )
    .await;
    assert_eq!(out.reason, WaitReason::Listening, "{out:?}");
    let text = wait_for_output(&m, job.id, "port ").await;
    let printed: u16 = text
        .split("port ")
        .nth(1)
        .and_then(|s| s.trim().lines().next())
        .and_then(|s| s.trim().parse().ok())
        .expect("the server printed its port");
    assert_eq!(out.ports.len(), 1, "{out:?}");
    assert_eq!(out.ports[0].port, printed);
    assert_eq!(out.urls, [format!("http://localhost:{printed}/")]);
    end(&m, job.id).await;
}

#[tokio::test]
async fn an_ipv6_only_and_an_ipv4_any_server_are_both_seen() {
    let m = manager();
    for (host, address) in [("::1", "::1"), ("0.0.0.0", "0.0.0.0")] {
        let port = free_port();
        let job = m
            .execute(JobSpec::new(serve(&format!("--host {host} --port {port}"))))
            .unwrap();
        let out = wait(
            &m,
            job.id,
            WaitSpec {
                port: Some(port),
                ..WaitSpec::default()
            },
        )
        .await;
        assert_eq!(out.reason, WaitReason::PortOpen, "{host}: {out:?}");
        assert_eq!(out.ports[0].address, address.parse::<IpAddr>().unwrap());
        end(&m, job.id).await;
    }
}

#[tokio::test]
async fn a_child_of_the_shell_that_listens_is_the_jobs() {
    let m = manager();
    let port = free_port();
    // The shell stays (a command after the server), so the listener is its child's.
    let job = m
        .execute(JobSpec::new(format!(
            "echo starting; {}; echo stopped",
            serve(&format!("--port {port} --delay 0.3"))
        )))
        .unwrap();
    let out = wait(
        &m,
        job.id,
        WaitSpec {
            port: Some(port),
            ..WaitSpec::default()
        },
    )
    .await;
    assert_eq!(out.reason, WaitReason::PortOpen, "{out:?}");
    assert_ne!(out.ports[0].pid, job.pid, "the shell does not listen");
    end(&m, job.id).await;
}

#[tokio::test]
async fn a_port_held_by_a_process_that_is_not_a_job_is_port_taken_at_once() {
    let m = manager();
    let port = free_port();
    let outsider = Outsider::listen(port);
    let job = m
        .execute(JobSpec::new(serve(&format!("--port {port} --delay 5"))))
        .unwrap();
    let t = Instant::now();
    let out = wait(
        &m,
        job.id,
        WaitSpec {
            port: Some(port),
            ..WaitSpec::default()
        },
    )
    .await;
    assert_eq!(out.reason, WaitReason::PortTaken, "{out:?}");
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    let holder = out.holder.expect("the holder");
    assert_eq!(holder.pid, outsider.0.id());
    assert!(
        holder.command.as_deref().unwrap_or("").contains("serve.py"),
        "{holder:?}"
    );
    assert!(holder.cwd.is_some());
    assert_eq!(holder.job_id, None);
    assert_eq!(m.port_holders(port), [holder]);
    end(&m, job.id).await;
    drop(outsider);
    assert!(m.port_holders(port).is_empty(), "the port is free again");
}

#[tokio::test]
async fn a_port_held_by_another_job_names_that_job() {
    let m = manager();
    let port = free_port();
    let mut web = JobSpec::new(serve(&format!("--port {port}")));
    web.name = Some("web".into());
    let web = m.execute(web).unwrap();
    let first = wait(
        &m,
        web.id,
        WaitSpec {
            port: Some(port),
            ..WaitSpec::default()
        },
    )
    .await;
    assert_eq!(first.reason, WaitReason::PortOpen);
    let second = m.execute(JobSpec::new("sleep 30")).unwrap();
    let out = wait(
        &m,
        second.id,
        WaitSpec {
            port: Some(port),
            ..WaitSpec::default()
        },
    )
    .await;
    assert_eq!(out.reason, WaitReason::PortTaken, "{out:?}");
    let holder = out.holder.expect("the holder");
    assert_eq!(holder.job_id, Some(web.id));
    assert_eq!(holder.job_name.as_deref(), Some("web"));
    assert_eq!(m.port_holders(port), [holder]);
    end(&m, web.id).await;
    end(&m, second.id).await;
}

#[tokio::test]
async fn a_server_that_moves_to_the_next_port_is_found_where_it_listens() {
    let m = manager();
    let port = free_port();
    let _outsider = Outsider::listen(port);
    let job = m
        .execute(JobSpec::new(serve(&format!("--port {port} --next"))))
        .unwrap();
    let out = wait(
        &m,
        job.id,
        WaitSpec {
            listening: true,
            ..WaitSpec::default()
        },
    )
    .await;
    assert_eq!(out.reason, WaitReason::Listening, "{out:?}");
    let moved = out.ports[0].port;
    assert_ne!(moved, port);
    let text = wait_for_output(&m, job.id, "listening on").await;
    assert!(text.contains(&format!(":{moved}")), "{text}");
    end(&m, job.id).await;
}

#[tokio::test]
async fn auto_port_gives_the_job_a_free_port_and_listening_counts_only_it() {
    let m = manager();
    let mut spec = JobSpec::new(serve("--port env --extra --delay 0.5"));
    spec.auto_port = true;
    let job = m.execute(spec).unwrap();
    let port = job.port.expect("auto_port picks a port");
    assert_eq!(m.status(job.id).unwrap().port, Some(port));
    let out = wait(
        &m,
        job.id,
        WaitSpec {
            listening: true,
            ..WaitSpec::default()
        },
    )
    .await;
    assert_eq!(out.reason, WaitReason::Listening, "{out:?}");
    // The extra listener came first; the wait ended only on the job's own port.
    assert!(out.ports.iter().any(|l| l.port == port), "{out:?}");
    assert_eq!(out.ports.len(), 2, "{out:?}");
    let text = wait_for_output(&m, job.id, "listening on").await;
    assert!(text.contains(&format!(":{port}")), "{text}");
    end(&m, job.id).await;

    // An explicit PORT is the port.
    let mut spec = JobSpec::new("echo $PORT; sleep 30");
    spec.auto_port = true;
    spec.env.insert("PORT".into(), "4321".into());
    let job = m.execute(spec).unwrap();
    assert_eq!(job.port, Some(4321));
    end(&m, job.id).await;
    let mut bad = JobSpec::new("true");
    bad.auto_port = true;
    bad.env.insert("PORT".into(), "http".into());
    let err = m.execute(bad).unwrap_err().to_string();
    assert!(err.contains("PORT"), "{err}");
}

#[tokio::test]
async fn a_url_answers_when_the_job_serves_it() {
    let m = manager();
    // A redirect is an answer below 500, not followed.
    let port = free_port();
    let job = m
        .execute(JobSpec::new(serve(&format!(
            "--port {port} --mode redirect --delay 0.3"
        ))))
        .unwrap();
    let out = wait(
        &m,
        job.id,
        WaitSpec {
            url: Some(format!("http://localhost:{port}/health")),
            ..WaitSpec::default()
        },
    )
    .await;
    assert_eq!(out.reason, WaitReason::HttpReady, "{out:?}");
    assert_eq!(out.http_status, Some(302));
    end(&m, job.id).await;

    // 503 is not ready; the 200 after it is, and an expected 503 is at once.
    let port = free_port();
    let job = m
        .execute(JobSpec::new(serve(&format!("--port {port} --mode flaky"))))
        .unwrap();
    let url = format!("http://127.0.0.1:{port}/");
    let out = wait(
        &m,
        job.id,
        WaitSpec {
            url: Some(url.clone()),
            expect_status: Some(503),
            ..WaitSpec::default()
        },
    )
    .await;
    assert_eq!(
        (out.reason, out.http_status),
        (WaitReason::HttpReady, Some(503))
    );
    let out = wait(
        &m,
        job.id,
        WaitSpec {
            url: Some(url),
            ..WaitSpec::default()
        },
    )
    .await;
    assert_eq!(
        (out.reason, out.http_status),
        (WaitReason::HttpReady, Some(200)),
        "{out:?}"
    );
    end(&m, job.id).await;
}

#[tokio::test]
async fn a_hanging_or_refusing_url_does_not_hang_the_wait() {
    let m = manager();
    // The first request hangs: it times out, the next one is answered.
    let port = free_port();
    let job = m
        .execute(JobSpec::new(serve(&format!("--port {port} --mode hang"))))
        .unwrap();
    let t = Instant::now();
    let out = wait(
        &m,
        job.id,
        WaitSpec {
            url: Some(format!("http://localhost:{port}/")),
            ..WaitSpec::default()
        },
    )
    .await;
    assert_eq!(
        (out.reason, out.http_status),
        (WaitReason::HttpReady, Some(200)),
        "{out:?}"
    );
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    // A wait shorter than one request's timeout ends at its own deadline.
    let t = Instant::now();
    let port2 = free_port();
    let job2 = m
        .execute(JobSpec::new(serve(&format!("--port {port2} --mode hang"))))
        .unwrap();
    let out = wait(
        &m,
        job2.id,
        WaitSpec {
            url: Some(format!("http://localhost:{port2}/")),
            timeout: Some(Duration::from_millis(1500)),
            ..WaitSpec::default()
        },
    )
    .await;
    assert_eq!(out.reason, WaitReason::Timeout, "{out:?}");
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
    // Refused: nothing of the job listens on the URL's port, so it is never ready.
    let refused = free_port();
    let out = wait(
        &m,
        job.id,
        WaitSpec {
            url: Some(format!("http://localhost:{refused}/")),
            timeout: Some(Duration::from_millis(500)),
            ..WaitSpec::default()
        },
    )
    .await;
    assert_eq!(out.reason, WaitReason::Timeout, "{out:?}");
    end(&m, job.id).await;
    end(&m, job2.id).await;
}

#[tokio::test]
async fn bad_readiness_input_is_refused() {
    let m = manager();
    let job = m.execute(JobSpec::new("sleep 30")).unwrap();
    for (spec, needle) in [
        (
            WaitSpec {
                url: Some("https://localhost:1/".into()),
                ..WaitSpec::default()
            },
            "http://",
        ),
        (
            WaitSpec {
                url: Some("http://example.com/".into()),
                ..WaitSpec::default()
            },
            "this machine",
        ),
        (
            WaitSpec {
                expect_status: Some(200),
                ..WaitSpec::default()
            },
            "url",
        ),
    ] {
        let err = m.wait_for(job.id, &spec, |_| {}).await.unwrap_err();
        assert!(err.to_string().contains(needle), "{err}");
    }
    end(&m, job.id).await;
}
