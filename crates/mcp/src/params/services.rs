//! The services a project describes, as list_jobs (`services: true`) and execute_command
//! (`service`) answer them.

use ptyjobs_engine::{Service, ServiceStart};
use schemars::JsonSchema;
use serde::Serialize;

use super::Status;
use crate::budget;

/// One service of the project's Procfile or .claude/launch.json.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ServiceSummary {
    /// Its name: start it with execute_command `{"service": name}`.
    pub name: String,
    /// The file that defines it, and where in it (`line 2`, `configurations[0]`).
    pub source: String,
    /// The command line it runs (a long one is cut after 512 bytes).
    pub command: String,
    /// The directory it runs in.
    pub cwd: String,
    /// The port it listens on when ready, if its definition says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    /// True when it is given a free port as PORT.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub auto_port: bool,
    /// The running job of this name in its directory, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job_id: Option<String>,
    /// That job's status (absent when no job runs it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<Status>,
}

impl From<Service> for ServiceSummary {
    fn from(s: Service) -> Self {
        let d = s.def;
        Self {
            source: budget::shorten(
                format!("{} ({})", d.source.display(), d.at),
                budget::LIST_TEXT_BYTES,
            ),
            command: budget::shorten(d.command, budget::LIST_TEXT_BYTES),
            cwd: budget::shorten(d.cwd.display().to_string(), budget::LIST_TEXT_BYTES),
            name: budget::shorten(d.name, budget::LIST_TEXT_BYTES),
            port: d.port,
            auto_port: d.auto_port,
            job_id: s.job.as_ref().map(|j| j.id.to_string()),
            status: s.job.map(|j| j.status.into()),
        }
    }
}

/// What execute_command did with a `service`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ServiceStarted {
    /// The service's name (also the job's name).
    pub name: String,
    /// The file that defines it, and where in it.
    pub source: String,
    /// The command line it runs (a long one is cut after 512 bytes).
    pub command: String,
    /// True when a job already ran it and nothing was started.
    pub reused: bool,
    /// The port `outcome` waited for, if the service has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
}

impl From<&ServiceStart> for ServiceStarted {
    fn from(s: &ServiceStart) -> Self {
        Self {
            name: budget::shorten(s.def.name.clone(), budget::LIST_TEXT_BYTES),
            source: budget::shorten(
                format!("{} ({})", s.def.source.display(), s.def.at),
                budget::LIST_TEXT_BYTES,
            ),
            command: budget::shorten(s.def.command.clone(), budget::LIST_TEXT_BYTES),
            reused: s.started.reused,
            port: s.port,
        }
    }
}
