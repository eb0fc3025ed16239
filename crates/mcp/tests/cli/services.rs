//! `ptyjobs services`: a project's Procfile and .claude/launch.json services beside the jobs
//! that run them, read from the state directory without a server of its own.

use serde_json::{Value, json};

use crate::harness::{Fixture, cli};

/// A project with a Procfile (`web`, `worker`) and a launch.json (`api`, port 3999).
fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp project");
    std::fs::write(
        dir.path().join("Procfile"),
        "web: sleep 300\nworker: sleep 301\n",
    )
    .expect("write Procfile");
    std::fs::create_dir(dir.path().join(".claude")).expect("mkdir");
    std::fs::write(
        dir.path().join(".claude/launch.json"),
        r#"{"configurations": [{"name": "api", "runtimeExecutable": "npm", "runtimeArgs": ["run", "dev"], "port": 3999}]}"#,
    )
    .expect("write launch.json");
    dir
}

#[test]
fn services_lists_each_service_beside_its_running_job() {
    let mut f = Fixture::new();
    let p = project();
    let at = p.path().to_str().expect("utf-8");
    // `web` runs (started as a service); a job named `worker` in another directory is not the
    // project's worker.
    let (web, _) = f.exec_with(json!({"service": "web", "cwd": at}));
    let elsewhere = tempfile::tempdir().expect("another dir");
    f.exec_with(json!({"command": "sleep 302", "name": "worker",
        "cwd": elsewhere.path().to_str().expect("utf-8")}));
    f.exec_with(json!({"command": "true", "name": "probe"}));

    let r = f.cli(&["services", "--dir", at]);
    assert_eq!(r.code, 0, "{r:?}");
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert_eq!(lines.len(), 4, "{r:?}");
    for header in ["NAME", "SOURCE", "PORT", "JOB", "COMMAND"] {
        assert!(lines[0].contains(header), "{r:?}");
    }
    let cells = |l: &str| l.split_whitespace().map(str::to_owned).collect::<Vec<_>>();
    assert_eq!(
        cells(lines[1]),
        [
            "web",
            "Procfile",
            "line",
            "1",
            "-",
            &web[..8],
            "running",
            "sleep",
            "300"
        ],
        "{r:?}"
    );
    assert_eq!(
        cells(lines[2]),
        ["worker", "Procfile", "line", "2", "-", "-", "sleep", "301"],
        "{r:?}"
    );
    assert_eq!(
        cells(lines[3]),
        [
            "api",
            ".claude/launch.json",
            "configurations[0]",
            "3999",
            "-",
            "npm",
            "run",
            "dev"
        ],
        "{r:?}"
    );

    let r = f.cli(&["services", "--dir", at, "--json"]);
    assert_eq!(r.code, 0, "{r:?}");
    let list: Vec<Value> = serde_json::from_str(&r.stdout).expect("JSON");
    assert_eq!(list[0]["job"]["id"], web.as_str());
    assert_eq!(list[0]["job"]["status"], "running");
    assert_eq!(list[1]["job"], Value::Null);
    assert_eq!(list[2]["port"], 3999);
    assert_eq!(list[2]["command"], "npm run dev");
}

#[test]
fn services_works_before_any_server_and_names_a_malformed_file() {
    let p = project();
    let at = p.path().to_str().expect("utf-8");
    let fresh = tempfile::tempdir().expect("an unused state dir");
    let r = cli(fresh.path(), &["services", "--dir", at]);
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(r.stdout.lines().count(), 4, "{r:?}");

    let empty = tempfile::tempdir().expect("a project without services");
    let r = cli(
        fresh.path(),
        &["services", "--dir", empty.path().to_str().expect("utf-8")],
    );
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.starts_with("no services in "), "{r:?}");

    std::fs::write(p.path().join("Procfile"), "web: a\n\nweb: b\n").expect("write");
    let r = cli(fresh.path(), &["services", "--dir", at]);
    assert_eq!(r.code, 1, "{r:?}");
    assert_eq!(r.stdout, "");
    assert!(
        r.stderr
            .contains("Procfile: line 3: service \"web\" is defined twice (first at line 1)"),
        "{r:?}"
    );
}
