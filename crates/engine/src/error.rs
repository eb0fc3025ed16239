//! The engine's one error type.

use crate::job::JobId;

/// Everything that can go wrong in the engine. Callers branch on the variant:
/// the MCP face maps each to a protocol answer, the Node face to a stable `code`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No job with this id exists (or it was evicted from the finished-job list).
    #[error("no job with id {0}: call list_jobs to see the known jobs")]
    JobNotFound(JobId),
    /// The text given as a job id is not a UUID.
    #[error("invalid job id {0:?}: a job id is the UUID that execute_command returned")]
    InvalidJobId(String),
    /// The job has already finished, so it cannot take input, be resized, etc.
    #[error("job {id} is not running (status: {status}); start a new job instead")]
    NotRunning {
        /// The job.
        id: JobId,
        /// Its final status.
        status: crate::JobStatus,
    },
    /// The job belongs to another live ptyjobs server sharing the state directory: only that
    /// server controls it.
    #[error(
        "job {id} belongs to another ptyjobs server (pid {server_pid}) that is still running: \
         only that server, or `ptyjobs kill` from a terminal, can control it"
    )]
    NotOwner {
        /// The job.
        id: JobId,
        /// The pid of the server that owns it.
        server_pid: u32,
    },
    /// A kill of a job known from its record signalled nothing because no process could be
    /// proven to be the job's on this platform (as opposed to [`Error::NotRunning`]: its
    /// processes are gone). `reason` says what was missing.
    #[error("nothing was signalled for job {id}: {reason}")]
    Unproven {
        /// The job.
        id: JobId,
        /// Why nothing could be proven.
        reason: String,
    },
    /// The job could not be started (PTY allocation, fork/exec, ...).
    #[error("could not start the job: {0}")]
    Spawn(String),
    /// A configured limit (running jobs, PTYs available) was reached.
    #[error("limit reached: {0}")]
    LimitReached(String),
    /// A caller-supplied argument is unusable (empty command, bad size, bad cwd, bad signal...).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// An operating-system error outside the cases above.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
}

/// The engine's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
