//! Truncation under a profile: Landlock leaves it to the job's seccomp supervisor (its
//! `TRUNCATE` right costs a path walk on every open), which truncates by path on the job's
//! behalf inside the write roots and refuses, and counts, the rest. The bypass cases are in
//! `cases.rs`; this is the other half: what must keep working, and what the agent is told.

use serde_json::{Value, json};

use crate::{World, util::Server, with_policy};

/// Truncates inside the project every way a program does (relative and absolute paths, a
/// symbolic link, an open for writing with `O_TRUNC`, `ftruncate`), then tries the file
/// outside; prints `PTJ_DONE` when all of it went as a person would expect.
const CODE: &str = r#"
import os
os.chdir(os.environ["PROJ"])
open("data", "w").write("hello world")
os.truncate("data", 5)
assert open("data").read() == "hello", "relative"
os.symlink("data", "link")
os.truncate("link", 3)
assert open("data").read() == "hel", "symlink"
os.truncate(os.environ["PROJ"] + "/data", 2)
assert open("data").read() == "he", "absolute"
with open("data", "r+") as f:
    f.truncate(1)
assert open("data").read() == "h", "ftruncate"
os.close(os.open("data", os.O_WRONLY | os.O_TRUNC))
assert os.path.getsize("data") == 0, "O_TRUNC for writing"
try:
    os.truncate("missing", 0)
    raise SystemExit("a missing file truncated")
except FileNotFoundError:
    pass
try:
    os.truncate(os.environ["OUT"] + "/victim3", 0)
    raise SystemExit("truncated outside the roots")
except PermissionError:
    pass
print("PTJ_" + "DONE")
"#;

async fn status(server: &Server, world: &World) -> Value {
    let env = json!({ "PROJ": world.proj, "OUT": world.out });
    let command = format!("/usr/bin/python3 -c '{CODE}'");
    let r = server
        .ok(
            "execute_command",
            json!({ "command": command, "env": env, "wait": true }),
        )
        .await;
    let id = r["job_id"].as_str().expect("job_id").to_owned();
    let mut s = server.wait_done(&id).await;
    s["output"] = Value::from(server.output(&id).await);
    s
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn truncation_works_inside_the_roots_and_outside_is_refused_counted_and_hinted() {
    let world = World::new();
    if !crate::enforceable(&world) {
        return;
    }
    world.refresh();
    let server = with_policy(&world).await;
    let s = status(&server, &world).await;
    assert!(
        s["output"]
            .as_str()
            .unwrap_or_default()
            .contains("PTJ_DONE"),
        "{s}"
    );
    assert_eq!(
        std::fs::read_to_string(world.out.join("victim3")).expect("victim3"),
        "x",
        "the file outside the roots is untouched"
    );
    let victim = world.out.join("victim3").display().to_string();
    let refused = s["policy"]["refused"].as_array().expect("refused").clone();
    let call = format!("truncate({victim:?})");
    let one = refused
        .iter()
        .find(|r| r["syscall"] == call.as_str())
        .unwrap_or_else(|| panic!("{call} not counted: {s}"));
    assert_eq!(one["count"], 1, "{s}");
    assert_eq!(one["command"], "python3", "{s}");
    assert_eq!(
        refused.len(),
        1,
        "nothing inside the roots was refused: {s}"
    );
    let hints = s["policy"]["hints"].to_string();
    assert!(
        hints.contains(&victim) && hints.contains("write in [profiles.default]"),
        "{hints}"
    );
}
