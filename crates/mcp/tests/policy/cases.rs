//! The cases: each refused under the policy, each getting through without it.

use crate::{World, plain, with_policy};

const PY: &str = "/usr/bin/python3 -c";

/// One attempt: its name, the profile it runs under, and the command (which prints `PTJ_OK`
/// when the attempt got through).
struct Case {
    name: &'static str,
    profile: Option<&'static str>,
    command: String,
}

fn sh(name: &'static str, profile: Option<&'static str>, cmd: &str) -> Case {
    Case {
        name,
        profile,
        command: format!("{cmd} && echo PTJ_OK || echo PTJ_DENIED"),
    }
}

fn py(name: &'static str, profile: Option<&'static str>, code: &str) -> Case {
    sh(name, profile, &format!("{PY} 'import os, socket; {code}'"))
}

fn cases() -> Vec<Case> {
    vec![
        sh(
            "write outside the roots (shell redirection)",
            None,
            r#"echo x > "$OUT/new""#,
        ),
        sh(
            "read outside the read roots",
            Some("narrow"),
            r#"cat "$OUT/victim" > /dev/null"#,
        ),
        sh("delete outside the roots (rm)", None, r#"rm "$OUT/victim""#),
        sh(
            "rename outside the roots (mv)",
            None,
            r#"mv "$OUT/victim2" "$OUT/renamed""#,
        ),
        py(
            "write outside the roots (python)",
            None,
            r#"open(os.environ["OUT"] + "/py", "w").write("x")"#,
        ),
        sh(
            "write outside the roots (a written ELF)",
            None,
            r#"cp /bin/cp "$PROJ/mycp" && "$PROJ/mycp" /etc/hostname "$OUT/elf""#,
        ),
        py(
            "truncate outside the roots (truncate(2) by path)",
            None,
            r#"os.truncate(os.environ["OUT"] + "/victim3", 0)"#,
        ),
        py(
            "truncate outside the roots (open O_RDONLY|O_TRUNC)",
            None,
            r#"os.open(os.environ["OUT"] + "/victim3", os.O_RDONLY | os.O_TRUNC)"#,
        ),
        py(
            "truncate outside the roots (openat2 O_RDONLY|O_TRUNC)",
            None,
            "import ctypes; how = (ctypes.c_uint64 * 3)(os.O_RDONLY | os.O_TRUNC, 0, 0); \
             p = (os.environ[\"OUT\"] + \"/victim3\").encode(); \
             exit(0 if ctypes.CDLL(None).syscall(437, -100, p, how, 24) >= 0 else 1)",
        ),
        sh(
            "truncate outside the roots through a symlink in a root",
            None,
            r#"ln -sf "$OUT/victim3" "$PROJ/tlink" && /usr/bin/python3 -c 'import os; os.truncate(os.environ["PROJ"] + "/tlink", 0)'"#,
        ),
        py(
            "truncate the policy file",
            None,
            r#"os.truncate(os.environ["TARGET"], 0)"#,
        ),
        sh("write over the policy file", None, r#"echo x >> "$TARGET""#),
        sh(
            "rename the policy file",
            None,
            r#"mv "$TARGET" "$TARGET.moved""#,
        ),
        sh("unlink the policy file", None, r#"rm "$TARGET""#),
        sh(
            "hard-link the policy file into a root",
            None,
            r#"ln "$TARGET" "$PROJ/hard""#,
        ),
        sh(
            "symlink over the policy file",
            None,
            r#"ln -sf /etc/hostname "$TARGET""#,
        ),
        py(
            "TCP connect to an unlisted port",
            None,
            r#"socket.create_connection(("127.0.0.1", int(os.environ["PORT_C"])), 2)"#,
        ),
        py(
            "TCP bind to an unlisted port",
            Some("dev"),
            r#"socket.socket().bind(("127.0.0.1", int(os.environ["PORT_B"])))"#,
        ),
        py(
            "UDP (QUIC) to port 443",
            None,
            r#"socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("127.0.0.1", 443))"#,
        ),
        py(
            "an MPTCP socket",
            None,
            "socket.socket(socket.AF_INET, socket.SOCK_STREAM, 262)",
        ),
        py(
            "an abstract Unix socket outside the job",
            None,
            r#"socket.socket(socket.AF_UNIX).connect("\0" + os.environ["ABSTRACT"])"#,
        ),
        py(
            "a file-path Unix socket served outside the sandbox",
            None,
            r#"socket.socket(socket.AF_UNIX).connect(os.environ["SOCK"])"#,
        ),
        sh("busctl --user", None, "busctl --user list >/dev/null"),
        sh(
            "systemd-run --user",
            None,
            "systemd-run --user --quiet --wait true",
        ),
        sh("signal the server", None, r#"kill -CONT "$SERVER""#),
        sh("signal another job", None, r#"kill -CONT "$OTHER""#),
        py(
            "read /proc/<server>/mem",
            None,
            r#"open("/proc/" + os.environ["SERVER"] + "/mem", "rb")"#,
        ),
        py(
            "TIOCSTI into the job's own terminal",
            None,
            r#"import fcntl, termios; fcntl.ioctl(0, termios.TIOCSTI, b" ")"#,
        ),
        py(
            "io_uring",
            None,
            "import ctypes; l = ctypes.CDLL(None); b = ctypes.create_string_buffer(120); \
             exit(0 if l.syscall(425, 4, b) >= 0 else 1)",
        ),
        sh(
            "exec of a written file (exec set)",
            Some("build"),
            r#"cp /bin/echo "$PROJ/myecho" && "$PROJ/myecho" hi"#,
        ),
        py(
            "exec of a memfd (exec set)",
            Some("build"),
            r#"fd = os.memfd_create("x"); os.write(fd, open("/bin/true", "rb").read()); os.execv("/proc/self/fd/%d" % fd, ["x"])"#,
        ),
    ]
}

/// What happened to one case on one server.
fn outcome(output: &str) -> &'static str {
    if output.contains("PTJ_OK") {
        "through"
    } else if output.contains("PTJ_DENIED") {
        "refused"
    } else {
        "unclear"
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_case_is_refused_under_the_policy_and_gets_through_without_it() {
    let world = World::new();
    if !crate::enforceable(&world) {
        return;
    }
    let mut results = Vec::new();
    for under_policy in [true, false] {
        let server = if under_policy {
            with_policy(&world).await
        } else {
            plain().await
        };
        // The other job: a sandboxed job must not signal it.
        let (_, other) = server.exec("sleep 60").await;
        for case in cases() {
            world.refresh();
            let env = world.env(&server, under_policy, other);
            let profile = case.profile.filter(|_| under_policy);
            let out = crate::run(&server, &case.command, &env, profile).await;
            results.push((case.name, under_policy, outcome(&out), out));
        }
    }
    let mut failures = Vec::new();
    for case in cases() {
        let get = |p: bool| {
            results
                .iter()
                .find(|r| r.0 == case.name && r.1 == p)
                .expect("result")
        };
        let (with, without) = (get(true), get(false));
        let line = match (with.2, without.2) {
            ("refused", "through") => "refused under the policy, gets through without it",
            (_, "through") => {
                failures.push(format!(
                    "{}: not refused under the policy:\n{}",
                    case.name, with.3
                ));
                "GOT THROUGH THE POLICY"
            }
            _ => "skipped: fails on this machine even without a policy",
        };
        eprintln!("{:<55} {line}", case.name);
        if line.starts_with("skipped") {
            eprintln!("    without the policy: {}", without.3.trim());
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
