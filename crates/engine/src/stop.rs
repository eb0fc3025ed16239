//! Ending jobs: `kill`, `shutdown`, a job's timeout and a manager that goes away all end a job
//! through the one kill path ([`crate::kill`]), which proves what it signals.

use std::time::{Duration, Instant};

use crate::control::{ControlOp, SLACK};
use crate::job::JobId;
use crate::kill::{AFTER_KILL, Target, killer, signal_now};
use crate::manager::{Controlled, Inner, JobManager};
use crate::signal::{KillOutcome, KillReport, Signal};
use crate::sync::lock;
use crate::sys::sig;

impl Inner {
    /// Ends a running job (see [`Inner::kill_many`]).
    pub(crate) async fn kill(
        &self,
        id: JobId,
        sig: Signal,
        grace: Duration,
        reason: &str,
    ) -> KillReport {
        self.kill_many(&[id], sig, grace, reason)
            .await
            .pop()
            .unwrap_or_else(|| KillReport::of(KillOutcome::NotFound))
    }

    /// Ends running jobs through the [`killer`] (they join the kills in progress), then waits
    /// (bounded) until each is final, and answers what was verified. Never holds a lock while
    /// waiting.
    pub(crate) async fn kill_many(
        &self,
        ids: &[JobId],
        sig: Signal,
        grace: Duration,
        reason: &str,
    ) -> Vec<KillReport> {
        let grace = self.config.grace(Some(grace));
        let mut reports: Vec<Option<KillReport>> = Vec::with_capacity(ids.len());
        let mut jobs = Vec::new();
        // Jobs another kill is ending already (another caller, another server's request): they
        // are answered `already_terminated` once final, so that of two kills exactly one says
        // it killed the job.
        let mut joined = Vec::new();
        for &id in ids {
            let job = match self.job(id) {
                Ok(job) => job,
                // Known from the state directory only, and ended.
                Err(crate::Error::NotRunning { .. }) => {
                    reports.push(Some(KillReport::of(KillOutcome::AlreadyTerminated)));
                    continue;
                }
                Err(_) => {
                    reports.push(Some(KillReport::of(KillOutcome::NotFound)));
                    continue;
                }
            };
            // The job ends by our hand from here on: its status will say so.
            let killing = {
                let mut s = lock(&job.state);
                let killing = s.killing();
                if !s.set_kill_reason(reason) {
                    reports.push(Some(KillReport::of(KillOutcome::AlreadyTerminated)));
                    continue;
                }
                killing
            };
            if killing {
                reports.push(Some(KillReport::of(KillOutcome::AlreadyTerminated)));
                joined.push(job);
                continue;
            }
            reports.push(None);
            jobs.push(job);
        }
        if jobs.is_empty() {
            let deadline = Instant::now() + grace + AFTER_KILL;
            for job in &joined {
                job.wait_final(deadline.saturating_duration_since(Instant::now()))
                    .await;
            }
            return reports.into_iter().flatten().collect();
        }
        let targets: Vec<Target> = jobs.iter().map(|j| Target::own(j.id, &j.leader)).collect();
        let mut ended = Vec::with_capacity(targets.len());
        for reply in killer::submit(targets, sig.number(), grace) {
            // No answer only if the killer failed (a bug, logged by the panic hook).
            ended.push(reply.await.unwrap_or_default());
        }
        // No process is left: the reader drains the terminal to its end and records the exit.
        let deadline = Instant::now() + AFTER_KILL;
        for job in jobs.iter().chain(&joined) {
            if !job
                .wait_final(deadline.saturating_duration_since(Instant::now()))
                .await
            {
                tracing::warn!("job {} is not final after its kill", job.id);
            }
        }
        let mut ended = ended.into_iter();
        reports
            .into_iter()
            .map(|r| {
                r.unwrap_or_else(|| KillReport {
                    outcome: KillOutcome::Killed,
                    survivors: ended.next().unwrap_or_default().survivors,
                })
            })
            .collect()
    }
}

impl Drop for Inner {
    /// A manager that goes away takes its jobs with it: no orphans. SIGKILL, not waited for
    /// (a drop must not block).
    fn drop(&mut self) {
        let targets: Vec<Target> = lock(&self.table)
            .jobs
            .values()
            .filter(|j| lock(&j.state).set_kill_reason("manager dropped"))
            .map(|j| Target::own(j.id, &j.leader))
            .collect();
        if !targets.is_empty() {
            signal_now(&targets, sig::SIGKILL);
        }
    }
}

impl JobManager {
    /// Ends a job: `signal` to every process proven to be the job's, SIGKILL after `grace`
    /// (default the configured grace; capped by [`crate::EngineConfig::max_kill_grace`]), then
    /// checks that none is left. Unknown ids answer [`KillOutcome::NotFound`], ended ones
    /// [`KillOutcome::AlreadyTerminated`]; processes that outlived SIGKILL are named in
    /// [`KillReport::survivors`].
    ///
    /// A running job of another live server sharing the state directory is killed by that
    /// server, through its kill path (asked over its attach socket).
    ///
    /// # Errors
    /// For another server's job: that server's error, [`crate::Error::NotOwner`] when it does
    /// not serve control requests (no attach socket), [`crate::Error::Io`] when its socket is
    /// refused (not a socket of this user) or it does not answer.
    pub async fn kill(
        &self,
        id: JobId,
        signal: Signal,
        grace: Option<Duration>,
    ) -> crate::Result<KillReport> {
        let inner = self.inner.clone();
        let owner = tokio::task::spawn_blocking(move || inner.controlled(id)).await;
        if let Ok(Ok(Controlled::Remote(r))) = owner {
            // The job's own server kills it, through its kill path (it caps the grace too).
            let op = ControlOp::Kill {
                signal: signal.number(),
                grace_ms: grace.map(|g| u64::try_from(g.as_millis()).unwrap_or(u64::MAX)),
            };
            let within = self.inner.config.grace(grace) + AFTER_KILL + SLACK;
            return match r.ask(&op, within).await {
                // Its server is gone, and the job with it.
                Err(crate::Error::NotRunning { .. }) => {
                    Ok(KillReport::of(KillOutcome::AlreadyTerminated))
                }
                answer => answer,
            };
        }
        let grace = self.inner.config.grace(grace);
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
                .filter(|j| !lock(&j.state).is_final())
                .map(|j| j.id)
                .collect()
        };
        let grace = self.inner.config.grace(None);
        self.inner
            .kill_many(&running, Signal::TERM, grace, "shutdown")
            .await;
    }
}
