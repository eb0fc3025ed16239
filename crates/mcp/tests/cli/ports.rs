//! `ptyjobs list` and `ptyjobs status` show the ports a running job listens on.

use serde_json::json;

use crate::harness::{Fixture, wait_until};

const SERVE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/serve.py");

#[test]
fn list_and_status_show_the_ports_of_a_running_server() {
    let mut f = Fixture::new();
    let (id, _) = f.exec_with(json!({
        "command": format!("python3 {SERVE} --port env"),
        "auto_port": true,
    }));
    let port = f.server.status(&id)["port"].as_u64().expect("auto_port");
    let table = wait_until("the PORTS column shows the port", || {
        let r = f.cli(&["list"]);
        r.stdout.contains(&format!(" {port} ")).then_some(r.stdout)
    });
    assert!(
        table.lines().next().unwrap_or("").contains("PORTS"),
        "{table}"
    );
    let status = f.cli(&["status", &id]);
    assert!(
        status.stdout.contains("ports:")
            && status.stdout.contains(&format!("127.0.0.1:{port} (pid ")),
        "{status:?}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&f.cli(&["status", "--json", &id]).stdout).expect("json");
    assert_eq!(json["ports"][0]["port"], port, "{json}");
    // A job that listens on nothing shows `-`.
    let (quiet, _) = f.exec("sleep 30");
    let table = f.cli(&["list"]).stdout;
    let row = table
        .lines()
        .find(|l| l.starts_with(&quiet[..8]))
        .expect("listed");
    assert!(row.contains("  -  "), "{row}");
}
