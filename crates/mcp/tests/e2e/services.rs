//! Services a project describes: list_jobs `{"services": true}` and execute_command
//! `{"service": ...}`, through the real binary, with real HTTP servers.

use serde_json::{Value, json};

use crate::util::Server;

/// A TCP port nobody listens on right now.
fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}

/// A project: a Procfile `web` (HTTP on `web_port`, no port declared) and a launch.json
/// `api` (HTTP on `api_port`, declared).
fn project(web_port: u16, api_port: u16) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(
        dir.path().join("Procfile"),
        format!("web: exec python3 -m http.server {web_port} --bind 127.0.0.1\n"),
    )
    .expect("write Procfile");
    std::fs::create_dir(dir.path().join(".claude")).expect("mkdir");
    let launch = json!({"version": "0.2.0", "configurations": [
        {"name": "api", "runtimeExecutable": "python3",
         "runtimeArgs": ["-m", "http.server", api_port.to_string(), "--bind", "127.0.0.1"],
         "port": api_port}
    ]});
    std::fs::write(dir.path().join(".claude/launch.json"), launch.to_string()).expect("write");
    dir
}

fn cwd(dir: &tempfile::TempDir) -> String {
    dir.path().to_str().expect("utf-8").to_owned()
}

fn by_name<'a>(list: &'a Value, name: &str) -> &'a Value {
    list["services"]
        .as_array()
        .expect("services")
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no service {name} in {list}"))
}

#[tokio::test]
async fn services_are_listed_then_started_by_name_and_found_beside_their_jobs() {
    let s = Server::start(&[]).await;
    let (web_port, api_port) = (free_port(), free_port());
    let dir = project(web_port, api_port);
    let root = dir.path().canonicalize().expect("canonical");

    let list = s
        .ok("list_jobs", json!({"services": true, "cwd": cwd(&dir)}))
        .await;
    assert_eq!(list["jobs"], json!([]), "{list}");
    let api = by_name(&list, "api");
    assert_eq!(api["port"], api_port);
    assert!(api.get("job_id").is_none(), "{list}");
    let web = by_name(&list, "web");
    assert_eq!(
        web["source"],
        format!("{} (line 1)", root.join("Procfile").display())
    );
    assert_eq!(web["cwd"], root.to_str().expect("utf-8"));
    let jobs = s.ok("list_jobs", json!({})).await;
    assert_eq!(
        jobs["total_jobs"], 0,
        "listing services ran nothing: {jobs}"
    );

    // launch.json's api: started and ready when its port listens, in one call.
    let started = s
        .ok(
            "execute_command",
            json!({"service": "api", "cwd": cwd(&dir)}),
        )
        .await;
    s.track(started["pid"].as_u64().expect("pid") as u32);
    assert_eq!(started["status"], "running", "{started}");
    assert_eq!(started["service"]["name"], "api");
    assert_eq!(started["service"]["port"], api_port);
    assert_eq!(started["service"]["reused"], false);
    assert_eq!(started["outcome"]["reason"], "port_open", "{started}");
    std::net::TcpStream::connect(("127.0.0.1", api_port)).expect("api listens");

    // The Procfile's web: started; no port to wait for.
    let web = s
        .ok(
            "execute_command",
            json!({"service": "web", "cwd": cwd(&dir)}),
        )
        .await;
    s.track(web["pid"].as_u64().expect("pid") as u32);
    assert!(web.get("outcome").is_none(), "{web}");
    let status = s.status(web["job_id"].as_str().expect("id")).await;
    assert_eq!(status["name"], "web");
    assert_eq!(status["cwd"], root.to_str().expect("utf-8"));

    let list = s
        .ok("list_jobs", json!({"services": true, "cwd": cwd(&dir)}))
        .await;
    assert_eq!(by_name(&list, "api")["job_id"], started["job_id"], "{list}");
    assert_eq!(by_name(&list, "api")["status"], "running");
    assert_eq!(by_name(&list, "web")["job_id"], web["job_id"], "{list}");
}

#[tokio::test]
async fn service_arguments_and_files_that_are_wrong_get_clear_errors() {
    let s = Server::start(&[]).await;
    let dir = project(free_port(), free_port());
    let at = cwd(&dir);

    let e = s.tool_error("execute_command", json!({"cwd": at})).await;
    assert!(e.contains("give command"), "{e}");
    assert!(e.contains("or service"), "{e}");
    let e = s
        .tool_error(
            "execute_command",
            json!({"service": "web", "command": "true", "cwd": at}),
        )
        .await;
    assert!(e.contains("leave out command"), "{e}");
    let e = s
        .tool_error(
            "execute_command",
            json!({"service": "web", "wait": true, "cwd": at}),
        )
        .await;
    assert!(e.contains("leave out wait"), "{e}");
    let e = s
        .tool_error("execute_command", json!({"service": "wbe", "cwd": at}))
        .await;
    assert!(e.contains("no service named \"wbe\""), "{e}");
    assert!(e.contains("\"web\", \"api\""), "{e}");
    let e = s
        .tool_error(
            "list_jobs",
            json!({"services": true, "status": "running", "cwd": at}),
        )
        .await;
    assert!(e.contains("leave them out"), "{e}");

    std::fs::write(
        dir.path().join(".claude/launch.json"),
        r#"{"configurations": [{"name": "api", "runtimeExecutable": "x", "port": 99999}]}"#,
    )
    .expect("write");
    let e = s
        .tool_error("list_jobs", json!({"services": true, "cwd": at}))
        .await;
    assert!(
        e.contains(".claude/launch.json: configurations[0].port"),
        "{e}"
    );
    assert!(e.contains("found 99999"), "{e}");
    std::fs::write(dir.path().join(".claude/launch.json"), "{\n  oops\n}").expect("write");
    let e = s
        .tool_error("execute_command", json!({"service": "web", "cwd": at}))
        .await;
    assert!(
        e.contains("launch.json: line 2, column 3: not valid JSON"),
        "{e}"
    );
    let jobs = s.ok("list_jobs", json!({})).await;
    assert_eq!(jobs["total_jobs"], 0, "nothing ran: {jobs}");
}

#[tokio::test]
async fn a_long_service_list_is_cut_to_max_bytes_and_says_so() {
    let s = Server::start(&[]).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let procfile: String = (0..200).map(|i| format!("svc{i}: sleep {i}\n")).collect();
    std::fs::write(dir.path().join("Procfile"), procfile).expect("write");
    let list = s
        .ok(
            "list_jobs",
            json!({"services": true, "cwd": cwd(&dir), "max_bytes": 2048}),
        )
        .await;
    let shown = list["services"].as_array().expect("services").len();
    assert!(shown > 0 && shown < 200, "{shown} services shown");
    assert_eq!(list["omitted_services"], 200 - shown as u64, "{list}");
    assert!(list["services"].to_string().len() <= 2048, "{list}");
    let all = s
        .ok("list_jobs", json!({"services": true, "cwd": cwd(&dir)}))
        .await;
    assert_eq!(all["services"].as_array().expect("services").len(), 200);
    assert!(all.get("omitted_services").is_none(), "{all}");
}
