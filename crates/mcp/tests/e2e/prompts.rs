//! Interactive programs as an agent meets them, driven through the MCP tools only: Enter is a
//! carriage return, a question redrawn in place is in every answer that says what happened
//! since, and input awareness tells a menu or a REPL (`mode: raw`) from a password
//! (`echo: false`, line mode). Prompt libraries: a raw-mode stand-in (tests/fixtures), clack
//! (`npm create vite@latest`), @inquirer/prompts, prompts (terkelg) and prompt_toolkit.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};

use crate::util::{DEADLINE, Server, wait_until};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(name)
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn have(program: &str, check: &[&str]) -> bool {
    std::process::Command::new(program)
        .args(check)
        .output()
        .is_ok_and(|o| o.status.success())
}

async fn wait_input(s: &Server, id: &str) -> Value {
    let w = s
        .ok(
            "wait_for_job",
            json!({ "job_id": id, "input": true, "timeout_secs": 30 }),
        )
        .await;
    assert_eq!(w["reason"], "input_wanted", "{w}");
    w
}

/// Waits until the job waits for input with `needle` in its prompt: a program that polls its
/// terminal while it starts (node loading modules) can count as waiting before it has drawn
/// its question.
async fn wait_question(s: &Server, id: &str, needle: &str) -> Value {
    wait_until(
        &format!("{needle:?} asked"),
        Duration::from_secs(50),
        || async {
            let w = wait_input(s, id).await;
            w["prompt"]
                .as_str()
                .expect("text")
                .contains(needle)
                .then_some(w)
        },
    )
    .await
}

async fn interact(s: &Server, id: &str, args: Value) -> Value {
    let mut args = args;
    args["job_id"] = json!(id);
    s.ok("interact_with_job", args).await
}

#[tokio::test]
async fn input_ends_with_the_carriage_return_a_terminal_sends() {
    if !have("python3", &["--version"]) {
        eprintln!("skipped: no python3");
        return;
    }
    let s = Server::start(&[]).await;
    let echo = r#"python3 -c "import tty,os; tty.setraw(0); print('ready',end='\r\n',flush=True); print(repr(os.read(0,64)),end='\r\n'); print(repr(os.read(0,64)),end='\r\n')""#;
    let (id, _) = s.exec(echo).await;
    let w = wait_input(&s, &id).await;
    assert_eq!(
        (w["mode"].as_str(), w["echo"].as_bool()),
        (Some("raw"), Some(true)),
        "{w}"
    );
    let r = interact(&s, &id, json!({ "input": "abc" })).await;
    assert!(
        r["output"].as_str().expect("text").contains(r"b'abc\r'"),
        "{r}"
    );
    wait_input(&s, &id).await;
    // Each line as typed: Enter after each, whatever the line ending given.
    let r = interact(&s, &id, json!({ "input": "a\nb\r\nc" })).await;
    assert!(
        r["output"]
            .as_str()
            .expect("text")
            .contains(r"b'a\rb\rc\r'"),
        "{r}"
    );
    // `raw` sends the bytes as given.
    let (id, _) = s.exec(echo).await;
    wait_input(&s, &id).await;
    let r = interact(&s, &id, json!({ "input": "x\n", "raw": true })).await;
    assert!(
        r["output"].as_str().expect("text").contains(r"b'x\n'"),
        "{r}"
    );
}

/// Applies an answer to what an agent holds: its lines from `first_line` on are replaced.
fn apply(view: &mut Vec<String>, answer: &Value, text: &str) {
    let first = answer["first_line"].as_u64().expect("a number") as usize;
    assert!(first <= view.len(), "{answer}");
    view.truncate(first);
    if answer["line_count"].as_u64().expect("a number") > 0 {
        view.extend(
            answer[text]
                .as_str()
                .expect("text")
                .split('\n')
                .map(str::to_owned),
        );
    }
}

#[tokio::test]
async fn a_question_redrawn_in_place_is_in_every_answer_since() {
    if !have("python3", &["--version"]) {
        eprintln!("skipped: no python3");
        return;
    }
    let s = Server::start(&[]).await;
    let menu = fixture("raw_menu.py");
    let (id, _) = s.exec(&format!("python3 {}", menu.display())).await;
    let w = wait_input(&s, &id).await;
    assert_eq!(w["next_offset"], 4, "{w}");
    assert_eq!(w["mode"], "raw", "{w}");
    assert_eq!(w["echo"], true, "a menu is no password: {w}");
    assert_eq!(w["prompt"], "Pick one:\n> apple\npear", "{w}");
    let mut view = Vec::new();
    apply(&mut view, &w, "tail");

    // The menu is erased and the next question drawn where it was: the answer starts there.
    let r = interact(&s, &id, json!({ "keys": ["Enter"] })).await;
    assert_eq!(r["rewritten_from"], 1, "{r}");
    assert_eq!(
        (r["first_line"].as_u64(), r["next_offset"].as_u64()),
        (Some(1), Some(3)),
        "{r}"
    );
    assert_eq!(r["output"], "Picked: apple\nName? ", "{r}");
    apply(&mut view, &r, "output");

    // The program redraws by itself later: reads from the last next_offset catch it.
    let r = interact(&s, &id, json!({ "input": "Ann" })).await;
    apply(&mut view, &r, "output");
    // (what the agent holds, its next offset, whether a read said it moved back)
    let agent = std::sync::Mutex::new((
        view,
        r["next_offset"].as_u64().expect("a number"),
        r.get("rewritten_from").is_some(),
    ));
    let (s_, id_, agent_) = (&s, &id, &agent);
    wait_until("the redrawn question", DEADLINE, move || async move {
        let next = agent_.lock().expect("lock").1;
        let o = s_
            .ok("get_job_output", json!({ "job_id": id_, "offset": next }))
            .await;
        let mut a = agent_.lock().expect("lock");
        a.2 |= o.get("rewritten_from").is_some();
        apply(&mut a.0, &o, "output");
        a.1 = o["next_offset"].as_u64().expect("a number");
        a.0.iter().any(|l| l.starts_with("Confirm?")).then_some(())
    })
    .await;
    let (view, _, rewritten) = agent.into_inner().expect("lock");
    // (Unless a loaded machine kept the interaction waiting until the redraw was done.)
    let seen_early = r["output"].as_str().expect("text").contains("Confirm?");
    assert!(rewritten || seen_early, "a read said it moved back");
    assert_eq!(
        view,
        ["setup done", "Picked: apple", "Name ok: Ann", "Confirm? "],
        "what the agent holds is what the terminal shows"
    );
    let screen = s.ok("get_job_screen", json!({ "job_id": id })).await;
    assert_eq!(screen["rows"][2], "Name ok: Ann", "{screen}");
    interact(&s, &id, json!({ "input": "y" })).await;
    assert_eq!(s.wait_done(&id).await["status"], "completed");
}

#[tokio::test]
async fn a_repl_and_a_debugger_are_raw_mode_not_passwords() {
    let s = Server::start(&[]).await;
    let mut jobs = Vec::new();
    if have("node", &["--version"]) {
        jobs.push((s.exec("node").await.0, ">"));
    } else {
        eprintln!("skipped the node REPL: no node");
    }
    if have("python3", &["--version"]) {
        jobs.push((
            s.exec(r#"python3 -c "import pdb; pdb.set_trace()""#)
                .await
                .0,
            "(Pdb)",
        ));
    } else {
        eprintln!("skipped pdb: no python3");
    }
    for (id, prompt) in &jobs {
        let w = wait_question(&s, id, prompt).await;
        assert_eq!(
            (w["mode"].as_str(), w["echo"].as_bool()),
            (Some("raw"), Some(true)),
            "{w}"
        );
        let st = s.status(id).await;
        assert_eq!(
            (st["mode"].as_str(), st["echo"].as_bool()),
            (Some("raw"), Some(true)),
            "{st}"
        );
        let list = s.ok("list_jobs", json!({})).await;
        let row = list["jobs"]
            .as_array()
            .expect("jobs")
            .iter()
            .find(|j| j["job_id"] == *id)
            .cloned()
            .expect("the job is listed");
        assert_eq!(
            (row["mode"].as_str(), row["echo"].as_bool()),
            (Some("raw"), Some(true)),
            "{row}"
        );
    }
}

#[tokio::test]
async fn ssh_keygen_asks_a_password_that_reaches_neither_transcript_nor_disk() {
    if !have("ssh-keygen", &["-V"]) && !Path::new("/usr/bin/ssh-keygen").exists() {
        eprintln!("skipped: no ssh-keygen");
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let state = dir.path().join("state");
    let key = dir.path().join("key");
    let s = Server::start_in(&state, &[]).await;
    let (id, _) = s
        .exec(&format!(
            "ssh-keygen -q -t ed25519 -C test -f {}",
            key.display()
        ))
        .await;
    let secret = "c0rrect-h0rse-battery";
    for _ in 0..2 {
        let w = wait_question(&s, &id, "passphrase").await;
        assert_eq!(
            (w["mode"].as_str(), w["echo"].as_bool()),
            (Some("line"), Some(false)),
            "{w}"
        );
        assert!(
            w["prompt"].as_str().expect("text").contains("passphrase"),
            "{w}"
        );
        let r = interact(&s, &id, json!({ "input": secret })).await;
        assert!(!r.to_string().contains(secret), "{r}");
    }
    assert_eq!(s.wait_done(&id).await["status"], "completed");
    assert!(key.exists(), "the key was written");
    assert!(!s.output(&id).await.contains(secret));
    for entry in walk(&state) {
        let bytes = std::fs::read(&entry).unwrap_or_default();
        assert!(
            !String::from_utf8_lossy(&bytes).contains(secret),
            "the passphrase reached {}",
            entry.display()
        );
    }
}

/// Every file under `dir`.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// The question an answer shows: its last clack question line (`◆  ...`).
fn question(answer: &str) -> Option<&str> {
    answer
        .lines()
        .rev()
        .find(|l| l.starts_with('◆'))
        .map(str::trim)
}

#[tokio::test]
async fn npm_create_vite_is_driven_to_a_project_by_answers_alone() {
    if !have("npm", &["--version"]) {
        eprintln!("skipped: no npm");
        return;
    }
    // The registry, asked once: create-vite is fetched by the job (then cached by npm).
    let reachable = tokio::time::timeout(
        Duration::from_secs(30),
        tokio::process::Command::new("npm")
            .args(["view", "create-vite", "version"])
            .output(),
    )
    .await
    .is_ok_and(|o| o.is_ok_and(|o| o.status.success()));
    if !reachable {
        eprintln!("skipped: the npm registry is unreachable (npm view create-vite failed)");
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let s = Server::start(&[]).await;
    let (id, _) = s
        .exec_with(json!({
            "command": "npm create vite@latest",
            "cwd": dir.path(),
            // npx's own "Ok to proceed?" is answered by the configuration (a user's `.npmrc`
            // may say `yes=false`, which cancels instead of asking).
            "env": { "npm_config_yes": "true" },
            "rows": 40,
        }))
        .await;
    let w = wait_question(&s, &id, "Project name").await;
    assert_eq!(w["mode"], "raw", "{w}");
    let prompt = w["prompt"].as_str().expect("text");
    assert!(
        prompt.starts_with("◆  Project name:"),
        "the question, not `└`: {w}"
    );
    let mut asked = vec!["Project name".to_owned()];
    let mut current = "◆  Project name:".to_owned();
    for _ in 0..8 {
        let answer = if current.contains("Project name") {
            json!({ "input": "my-app" })
        } else if current.contains("Install") || current.contains("rolldown") {
            json!({ "keys": ["Right", "Enter"] }) // No
        } else {
            json!({ "keys": ["Enter"] }) // the first choice
        };
        let r = interact(&s, &id, answer).await;
        let out = r["output"].as_str().expect("text");
        if r["status"] != "running" {
            break;
        }
        // Each answer shows the question it answered, settled, and the next one.
        let settled = current.replacen('◆', "◇", 1);
        assert!(out.contains(&settled), "{settled:?} in {r}");
        assert!(r["rewritten_from"].is_u64(), "{r}");
        match question(out) {
            Some(next) => {
                asked.push(next.to_owned());
                current = next.to_owned();
            }
            None => break,
        }
    }
    assert!(
        asked.iter().any(|q| q.contains("framework"))
            && asked.iter().any(|q| q.contains("variant")),
        "{asked:?}"
    );
    let done = wait_until(
        "npm create vite to end",
        Duration::from_secs(60),
        || async {
            let st = s.status(&id).await;
            (st["status"] != "running").then_some(st)
        },
    )
    .await;
    assert_eq!(
        done["status"],
        "completed",
        "{done}\n{}",
        s.output(&id).await
    );
    let project = dir.path().join("my-app");
    assert!(project.join("package.json").exists(), "{asked:?}");
    assert!(project.join("index.html").exists());
}

/// Node prompt fixtures need the root's devDependencies (`npm ci`).
fn node_modules(package: &str) -> bool {
    let there = root().join("node_modules").join(package).exists();
    if !there {
        eprintln!("skipped: node_modules/{package} is missing (run npm ci)");
    }
    there && have("node", &["--version"])
}

#[tokio::test]
async fn an_inquirer_select_and_input() {
    if !node_modules("@inquirer/prompts") {
        return;
    }
    let s = Server::start(&[]).await;
    let (id, _) = s
        .exec(&format!(
            "node {}",
            fixture("prompt-inquirer.mjs").display()
        ))
        .await;
    let w = wait_question(&s, &id, "Pick a fruit").await;
    assert_eq!(
        (w["mode"].as_str(), w["echo"].as_bool()),
        (Some("raw"), Some(true)),
        "{w}"
    );
    let prompt = w["prompt"].as_str().expect("text");
    assert!(
        prompt.starts_with("? Pick a fruit\n❯ apple\npear\nplum"),
        "{w}"
    );
    let r = interact(&s, &id, json!({ "keys": ["Down", "Enter"] })).await;
    let out = r["output"].as_str().expect("text");
    assert!(
        out.contains("Pick a fruit pear") && out.contains("? Your name?"),
        "{r}"
    );
    assert!(!out.contains("apple"), "the menu is gone: {r}");
    let r = interact(&s, &id, json!({ "input": "Ann" })).await;
    assert!(
        r["output"]
            .as_str()
            .expect("text")
            .contains("picked pear for Ann"),
        "{r}"
    );
}

#[tokio::test]
async fn a_prompts_select() {
    if !node_modules("prompts") {
        return;
    }
    let s = Server::start(&[]).await;
    let (id, _) = s
        .exec(&format!("node {}", fixture("prompt-prompts.cjs").display()))
        .await;
    let w = wait_question(&s, &id, "Pick a color").await;
    assert_eq!(w["mode"], "raw", "{w}");
    let prompt = w["prompt"].as_str().expect("text");
    assert!(
        prompt.starts_with("? Pick a color") && prompt.ends_with("red\ngreen\nblue"),
        "{w}"
    );
    let r = interact(&s, &id, json!({ "keys": ["Down", "Enter"] })).await;
    let out = r["output"].as_str().expect("text");
    assert!(
        out.contains("Pick a color › green") && out.contains("picked green"),
        "{r}"
    );
}

#[tokio::test]
async fn a_prompt_toolkit_radiolist() {
    if !have("python3", &["-c", "import prompt_toolkit"]) {
        eprintln!("skipped: python3 with prompt_toolkit is missing (pip install prompt_toolkit)");
        return;
    }
    let s = Server::start(&[]).await;
    let (id, _) = s
        .exec(&format!(
            "python3 {}",
            fixture("prompt_toolkit_radiolist.py").display()
        ))
        .await;
    let w = wait_question(&s, &id, "Pick a fruit").await;
    assert_eq!(w["mode"], "raw", "{w}");
    let prompt = w["prompt"].as_str().expect("text");
    assert!(prompt.starts_with("Pick a fruit\n(*) apple"), "{w}");
    interact(&s, &id, json!({ "keys": ["Down", "Enter"] })).await;
    let w = wait_question(&s, &id, "(*) pear").await;
    let prompt = w["prompt"].as_str().expect("text");
    assert!(
        prompt.contains("(*) pear") && prompt.contains("( ) apple"),
        "{w}"
    );
    let r = interact(&s, &id, json!({ "keys": ["Tab", "Enter"] })).await;
    assert!(
        r["output"].as_str().expect("text").contains("picked pear"),
        "{r}"
    );
}
