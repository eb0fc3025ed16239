//! Shared helpers of the engine integration tests.
#![allow(dead_code)]

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

/// Live (non-zombie) processes in the session `sid` (= a job's pid), from /proc.
pub fn session_processes(sid: u32) -> Vec<u32> {
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
        if fields.len() > 3 && fields[3] == sid.to_string() && fields[0] != "Z" {
            out.push(pid);
        }
    }
    out
}
