//! `ptyjobs kill | rm | prune`: the subcommands that change the state directory or a job.

use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use ptyjobs_engine::{JobStatus, Store, StoredJob};

use super::format::{bytes, one_line, truncate};
use super::out::Out;
use super::{CmdResult, Failure, describe};

/// How long `kill` waits, after the signals, for the job's server to record the end.
const RECORD_WAIT: Duration = Duration::from_secs(5);

/// `job 0123abcd (cargo build)`: how the messages name a job.
fn named(job: &StoredJob) -> String {
    let id: String = job.record.id.to_string().chars().take(8).collect();
    let label = job.record.name.as_deref().unwrap_or(&job.record.command);
    format!("job {id} ({})", truncate(&one_line(label), 40))
}

/// Kills a running job through the engine's kill path (TERM to the processes proven to be the
/// job's, KILL after `grace_ms`; its server records it `killed`), then prints how it ended.
/// A job that is not running is an error, and nothing is signalled.
pub(crate) fn kill(store: &Store, id: &str, cwd: Option<&Path>, grace_ms: u64) -> CmdResult {
    let id = store.resolve_job(id, cwd)?;
    let report = store.kill(id, Duration::from_millis(grace_ms))?;
    let deadline = Instant::now() + RECORD_WAIT;
    let job = loop {
        let job = store.load(id)?;
        if job.record.status.is_final() || Instant::now() >= deadline {
            break job;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let r = &job.record;
    let what = match (r.status, &r.reason) {
        (JobStatus::Running, _) => format!(
            "signalled {}; its server has not recorded the end yet",
            named(&job)
        ),
        (status, Some(reason)) => format!("{} {status}: {}", named(&job), one_line(reason)),
        (status, None) => format!("{} {status}", named(&job)),
    };
    let mut out = Out::new();
    out.line(&what)?;
    if !report.survivors.is_empty() {
        let pids: Vec<String> = report.survivors.iter().map(u32::to_string).collect();
        out.line(&format!(
            "still alive after SIGKILL: pid {}",
            pids.join(", ")
        ))?;
    }
    out.flush()?;
    Ok(())
}

/// Removes finished jobs' records and logs; goes on past a job it cannot remove (a running
/// one, an unknown id) and then fails.
pub(crate) fn rm(store: &Store, ids: &[String], cwd: Option<&Path>) -> CmdResult {
    let mut out = Out::new();
    let mut failed = false;
    for prefix in ids {
        match store
            .resolve_job(prefix, cwd)
            .and_then(|id| store.remove(id).map(|()| id))
        {
            Ok(id) => {
                out.line(&format!("removed {id}"))?;
                out.flush()?;
            }
            Err(e) => {
                eprintln!("ptyjobs: {}", one_line(&describe(&e)));
                failed = true;
            }
        }
    }
    if failed {
        return Err(Failure::Reported);
    }
    Ok(())
}

/// Applies the retention limits now and prints what went: every removed id, then the count
/// and the bytes freed.
pub(crate) fn prune(store: &Store) -> CmdResult {
    let report = store.prune();
    let mut out = Out::new();
    for id in &report.removed {
        out.line(&format!("removed {id}"))?;
    }
    let cfg = store.config();
    if report.removed.is_empty() {
        out.line(&format!(
            "nothing to prune (keeping at most {} finished jobs, {} days, {})",
            cfg.keep_jobs,
            (cfg.keep_age.as_secs_f64() / 864.0).round() / 100.0,
            bytes(cfg.keep_bytes)
        ))?;
    } else {
        let n = report.removed.len();
        out.line(&format!(
            "pruned {n} job{}, {} freed",
            if n == 1 { "" } else { "s" },
            bytes(report.bytes)
        ))?;
    }
    out.flush()?;
    Ok(())
}
