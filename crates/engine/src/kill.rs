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
    /// Ends a running job (see [`Inner::kill_many`]).
    pub(crate) async fn kill(
        &self,
        id: JobId,
        sig: Signal,
        grace: Duration,
        reason: &str,
    ) -> KillOutcome {
        self.kill_many(&[id], sig, grace, reason).await[0]
    }

    /// Ends running jobs together: `sig` to all, SIGKILL after `grace` to those still there,
    /// then waits until no process of any of them remains (bounded). Signals and checks go
    /// to all jobs at once, so ending a thousand jobs costs a few scans of `/proc`, not a
    /// thousand. Never holds a lock while waiting.
    pub(crate) async fn kill_many(
        &self,
        ids: &[JobId],
        sig: Signal,
        grace: Duration,
        reason: &str,
    ) -> Vec<KillOutcome> {
        let mut outcomes = Vec::with_capacity(ids.len());
        let mut jobs = Vec::new();
        for &id in ids {
            let job = match self.job(id) {
                Ok(job) => job,
                // Known from the state directory only, and ended.
                Err(crate::Error::NotRunning { .. }) => {
                    outcomes.push(KillOutcome::AlreadyTerminated);
                    continue;
                }
                Err(_) => {
                    outcomes.push(KillOutcome::NotFound);
                    continue;
                }
            };
            {
                let mut s = lock(&job.state);
                if s.status.is_final() {
                    outcomes.push(KillOutcome::AlreadyTerminated);
                    continue;
                }
                s.kill_reason.get_or_insert_with(|| reason.to_owned());
            }
            outcomes.push(KillOutcome::Killed);
            jobs.push(job);
        }
        let pids: Vec<u32> = jobs.iter().map(|j| j.pid).collect();
        if pids.is_empty() {
            return outcomes;
        }
        // The process groups first: that is every process of nearly every job, and needs no
        // look at the rest of the system.
        signal::signal_groups(&pids, sig.number());
        if sig != Signal::KILL {
            let deadline = Instant::now() + grace;
            for job in &jobs {
                job.wait_final(deadline.saturating_duration_since(Instant::now()))
                    .await;
            }
        }
        let left: Vec<u32> = jobs
            .iter()
            .filter(|j| !lock(&j.state).status.is_final())
            .map(|j| j.pid)
            .collect();
        if !left.is_empty() {
            // kill_jobs scans /proc for the sessions: a blocking read, kept off the runtime.
            let _ =
                tokio::task::spawn_blocking(move || signal::kill_jobs(&left, libc::SIGKILL)).await;
            let deadline = Instant::now() + AFTER_KILL;
            for job in &jobs {
                job.wait_final(deadline.saturating_duration_since(Instant::now()))
                    .await;
            }
        }
        // Verify: processes the job put in process groups of their own, still in its session,
        // get the same treatment (signal, grace, SIGKILL).
        let survivors = |since| {
            let pids = pids.clone();
            async move {
                tokio::task::spawn_blocking(move || signal::live_processes(&pids, since))
                    .await
                    .unwrap_or_default()
            }
        };
        let mut rest = survivors(Instant::now()).await;
        if !rest.is_empty() && sig != Signal::KILL {
            signal::signal_processes(&rest, sig.number());
            let deadline = Instant::now() + grace;
            while !rest.is_empty() && Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(20)).await;
                rest = survivors(Instant::now()).await;
            }
        }
        let deadline = Instant::now() + AFTER_KILL;
        while !rest.is_empty() && Instant::now() < deadline {
            signal::signal_processes(&rest, libc::SIGKILL);
            tokio::time::sleep(Duration::from_millis(10)).await;
            rest = survivors(Instant::now()).await;
        }
        outcomes
    }
}

impl Drop for Inner {
    /// A manager that goes away takes its jobs with it: no orphans.
    fn drop(&mut self) {
        let t = lock(&self.table);
        let running: Vec<u32> = t
            .jobs
            .values()
            .filter(|j| {
                let mut s = lock(&j.state);
                let running = !s.status.is_final();
                if running {
                    s.kill_reason
                        .get_or_insert_with(|| "manager dropped".to_owned());
                }
                running
            })
            .map(|j| j.pid)
            .collect();
        signal::kill_jobs(&running, libc::SIGKILL);
    }
}

impl JobManager {
    /// Ends a job: `signal` to its process group (and session), SIGKILL after `grace` (default
    /// the configured grace), and returns once no process of the job remains. Unknown ids
    /// answer [`KillOutcome::NotFound`], ended ones [`KillOutcome::AlreadyTerminated`].
    ///
    /// # Errors
    /// [`crate::Error::NotOwner`] for a running job of another live server sharing the state
    /// directory: only that server controls it.
    pub async fn kill(
        &self,
        id: JobId,
        signal: Signal,
        grace: Option<Duration>,
    ) -> crate::Result<KillOutcome> {
        if let Err(e @ crate::Error::NotOwner { .. }) = self.inner.job(id) {
            return Err(e);
        }
        let grace = grace.unwrap_or(self.inner.config.kill_grace);
        Ok(self
            .inner
            .kill(id, signal, grace, "killed by request")
            .await)
    }

    /// Kills every running job (TERM, grace, KILL), all at once, and waits for them.
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
        self.inner
            .kill_many(&running, Signal::TERM, grace, "shutdown")
            .await;
    }
}
