//! Kept jobs: jobs that outlive the process that asked for them (issue 23).
//!
//! One keeper per state directory holds every kept job: `ptyjobs keeper --state-dir D`, a
//! headless [`JobManager`](crate::JobManager) with the same store, serving its jobs on its
//! attach socket like any server (so every other process finds it from a job's record, and a
//! kept job is a job of "another live server" to them). The same engine code runs them:
//! terminal model, transcript, disk log, input awareness, the kill path.
//!
//! - **Rendezvous and one keeper**: `<state>/keeper.lock`, which the keeper holds locked for its
//!   whole life and into which it writes its instance. A starter that finds it locked reads the
//!   instance and connects to that keeper's socket; else it starts a keeper (detached: a new
//!   session, stdio to /dev/null, its log in `<state>/keeper.log`) and polls, with a deadline.
//!   Two starters racing start two keepers; one takes the lock, the other leaves at once.
//! - **A start request** (a hello of version [`crate::ATTACH_START_VERSION`] with
//!   [`crate::AttachStart`]) runs through [`JobManager::ensure`](crate::JobManager::ensure) in
//!   the keeper: names, ensure and every check are the same as anywhere.
//! - **Exit**: the keeper leaves when it has had no running job for a few seconds, refusing a
//!   start that races its exit (`closing`: its starter starts a new keeper).
//! - **Limits**: each kept job has a TTL (its keeper kills it when it runs out, reason
//!   [`crate::KEEP_TTL_REASON`]), and is listed `kept` with `keep_until`.
//! - **Faults**: a keeper killed with SIGKILL closes its terminals: the jobs get the hang-up,
//!   and the next server or keeper on the state directory ends what ignored it and records
//!   them `killed` ("server stopped"), as for any server.

mod client;
mod daemon;
mod rendezvous;

pub use client::keep_job;
pub(crate) use client::start_kept;
pub use daemon::run_keeper;

/// The rendezvous file in the state directory.
const LOCK_FILE: &str = "keeper.lock";
/// The keeper's log in the state directory (its stderr).
const LOG_FILE: &str = "keeper.log";
/// The environment variable naming the `ptyjobs` executable when the face does not
/// ([`crate::EngineConfig::program`]).
pub const PROGRAM_ENV: &str = "PTYJOBS_BIN";
