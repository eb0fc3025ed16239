//! A job that waits for input says so to the CLI: its server writes the state into the job's
//! record (paced: a job that keeps flipping costs at most about one record write a second).

use std::os::unix::fs::MetadataExt;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::harness::{Fixture, wait_until};

/// `status` text as key → value.
fn fields(stdout: &str) -> std::collections::HashMap<String, String> {
    stdout
        .lines()
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.to_owned(), v.trim().to_owned()))
        .collect()
}

#[test]
fn status_and_list_show_a_job_waiting_for_input_and_its_prompt() {
    let mut f = Fixture::new();
    let (id, _) = f.exec(r"printf 'Your name? '; read name; echo hello $name; sleep 300");
    let status = wait_until("status to say the job waits for input", || {
        let r = f.cli(&["status", &id]);
        assert_eq!(r.code, 0, "{r:?}");
        fields(&r.stdout).get("input").cloned()
    });
    assert_eq!(status, r#"waiting for input: "Your name?""#);

    let r = f.cli(&["list"]);
    assert_eq!(r.code, 0, "{r:?}");
    let row = r.stdout.lines().nth(1).expect("a job row");
    assert!(row.contains("waiting for input"), "{r:?}");

    let r = f.cli(&["status", "--json", &id]);
    let v: Value = serde_json::from_str(&r.stdout).expect("status --json prints JSON");
    assert_eq!(v["status"], "running");
    assert_eq!(v["input"]["prompt"], "Your name?");
    assert_eq!(v["input"]["echo"], true);

    // Answered, the job no longer waits, and the record says so.
    f.server.call(
        "interact_with_job",
        json!({ "job_id": id, "input": "Ada\n" }),
    );
    wait_until("status to stop saying the job waits", || {
        let r = f.cli(&["status", "--json", &id]);
        let v: Value = serde_json::from_str(&r.stdout).expect("status --json prints JSON");
        v["input"].is_null().then_some(())
    });
    let r = f.cli(&["list"]);
    assert!(!r.stdout.contains("waiting for input"), "{r:?}");
    assert!(r.stdout.contains("running"), "{r:?}");
}

#[test]
fn a_password_prompt_says_echo_off() {
    let mut f = Fixture::new();
    let (id, _) = f.exec(r"stty -echo; printf 'Password: '; read pw; sleep 300");
    let status = wait_until("status to say the job waits for input", || {
        fields(&f.cli(&["status", &id]).stdout)
            .get("input")
            .cloned()
    });
    assert_eq!(status, r#"waiting for input (echo off): "Password:""#);
}

/// A job that flips between waiting for input and working several times a second: the record
/// on disk is rewritten at most about once a second (every write replaces `meta.json` by a new
/// file, so its inode number counts the writes).
#[test]
fn a_job_that_keeps_toggling_does_not_rewrite_its_record_on_every_flip() {
    let mut f = Fixture::new();
    let (id, _) = f.exec("bash -c 'while :; do read -t 0.3 x; echo tick; sleep 0.3; done'");
    let meta = f.dir().join("jobs").join(&id).join("meta.json");
    let inode = || std::fs::symlink_metadata(&meta).ok().map(|m| m.ino());
    // The first wait reaches the record: the loop runs.
    wait_until("the record to say the job waits", || {
        let v: Value = serde_json::from_str(&f.cli(&["status", "--json", &id]).stdout).ok()?;
        (!v["input"].is_null()).then_some(())
    });
    let watch = Duration::from_secs(4);
    let start = Instant::now();
    let mut last = inode();
    let mut writes = 0u32;
    while start.elapsed() < watch {
        let now = inode();
        if now != last && now.is_some() {
            writes += 1;
            last = now;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    // The job flips twice every ~0.6 s (about 13 times in 4 s); paced, one write a second at
    // most, plus one for a write just before the watch began.
    assert!(writes <= 5, "{writes} record writes in {watch:?}");
    assert!(
        writes >= 2,
        "the record follows the job: {writes} writes in {watch:?}"
    );
}

#[test]
fn a_raw_mode_reader_says_raw_and_is_no_password() {
    let mut f = Fixture::new();
    let (id, _) =
        f.exec(r"stty raw -echo; printf 'Pick one: '; dd bs=1 count=1 2>/dev/null; sleep 300");
    let status = wait_until("status to say the job waits for input", || {
        let r = f.cli(&["status", &id]);
        fields(&r.stdout).get("input").cloned()
    });
    assert_eq!(status, r#"waiting for input (raw): "Pick one:""#);
    let r = f.cli(&["status", "--json", &id]);
    let v: Value = serde_json::from_str(&r.stdout).expect("status --json prints JSON");
    assert_eq!(v["input"]["mode"], "raw");
    assert_eq!(v["input"]["echo"], true, "raw mode is not a password");
}
