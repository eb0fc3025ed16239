//! Shared helpers of the engine integration tests.
#![allow(dead_code)]

pub mod streams;

use std::time::{Duration, Instant};

use ptyjobs_engine::{EngineConfig, JobId, JobInfo, JobManager, JobSpec};

/// A manager with a short kill grace so tests that kill stay quick.
pub fn manager() -> JobManager {
    manager_with(|_| {})
}

pub fn manager_with(tweak: impl FnOnce(&mut EngineConfig)) -> JobManager {
    let mut cfg = EngineConfig {
        kill_grace: Duration::from_millis(500),
        ..EngineConfig::default()
    };
    tweak(&mut cfg);
    JobManager::new(cfg).expect("manager")
}

/// Starts `command` and waits (at most 20 s) until it is final.
pub async fn run(m: &JobManager, command: &str) -> (JobInfo, String) {
    let job = m.execute(JobSpec::new(command)).expect("execute");
    let info = m
        .wait(job.id, Some(Duration::from_secs(20)))
        .await
        .expect("wait");
    assert!(info.status.is_final(), "{command} did not finish: {info:?}");
    (info, m.output(job.id, None, None).expect("output").output)
}

/// Polls `cond` every 10 ms until it holds or `timeout` passes; returns whether it held.
pub async fn wait_until(timeout: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Waits until the job's output contains `needle`.
pub async fn wait_for_output(m: &JobManager, id: JobId, needle: &str) -> String {
    let mut last = String::new();
    let found = wait_until(Duration::from_secs(10), || {
        last = m
            .output(id, None, None)
            .map(|o| o.output)
            .unwrap_or_default();
        last.contains(needle)
    })
    .await;
    assert!(found, "{needle:?} never appeared; output was {last:?}");
    last
}

/// The processes whose pid and `/proc/<pid>/stat` fields after the command name (state, ppid,
/// pgrp, session, ...) satisfy `keep`.
pub fn processes_where(keep: impl Fn(u32, &[&str]) -> bool) -> Vec<u32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let Some(close) = stat.rfind(')') else {
            continue;
        };
        let fields: Vec<&str> = stat[close + 1..].split_whitespace().collect();
        if keep(pid, &fields) {
            out.push(pid);
        }
    }
    out
}

/// Live (non-zombie) processes in the session `sid` (= a job's pid), from /proc.
pub fn session_processes(sid: u32) -> Vec<u32> {
    let sid = sid.to_string();
    processes_where(|_, f| f.len() > 3 && f[3] == sid && f[0] != "Z")
}

/// Live (non-zombie) processes whose environment carries `PTYJOBS_JOB_ID=<id>`: every process
/// of a job, including those that left its session.
pub fn marked_processes(id: JobId) -> Vec<u32> {
    let needle = format!("PTYJOBS_JOB_ID={id}");
    processes_where(|pid, f| {
        let live = f.first().is_some_and(|st| *st != "Z" && *st != "X");
        live && std::fs::read(format!("/proc/{pid}/environ"))
            .is_ok_and(|env| env.split(|&b| b == 0).any(|e| e == needle.as_bytes()))
    })
}
