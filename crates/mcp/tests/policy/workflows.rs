//! Everyday work under a profile (issue 24's "Done when"): a real dev server that may bind 5173
//! and nothing else, a `git commit` inside a write root (and not outside), and `npm install`
//! under a profile whose network is "on" — offline, from a local tarball, with HOME and the
//! npm cache in a write root — which still cannot write outside the roots. Each refusal is
//! checked to get through on a server without the policy.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::json;

use crate::util::{DEADLINE, Server, wait_until};
use crate::{World, plain, run};

/// This file's policy: `dev` may bind 5173 only, `net` has the network "on"; both write the
/// project only. (Beside the suite's policy file, outside every write root.)
fn policy(world: &World) -> PathBuf {
    let proj = world.proj.display().to_string();
    let text = format!(
        "agent_profiles = [\"dev\", \"net\"]\n\
         [profiles.default]\n\
         write = [{proj:?}]\n\
         [profiles.dev]\n\
         write = [{proj:?}]\n\
         network = {{ bind = [5173] }}\n\
         [profiles.net]\n\
         write = [{proj:?}]\n\
         network = \"on\"\n"
    );
    let file = world.policy.with_file_name("workflows.toml");
    std::fs::write(&file, text).expect("policy");
    file
}

async fn server(world: &World) -> Server {
    let file = policy(world).display().to_string();
    Server::start(&["--no-persist", "--policy", &file]).await
}

fn env(pairs: &[(&str, &Path)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.display().to_string()))
        .collect()
}

/// The HTTP status line `127.0.0.1:port` answers `GET /` with, once it answers.
async fn http_status(port: u16) -> String {
    wait_until(
        &format!("an HTTP answer on port {port}"),
        DEADLINE,
        || async move {
            let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
            s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
            s.write_all(b"GET / HTTP/1.0\r\n\r\n").ok()?;
            let mut answer = String::new();
            s.read_to_string(&mut answer).ok()?;
            answer.lines().next().map(str::to_owned)
        },
    )
    .await
}

/// A free port other than 5173.
fn other_port() -> u16 {
    loop {
        let p = crate::free_port();
        if p != 5173 {
            return p;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dev_server_binds_its_port_and_no_other() {
    let world = World::new();
    if !crate::enforceable(&world) {
        return;
    }
    if std::net::TcpListener::bind(("127.0.0.1", 5173)).is_err() {
        eprintln!("skipped: port 5173 is in use on this machine");
        return;
    }
    let server = server(&world).await;
    let serve =
        |port: u16| format!("cd \"$PROJ\" && exec python3 -m http.server {port} --bind 127.0.0.1");
    let vars = env(&[("PROJ", &world.proj)]);
    // The dev server on its port: it serves.
    let (id, _) = server
        .exec_with(json!({ "command": serve(5173), "env": vars, "profile": "dev" }))
        .await;
    let status = http_status(5173).await;
    assert!(status.contains(" 200 "), "GET / on 5173: {status}");
    server.ok("kill_job", json!({ "job_id": id })).await;
    // The same server on another port: refused, and it runs nowhere.
    let port = other_port();
    let out = run(&server, &serve(port), &vars, Some("dev")).await;
    assert!(
        out.contains("PermissionError") || out.contains("not permitted"),
        "binding {port} under dev: {out}"
    );
    assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_err());
    // Without the policy the other port serves: the refusal above is the profile's.
    let plain = plain().await;
    let (id, _) = plain
        .exec_with(json!({ "command": serve(port), "env": vars }))
        .await;
    let status = http_status(port).await;
    assert!(
        status.contains(" 200 "),
        "GET / on {port} without a policy: {status}"
    );
    plain.ok("kill_job", json!({ "job_id": id })).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn git_commits_inside_a_write_root_and_not_outside() {
    let world = World::new();
    if !crate::enforceable(&world) {
        return;
    }
    let server = server(&world).await;
    let commit = "cd \"$REPO\" && git init -q . && echo hello > file.txt && git add file.txt && \
                  git -c user.email=a@b -c user.name=n commit -q -m first && \
                  git log --format=%s && echo PTJ_OK";
    let inside = world.proj.join("repo");
    std::fs::create_dir(&inside).expect("mkdir");
    let out = run(&server, commit, &env(&[("REPO", &inside)]), None).await;
    assert!(out.contains("first") && out.contains("PTJ_OK"), "{out}");
    // Outside the roots the same commit is refused; without the policy it works there.
    let outside = world.out.join("repo");
    std::fs::create_dir(&outside).expect("mkdir");
    let out = run(&server, commit, &env(&[("REPO", &outside)]), None).await;
    assert!(!out.contains("PTJ_OK"), "a commit outside the roots: {out}");
    assert!(!outside.join(".git").exists(), "{out}");
    let out = run(&plain().await, commit, &env(&[("REPO", &outside)]), None).await;
    assert!(
        out.contains("PTJ_OK"),
        "the same commit without a policy: {out}"
    );
}

/// A local package packed to a tarball in `dir` (offline): its path.
fn local_tarball(dir: &Path, home: &Path) -> Option<PathBuf> {
    let pkg = dir.join("local-pkg");
    std::fs::create_dir_all(&pkg).expect("mkdir");
    std::fs::write(
        pkg.join("package.json"),
        r#"{"name":"local-pkg","version":"1.0.0","main":"index.js"}"#,
    )
    .expect("package.json");
    std::fs::write(pkg.join("index.js"), "module.exports = 42;\n").expect("index.js");
    let out = std::process::Command::new("npm")
        .args(["pack", "--offline", "--pack-destination"])
        .arg(dir)
        .arg(&pkg)
        .envs(npm_env(home))
        .output()
        .ok()?;
    let tgz = dir.join("local-pkg-1.0.0.tgz");
    if !out.status.success() || !tgz.exists() {
        eprintln!(
            "skipped: npm pack failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        return None;
    }
    Some(tgz)
}

/// npm's home and cache under `home`, no update check (no network at all).
fn npm_env(home: &Path) -> Vec<(&'static str, PathBuf)> {
    vec![
        ("HOME", home.to_path_buf()),
        ("npm_config_cache", home.join(".npm")),
        ("npm_config_update_notifier", "false".into()),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn npm_installs_under_a_networked_profile_and_not_outside_the_roots() {
    let world = World::new();
    if !crate::enforceable(&world) {
        return;
    }
    if std::process::Command::new("npm")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("skipped: no npm on this machine");
        return;
    }
    // HOME and the npm cache in the write root; the tarball outside it (read only).
    let home = world.proj.join("home");
    std::fs::create_dir(&home).expect("mkdir");
    let Some(tgz) = local_tarball(&world.out, &home) else {
        return;
    };
    let install = "cd \"$APP\" && npm install --offline --no-audit --no-fund \"$TGZ\" && \
                   node -e 'console.log(\"required\", require(\"local-pkg\"))' && echo PTJ_OK";
    let app = |dir: &Path| {
        let app = dir.join("app");
        std::fs::create_dir(&app).expect("mkdir");
        std::fs::write(
            app.join("package.json"),
            r#"{"name":"app","version":"1.0.0","private":true}"#,
        )
        .expect("package.json");
        app
    };
    let vars = |app: &Path| {
        let mut v: BTreeMap<String, String> = npm_env(&home)
            .into_iter()
            .map(|(k, p)| (k.to_owned(), p.display().to_string()))
            .collect();
        v.extend(env(&[("APP", app), ("TGZ", &tgz)]));
        v
    };
    let server = server(&world).await;
    let inside = app(&world.proj);
    let out = run(&server, install, &vars(&inside), Some("net")).await;
    assert!(
        out.contains("required 42") && out.contains("PTJ_OK"),
        "{out}"
    );
    assert!(inside.join("node_modules/local-pkg/index.js").exists());
    // The network "on" widens no write: the same install into a project outside the roots
    // is refused, and leaves nothing there.
    let outside = app(&world.out);
    let out = run(&server, install, &vars(&outside), Some("net")).await;
    assert!(
        !out.contains("PTJ_OK"),
        "npm install outside the roots: {out}"
    );
    assert!(!outside.join("node_modules").exists(), "{out}");
    // Without the policy the same install there works.
    let out = run(&plain().await, install, &vars(&outside), None).await;
    assert!(
        out.contains("PTJ_OK"),
        "the same install without a policy: {out}"
    );
}
