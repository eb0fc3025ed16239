//! Names as keys: every start goes through here. A named start is refused while a live job
//! of the state directory (this server's or another's) holds the name in the same working
//! directory; `ensure` answers with that job instead when it runs the same command. Also the
//! lookups that turn a name into a job id.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::job::{JobId, JobInfo, JobSpec};
use crate::manager::JobManager;
use crate::names::{self, NameLock};
use crate::sync::lock;

/// What [`JobManager::ensure`] did.
#[derive(Debug, Clone)]
pub struct Started {
    /// The job now running under the spec's name (new or reused).
    pub info: JobInfo,
    /// True when a live job already ran the same command under that (name, cwd) and nothing
    /// was started.
    pub reused: bool,
}

impl JobManager {
    /// Starts `spec.command` under a new PTY and returns at once (see [`Self::ensure`]: a named
    /// start is refused while a live job holds the name in the same directory).
    ///
    /// All or nothing: validate → reserve a running slot → spawn → start the reader → record →
    /// insert into the table. A failure after the spawn kills and reaps the child and releases
    /// the slot, so nothing of a failed start remains.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an empty command, a bad size, a `cwd` that is not a
    /// directory or a bad name; [`Error::NameTaken`] when a live job holds the name;
    /// [`Error::LimitReached`] when `max_running` jobs run or no PTY is left;
    /// [`Error::Spawn`] when the shell cannot be started.
    pub fn execute(&self, spec: JobSpec) -> Result<JobInfo> {
        Ok(self.ensure(spec)?.info)
    }

    /// Starts `spec`, with its name as a key: among the live jobs of the state directory
    /// (every server sharing it) a name is unique per canonical working directory.
    ///
    /// When a live job holds (`spec.name`, `spec.cwd`): with `spec.ensure` and the same
    /// command, answers with that job (`reused: true`, nothing started); otherwise refuses
    /// with [`Error::NameTaken`] naming it. The check and the start are one step for every
    /// thread and every process sharing the state directory (a lock file in it), so racing
    /// ensures of one name start exactly one job. A job started by a restart does not count
    /// the job it replaces (`spec.replaces`).
    ///
    /// With `spec.keep` the job is started by the state directory's keeper instead (a
    /// process that outlives this one, started when none runs: this call then blocks up to a
    /// few hundred milliseconds), through this same verb there; see `crate::keep`.
    ///
    /// # Errors
    /// As [`Self::execute`]; [`Error::InvalidArgument`] for `ensure` without a name. With
    /// `keep`: `Unsupported` on Windows, [`Error::InvalidArgument`] under a policy (the
    /// keeper would run the job outside it), and the errors of the keeper's start.
    pub fn ensure(&self, spec: JobSpec) -> Result<Started> {
        // A kept job runs in the state directory's keeper (started when none runs; blocking).
        if spec.keep && !crate::attach::start::is_keeper() {
            if self.inner.config.policy.is_some() {
                // Fail closed: the keeper runs without this server's policy, so a kept job
                // would be a way around it.
                return Err(Error::InvalidArgument(
                    "keep is not offered under a policy: the keeper would run the job outside \
                     it (leave out keep)"
                        .into(),
                ));
            }
            let (info, reused) = crate::keep::start_kept(self, spec)?;
            return Ok(Started { info, reused });
        }
        let Some(name) = spec.name.clone() else {
            if spec.ensure {
                return Err(Error::InvalidArgument(
                    "ensure needs a name: it reuses the live job with that name".into(),
                ));
            }
            return self.fresh(spec);
        };
        names::check(&name)?;
        let dir = names::canonical(&match &spec.cwd {
            Some(dir) => dir.clone(),
            None => std::env::current_dir()?,
        });
        // This server's own live job answers without the lock or the state directory: names
        // are unique, so no other can hold the name while it lives.
        if let Some(held) = self.own_holder(&name, &dir, spec.replaces) {
            return decide(held, spec);
        }
        let _lock = NameLock::take(self.inner.store.as_deref())?;
        if let Some(held) = self.holder(&name, &dir, spec.replaces) {
            return decide(held, spec);
        }
        self.fresh(spec)
    }

    /// Starts `spec` (the name, if any, already checked).
    fn fresh(&self, spec: JobSpec) -> Result<Started> {
        Ok(Started {
            info: self.start(spec)?,
            reused: false,
        })
    }

    /// Every known job (no ports: a lookup by name reads only names, directories, statuses).
    fn names_known(&self) -> Vec<JobInfo> {
        self.known().into_iter().map(|(j, _)| j).collect()
    }

    /// This manager's live job that holds `name` in `dir`, but `skip`.
    fn own_holder(&self, name: &str, dir: &Path, skip: Option<JobId>) -> Option<JobInfo> {
        let jobs: Vec<_> = {
            let t = lock(&self.inner.table);
            t.jobs
                .values()
                .filter(|j| j.name.as_deref() == Some(name) && Some(j.id) != skip)
                .cloned()
                .collect()
        };
        let (job, mut held) = jobs
            .iter()
            .map(|j| (j, j.info()))
            .find(|(_, info)| names::holds(info, name, dir))?;
        crate::ports::fill(std::slice::from_mut(&mut held), vec![Some(job.target())]);
        Some(held)
    }

    /// The live job of the state directory (any server's) that holds `name` in `dir`, but
    /// `skip`.
    fn holder(&self, name: &str, dir: &Path, skip: Option<JobId>) -> Option<JobInfo> {
        let (mut held, target) = self
            .known()
            .into_iter()
            .find(|(j, _)| Some(j.id) != skip && names::holds(j, name, dir))?;
        // Its ports, for the answer or the refusal: one job's, not a scan of every job's.
        crate::ports::fill(std::slice::from_mut(&mut held), vec![target]);
        Some(held)
    }

    /// The job a name stands for: the live job with that name (in `cwd` when given; when it is
    /// live in several directories, the only one of them this manager runs), else the newest
    /// ended one, among every job this manager knows (with a state directory, those
    /// of other servers sharing it too).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the name is live in several directories and neither
    /// `cwd` nor ownership says which (the message lists them); [`Error::UnknownName`] when no job has it (the
    /// message lists the live names).
    pub fn resolve(&self, name: &str, cwd: Option<&Path>) -> Result<JobId> {
        names::pick(&self.names_known(), name, cwd)
    }

    /// A job reference as a person or a model gives it: a job id, or a name (see
    /// [`Self::resolve`]). Blocking (a name reads the state directory).
    ///
    /// # Errors
    /// As [`Self::resolve`].
    pub fn resolve_job(&self, id_or_name: &str, cwd: Option<&Path>) -> Result<JobId> {
        names::refer(id_or_name, cwd, || self.names_known())
    }

    /// [`Self::resolve_job`] off the async workers (a full job id is answered at once).
    ///
    /// # Errors
    /// As [`Self::resolve`].
    pub async fn resolve_job_async(&self, id_or_name: &str, cwd: Option<PathBuf>) -> Result<JobId> {
        if let Ok(id) = id_or_name.parse::<JobId>() {
            return Ok(id);
        }
        let this = self.clone();
        let text = id_or_name.to_owned();
        tokio::task::spawn_blocking(move || this.resolve_job(&text, cwd.as_deref()))
            .await
            .map_err(|e| Error::Io(std::io::Error::other(e.to_string())))?
    }
}

/// What a start does when `held` holds its name: reuse it (an ensure of the same command) or
/// refuse, naming it.
fn decide(held: JobInfo, spec: JobSpec) -> Result<Started> {
    if !spec.ensure {
        return Err(names::taken(held, None));
    }
    if held.command == spec.command {
        return Ok(Started {
            info: held,
            reused: true,
        });
    }
    Err(names::taken(held, Some(spec.command)))
}
