//! `ptyjobs status`: one job's record, as `key: value` lines or JSON.

use std::path::Path;

use chrono::Utc;
use ptyjobs_engine::Store;
use serde::Serialize;

use super::format::{ago, duration, json_safe, local_time_zoned, one_line, waiting};
use super::json::JobJson;
use super::logs::total_lines;
use super::out::Out;
use super::{CmdResult, Failure};

/// `status --json`: the job as `list --json` prints it, plus its line count.
#[derive(Serialize)]
struct StatusJson {
    #[serde(flatten)]
    job: JobJson,
    /// Lines of output the job printed (as `ptyjobs logs` shows them).
    output_lines: u64,
}

/// Prints the job's record. Text lines name only what the job has (no `exit code` while it
/// runs); JSON always has every field.
pub(crate) fn run(store: &Store, id: &str, cwd: Option<&Path>, json: bool) -> CmdResult {
    let id = store.resolve_job(id, cwd)?;
    let job = store.load(id)?;
    let lines = total_lines(store, &job)?;
    let ports = Store::ports_of(std::slice::from_ref(&job))
        .pop()
        .unwrap_or_default();
    let mut out = Out::new();
    if json {
        let mut status = StatusJson {
            job: JobJson::from(&job),
            output_lines: lines,
        };
        status.job.ports.clone_from(&ports);
        let text = serde_json::to_string_pretty(&status)
            .map_err(|e| Failure::msg(format!("cannot encode the job as JSON: {e}")))?;
        out.line(&json_safe(&text))?;
        std::io::Write::flush(&mut out)?;
        return Ok(());
    }
    let info = job.info(None);
    let r = &job.record;
    let now = Utc::now();
    let mut fields: Vec<(&str, String)> = vec![("id", info.id.to_string())];
    if let Some(name) = &info.name {
        fields.push(("name", one_line(name)));
    }
    fields.push(("command", one_line(&info.command)));
    fields.push(("cwd", one_line(&info.cwd.display().to_string())));
    fields.push(("status", info.status.to_string()));
    if info.kept {
        fields.push((
            "kept",
            info.keep_until.map_or_else(
                || "yes, until killed".to_owned(),
                |until| format!("yes, until {}", super::format::local_time(until)),
            ),
        ));
    }
    if let Some(wait) = &info.input {
        fields.push(("input", waiting(wait)));
    }
    if let Some(code) = info.exit_code {
        fields.push(("exit code", code.to_string()));
    }
    if let Some(signal) = &info.signal {
        fields.push(("signal", one_line(signal)));
    }
    if let Some(reason) = &info.reason {
        fields.push(("reason", one_line(reason)));
    }
    fields.push(("pid", info.pid.to_string()));
    if !ports.is_empty() {
        let list: Vec<String> = ports
            .iter()
            .map(|l| {
                format!(
                    "{} (pid {})",
                    std::net::SocketAddr::from((l.address, l.port)),
                    l.pid
                )
            })
            .collect();
        fields.push(("ports", list.join(", ")));
    }
    fields.push((
        "started",
        format!(
            "{} ({})",
            local_time_zoned(info.started),
            ago(info.started, now)
        ),
    ));
    if let Some(finished) = info.finished {
        fields.push((
            "finished",
            format!("{} ({})", local_time_zoned(finished), ago(finished, now)),
        ));
    }
    let so_far = if info.status.is_final() {
        ""
    } else {
        " so far"
    };
    fields.push((
        "duration",
        format!("{}{so_far}", duration(info.duration_ms)),
    ));
    let alive = if job.owner_alive { "running" } else { "gone" };
    fields.push(("server", format!("pid {} ({alive})", r.server.process.pid)));
    let capped = if r.log_truncated {
        " (the disk log reached its cap)"
    } else {
        ""
    };
    let plural = if lines == 1 { "" } else { "s" };
    fields.push(("output", format!("{lines} line{plural}{capped}")));
    if !r.env_names.is_empty() {
        fields.push(("env", one_line(&r.env_names.join(", "))));
    }
    if let Some(p) = &info.policy {
        fields.push(("profile", one_line(&p.profile)));
        for c in &p.refused {
            let times = if c.count == 1 { "once" } else { "times" };
            let count = if c.count == 1 {
                String::new()
            } else {
                format!("{} ", c.count)
            };
            fields.push((
                "refused",
                one_line(&format!("{} by {}, {count}{times}", c.syscall, c.command)),
            ));
        }
        for h in &p.hints {
            fields.push(("hint", one_line(h)));
        }
    }
    let key_width = fields.iter().map(|(k, _)| k.len()).max().unwrap_or(0) + 1;
    for (key, value) in fields {
        out.line(&format!("{:<key_width$} {value}", format!("{key}:")))?;
    }
    std::io::Write::flush(&mut out)?;
    Ok(())
}
