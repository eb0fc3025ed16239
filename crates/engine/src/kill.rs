//! Ending jobs: the kill sequence (signal, grace, SIGKILL, verify), shutdown, and dropping a
//! manager. The signals themselves are in [`crate::signal`]; the status change on exit stays in
//! the manager (`finish`).

use std::time::{Duration, Instant};

use crate::job::JobId;
use crate::manager::{Inner, JobManager, lock};
use crate::signal::{self, KillOutcome, Signal};

/// How long a kill waits for the job's processes after SIGKILL before it gives up waiting.
const AFTER_KILL: Duration = Duration::from_secs(2);

impl Inner {
    /// Ends a running job: `sig`, then SIGKILL after `grace`, then waits until no process of
    /// it remains (bounded). Never holds a lock while waiting.
    pub(crate) async fn kill(
        &self,
        id: JobId,
        sig: Signal,
        grace: Duration,
        reason: &str,
    ) -> KillOutcome {
        let Ok(job) = self.job(id) else {
            return KillOutcome::NotFound;
        };
        {
            let mut s = lock(&job.state);
            if s.status.is_final() {
                return KillOutcome::AlreadyTerminated;
            }
            s.kill_reason.get_or_insert_with(|| reason.to_owned());
        }
        signal::kill_job_processes(job.pid, sig.number());
        if sig != Signal::KILL && !job.wait_final(grace).await {
            signal::kill_job_processes(job.pid, libc::SIGKILL);
        }
        job.wait_final(AFTER_KILL).await;
        // Processes that left the terminal but stayed in the session outlive the job's EOF.
        let deadline = Instant::now() + AFTER_KILL;
        while !signal::job_processes(job.pid).is_empty() && Instant::now() < deadline {
            signal::kill_job_processes(job.pid, libc::SIGKILL);
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        KillOutcome::Killed
    }
}

impl Drop for Inner {
    /// A manager that goes away takes its jobs with it: no orphans.
    fn drop(&mut self) {
        let t = lock(&self.table);
        for job in t.jobs.values() {
            if !lock(&job.state).status.is_final() {
                signal::kill_job_processes(job.pid, libc::SIGKILL);
            }
        }
    }
}

impl JobManager {
    /// Ends a job: `signal` to its process group (and session), SIGKILL after `grace` (default
    /// the configured grace), and returns once no process of the job remains. Unknown ids
    /// answer [`KillOutcome::NotFound`].
    pub async fn kill(&self, id: JobId, signal: Signal, grace: Option<Duration>) -> KillOutcome {
        let grace = grace.unwrap_or(self.inner.config.kill_grace);
        self.inner
            .kill(id, signal, grace, "killed by request")
            .await
    }

    /// Kills every running job (TERM, grace, KILL) concurrently and waits for them.
    pub async fn shutdown(&self) {
        let running: Vec<JobId> = {
            let t = lock(&self.inner.table);
            t.jobs
                .values()
                .filter(|j| !lock(&j.state).status.is_final())
                .map(|j| j.id)
                .collect()
        };
        let grace = self.inner.config.kill_grace;
        let kills = running.into_iter().map(|id| {
            let inner = self.inner.clone();
            tokio::spawn(async move { inner.kill(id, Signal::TERM, grace, "shutdown").await })
        });
        for k in kills.collect::<Vec<_>>() {
            let _ = k.await;
        }
    }
}
