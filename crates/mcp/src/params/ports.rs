//! The ports of a job and the holder of a port, as the answers show them.

use ptyjobs_engine::{Listener, PortHolder};
use schemars::JsonSchema;
use serde::Serialize;

/// A TCP listener of one of the job's processes.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Port {
    /// The port.
    pub port: u16,
    /// The address bound (`0.0.0.0`, `::` = every address).
    pub address: String,
    /// The process that listens.
    pub pid: u32,
}

/// Each listener as a [`Port`].
pub fn ports(listeners: Vec<Listener>) -> Vec<Port> {
    listeners
        .into_iter()
        .map(|l| Port {
            port: l.port,
            address: l.address.to_string(),
            pid: l.pid,
        })
        .collect()
}

/// The process that holds a port the job was to listen on.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Holder {
    /// Its process id.
    pub pid: u32,
    /// Its command line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Its working directory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// The ptyjobs job it belongs to, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job_id: Option<String>,
    /// That job's name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job_name: Option<String>,
}

impl From<PortHolder> for Holder {
    fn from(h: PortHolder) -> Self {
        Self {
            pid: h.pid,
            command: h
                .command
                .map(|c| crate::budget::shorten(c, crate::budget::LIST_TEXT_BYTES)),
            cwd: h.cwd.map(|c| c.display().to_string()),
            job_id: h.job_id.map(|j| j.to_string()),
            job_name: h.job_name,
        }
    }
}
