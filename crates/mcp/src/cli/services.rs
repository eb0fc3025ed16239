//! `ptyjobs services`: the services a project's Procfile and .claude/launch.json describe, each
//! beside the running job (of any server on the state directory) that runs it. Reads files and
//! records only: nothing is started.

use std::io::Write;
use std::path::{Path, PathBuf};

use ptyjobs_engine::{JobInfo, Service, Store, load_services, services_beside};
use serde::Serialize;

use super::format::{json_safe, one_line, pad, truncate, width};
use super::out::Out;
use super::{CmdResult, Failure};

/// Command column when stdout is not a terminal.
const COMMAND_PIPED: usize = 60;
/// Narrowest command column on a terminal.
const COMMAND_MIN: usize = 20;

/// One service in `--json`.
#[derive(Serialize)]
struct ServiceJson {
    name: String,
    command: String,
    cwd: PathBuf,
    source: PathBuf,
    at: String,
    port: Option<u16>,
    auto_port: bool,
    env: std::collections::BTreeMap<String, String>,
    /// The running job's id and status, when one runs it.
    job: Option<JobRef>,
}

#[derive(Serialize)]
struct JobRef {
    id: String,
    status: &'static str,
    pid: u32,
}

/// Prints the services of the project in `dir` (default: the current directory) as a table,
/// or as a JSON array with `json`. None: a one-line note (`[]` with `json`). Without a `store`
/// (no server has used the state directory yet) no job runs any of them.
pub(crate) fn run(store: Option<&Store>, dir: Option<&Path>, json: bool) -> CmdResult {
    let dir = match dir {
        Some(d) => d.to_path_buf(),
        None => std::env::current_dir()
            .map_err(|e| Failure::msg(format!("cannot read the current directory: {e}")))?,
    };
    let defs = load_services(&dir)?;
    let jobs: Vec<JobInfo> = store.map_or_else(Vec::new, |s| {
        s.records().iter().map(|j| j.info(None)).collect()
    });
    let services = services_beside(defs, &jobs);
    let mut out = Out::new();
    if json {
        let list: Vec<ServiceJson> = services.into_iter().map(ServiceJson::from).collect();
        let text = serde_json::to_string_pretty(&list)
            .map_err(|e| Failure::msg(format!("cannot encode the services as JSON: {e}")))?;
        out.line(&json_safe(&text))?;
    } else if services.is_empty() {
        out.line(&format!(
            "no services in {}: it has no Procfile and no .claude/launch.json",
            one_line(&dir.display().to_string())
        ))?;
    } else {
        table(&mut out, &dir, &services)?;
    }
    out.flush()?;
    Ok(())
}

impl From<Service> for ServiceJson {
    fn from(s: Service) -> Self {
        let d = s.def;
        Self {
            name: d.name,
            command: d.command,
            cwd: d.cwd,
            source: d.source,
            at: d.at,
            port: d.port,
            auto_port: d.auto_port,
            env: d.env,
            job: s.job.map(|j| JobRef {
                id: j.id.to_string(),
                status: j.status.as_str(),
                pid: j.pid,
            }),
        }
    }
}

const HEADERS: [&str; 5] = ["NAME", "SOURCE", "PORT", "JOB", "COMMAND"];

fn table(out: &mut Out, dir: &Path, services: &[Service]) -> std::io::Result<()> {
    let root = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    let rows: Vec<[String; 5]> = services
        .iter()
        .map(|s| {
            let d = &s.def;
            let file = d.source.strip_prefix(&root).unwrap_or(&d.source);
            let port = match (d.port, d.auto_port) {
                (Some(p), false) => p.to_string(),
                (Some(p), true) => format!("{p} (auto)"),
                (None, true) => "auto".to_owned(),
                (None, false) => "-".to_owned(),
            };
            let job = s.job.as_ref().map_or("-".to_owned(), |j| {
                let id: String = j.id.to_string().chars().take(8).collect();
                format!("{id} {}", j.status)
            });
            [
                one_line(&d.name),
                one_line(&format!("{} {}", file.display(), d.at)),
                port,
                job,
                one_line(&d.command),
            ]
        })
        .collect();
    let widths: Vec<usize> = (0..4)
        .map(|c| {
            rows.iter()
                .map(|r| width(&r[c]))
                .chain([HEADERS[c].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let used: usize = widths.iter().map(|w| w + 2).sum();
    let command_width = out.width().map_or(COMMAND_PIPED, |cols| {
        cols.saturating_sub(used).max(COMMAND_MIN)
    });
    let mut header = String::new();
    for (h, w) in HEADERS.iter().zip(&widths) {
        header.push_str(&pad(h, w + 2));
    }
    header.push_str(HEADERS[4]);
    out.line(&header)?;
    for r in &rows {
        writeln!(
            out,
            "{}  {}  {}  {}  {}",
            pad(&r[0], widths[0]),
            pad(&r[1], widths[1]),
            pad(&r[2], widths[2]),
            pad(&r[3], widths[3]),
            truncate(&r[4], command_width),
        )?;
    }
    Ok(())
}
