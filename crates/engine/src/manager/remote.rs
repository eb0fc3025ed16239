//! Which server controls a job: this one (the job is in its table) or another live one of the
//! state directory, reached through [`crate::control::Remote`].

use std::sync::Arc;

use super::{Found, Inner, Job};
use crate::control::{self, Remote};
use crate::error::{Error, Result};
use crate::job::JobId;
use crate::store::StoredJob;
use crate::sync::lock;

/// Where a control verb acts on a running job.
pub(crate) enum Controlled {
    /// A job of this manager (running or ended).
    Own(Arc<Job>),
    /// A running job of another live server.
    Remote(Remote),
}

impl Inner {
    /// The job `id` for a control verb: this manager's, or (running, its server alive) another
    /// server's, to be asked through its socket.
    ///
    /// # Errors
    /// [`Error::JobNotFound`]; [`Error::NotRunning`] for a job known only from the state
    /// directory that has ended.
    pub(crate) fn controlled(&self, id: JobId) -> Result<Controlled> {
        if let Some(job) = lock(&self.table).jobs.get(&id).cloned() {
            return Ok(Controlled::Own(job));
        }
        // Another server's job found before, its record unchanged since: no read of it.
        let stamp = self.store.as_deref().and_then(|s| s.record_stamp(id));
        if let Some(remote) = stamp.and_then(|stamp| control::known(id, stamp)) {
            return Ok(Controlled::Remote(remote));
        }
        match self.find(id)? {
            Found::Live(job) => Ok(Controlled::Own(job)),
            Found::Stored(job) if job.record.status.is_final() => Err(Error::NotRunning {
                id,
                status: job.record.status,
            }),
            Found::Stored(job) => {
                let remote = self.remote(&job).ok_or(Error::NotOwner {
                    id,
                    server_pid: job.record.server.process.pid,
                })?;
                // The stamp taken before the read: a write meanwhile makes the next look miss.
                if let Some(stamp) = stamp {
                    control::remember(id, stamp, &remote);
                }
                Ok(Controlled::Remote(remote))
            }
        }
    }

    /// Another server's running job found before under a record unchanged since (one `stat`
    /// of it, no read): what an async task may ask about without the blocking pool. `None`
    /// for this manager's jobs and for anything not known so (then [`Self::controlled`]).
    pub(crate) fn known_remote(&self, id: JobId) -> Option<Remote> {
        if lock(&self.table).jobs.contains_key(&id) {
            return None;
        }
        let stamp = self.store.as_deref()?.record_stamp(id)?;
        control::known(id, stamp)
    }

    /// [`Self::controlled`] for a verb that types into the job. Under a policy only this
    /// manager's own jobs take input: another server's job runs outside the policy (or under
    /// another), and typing into its shell would be a way around it.
    ///
    /// # Errors
    /// As [`Self::controlled`]; [`Error::InvalidArgument`] for another server's job under a
    /// policy.
    pub(crate) fn controlled_input(&self, id: JobId) -> Result<Controlled> {
        let found = self.controlled(id)?;
        if matches!(found, Controlled::Remote(_)) && self.config.policy.is_some() {
            return Err(Error::InvalidArgument(format!(
                "job {id} belongs to another ptyjobs server: under a policy, input goes only \
                 to this server's own jobs (it runs outside this policy)"
            )));
        }
        Ok(found)
    }

    /// How to reach the server of `job`, a job known from the state directory, while its
    /// record says running and its server is alive; `None` otherwise.
    pub(crate) fn remote(&self, job: &StoredJob) -> Option<Remote> {
        let store = self.store.as_deref()?;
        let r = &job.record;
        (!r.status.is_final() && job.owner_alive).then(|| {
            Remote::new(
                &store.config().dir,
                &r.server.instance,
                r.id,
                r.server.process,
            )
        })
    }
}
