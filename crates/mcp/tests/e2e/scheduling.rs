//! The server's runtime threads ask the scheduler for prompt wake-ups (a short slice, Linux ≥
//! 6.12), so a job's shell starting up on the same CPU does not hold an answer back; no job and
//! no other thread inherits that.

use crate::util::Server;

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
    let threads: Vec<(String, Option<Sched>)> = std::fs::read_dir(format!("/proc/{}/task", s.pid))
        .expect("server threads")
        .flatten()
        .map(|t| {
            let path = t.path().display().to_string();
            let comm = std::fs::read_to_string(format!("{path}/comm")).unwrap_or_default();
            (comm.trim().to_string(), sched(&path))
        })
        .collect();
    let workers: Vec<_> = threads
        .iter()
        .filter(|(name, _)| name == "tokio-rt-worker")
        .collect();
    assert!(!workers.is_empty(), "no runtime worker among {threads:?}");
    for (name, attrs) in &workers {
        let (slice, _, _) = attrs.as_ref().expect("sched");
        assert!(
            *slice < default_slice,
            "{name}: slice {slice} ns, not shorter than the default {default_slice} ns"
        );
    }
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
