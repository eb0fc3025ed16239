//! What a job inherits from the server, and what it must not: the server ignores SIGPIPE and
//! its runtime threads ask the scheduler for prompt wake-ups (a short slice, Linux ≥ 6.12, so a
//! job's shell starting up on the same CPU does not hold an answer back); a job starts with
//! every standard signal at its default, an empty mask, and the scheduling of a normally started
//! process.

use crate::util::{DEADLINE, Server, wait_until};

/// `se.slice` (ns), `policy` and `prio` of a task.
type Sched = (u64, String, String);

/// A task's [`Sched`], from its `sched` file under `/proc`; `None` when the kernel shows no
/// slice (before EEVDF).
fn sched(path: &str) -> Option<Sched> {
    let text = std::fs::read_to_string(format!("{path}/sched")).ok()?;
    let field = |name: &str| {
        text.lines()
            .find(|l| l.split(':').next().is_some_and(|k| k.trim() == name))
            .and_then(|l| l.split(':').nth(1))
            .map(|v| v.trim().to_string())
    };
    Some((
        field("se.slice")?.parse().ok()?,
        field("policy")?,
        field("prio")?,
    ))
}

/// The name and [`Sched`] of each thread of process `pid`.
fn threads_of(pid: u32) -> Vec<(String, Option<Sched>)> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|dir| {
            dir.flatten()
                .map(|t| {
                    let path = t.path().display().to_string();
                    let comm = std::fs::read_to_string(format!("{path}/comm")).unwrap_or_default();
                    (comm.trim().to_string(), sched(&path))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Whether this kernel keeps a custom slice for a normal thread (Linux 6.12 and later).
fn custom_slices() -> bool {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let mut parts = release.split(|c: char| !c.is_ascii_digit());
    let major: u32 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    let minor: u32 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    (major, minor) >= (6, 12)
}

#[tokio::test]
async fn runtime_threads_wake_promptly_and_no_job_or_other_thread_inherits_it() {
    if !custom_slices() {
        eprintln!("skipped: this kernel has no custom scheduling slices (Linux 6.12 or later)");
        return;
    }
    // What a process started normally gets: the reference for jobs and the engine's threads.
    let mut plain = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .expect("sleep");
    let reference = sched(&format!("/proc/{}", plain.id()));
    let _ = plain.kill();
    let _ = plain.wait();
    let Some((default_slice, policy, prio)) = reference else {
        eprintln!("skipped: /proc/<pid>/sched shows no se.slice here");
        return;
    };

    let s = Server::start(&[]).await;
    let (_, job_pid) = s.exec("sleep 30").await;
    // A runtime thread gives itself the hint as it starts: poll, so one that the runtime is
    // starting just now (the blocking pool) is seen once it has.
    let threads = wait_until(
        "every runtime thread with a short slice",
        DEADLINE,
        || async {
            let threads = threads_of(s.pid);
            let workers: Vec<_> = threads
                .iter()
                .filter(|(name, _)| name == "tokio-rt-worker")
                .collect();
            let all_short = !workers.is_empty()
                && workers.iter().all(|(_, a)| {
                    a.as_ref()
                        .is_some_and(|(slice, _, _)| *slice < default_slice)
                });
            all_short.then_some(threads)
        },
    )
    .await;
    // The engine's own threads (the reactor, the parse workers) were started by runtime
    // threads: reset-on-fork gave them the default.
    let engine: Vec<_> = threads
        .iter()
        .filter(|(name, _)| name.starts_with("ptyjobs-"))
        .collect();
    assert!(!engine.is_empty(), "no engine thread among {threads:?}");
    for (name, attrs) in engine {
        assert_eq!(
            attrs.as_ref().map(|a| a.0),
            Some(default_slice),
            "{name} inherited the short slice"
        );
    }
    // The job's shell: exactly what a normally started process gets.
    assert_eq!(
        sched(&format!("/proc/{job_pid}")),
        Some((default_slice, policy, prio)),
        "the job's scheduling differs from a normally started process's"
    );
}

/// A `/proc/<pid>/status` mask field (`SigIgn`, `SigBlk`), as a number.
fn mask(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status
        .lines()
        .find(|l| l.starts_with(&format!("{field}:")))?;
    u64::from_str_radix(line.split(':').nth(1)?.trim(), 16).ok()
}

#[tokio::test]
async fn a_job_starts_with_every_standard_signal_at_its_default_and_none_blocked() {
    let s = Server::start(&[]).await;
    // The server itself ignores SIGPIPE (Rust does, for every program): what a job must not get.
    assert_ne!(
        mask(s.pid, "SigIgn").expect("server SigIgn") & (1 << (libc::SIGPIPE - 1)),
        0,
        "the server was expected to ignore SIGPIPE"
    );
    // `exec`: the shell becomes `sleep`, whose masks stay as it got them (a shell's own may
    // change for a moment, e.g. dash blocks every signal around a fork).
    let (_, pid) = s.exec("exec sleep 30").await;
    wait_until("the job's shell to become sleep", DEADLINE, || async {
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        (comm.trim() == "sleep").then_some(())
    })
    .await;
    // Signals 1–31. glibc's posix_spawn leaves its own two internal signals (32 and 33, which
    // it never lets a program use) ignored in the child, whatever it is asked.
    let standard = (1u64 << 31) - 1;
    assert_eq!(
        mask(pid, "SigIgn").map(|m| m & standard),
        Some(0),
        "the job's shell ignores signals"
    );
    assert_eq!(
        mask(pid, "SigBlk"),
        Some(0),
        "the job's shell blocks signals"
    );
}
