//! Ports that are the job's own, over MCP: auto_port, wait_for_job's listening / url /
//! port_taken, and ports in get_job_status and list_jobs.

use std::process::{Child, Command, Stdio};

use serde_json::json;

use crate::util::Server;

const SERVE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/serve.py");

/// A process that is not a job, listening on a free port until dropped.
struct Outsider(Child, u16);

impl Outsider {
    fn listen() -> Self {
        let mut child = Command::new("python3")
            .args([SERVE, "--host", "0.0.0.0"])
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3");
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(child.stdout.as_mut().expect("stdout")),
            &mut line,
        )
        .expect("read");
        let port = line
            .trim()
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .expect("listening on HOST:PORT");
        Self(child, port)
    }
}

impl Drop for Outsider {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn auto_port_listening_status_and_list_show_the_jobs_own_port() {
    let s = Server::start(&[]).await;
    let started = s
        .ok(
            "execute_command",
            json!({
                "command": format!("python3 {SERVE} --port env --delay 0.2"),
                "name": "web",
                "auto_port": true,
            }),
        )
        .await;
    let port = started["port"]
        .as_u64()
        .expect("auto_port answers the port");
    let id = started["job_id"].as_str().unwrap().to_owned();
    let w = s
        .ok("wait_for_job", json!({ "job_id": id, "listening": true }))
        .await;
    assert_eq!(w["reason"], "listening", "{w}");
    assert_eq!(w["ports"][0]["port"], port, "{w}");
    assert_eq!(w["ports"][0]["address"], "127.0.0.1");
    assert_eq!(w["urls"], json!([format!("http://localhost:{port}/")]));
    let st = s.status(&id).await;
    assert_eq!(st["ports"][0]["port"], port, "{st}");
    assert_eq!(st["port"], port);
    let list = s.ok("list_jobs", json!({})).await;
    let mine = list["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["job_id"] == id.as_str())
        .expect("listed");
    assert_eq!(mine["ports"][0]["port"], port, "{mine}");
    // An HTTP readiness check on the job's port.
    let w = s
        .ok(
            "wait_for_job",
            json!({ "job_id": id, "url": format!("http://localhost:{port}/"), "expect_status": 200 }),
        )
        .await;
    assert_eq!(w["reason"], "http_ready", "{w}");
    assert_eq!(w["http_status"], 200);
    s.ok("kill_job", json!({ "job_id": id })).await;
    // An ended job has no ports; the field is left out.
    let st = s.status(&id).await;
    assert!(st.get("ports").is_none(), "{st}");
}

#[tokio::test]
async fn a_port_someone_else_holds_is_port_taken_with_the_holder() {
    let s = Server::start(&[]).await;
    let outsider = Outsider::listen();
    let (id, _) = s.exec("sleep 30").await;
    let w = s
        .ok("wait_for_job", json!({ "job_id": id, "port": outsider.1 }))
        .await;
    assert_eq!(w["reason"], "port_taken", "{w}");
    assert_eq!(w["holder"]["pid"], outsider.0.id(), "{w}");
    assert!(
        w["holder"]["command"]
            .as_str()
            .unwrap_or("")
            .contains("serve.py"),
        "{w}"
    );
    assert!(w.get("ports").is_none());
    s.ok("kill_job", json!({ "job_id": id })).await;
}

#[tokio::test]
async fn bad_readiness_urls_are_refused() {
    let s = Server::start(&[]).await;
    let (id, _) = s.exec("sleep 30").await;
    let msg = s
        .tool_error(
            "wait_for_job",
            json!({ "job_id": id, "url": "https://example.com/" }),
        )
        .await;
    assert!(msg.contains("http://"), "{msg}");
    s.ok("kill_job", json!({ "job_id": id })).await;
}
