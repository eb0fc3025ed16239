//! Names as keys: one live job per (name, directory) across every manager sharing a state
//! directory, ensure, lookups by name, and restart (issue 22).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::common::*;
use ptyjobs_engine::{Error, JobManager, JobSpec, JobStatus, StoreConfig};

fn named(command: &str, name: &str, cwd: &Path) -> JobSpec {
    JobSpec {
        name: Some(name.into()),
        cwd: Some(cwd.to_path_buf()),
        ..JobSpec::new(command)
    }
}

fn ensure(command: &str, name: &str, cwd: &Path) -> JobSpec {
    JobSpec {
        ensure: true,
        ..named(command, name, cwd)
    }
}

fn stored(dir: &Path) -> JobManager {
    manager_with(|c| c.store = Some(StoreConfig::new(dir)))
}

#[tokio::test]
async fn a_name_is_one_live_job_per_directory() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let m = manager();
    let web_a = m.execute(named("exec sleep 100", "web", a.path())).unwrap();
    // The same name in another directory (another worktree) is another service.
    let web_b = m.execute(named("exec sleep 100", "web", b.path())).unwrap();
    // A second live job under (web, a) is refused, whatever the directory's spelling.
    let again = a.path().join("..").join(a.path().file_name().unwrap());
    let err = m.execute(named("exec sleep 5", "web", &again)).unwrap_err();
    let Error::NameTaken(t) = &err else {
        panic!("expected NameTaken, got {err:?}")
    };
    assert_eq!(t.job.id, web_a.id);
    let msg = err.to_string();
    for part in [
        &web_a.id.to_string(),
        "exec sleep 100",
        &a.path().display().to_string(),
        "ensure",
        "restart",
    ] {
        assert!(msg.contains(part), "{part:?} missing from {msg}");
    }
    // Without a directory the name is ambiguous: the error lists both jobs.
    let err = m.resolve("web", None).unwrap_err().to_string();
    assert!(
        err.contains(&web_a.id.to_string()) && err.contains(&web_b.id.to_string()),
        "{err}"
    );
    assert!(err.contains(&b.path().display().to_string()), "{err}");
    assert_eq!(m.resolve("web", Some(b.path())).unwrap(), web_b.id);
    assert_eq!(m.resolve_job("web", Some(a.path())).unwrap(), web_a.id);
    assert_eq!(
        m.resolve_job(&web_a.id.to_string(), None).unwrap(),
        web_a.id
    );
    // Unknown: the live names are listed.
    let err = m.resolve("nope", None).unwrap_err();
    assert!(matches!(err, Error::UnknownName { .. }), "{err:?}");
    assert!(err.to_string().contains("web"), "{err}");
    // Once ended, the name is free again, and it still finds the newest ended job.
    m.kill(web_a.id, ptyjobs_engine::Signal::TERM, None)
        .await
        .unwrap();
    assert_eq!(m.resolve("web", Some(a.path())).unwrap(), web_a.id);
    let next = m.execute(named("exec sleep 100", "web", a.path())).unwrap();
    assert_eq!(m.resolve("web", Some(a.path())).unwrap(), next.id);
    m.shutdown().await;
}

#[tokio::test]
async fn names_with_control_characters_or_10_kb_are_refused() {
    let m = manager();
    let dir = tempfile::tempdir().unwrap();
    for bad in [
        "dev\nserver",
        "\u{1b}[31mred",
        "tab\there",
        "",
        "\u{202e}txt.exe",
    ] {
        let err = m.execute(named("true", bad, dir.path())).unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(_)), "{bad:?}: {err:?}");
    }
    let huge = "n".repeat(10 * 1024);
    let err = m
        .execute(named("true", &huge, dir.path()))
        .unwrap_err()
        .to_string();
    assert!(err.contains("10240 bytes") && err.len() < 300, "{err}");
    assert!(m.list().is_empty(), "nothing was started");
}

#[tokio::test]
async fn ensure_reuses_refuses_a_different_command_and_starts_when_none() {
    let dir = tempfile::tempdir().unwrap();
    let m = manager();
    let first = m
        .ensure(ensure("exec sleep 100", "dev", dir.path()))
        .unwrap();
    assert!(!first.reused);
    let again = m
        .ensure(ensure("exec sleep 100", "dev", dir.path()))
        .unwrap();
    assert!(again.reused);
    assert_eq!(again.info.id, first.info.id);
    assert_eq!(m.list().len(), 1, "nothing more was started");
    let err = m
        .ensure(ensure("exec sleep 200", "dev", dir.path()))
        .unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, Error::NameTaken(_)), "{err:?}");
    assert!(
        msg.contains("exec sleep 100") && msg.contains("exec sleep 200") && msg.contains("restart"),
        "{msg}"
    );
    // Ensure without a name says what is missing.
    let err = m
        .ensure(JobSpec {
            ensure: true,
            ..JobSpec::new("true")
        })
        .unwrap_err();
    assert!(err.to_string().contains("name"), "{err}");
    m.kill(first.info.id, ptyjobs_engine::Signal::KILL, None)
        .await
        .unwrap();
    let fresh = m
        .ensure(ensure("exec sleep 100", "dev", dir.path()))
        .unwrap();
    assert!(!fresh.reused);
    assert_ne!(fresh.info.id, first.info.id);
    m.shutdown().await;
}

/// Runs `n` ensures of one name at once on each manager; returns the distinct job ids and
/// how many answers were `reused`.
fn race(managers: &[JobManager], n: usize, dir: &Path) -> (Vec<ptyjobs_engine::JobId>, usize) {
    let barrier = Arc::new(std::sync::Barrier::new(n * managers.len()));
    let threads: Vec<_> = managers
        .iter()
        .flat_map(|m| (0..n).map(move |_| m.clone()))
        .map(|m| {
            let barrier = barrier.clone();
            let dir = dir.to_path_buf();
            std::thread::spawn(move || {
                barrier.wait();
                m.ensure(ensure("exec sleep 100", "race", &dir))
                    .expect("ensure")
            })
        })
        .collect();
    let answers: Vec<_> = threads
        .into_iter()
        .map(|t| t.join().expect("thread"))
        .collect();
    let mut ids: Vec<_> = answers.iter().map(|s| s.info.id).collect();
    ids.sort();
    ids.dedup();
    (ids, answers.iter().filter(|s| s.reused).count())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_ensures_start_exactly_one_job() {
    let dir = tempfile::tempdir().unwrap();
    let m = manager();
    let (ids, reused) = race(std::slice::from_ref(&m), 16, dir.path());
    assert_eq!(ids.len(), 1, "{ids:?}");
    assert_eq!(reused, 15);
    let running = m
        .list()
        .iter()
        .filter(|j| j.status == JobStatus::Running)
        .count();
    assert_eq!(running, 1);
    m.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_ensures_of_two_servers_on_one_state_directory_start_one_job() {
    let state = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let (a, b) = (stored(state.path()), stored(state.path()));
    let (ids, reused) = race(&[a.clone(), b.clone()], 8, work.path());
    assert_eq!(ids.len(), 1, "{ids:?}");
    assert_eq!(reused, 15);
    // Each server sees the other's job as the holder of the name.
    let err = b
        .execute(named("exec sleep 1", "race", work.path()))
        .unwrap_err();
    assert!(err.to_string().contains(&ids[0].to_string()), "{err}");
    a.shutdown().await;
    b.shutdown().await;
}

#[tokio::test]
async fn restart_ends_the_old_tree_and_starts_the_same_job_again() {
    let dir = tempfile::tempdir().unwrap();
    let m = manager();
    let mut env = BTreeMap::new();
    env.insert("GREETING".to_owned(), "hello".to_owned());
    let old = m
        .execute(JobSpec {
            env,
            cols: Some(91),
            rows: Some(17),
            ..named("echo \"v=$GREETING\"; sleep 1000 & wait", "svc", dir.path())
        })
        .unwrap();
    wait_for_output(&m, old.id, "v=hello").await;
    assert!(
        wait_until(Duration::from_secs(5), || session_processes(old.pid).len()
            >= 2)
        .await
    );
    let new = m.restart(old.id, None, None).await.unwrap();
    assert_ne!(new.id, old.id);
    assert_eq!(new.replaces, Some(old.id));
    assert_eq!(new.name.as_deref(), Some("svc"));
    assert_eq!(new.cwd, old.cwd);
    assert_eq!(new.size, (91, 17));
    assert_eq!(session_processes(old.pid), Vec::<u32>::new());
    assert_eq!(m.status(old.id).unwrap().status, JobStatus::Killed);
    wait_for_output(&m, new.id, "v=hello").await;
    assert_eq!(m.resolve("svc", None).unwrap(), new.id);
    // A new command and environment.
    let mut env = BTreeMap::new();
    env.insert("GREETING".to_owned(), "bye".to_owned());
    let third = m
        .restart(
            new.id,
            Some("echo \"w=$GREETING\"; exec sleep 100".into()),
            Some(env),
        )
        .await
        .unwrap();
    wait_for_output(&m, third.id, "w=bye").await;
    assert_eq!(third.replaces, Some(new.id));
    m.shutdown().await;
}

#[tokio::test]
async fn restart_of_a_finished_job_starts_it_again() {
    let dir = tempfile::tempdir().unwrap();
    let m = manager();
    let old = m
        .execute(named("echo ran-once", "once", dir.path()))
        .unwrap();
    m.wait(old.id, Some(Duration::from_secs(10))).await.unwrap();
    let new = m.restart(old.id, None, None).await.unwrap();
    assert_eq!(new.replaces, Some(old.id));
    wait_for_output(&m, new.id, "ran-once").await;
    assert_eq!(m.status(old.id).unwrap().status, JobStatus::Completed);
}

#[tokio::test]
async fn restart_of_a_job_that_ignores_sigterm_still_ends_it() {
    let dir = tempfile::tempdir().unwrap();
    let m = manager_with(|c| c.kill_grace = Duration::from_millis(300));
    let old = m
        .execute(named(
            "trap '' TERM; echo armed; while :; do sleep 1; done",
            "stubborn",
            dir.path(),
        ))
        .unwrap();
    wait_for_output(&m, old.id, "armed").await;
    let new = m.restart(old.id, None, None).await.unwrap();
    assert_eq!(session_processes(old.pid), Vec::<u32>::new());
    assert_eq!(m.status(old.id).unwrap().status, JobStatus::Killed);
    wait_for_output(&m, new.id, "armed").await;
    m.shutdown().await;
}

#[tokio::test]
async fn restart_of_another_servers_job_moves_it_here() {
    let state = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let (a, b) = (stored(state.path()), stored(state.path()));
    let old = a
        .execute(named("echo up; sleep 1000 & wait", "shared", work.path()))
        .unwrap();
    wait_for_output(&a, old.id, "up").await;
    // b knows the job from the state directory only, and finds it by name.
    assert_eq!(b.resolve("shared", None).unwrap(), old.id);
    let new = b.restart(old.id, None, None).await.unwrap();
    assert!(new.this_server);
    assert_eq!(new.replaces, Some(old.id));
    assert_eq!(session_processes(old.pid), Vec::<u32>::new());
    wait_for_output(&b, new.id, "up").await;
    assert!(
        wait_until(Duration::from_secs(5), || a.status(old.id).unwrap().status
            != JobStatus::Running)
        .await
    );
    assert_eq!(a.resolve("shared", None).unwrap(), new.id);
    a.shutdown().await;
    b.shutdown().await;
}

#[tokio::test]
async fn among_servers_sharing_a_state_directory_a_name_means_this_servers_job() {
    let state = tempfile::tempdir().unwrap();
    let (a_dir, b_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (a, b) = (stored(state.path()), stored(state.path()));
    // Two agents, two worktrees, one "dev" each.
    let in_a = a
        .execute(named("exec sleep 100", "dev", a_dir.path()))
        .unwrap();
    let in_b = b
        .execute(named("exec sleep 100", "dev", b_dir.path()))
        .unwrap();
    assert_eq!(a.resolve("dev", None).unwrap(), in_a.id);
    assert_eq!(b.resolve_job("dev", None).unwrap(), in_b.id);
    assert_eq!(a.resolve("dev", Some(b_dir.path())).unwrap(), in_b.id);
    // A reader that runs neither (the CLI) asks which.
    let reader = ptyjobs_engine::Store::open_reader(StoreConfig::new(state.path())).unwrap();
    let err = reader.resolve_job("dev", None).unwrap_err().to_string();
    assert!(
        err.contains(&in_a.id.to_string()) && err.contains(&in_b.id.to_string()),
        "{err}"
    );
    assert_eq!(
        reader.resolve_job("dev", Some(a_dir.path())).unwrap(),
        in_a.id
    );
    a.shutdown().await;
    b.shutdown().await;
}

/// A server waiting on another live server's job (found by its name) sees it listen: the
/// record proves its processes, their listeners answer `listening` and `port`.
#[tokio::test]
async fn a_wait_on_another_servers_job_sees_it_listen() {
    use ptyjobs_engine::{WaitReason, WaitSpec};
    let state = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (stored(state.path()), stored(state.path()));
    let job = a
        .execute(named(
            "exec python3 -m http.server 0 --bind 127.0.0.1",
            "web",
            dir.path(),
        ))
        .unwrap();
    let id = b.resolve_job("web", None).unwrap();
    assert_eq!(id, job.id);
    let spec = WaitSpec {
        listening: true,
        timeout: Some(Duration::from_secs(20)),
        ..WaitSpec::default()
    };
    let out = b.wait_for(id, &spec, |_| {}).await.unwrap();
    assert_eq!(out.reason, WaitReason::Listening, "{out:?}");
    assert!(!out.info.this_server, "{out:?}");
    let port = out.ports[0].port;
    assert_eq!(out.urls, vec![format!("http://localhost:{port}/")]);
    let spec = WaitSpec {
        port: Some(port),
        timeout: Some(Duration::from_secs(20)),
        ..WaitSpec::default()
    };
    let out = b.wait_for(id, &spec, |_| {}).await.unwrap();
    assert_eq!(out.reason, WaitReason::PortOpen, "{out:?}");
    a.shutdown().await;
    b.shutdown().await;
}
