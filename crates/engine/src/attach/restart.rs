//! A restart request on the attach socket (see [`super::AttachServer`]): `ptyjobs restart`
//! has a live server start the new job, since a job started by the CLI would die with it.

use super::{AttachReply, AttachRestart};
use crate::error::Error;
use crate::job::JobId;
use crate::manager::JobManager;

/// Restarts the job `job_id` names (a full id) with `change`; the answer carries the new job,
/// or why not (the engine's message).
pub(super) async fn restart(
    jobs: &JobManager,
    job_id: &str,
    change: AttachRestart,
) -> Result<AttachReply, String> {
    let id: JobId = job_id.parse().map_err(|e: Error| e.to_string())?;
    let job = jobs
        .restart(id, change.command, change.env)
        .await
        .map_err(|e| e.to_string())?;
    Ok(AttachReply {
        ok: true,
        error: None,
        size: Some(job.size),
        job: Some(Box::new(job)),
    })
}
