//! # ptyjobs-engine
//!
//! Runs shell commands as background jobs, each under its own pseudo-terminal, and gives their
//! output back as clean text: a vt100 emulator resolves colours, `\r` redraws and cursor moves
//! into what a person would have seen. The engine knows nothing of MCP or Node; the `ptyjobs`
//! server and the Node binding are thin faces over [`JobManager`].
//!
//! ```no_run
//! # async fn demo() -> ptyjobs_engine::Result<()> {
//! use std::time::Duration;
//! use ptyjobs_engine::{EngineConfig, JobManager, JobSpec};
//!
//! let jobs = JobManager::new(EngineConfig::default())?; // inside a tokio runtime
//! let job = jobs.execute(JobSpec::new("printf '\\033[31mred\\033[0m\\n'; exit 3"))?;
//! let done = jobs.wait(job.id, Some(Duration::from_secs(10))).await?;
//! assert_eq!(done.exit_code, Some(3));
//! assert_eq!(jobs.output(job.id, None, None)?.output, "red");
//! jobs.shutdown().await;
//! # Ok(()) }
//! ```
#![deny(missing_docs)]

mod attach;
mod bounded;
mod config;
mod control;
mod ensure;
mod error;
mod fastpath;
mod follow;
mod input;
mod input_queue;
mod interact;
mod job;
mod jobenv;
mod keep;
mod keys;
mod kill;
mod manager;
mod names;
mod output;
mod pipeline;
mod policy;
mod ports;
mod procs;
mod readiness;
mod reads;
mod restart;
mod search;
mod services;
mod signal;
mod start;
mod stop;
mod store;
mod sync;
mod sys;
mod tap;
mod terminal;
mod wait;

pub use attach::{
    ATTACH_CONTROL_VERSION, ATTACH_RESTART_VERSION, ATTACH_START_VERSION, ATTACH_VERSION,
    AttachHello, AttachReply, AttachRestart, AttachServer, AttachStart, StartReply,
    attach_keys_frame, attach_resize_frame, attach_socket_path,
};
pub use config::{EngineConfig, prefer_prompt_wakeups, raise_fd_limit};
pub use control::{ControlBytes, ControlOp, ControlWait};
pub use ensure::Started;
pub use error::{Error, NameTaken, Result};
pub use follow::{Follow, Followed};
pub use interact::{Interaction, typed_input};
pub use job::{
    InputMode, InputWait, JobId, JobInfo, JobSpec, JobStatus, KEEP_TTL_REASON, Listener,
};
pub use jobenv::JOB_ID_ENV;
pub use keep::{PROGRAM_ENV, keep_job, run_keeper};
pub use keys::encode_keys;
pub use kill::MAX_KILL_GRACE;
pub use manager::{JobEvent, JobManager};
pub use names::MAX_NAME_BYTES;
pub use output::OutputSlice;
pub use policy::{DEFAULT_PROFILE, JobPolicy, Policy, RefusedCall};
pub use ports::{PortHolder, url_of};
pub use procs::process_scans;
pub use regex::Regex;
pub use search::{SearchMatch, SearchResult, compile_pattern};
pub use services::{
    FileError as ServiceFileError, LAUNCH_JSON, PROCFILE, Service, ServiceDef, ServiceStart,
    beside as services_beside, load as load_services,
};
pub use signal::{KillOutcome, KillReport, Signal};
pub use store::{
    JobRecord, ProcessRef, PruneReport, SavedScreen, ServerRef, Store, StoreConfig, StoredJob,
};
pub use sys::launcher_if_asked;
pub use sys::sandbox::{
    SandboxSpec, Support as SandboxSupport, beside_this_library, exec_sandboxed,
    support as sandbox_support,
};
pub use terminal::{ScreenSnapshot, Terminal};
pub use wait::{WaitOutcome, WaitProgress, WaitReason, WaitSpec};
