//! restart_job.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;

/// Input of restart_job.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct RestartParams {
    #[serde(flatten)]
    pub job: super::JobIdParams,
    /// A new command line. Default: the job's.
    #[serde(default)]
    pub command: Option<String>,
    /// New extra environment. Default: the job's.
    #[serde(default)]
    pub env: Option<BTreeMap<String, String>>,
    /// Answer when the new job has ended.
    #[serde(default)]
    pub wait: Option<bool>,
    /// Answer once the new job listens on this port (as wait_for_job's `port`).
    #[serde(default)]
    #[schemars(range(min = 1, max = 65535))]
    pub port: Option<u16>,
    /// Answer once the new job listens on any port (as wait_for_job's).
    #[serde(default)]
    pub listening: bool,
    /// Answer once GET of this URL answers < 500 (as wait_for_job's `url`).
    #[serde(default)]
    pub url: Option<String>,
}
