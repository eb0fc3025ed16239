//! Names as keys: ensure (answer with the live job that already runs a name) and name lookup.
//!
//! Placeholder contract for the services work (issue 22); filled in by the names change.

use std::path::Path;

use crate::error::{Error, Result};
use crate::job::{JobId, JobInfo, JobSpec};
use crate::manager::JobManager;

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
    /// Starts `spec`, or with `spec.ensure` answers with the live job that holds
    /// (`spec.name`, `spec.cwd`) and runs the same command.
    ///
    /// # Errors
    /// As [`JobManager::execute`].
    pub fn ensure(&self, spec: JobSpec) -> Result<Started> {
        Ok(Started {
            info: self.execute(spec)?,
            reused: false,
        })
    }

    /// The job a name stands for: the live job with that name (in `cwd` when given), else the
    /// newest ended one.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when no job has that name (the names change may add its own
    /// variant).
    pub fn resolve(&self, name: &str, cwd: Option<&Path>) -> Result<JobId> {
        let _ = cwd;
        Err(Error::InvalidArgument(format!("no job is named {name:?}")))
    }
}
