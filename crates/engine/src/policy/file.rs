//! The policy file as written: TOML read with serde, every table closed to unknown keys, and
//! each value kept with its place in the file so an error can name the line.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use toml::Spanned;

/// The whole file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPolicy {
    /// Profiles `execute_command` may name besides `default`.
    #[serde(default)]
    pub agent_profiles: Vec<Spanned<String>>,
    pub profiles: Spanned<BTreeMap<String, Spanned<RawProfile>>>,
}

/// One `[profiles.NAME]` table.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawProfile {
    #[serde(default)]
    pub write: Vec<Spanned<String>>,
    pub read: Option<Vec<Spanned<String>>>,
    pub network: Option<Spanned<RawNetwork>>,
    #[serde(default)]
    pub unix_sockets: Vec<Spanned<String>>,
    pub exec: Option<Vec<Spanned<String>>>,
    #[serde(default)]
    pub watch: Vec<Spanned<String>>,
    pub enforce: Option<Spanned<String>>,
}

/// `network = "off" | "on" | { connect = [...], bind = [...] }`.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(super) enum RawNetwork {
    Word(String),
    Ports(RawPorts),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPorts {
    #[serde(default)]
    pub connect: Vec<u16>,
    #[serde(default)]
    pub bind: Vec<u16>,
}

/// Where an error is: the file and the line of a byte offset in its text.
pub(super) struct Place<'a> {
    pub file: &'a Path,
    pub text: &'a str,
}

impl Place<'_> {
    /// `FILE:LINE: key: message` for the value spanning from byte `at`.
    pub fn error(&self, at: usize, key: &str, message: impl std::fmt::Display) -> String {
        let line = self.text[..at.min(self.text.len())].matches('\n').count() + 1;
        format!(
            "policy file {}, line {line}, key {key}: {message}",
            self.file.display()
        )
    }
}

/// Parses `text` (the contents of `file`).
pub(super) fn parse(place: &Place<'_>) -> Result<RawPolicy, String> {
    toml::from_str(place.text).map_err(|e| {
        let at = e.span().map_or(0, |s| s.start);
        let line = place.text[..at.min(place.text.len())].matches('\n').count() + 1;
        format!(
            "policy file {}, line {line}: {}",
            place.file.display(),
            e.message()
        )
    })
}
