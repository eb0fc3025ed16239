//! The terminal answers what a terminal answers: real programs under real PTYs send queries and
//! get replies on their input, in order with the input written to them, never in the transcript.

use std::time::Duration;

use crate::common::*;
use ptyjobs_engine::{JobManager, JobSpec};

/// A raw-mode program that sends each query (all of them, then one split across two writes)
/// and prints, for each, the reply it read within 2 s as hex (or TIMEOUT).
const ASKER: &str = r#"
import os, select, sys, termios, time, tty
fd = sys.stdin.fileno()
old = termios.tcgetattr(fd)
tty.setraw(fd)
out = sys.stdout.buffer
def ask(query, kind, split=False):
    if split:
        out.write(query[:3]); out.flush(); time.sleep(0.05)
        out.write(query[3:]); out.flush()
    else:
        out.write(query); out.flush()
    got = b""
    end = time.time() + 2
    while time.time() < end:
        r, _, _ = select.select([fd], [], [], max(0, end - time.time()))
        if not r:
            break
        got += os.read(fd, 1024)
        if kind == "csi" and got[-1:].isalpha() and got.startswith(b"\x1b["):
            break
        if kind == "st" and (got.endswith(b"\x07") or got.endswith(b"\x1b\\")):
            break
    return got
out.write(b"\x1b[2J\x1b[5;10H"); out.flush()
results = []
for name, q, kind in [
    ("cpr", b"\x1b[6n", "csi"), ("decxcpr", b"\x1b[?6n", "csi"), ("dsr", b"\x1b[5n", "csi"),
    ("da1", b"\x1b[c", "csi"), ("da1_0", b"\x1b[0c", "csi"), ("da2", b"\x1b[>c", "csi"),
    ("size", b"\x1b[18t", "csi"), ("pixels", b"\x1b[14t", "csi"),
    ("fg", b"\x1b]10;?\x07", "st"), ("bg", b"\x1b]11;?\x1b\\", "st"),
    ("paste_off", b"\x1b[?2004$p", "csi"), ("paste_on", b"\x1b[?2004h\x1b[?2004$p", "csi"),
    ("version", b"\x1b[>0q", "st"),
]:
    results.append((name, ask(q, kind)))
results.append(("split", ask(b"\x1b[6n", "csi", split=True)))
# Nothing more may arrive: each query is answered once.
r, _, _ = select.select([fd], [], [], 0.3)
extra = os.read(fd, 1024) if r else b""
termios.tcsetattr(fd, termios.TCSADRAIN, old)
for name, got in results:
    print(name, got.hex() or "TIMEOUT")
print("extra", extra.hex() or "none")
"#;

fn hex(s: &str) -> String {
    s.bytes().map(|b| format!("{b:02x}")).collect()
}

fn asker_job(m: &JobManager, dir: &std::path::Path) -> ptyjobs_engine::JobInfo {
    let script = dir.join("asker.py");
    std::fs::write(&script, ASKER).expect("write the script");
    let spec = JobSpec {
        cols: Some(100),
        rows: Some(30),
        ..JobSpec::new(format!("python3 {}", script.display()))
    };
    m.execute(spec).expect("execute")
}

#[tokio::test]
async fn every_query_gets_its_answer_once_and_none_reaches_the_transcript() {
    if std::process::Command::new("python3")
        .arg("-V")
        .output()
        .is_err()
    {
        eprintln!("skipped: python3 is not installed");
        return;
    }
    let m = manager();
    let dir = tempfile::tempdir().unwrap();
    let job = asker_job(&m, dir.path());
    let info = m.wait(job.id, Some(Duration::from_secs(60))).await.unwrap();
    assert!(info.status.is_final(), "{info:?}");
    let out = m.output(job.id, None, None).unwrap().output;
    let version = env!("CARGO_PKG_VERSION");
    let v: Vec<u32> = version.split('.').map(|p| p.parse().unwrap()).collect();
    let number = v[0] * 10000 + v[1] * 100 + v[2];
    let expected = [
        ("cpr", "\x1b[5;10R".to_owned()),
        ("decxcpr", "\x1b[?5;10;1R".to_owned()),
        ("dsr", "\x1b[0n".to_owned()),
        ("da1", "\x1b[?62;22c".to_owned()),
        ("da1_0", "\x1b[?62;22c".to_owned()),
        ("da2", format!("\x1b[>1;{number};0c")),
        ("size", "\x1b[8;30;100t".to_owned()),
        ("pixels", "\x1b[4;480;800t".to_owned()),
        ("fg", "\x1b]10;rgb:e5e5/e5e5/e5e5\x07".to_owned()),
        ("bg", "\x1b]11;rgb:0000/0000/0000\x1b\\".to_owned()),
        ("paste_off", "\x1b[?2004;2$y".to_owned()),
        ("paste_on", "\x1b[?2004;1$y".to_owned()),
        ("version", format!("\x1bP>|ptyjobs {version}\x1b\\")),
        ("split", "\x1b[5;10R".to_owned()),
    ];
    for (name, reply) in expected {
        let line = format!("{name} {}", hex(&reply));
        assert!(
            out.lines().any(|l| l.trim() == line),
            "{name}: wanted {reply:?}; output was\n{out}"
        );
    }
    assert!(out.lines().any(|l| l == "extra none"), "{out}");
    // The replies went to the program's input, not into what it showed.
    assert!(!out.contains("62;22c") && !out.contains("rgb:"), "{out}");
}

/// Replies queue behind a caller's input instead of cutting into it: a program that asks for
/// the cursor position while a long input is being written gets the input whole, then the
/// reply.
#[tokio::test]
async fn a_reply_never_lands_inside_input_being_written() {
    let m = manager();
    // Raw mode, no echo; ask for the cursor position once the first input byte arrived,
    // then read everything that comes (the rest of the input, then the reply).
    let cmd = "stty raw -echo; printf 'ready\\r\\n'; head -c 1 >/dev/null; printf '\\033[6n'; \
               head -c 8005 | od -An -c | tr -d ' \\n' | tail -c 40; printf '\\r\\n'";
    let job = m.execute(JobSpec::new(cmd)).unwrap();
    wait_for_output(&m, job.id, "ready").await;
    let input = vec![b'x'; 8000];
    m.write_all(job.id, &input, Duration::from_secs(10))
        .await
        .unwrap();
    m.wait(job.id, Some(Duration::from_secs(20))).await.unwrap();
    let out = m.output(job.id, None, None).unwrap().output;
    // The 7999 x's left of the input, then the whole reply (ESC [ row ; col R), in that order.
    assert!(out.contains("xxxx033[2;1R"), "{out}");
}

#[tokio::test]
async fn multi_line_input_is_not_a_paste_unless_the_program_asked() {
    let m = manager();
    let cmd = "stty raw -echo; printf 'ready\\r\\n'; head -c 3 | od -An -tx1";
    let job = m.execute(JobSpec::new(cmd)).unwrap();
    wait_for_output(&m, job.id, "ready").await;
    m.interact(job.id, b"a\nb", Duration::from_secs(3))
        .await
        .unwrap();
    m.wait(job.id, Some(Duration::from_secs(5))).await.unwrap();
    let out = m.output(job.id, None, None).unwrap().output;
    assert!(out.contains("61 0a 62"), "{out}");
}

/// prompt_toolkit (IPython, ptpython, pgcli) asks for the cursor position and warns when no
/// answer comes.
#[tokio::test]
async fn prompt_toolkit_sees_a_terminal_that_answers() {
    let dir = tempfile::tempdir().unwrap();
    let venv = dir.path().join("venv");
    let made = std::process::Command::new("python3")
        .args(["-m", "venv"])
        .arg(&venv)
        .status()
        .is_ok_and(|s| s.success());
    let pip = venv.join("bin/pip");
    let installed = made
        && std::process::Command::new(&pip)
            .args([
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "prompt_toolkit",
            ])
            .status()
            .is_ok_and(|s| s.success());
    if !installed {
        eprintln!(
            "skipped: could not install prompt_toolkit into a venv (no python3 venv or no PyPI)"
        );
        return;
    }
    let m = manager();
    let python = venv.join("bin/python");
    let cmd = format!(
        "{} -c \"from prompt_toolkit import prompt; print('got', prompt('name> '))\"",
        python.display()
    );
    let job = m.execute(JobSpec::new(cmd)).unwrap();
    wait_for_output(&m, job.id, "name>").await;
    // prompt_toolkit gives the answer 2 s before it warns: watch the prompt for 4 s.
    let warned = wait_until(Duration::from_secs(4), || {
        m.output(job.id, None, None)
            .is_ok_and(|o| o.output.contains("CPR"))
    })
    .await;
    assert!(
        !warned,
        "prompt_toolkit warned: {}",
        m.output(job.id, None, None).unwrap().output
    );
    m.interact(job.id, b"hello\r", Duration::from_secs(5))
        .await
        .unwrap();
    let info = m.wait(job.id, Some(Duration::from_secs(20))).await.unwrap();
    assert!(info.status.is_final(), "{info:?}");
    let out = m.output(job.id, None, None).unwrap().output;
    assert!(out.contains("got hello"), "{out}");
    assert!(!out.contains("CPR"), "prompt_toolkit warned: {out}");
}
