//! A job under a policy: the calls its sandbox refused are counted in its status, with the
//! command that made them and a hint naming the profile key that would allow them. The
//! sandbox's trampoline is the `ptyjobs` binary (`cargo build -p ptyjobs-mcp`); without it, or
//! off Linux, the test is skipped with the reason printed.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use ptyjobs_engine::{JobSpec, Policy};

fn program() -> Option<PathBuf> {
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target"),
        PathBuf::from,
    );
    let p = target.join("debug/ptyjobs");
    p.exists().then_some(p)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_calls_are_counted_with_the_command_and_a_hint() {
    let Some(program) = program() else {
        eprintln!("skipped: no target/debug/ptyjobs (cargo build -p ptyjobs-mcp first)");
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let base = dir.path().canonicalize().expect("canonical");
    let (proj, etc) = (base.join("proj"), base.join("etc"));
    std::fs::create_dir(&proj).expect("proj");
    std::fs::create_dir(&etc).expect("etc");
    let file = etc.join("policy.toml");
    std::fs::write(&file, format!("[profiles.default]\nwrite = [{proj:?}]\n")).expect("policy");
    let policy = match Policy::load(&file, &program) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("skipped: a policy is refused here: {e}");
            return;
        }
    };
    if let Some((_, Some(why))) = policy.describe("default") {
        eprintln!("skipped: this kernel cannot enforce the profile: {why}");
        return;
    }
    let m = crate::common::manager_with(|c| {
        c.policy = Some(Arc::new(policy));
        c.program = Some(program.clone());
    });
    let code = "import socket, fcntl, termios, ctypes\n\
                for _ in range(2):\n    try: socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n    except OSError: pass\n\
                try: fcntl.ioctl(0, termios.TIOCSTI, b\" \")\nexcept OSError: pass\n\
                ctypes.CDLL(None).syscall(425, 4, ctypes.create_string_buffer(120))";
    let job = m
        .execute(JobSpec::new(format!("/usr/bin/python3 -c '{code}'")))
        .expect("execute");
    let info = m
        .wait(job.id, Some(Duration::from_secs(20)))
        .await
        .expect("wait");
    let p = info.policy.expect("a policy");
    let count = |call: &str| {
        let r = p.refused.iter().find(|r| r.syscall == call);
        let r = r.unwrap_or_else(|| panic!("{call} not counted: {p:?}"));
        assert_eq!(r.command, "python3", "{p:?}");
        r.count
    };
    assert_eq!(count("socket(AF_INET, SOCK_DGRAM)"), 2);
    assert_eq!(count("ioctl(TIOCSTI)"), 1);
    assert_eq!(count("io_uring_setup"), 1);
    let hint = |needle: &str| p.hints.iter().any(|h| h.contains(needle));
    assert!(
        hint(&format!(
            "profile \"default\" refused UDP sockets (python3): to allow, set network = \"on\" \
             in [profiles.default] of {}",
            file.display()
        )),
        "{p:?}"
    );
    assert!(
        hint("refused io_uring (python3): cannot be allowed"),
        "{p:?}"
    );
    assert!(
        hint("(TIOCSTI, TIOCLINUX) (python3): cannot be allowed"),
        "{p:?}"
    );
}
