//! The environment a job gets: no pager and no editor can trap it.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::util::Server;

/// A temp git repository with one staged file, or `None` (with a printed reason) without git.
fn repo_with_a_staged_file() -> Option<tempfile::TempDir> {
    let dir = tempfile::tempdir().expect("temp dir");
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .current_dir(dir.path())
            .output()
    };
    match git(&["init", "-q"]) {
        Ok(o) if o.status.success() => {}
        _ => {
            eprintln!("skipped: git is not available");
            return None;
        }
    }
    std::fs::write(dir.path().join("f"), "x").expect("write");
    for args in [
        &["config", "user.email", "t@example.com"][..],
        &["config", "user.name", "t"],
        &["add", "f"],
    ] {
        assert!(git(args).expect("git").status.success(), "git {args:?}");
    }
    Some(dir)
}

#[tokio::test]
async fn git_commit_without_a_message_fails_fast_with_a_clear_message() {
    let Some(repo) = repo_with_a_staged_file() else {
        return;
    };
    let s = Server::start(&[]).await;
    let t = Instant::now();
    let r = s
        .ok(
            "execute_command",
            json!({ "command": "git commit", "cwd": repo.path(), "wait": true }),
        )
        .await;
    s.track(r["pid"].as_u64().expect("pid") as u32);
    assert!(
        t.elapsed() < Duration::from_secs(10),
        "took {:?}",
        t.elapsed()
    );
    assert_eq!(r["status"], "failed", "{r}");
    let tail = r["outcome"]["tail"].as_str().expect("tail");
    assert!(tail.contains("no interactive editor"), "{tail}");
    assert!(tail.contains("git commit -m"), "{tail}");
}

#[tokio::test]
async fn the_jobs_env_and_the_editor_flag_override_the_defaults() {
    let s = Server::start(&["--editor", "my-editor --wait"]).await;
    let show = "echo \"[$TERM|$COLORTERM|$PAGER|$GIT_PAGER|$GIT_EDITOR|$EDITOR|$VISUAL]\"";
    let r = s
        .ok(
            "execute_command",
            json!({ "command": show, "wait": true, "env": { "VISUAL": "vi" } }),
        )
        .await;
    let tail = r["outcome"]["tail"].as_str().expect("tail");
    assert!(
        tail.contains("[xterm-256color|truecolor|cat|cat|my-editor --wait|my-editor --wait|vi]"),
        "{tail}"
    );
    let plain = Server::start(&[]).await;
    let r = plain
        .ok(
            "execute_command",
            json!({ "command": "echo \"[$EDITOR]\"", "wait": true }),
        )
        .await;
    let tail = r["outcome"]["tail"].as_str().expect("tail");
    assert!(
        tail.contains("[sh -c 'echo \"ptyjobs: no interactive editor"),
        "{tail}"
    );
}
