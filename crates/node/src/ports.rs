//! The ports of a job as the binding hands them out: its TCP listeners, and the holder of a
//! port it was to listen on.

use napi_derive::napi;
use ptyjobs_engine as engine;

/// A TCP listener of one of a job's processes.
#[napi(object)]
pub struct Port {
    /// The port.
    pub port: u32,
    /// The address bound (`0.0.0.0` or `::`: every address).
    pub address: String,
    /// The process that listens.
    pub pid: u32,
}

pub(crate) fn ports(listeners: Vec<engine::Listener>) -> Vec<Port> {
    listeners
        .into_iter()
        .map(|l| Port {
            port: u32::from(l.port),
            address: l.address.to_string(),
            pid: l.pid,
        })
        .collect()
}

/// The process that holds a port a job was to listen on (`port_taken`).
#[napi(object)]
pub struct PortHolder {
    /// Its process id.
    pub pid: u32,
    /// Its command line, when readable.
    pub command: Option<String>,
    /// Its working directory, when readable.
    pub cwd: Option<String>,
    /// The ptyjobs job it belongs to, if any.
    pub job_id: Option<String>,
    /// That job's name.
    pub job_name: Option<String>,
}

impl From<engine::PortHolder> for PortHolder {
    fn from(h: engine::PortHolder) -> Self {
        Self {
            pid: h.pid,
            command: h.command,
            cwd: h.cwd.map(|c| c.to_string_lossy().into_owned()),
            job_id: h.job_id.map(|j| j.to_string()),
            job_name: h.job_name,
        }
    }
}
