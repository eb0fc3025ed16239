//! People's terminals: nothing a record or a log holds can drive the terminal the CLI prints
//! to (control sequences, bidirectional overrides); and a state directory another user could
//! write to is refused with the reason.

use std::os::unix::fs::PermissionsExt;

use serde_json::{Value, json};

use crate::harness::{self, Fixture};

/// Characters that must never reach a terminal from a record field.
fn hostile(c: char) -> bool {
    (c.is_control() && c != '\n')
        || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}' | '\u{061C}')
}

fn assert_clean(what: &str, text: &str) {
    let bad: Vec<char> = text.chars().filter(|&c| hostile(c)).collect();
    assert!(bad.is_empty(), "{what} printed {bad:?}: {text:?}");
}

const NAME: &str = "build\u{1b}[31m\u{202e}txt.exe";
const SIGNAL: &str = "SIGTERM\u{1b}[2J\u{1b}]0;owned\u{7}";
const REASON: &str = "timeout\u{2066}\u{200f}\u{9b}31m";

#[test]
fn record_fields_are_printed_without_control_or_bidi_characters() {
    let mut f = Fixture::new();
    let command = "echo hi # \u{1b}]0;evil title\u{7}\u{1b}[2J\u{202e}gpj.exe";
    // A server refuses such a name (control characters): it is planted in the record below.
    let (id, _) = f.exec_with(json!({ "command": command, "name": "build" }));
    f.server.wait_done(&id);
    // Fields a record may hold once written by something else than a server.
    let dir = f.dir().join("jobs").join(&id);
    let meta = dir.join("meta.json");
    let mut record: Value =
        serde_json::from_str(&std::fs::read_to_string(&meta).expect("record")).expect("json");
    record["name"] = json!(NAME);
    record["signal"] = json!(SIGNAL);
    record["reason"] = json!(REASON);
    record["exit_code"] = Value::Null;
    record["cwd"] = json!("/tmp/\u{1b}[1m\u{202d}x");
    std::fs::write(&meta, serde_json::to_vec(&record).expect("json")).expect("write");
    // And a log line with an escape sequence in it.
    let mut log = std::fs::read_to_string(dir.join("output.log")).expect("log");
    log.push_str("after\u{1b}[2Jclear\n");
    std::fs::write(dir.join("output.log"), log).expect("write log");

    for args in [
        vec!["list"],
        vec!["status", id.as_str()],
        vec!["logs", id.as_str()],
        vec!["list", "--json"],
        vec!["status", "--json", id.as_str()],
    ] {
        let r = f.cli(&args);
        assert_eq!(r.code, 0, "{args:?}: {r:?}");
        assert_clean(&format!("{args:?} (stdout)"), &r.stdout);
        assert_clean(&format!("{args:?} (stderr)"), &r.stderr);
    }
    let status = f.cli(&["status", &id]).stdout;
    assert!(status.contains("build [31mtxt.exe"), "{status}");
    assert!(status.contains("SIGTERM [2J ]0;owned"), "{status}");
    let logs = f.cli(&["logs", &id]).stdout;
    assert!(logs.ends_with("after [2Jclear\n"), "{logs:?}");
    // JSON keeps the exact values for scripts, bidi characters escaped.
    let listed: Value = serde_json::from_str(&f.cli(&["list", "--json"]).stdout).expect("json");
    assert_eq!(listed[0]["name"], NAME);
    assert_eq!(listed[0]["command"], command);
    assert_eq!(listed[0]["signal"], SIGNAL);
}

#[test]
fn logs_on_a_terminal_drop_bidi_overrides_from_the_jobs_text() {
    let mut f = Fixture::new();
    let (id, _) = f.exec("printf 'left \\342\\200\\256right\\n'");
    f.server.wait_done(&id);
    let piped = f.cli(&["logs", &id]);
    assert_eq!(
        piped.stdout, "left \u{202e}right\n",
        "piped text stays as written"
    );
    let dir = f.dir().to_str().expect("utf-8 path").to_owned();
    let out = std::process::Command::new("script")
        .args([
            "-qec",
            &format!("{} --state-dir {dir} logs {id}", harness::BIN),
            "/dev/null",
        ])
        .output()
        .expect("run script (util-linux)");
    assert!(out.status.success(), "{out:?}");
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(shown.contains("left right"), "{shown:?}");
    assert!(!shown.contains('\u{202e}'), "{shown:?}");
}

#[test]
fn a_state_dir_others_can_write_to_is_refused_with_the_reason() {
    let mut f = Fixture::new();
    let (id, _) = f.exec("echo hi");
    f.server.wait_done(&id);
    let chmod = |mode| {
        std::fs::set_permissions(f.dir(), std::fs::Permissions::from_mode(mode)).expect("chmod")
    };
    chmod(0o777);
    for args in [
        vec!["list"],
        vec!["status", id.as_str()],
        vec!["logs", id.as_str()],
    ] {
        let r = f.cli(&args);
        assert_eq!(r.code, 1, "{args:?}: {r:?}");
        assert_eq!(r.stdout, "");
        assert!(r.stderr.starts_with("ptyjobs: refusing "), "{r:?}");
        assert!(r.stderr.contains("writable by group or others"), "{r:?}");
    }
    chmod(0o700);
    assert_eq!(f.cli(&["list"]).code, 0);
}
