//! `ptyjobs attach`: a person's terminal (a PTY the test holds) connected to an agent's job.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::FromRawFd;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::util::{BIN, DEADLINE, Server, wait_until};

/// `ptyjobs attach` running on a terminal of its own, as a person would run it.
struct Person {
    master: File,
    seen: Arc<Mutex<Vec<u8>>>,
    child: Child,
}

impl Person {
    fn attach(state: &Path, id: &str) -> Self {
        let (mut master, mut slave) = (0, 0);
        let mut ws = libc::winsize {
            ws_row: 30,
            ws_col: 100,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        // SAFETY: openpty writes two fds into the pointers; name and termios may be null. (The
        // pointers are `*mut` because macOS declares them so; Linux takes `*const`.)
        let r = unsafe {
            libc::openpty(
                &mut master,
                &mut slave,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                &raw mut ws,
            )
        };
        assert_eq!(r, 0, "openpty: {}", std::io::Error::last_os_error());
        // SAFETY: the master fd is ours; keep it out of the child.
        unsafe { libc::fcntl(master, libc::F_SETFD, libc::FD_CLOEXEC) };
        // SAFETY: openpty returned fresh fds that nothing else owns.
        let (master, slave) = unsafe { (File::from_raw_fd(master), File::from_raw_fd(slave)) };
        let mut cmd = Command::new(BIN);
        cmd.args(["attach", id, "--state-dir"])
            .arg(state)
            .stdin(Stdio::from(slave.try_clone().expect("dup the terminal")))
            .stdout(Stdio::from(slave.try_clone().expect("dup the terminal")))
            .stderr(Stdio::from(slave));
        // As in a person's shell: the terminal is the command's controlling terminal, so a
        // resize of it sends the command SIGWINCH.
        // SAFETY: setsid and ioctl are async-signal-safe; the closure allocates nothing.
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut cmd, || {
                libc::setsid();
                // The request's C type differs between Linux and macOS: let the call decide.
                libc::ioctl(0, libc::TIOCSCTTY as _, 0);
                Ok(())
            });
        }
        let child = cmd.spawn().expect("spawn ptyjobs attach");
        let seen = Arc::new(Mutex::new(Vec::new()));
        let mut reader = master.try_clone().expect("dup the master");
        let sink = seen.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock().expect("lock").extend_from_slice(&buf[..n]);
            }
        });
        Self {
            master,
            seen,
            child,
        }
    }

    fn screen(&self) -> String {
        String::from_utf8_lossy(&self.seen.lock().expect("lock")).into_owned()
    }

    async fn sees(&self, needle: &str) {
        let what = format!("{needle:?} on the person's terminal");
        wait_until(&what, DEADLINE, || async {
            self.screen().contains(needle).then_some(())
        })
        .await;
    }

    /// Waits until `needle` appears after the first screen was drawn (the clear it starts with).
    async fn sees_after_clear(&self, needle: &str) {
        let what = format!("{needle:?} on the job's screen");
        wait_until(&what, DEADLINE, || async {
            let screen = self.screen();
            let at = screen.find("\x1b[2J")?;
            screen[at..].contains(needle).then_some(())
        })
        .await;
    }

    /// The person resizes their terminal window to `cols` × `rows`.
    fn resize(&self, cols: u16, rows: u16) {
        use std::os::fd::AsRawFd;
        let ws = libc::winsize {
            ws_row: rows,
            ws_col: cols,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        // SAFETY: TIOCSWINSZ reads one winsize from the pointer, which outlives the call.
        let r = unsafe { libc::ioctl(self.master.as_raw_fd(), libc::TIOCSWINSZ, &ws) };
        assert_eq!(r, 0, "TIOCSWINSZ: {}", std::io::Error::last_os_error());
    }

    fn types(&mut self, keys: &[u8]) {
        self.master.write_all(keys).expect("type on the terminal");
    }

    /// The person's terminal's local flags (`ECHO`, `ICANON`, ...), read through the master.
    fn lflags(&self) -> libc::tcflag_t {
        use std::os::fd::AsRawFd;
        // SAFETY: an all-zero termios is a valid value for tcgetattr to overwrite.
        let mut t: libc::termios = unsafe { std::mem::zeroed() };
        // SAFETY: tcgetattr writes one termios into the pointer, which outlives the call.
        let r = unsafe { libc::tcgetattr(self.master.as_raw_fd(), &mut t) };
        assert_eq!(r, 0, "tcgetattr: {}", std::io::Error::last_os_error());
        t.c_lflag
    }

    async fn exit_code(&mut self) -> i32 {
        let end = Instant::now() + DEADLINE;
        loop {
            if let Some(st) = self.child.try_wait().expect("try_wait") {
                return st.code().unwrap_or(-1);
            }
            assert!(
                Instant::now() < end,
                "attach did not return: {}",
                self.screen()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl Drop for Person {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test]
async fn a_person_attaches_answers_detaches_and_the_agent_carries_on() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start_in(dir.path(), &[]).await;
    let (id, _) = s
        .exec(
            "echo hello-screen; read -p 'Name? ' a; echo \"hi $a\"; \
             read -p 'Again? ' b; echo \"bye $b\"; sleep 100",
        )
        .await;
    s.wait_output(&id, "Name?").await;

    let mut person = Person::attach(dir.path(), &id[..8]);
    // The screen first: cleared, then the job's rows (the banner before it names the command,
    // so look after the clear).
    person.sees_after_clear("hello-screen").await;
    person.sees_after_clear("Name?").await;
    assert!(
        person.screen().contains("Ctrl-]"),
        "the banner says how to detach"
    );
    // What the person types reaches the job; its answer comes back live.
    person.types(b"Alice\r");
    person.sees("hi Alice").await;
    person.sees("Again?").await;
    s.wait_output(&id, "hi Alice").await;
    // Ctrl-] detaches; the job keeps running.
    person.types(&[0x1d]);
    assert_eq!(person.exit_code().await, 0, "{}", person.screen());
    person.sees("detached").await;
    assert_eq!(s.status(&id).await["status"], "running");
    // The agent still works with the job.
    let r = s
        .ok("interact_with_job", json!({ "job_id": id, "input": "Bob" }))
        .await;
    assert!(r["output"].as_str().unwrap().contains("bye Bob"), "{r}");
    assert!(
        !person.screen().contains("bye Bob"),
        "detached means detached"
    );
}

#[tokio::test]
async fn attaching_to_a_job_that_ends_says_how_it_ended() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start_in(dir.path(), &[]).await;
    let (id, _) = s.exec("read -p 'Go? ' x; echo going; exit 3").await;
    s.wait_output(&id, "Go?").await;
    let mut person = Person::attach(dir.path(), &id);
    person.sees_after_clear("Go?").await;
    person.types(b"y\r");
    person.sees("going").await;
    person.sees("ended: failed (exit code 3)").await;
    assert_eq!(person.exit_code().await, 0);
    // A finished job cannot be attached to.
    let out = Command::new(BIN)
        .args(["attach", &id, "--state-dir"])
        .arg(dir.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("not running"),
        "{out:?}"
    );
}

#[tokio::test]
async fn the_socket_is_private_and_another_user_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start_in(dir.path(), &[]).await;
    let (id, _) = s.exec("sleep 100").await;
    let sock_dir = dir.path().join("sock");
    let socket = wait_until("the attach socket", DEADLINE, || async {
        std::fs::read_dir(&sock_dir)
            .ok()?
            .filter_map(|e| Some(e.ok()?.path()))
            .find(|p| p.extension().is_some_and(|x| x == "sock"))
    })
    .await;
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&sock_dir), 0o700);
    assert_eq!(mode(&socket), 0o600);
    // Nothing listens on the network.
    let tcp = std::fs::read_to_string("/proc/net/tcp").unwrap_or_default()
        + &std::fs::read_to_string("/proc/net/tcp6").unwrap_or_default();
    let inodes: Vec<String> = std::fs::read_dir(format!("/proc/{}/fd", s.pid))
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter_map(|l| {
            let l = l.to_string_lossy().into_owned();
            Some(l.strip_prefix("socket:[")?.trim_end_matches(']').to_owned())
        })
        .collect();
    for line in tcp.lines().skip(1) {
        let inode = line.split_whitespace().nth(9).unwrap_or("");
        assert!(!inodes.iter().any(|i| i == inode), "a TCP socket: {line}");
    }

    // Another user: only when this test runs as root and can become nobody.
    // SAFETY: geteuid has no arguments and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    let python = Path::new("/usr/bin/python3");
    let setpriv = Path::new("/usr/bin/setpriv");
    if !(root && python.exists() && setpriv.exists()) {
        eprintln!("skipped the other-user part: needs root, /usr/bin/setpriv and /usr/bin/python3");
        return;
    }
    // Open the way on purpose (a careless chmod), so that the server's credential check is
    // the only thing between the other user and the job.
    let open = |p: &Path, m: u32| std::fs::set_permissions(p, std::fs::Permissions::from_mode(m));
    open(dir.path(), 0o711).unwrap();
    open(&sock_dir, 0o711).unwrap();
    open(&socket, 0o666).unwrap();
    // The server may refuse before the hello is sent: a failed send is part of the answer.
    let client = format!(
        "import socket,sys\ns=socket.socket(socket.AF_UNIX)\ns.connect(sys.argv[1])\n\
         try: s.sendall(b'{{\"version\":1,\"job_id\":\"{id}\",\"cols\":80,\"rows\":24}}\\n')\n\
         except OSError: pass\nsys.stdout.write(s.recv(4096).decode())"
    );
    let out = Command::new(setpriv)
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(python)
        .args(["-c", &client])
        .arg(&socket)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(
        said.contains("\"ok\":false") && said.contains("refused"),
        "{said}"
    );
    assert_eq!(s.status(&id).await["status"], "running");
}

/// The sockets in the state directory's `sock` directory.
fn sockets(state: &Path) -> Vec<std::path::PathBuf> {
    let Ok(dir) = std::fs::read_dir(state.join("sock")) else {
        return Vec::new();
    };
    let mut found: Vec<_> = dir
        .filter_map(|e| Some(e.ok()?.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "sock"))
        .collect();
    found.sort();
    found
}

#[tokio::test]
async fn a_server_removes_its_socket_and_the_next_one_sweeps_a_dead_servers() {
    let dir = tempfile::tempdir().unwrap();
    // A server that stops normally takes its socket away.
    let mut s = Server::start_in(dir.path(), &[]).await;
    let first = wait_until("the first socket", DEADLINE, || async {
        sockets(dir.path()).pop()
    })
    .await;
    s.close().await;
    assert!(!first.exists(), "the socket outlived its server");
    // One that is SIGKILLed leaves it behind; the next server on the directory removes it.
    let mut crashed = Server::start_in(dir.path(), &[]).await;
    let stale = wait_until("the second socket", DEADLINE, || async {
        sockets(dir.path()).pop()
    })
    .await;
    crashed.crash().await;
    assert!(stale.exists());
    let next = Server::start_in(dir.path(), &[]).await;
    let left = wait_until("the dead server's socket to be swept", DEADLINE, || async {
        let left = sockets(dir.path());
        (left.len() == 1 && left[0] != stale).then_some(left)
    })
    .await;
    assert!(!left.contains(&stale));
    next.assert_serving().await;
}

#[tokio::test]
async fn the_persons_terminal_is_restored_when_attach_is_terminated() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start_in(dir.path(), &[]).await;
    let (id, _) = s.exec("echo ready-to-attach; sleep 100").await;
    s.wait_output(&id, "ready-to-attach").await;
    let mut person = Person::attach(dir.path(), &id);
    person.sees_after_clear("ready-to-attach").await;
    let cooked = libc::ICANON | libc::ECHO;
    assert_eq!(person.lflags() & cooked, 0, "raw mode while attached");
    // SAFETY: kill sends a signal to the attach process this test started.
    unsafe { libc::kill(person.child.id() as i32, libc::SIGTERM) };
    assert_eq!(person.exit_code().await, 0, "{}", person.screen());
    assert_eq!(
        person.lflags() & cooked,
        cooked,
        "the terminal is cooked again"
    );
    assert_eq!(s.status(&id).await["status"], "running");
}

#[tokio::test]
async fn the_first_screen_is_drawn_with_its_colours() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start_in(dir.path(), &[]).await;
    let (id, _) = s
        .exec("printf 'plain \\033[1;31mred-bold\\033[0m \\033[44mon-blue\\033[0m\\n'; sleep 100")
        .await;
    s.wait_output(&id, "on-blue").await;
    let person = Person::attach(dir.path(), &id);
    person.sees_after_clear("on-blue").await;
    let screen = person.screen();
    let first = &screen[screen.find("\x1b[2J").expect("the clear")..];
    let red = first.find("red-bold").expect("the red text");
    // vt100 writes the attributes before the text they apply to (as `ESC[1;31m` or split).
    let before = &first[..red];
    assert!(
        before.contains("31m") || before.contains("31;"),
        "no red: {first:?}"
    );
    assert!(
        before.contains("\x1b[1") || before.contains(";1m"),
        "no bold: {first:?}"
    );
    let blue = first.find("on-blue").expect("the blue text");
    assert!(
        first[red..blue].contains("44m"),
        "no blue background: {first:?}"
    );
}

/// `stty size` in the job (rows, then cols) printed on each line the person enters.
async fn job_size(person: &mut Person, want: &str) {
    let what = format!("`stty size` to print {want:?}");
    wait_until(&what, DEADLINE, || {
        person.types(b"\r");
        let seen = person.screen();
        async move { seen.contains(want).then_some(()) }
    })
    .await;
}

#[tokio::test]
async fn the_job_takes_the_persons_size_follows_a_resize_and_gets_its_own_back() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start_in(dir.path(), &[]).await;
    let (id, _) = s
        .exec_with(json!({
            "command": "echo size-loop; while read x; do echo \"size=$(stty size)\"; done",
            "cols": 90,
            "rows": 20,
        }))
        .await;
    s.wait_output(&id, "size-loop").await;
    // The person's terminal is 100 × 30 (Person::attach).
    let mut person = Person::attach(dir.path(), &id);
    person.sees_after_clear("size-loop").await;
    job_size(&mut person, "size=30 100").await;
    // The person makes their window larger: the job follows.
    person.resize(132, 43);
    job_size(&mut person, "size=43 132").await;
    person.resize(70, 18);
    job_size(&mut person, "size=18 70").await;
    // Detached, the job has its own size again.
    person.types(&[0x1d]);
    assert_eq!(person.exit_code().await, 0, "{}", person.screen());
    let r = s
        .ok(
            "interact_with_job",
            json!({ "job_id": id, "input": "again\n", "wait_ms": 2000 }),
        )
        .await;
    let out = r["output"].as_str().unwrap_or_default().to_owned();
    let restored = if out.contains("size=20 90") {
        out
    } else {
        s.wait_output(&id, "size=20 90").await
    };
    assert!(restored.contains("size=20 90"), "{restored}");
}
