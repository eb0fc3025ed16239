//! Listed file-path Unix sockets, connected on the job's behalf by the server's seccomp
//! supervisor (Landlock below ABI 9 cannot tell paths), and the refused calls counted per job
//! with a hint for the person. Each refusal is checked to get through without the policy.

use std::io::{Read, Write};
use std::os::unix::net::{UnixDatagram, UnixListener};
use std::path::Path;

use serde_json::{Value, json};

use crate::util::Server;
use crate::{World, plain, with_policy};

/// Serves `path` outside any sandbox: each connection gets back what it sends, once, after
/// `tag` (which tells the servers apart).
pub fn echo_server(path: &Path, tag: &'static [u8]) {
    let listener = UnixListener::bind(path).expect("bind");
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            std::thread::spawn(move || {
                let mut buf = [0u8; 64];
                if let Ok(n) = conn.read(&mut buf) {
                    let _ = conn.write_all(&[tag, &buf[..n]].concat());
                }
            });
        }
    });
}

/// A job's command (Python), printing PTJ_OK when `code` ran through.
fn py(code: &str) -> String {
    format!(
        "/usr/bin/python3 -c 'import os, socket, fcntl\n{code}' && echo PTJ_OK || echo PTJ_DENIED"
    )
}

/// Talks to the socket at `var` (an environment variable) and checks the answer.
const TALK: &str = "def talk(p):\n    s = socket.socket(socket.AF_UNIX)\n    s.connect(p)\n    \
                    s.sendall(b\"ping\")\n    assert s.recv(16).endswith(b\"ping\")\n    return s\n";

async fn job(server: &Server, command: &str, world: &World, profile: Option<&str>) -> Value {
    let env = json!({ "LISTED": world.out.join("listed.sock"),
                      "UNLISTED": world.out.join("unlisted.sock"),
                      "DGRAM": world.out.join("dgram.sock"),
                      "PROJ": world.proj,
                      "ABSTRACT": world.abstract_name });
    let mut args = json!({ "command": command, "env": env, "wait": true });
    if let Some(p) = profile {
        args["profile"] = Value::from(p);
    }
    let r = server.ok("execute_command", args).await;
    let id = r["job_id"].as_str().expect("job_id").to_owned();
    let mut status = server.wait_done(&id).await;
    status["output"] = Value::from(server.output(&id).await);
    status
}

fn got_through(status: &Value) -> bool {
    let out = status["output"].as_str().unwrap_or_default();
    assert!(
        out.contains("PTJ_OK") || out.contains("PTJ_DENIED"),
        "unclear: {status}"
    );
    out.contains("PTJ_OK")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listed_socket_is_connected_for_the_job_and_nothing_else_is() {
    let world = World::new();
    if !crate::enforceable(&world) {
        return;
    }
    echo_server(&world.out.join("unlisted.sock"), b"U");
    let _dgram = UnixDatagram::bind(world.out.join("dgram.sock")).expect("dgram");
    let (policy, plain) = (with_policy(&world).await, plain().await);
    let listed = world.out.join("listed.sock").display().to_string();

    // Talked to, with the socket's own flags kept (non-blocking, close-on-exec), through a
    // relative path and a symbolic link too.
    let talks = py(&format!(
        "{TALK}s = talk(os.environ[\"LISTED\"])\n\
         assert not os.get_inheritable(s.fileno())\n\
         import errno\ntry:\n    s.connect(os.environ[\"LISTED\"]); assert False\n\
         except OSError as e:\n    assert e.errno == errno.EISCONN, e\n\
         n = socket.socket(socket.AF_UNIX)\nn.setblocking(False)\nn.connect(os.environ[\"LISTED\"])\n\
         assert fcntl.fcntl(n.fileno(), fcntl.F_GETFL) & os.O_NONBLOCK\n\
         os.chdir(os.path.dirname(os.environ[\"LISTED\"]))\ntalk(\"listed.sock\")\n\
         os.symlink(os.environ[\"LISTED\"], os.environ[\"PROJ\"] + \"/link\")\n\
         talk(os.environ[\"PROJ\"] + \"/link\")"
    ));
    let s = job(&policy, &talks, &world, Some("sockets")).await;
    assert!(got_through(&s), "the listed socket under the policy: {s}");
    assert!(
        s["policy"]["enforced"]
            .to_string()
            .contains("connect-on-behalf"),
        "{s}"
    );
    let _ = std::fs::remove_file(world.proj.join("link"));

    // Each refused under the policy, and getting through without it.
    let swapped = py(&format!(
        "{TALK}l = os.environ[\"PROJ\"] + \"/link\"\nos.symlink(os.environ[\"LISTED\"], l)\n\
         talk(l)\nos.remove(l)\nos.symlink(os.environ[\"UNLISTED\"], l)\ntalk(l)"
    ));
    // The address flipped between the listed and the unlisted path by another thread while
    // connects run: the supervisor reads it once and connects its own copy, so no connection
    // ever reaches the unlisted server (without the policy, some do).
    let flipped = py("import ctypes, struct, threading\n\
         libc = ctypes.CDLL(None, use_errno=True)\n\
         buf = ctypes.create_string_buffer(110)\nstruct.pack_into(\"H\", buf, 0, socket.AF_UNIX)\n\
         paths = [os.environ[k].encode().ljust(108, bytes(1)) for k in (\"LISTED\", \"UNLISTED\")]\n\
         def put(p): ctypes.memmove(ctypes.addressof(buf) + 2, p, 108)\n\
         put(paths[0])\nstop = []\n\
         def flip():\n    while not stop:\n        put(paths[1]); put(paths[0])\n\
         threading.Thread(target=flip, daemon=True).start()\nunlisted = 0\n\
         for _ in range(300):\n    s = socket.socket(socket.AF_UNIX)\n\
         \x20   if libc.connect(s.fileno(), buf, 110) == 0:\n\
         \x20       s.sendall(b\"?\"); unlisted += s.recv(8).startswith(b\"U\")\n    s.close()\n\
         stop.append(1)\nprint(\"reached the unlisted server\", unlisted, \"times\")\n\
         assert unlisted");
    let cases = [
        (
            "an address flipped to an unlisted path while connects run",
            flipped,
            "connect(AF_UNIX",
        ),
        (
            "an unlisted socket next to the listed one",
            py(&format!("{TALK}talk(os.environ[\"UNLISTED\"])")),
            "connect(AF_UNIX",
        ),
        (
            "a symbolic link to the listed socket, swapped to an unlisted one",
            swapped,
            "connect(AF_UNIX",
        ),
        (
            "a datagram sent to an unlisted path socket",
            py(
                "socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendto(b\"x\", os.environ[\"DGRAM\"])",
            ),
            "socket(AF_UNIX, SOCK_DGRAM)",
        ),
        (
            "a datagram sent from a socketpair to an unlisted path socket",
            py(
                "a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)\n\
                a.sendto(b\"x\", os.environ[\"DGRAM\"])",
            ),
            "socketpair(AF_UNIX, SOCK_DGRAM)",
        ),
        (
            "an abstract socket (the kernel would read its address again)",
            py("socket.socket(socket.AF_UNIX).connect(\"\\0\" + os.environ[\"ABSTRACT\"])"),
            "connect(AF_UNIX, \"@",
        ),
    ];
    for (name, command, refused) in cases {
        let _ = std::fs::remove_file(world.proj.join("link"));
        let without = job(&plain, &command, &world, None).await;
        let _ = std::fs::remove_file(world.proj.join("link"));
        let with = job(&policy, &command, &world, Some("sockets")).await;
        let plain_ok = got_through(&without);
        eprintln!("{name:<70} refused, gets through without the policy");
        assert!(plain_ok, "{name}: fails even without the policy: {without}");
        assert!(
            !got_through(&with),
            "{name}: got through the policy: {with}"
        );
        if name.starts_with("an address flipped") {
            let out = with["output"].as_str().unwrap_or_default();
            assert!(
                out.contains("reached the unlisted server 0 times"),
                "{with}"
            );
        }
        let policy = &with["policy"];
        assert!(
            policy["refused"]
                .to_string()
                .contains(&refused.replace('"', "\\\"")),
            "{name}: not counted: {with}"
        );
        assert!(
            policy["hints"][0]
                .as_str()
                .is_some_and(|h| h.contains("profile \"sockets\"")),
            "{with}"
        );
    }
    // The unlisted socket's hint says what to add.
    let s = job(
        &policy,
        &py(&format!("{TALK}talk(os.environ[\"UNLISTED\"])")),
        &world,
        Some("sockets"),
    )
    .await;
    let hints = s["policy"]["hints"].to_string();
    assert!(
        hints.contains("unix_sockets") && hints.contains("unlisted.sock"),
        "{s}"
    );
    let _ = listed;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_calls_are_counted_per_job_with_the_command_and_a_hint() {
    let world = World::new();
    if !crate::enforceable(&world) {
        return;
    }
    let (policy, plain) = (with_policy(&world).await, plain().await);
    let code = "import termios, ctypes\nok = 0\n\
                for _ in range(2):\n    try:\n        socket.socket(socket.AF_INET, socket.SOCK_DGRAM); ok += 1\n    except OSError: pass\n\
                try:\n    fcntl.ioctl(0, termios.TIOCSTI, b\" \"); ok += 1\nexcept OSError: pass\n\
                b = ctypes.create_string_buffer(120)\n\
                ok += ctypes.CDLL(None).syscall(425, 4, b) >= 0\n\
                assert ok == 4, ok";
    let without = job(&plain, &py(code), &world, None).await;
    assert!(got_through(&without), "{without}");
    let s = job(&policy, &py(code), &world, None).await;
    assert!(!got_through(&s), "{s}");
    eprintln!("policy of the job: {:#}", s["policy"]);
    let refused = s["policy"]["refused"].as_array().expect("refused").clone();
    let find = |call: &str| {
        refused
            .iter()
            .find(|r| r["syscall"] == call)
            .unwrap_or_else(|| panic!("{call} not counted: {s}"))
            .clone()
    };
    let udp = find("socket(AF_INET, SOCK_DGRAM)");
    assert_eq!(udp["command"], "python3", "{s}");
    assert_eq!(udp["count"], 2, "{s}");
    assert_eq!(find("ioctl(TIOCSTI)")["count"], 1, "{s}");
    assert_eq!(find("io_uring_setup")["count"], 1, "{s}");
    let hints: Vec<String> = s["policy"]["hints"]
        .as_array()
        .expect("hints")
        .iter()
        .map(|h| h.as_str().unwrap_or_default().to_owned())
        .collect();
    let file = world.policy.display().to_string();
    assert!(
        hints.iter().any(
            |h| h.starts_with("profile \"default\" refused UDP sockets (python3)")
                && h.contains("network = \"on\" in [profiles.default]")
                && h.contains(&file)
        ),
        "{hints:?}"
    );
    assert!(
        hints
            .iter()
            .any(|h| h.contains("io_uring") && h.contains("cannot be allowed")),
        "{hints:?}"
    );
    assert!(
        hints
            .iter()
            .any(|h| h.contains("TIOCSTI") && h.contains("cannot be allowed")),
        "{hints:?}"
    );
    // Another job under the same profile starts with none.
    let clean = job(&policy, "true", &world, None).await;
    assert!(clean["policy"].get("refused").is_none(), "{clean}");
}

/// `ptyjobs status` reads the job's record: its profile, refused calls and hints are there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_status_shows_the_refused_calls_and_the_hint() {
    let world = World::new();
    if !crate::enforceable(&world) {
        return;
    }
    let state = tempfile::tempdir().expect("state dir");
    let state = state.path().display().to_string();
    let file = world.policy.display().to_string();
    let server = Server::start(&["--state-dir", &state, "--policy", &file]).await;
    let udp = "socket.socket(socket.AF_INET, socket.SOCK_DGRAM)";
    let s = job(&server, &py(udp), &world, None).await;
    assert!(!got_through(&s), "{s}");
    let id = s["id"]
        .as_str()
        .or(s["job_id"].as_str())
        .expect("id")
        .to_owned();
    let cli = |args: &[&str]| {
        let out = std::process::Command::new(crate::util::BIN)
            .arg("--state-dir")
            .arg(&state)
            .args(args)
            .output()
            .expect("ptyjobs status");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let text = cli(&["status", &id]);
    assert!(
        text.contains("profile:") && text.contains("default"),
        "{text}"
    );
    assert!(
        text.contains("refused:") && text.contains("socket(AF_INET, SOCK_DGRAM) by python3, once"),
        "{text}"
    );
    assert!(
        text.contains("hint:") && text.contains("network = \"on\""),
        "{text}"
    );
    let json: Value = serde_json::from_str(&cli(&["status", "--json", &id])).expect("json");
    assert_eq!(json["policy"]["refused"][0]["command"], "python3", "{json}");
}
