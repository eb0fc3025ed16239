//! `ptyjobs list`: every job on the state directory, newest first, as a table or JSON.

use std::io::Write;

use ptyjobs_engine::{JobStatus, Store, StoredJob};

use super::format::{duration, json_safe, local_time, one_line, pad, truncate, width};
use super::json::JobJson;
use super::out::Out;
use super::{CmdResult, Failure};

/// Widest name column; longer names are cut.
const NAME_MAX: usize = 20;
/// Command column when stdout is not a terminal.
const COMMAND_PIPED: usize = 60;
/// Narrowest command column on a terminal, however narrow it is.
const COMMAND_MIN: usize = 20;

/// Prints the jobs, only those with `status` when given (`running`, `completed`, `failed`,
/// `killed`; anything else is an error). No job: a one-line note (`[]` with `json`).
pub(crate) fn run(store: &Store, status: Option<&str>, json: bool) -> CmdResult {
    let filter = status.map(str::parse::<JobStatus>).transpose()?;
    let jobs: Vec<StoredJob> = store
        .records()
        .into_iter()
        .filter(|j| filter.is_none_or(|s| j.record.status == s))
        .collect();
    let mut out = Out::new();
    let ports = Store::ports_of(&jobs);
    if json {
        let mut list: Vec<JobJson> = jobs.iter().map(JobJson::from).collect();
        for (j, p) in list.iter_mut().zip(&ports) {
            j.ports.clone_from(p);
        }
        let text = serde_json::to_string_pretty(&list)
            .map_err(|e| Failure::msg(format!("cannot encode the jobs as JSON: {e}")))?;
        out.line(&json_safe(&text))?;
    } else if jobs.is_empty() {
        let which = filter.map(|s| format!("{s} ")).unwrap_or_default();
        out.line(&format!(
            "no {which}jobs in {}",
            one_line(&store.config().dir.display().to_string())
        ))?;
    } else {
        table(&mut out, &jobs, &ports)?;
    }
    out.flush()?;
    Ok(())
}

/// What the STATUS cell of a running job that waits for input says.
const WAITING: &str = "waiting for input";
/// What the STATUS cell of a running kept job says (its keeper runs it).
const KEPT: &str = "running (kept)";

/// One table row, as plain text (colour is added when printing).
struct Row {
    id: String,
    name: String,
    status: JobStatus,
    /// The running job waits for input: the STATUS cell says [`WAITING`] instead of `running`.
    waiting: bool,
    /// A running kept job: the STATUS cell says [`KEPT`].
    kept: bool,
    exit: String,
    started: String,
    duration: String,
    /// The job's listening ports, `5173,5174` (`-`: none).
    ports: String,
    command: String,
}

impl Row {
    fn of(job: &StoredJob, listeners: &[ptyjobs_engine::Listener]) -> Self {
        let info = job.info(None);
        let exit = match (info.exit_code, &info.signal) {
            (Some(code), _) => code.to_string(),
            (None, Some(signal)) => one_line(signal),
            (None, None) => "-".to_owned(),
        };
        Self {
            id: info.id.to_string().chars().take(8).collect(),
            name: truncate(&one_line(info.name.as_deref().unwrap_or("-")), NAME_MAX),
            status: info.status,
            waiting: info.input.is_some(),
            kept: info.kept && !info.status.is_final(),
            exit,
            started: local_time(info.started),
            duration: duration(info.duration_ms),
            ports: port_list(listeners),
            command: one_line(&info.command),
        }
    }
}

impl Row {
    fn status(&self) -> &str {
        if self.waiting {
            WAITING
        } else if self.kept {
            KEPT
        } else {
            self.status.as_str()
        }
    }
}

const HEADERS: [&str; 8] = [
    "ID", "NAME", "STATUS", "EXIT", "STARTED", "DURATION", "PORTS", "COMMAND",
];

/// The distinct ports of `listeners`, comma-separated; `-` for none.
fn port_list(listeners: &[ptyjobs_engine::Listener]) -> String {
    let mut ports: Vec<u16> = listeners.iter().map(|l| l.port).collect();
    ports.sort_unstable();
    ports.dedup();
    if ports.is_empty() {
        return "-".to_owned();
    }
    ports
        .iter()
        .map(u16::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

fn table(
    out: &mut Out,
    jobs: &[StoredJob],
    ports: &[Vec<ptyjobs_engine::Listener>],
) -> std::io::Result<()> {
    let rows: Vec<Row> = jobs.iter().zip(ports).map(|(j, p)| Row::of(j, p)).collect();
    let column = |header: &str, cell: fn(&Row) -> &str| {
        rows.iter()
            .map(|r| width(cell(r)))
            .chain([header.len()])
            .max()
            .unwrap_or(0)
    };
    let widths = [
        8,
        column(HEADERS[1], |r| &r.name),
        column(HEADERS[2], Row::status),
        column(HEADERS[3], |r| &r.exit),
        column(HEADERS[4], |r| &r.started),
        column(HEADERS[5], |r| &r.duration),
        column(HEADERS[6], |r| &r.ports),
    ];
    // Two spaces between columns; the command takes what is left of the terminal.
    let used: usize = widths.iter().map(|w| w + 2).sum();
    let command_width = out.width().map_or(COMMAND_PIPED, |cols| {
        cols.saturating_sub(used).max(COMMAND_MIN)
    });
    let colour = out.colour();
    let mut header = String::new();
    for (h, w) in HEADERS.iter().zip(widths) {
        header.push_str(&pad(h, w + 2));
    }
    header.push_str(HEADERS[7]);
    out.line(&header)?;
    for r in &rows {
        let status = pad(r.status(), widths[2]);
        let status = if colour {
            let style = if r.waiting {
                anstyle::Style::new().fg_color(Some(anstyle::AnsiColor::Magenta.into()))
            } else {
                style(r.status)
            };
            format!("{style}{status}{style:#}")
        } else {
            status
        };
        writeln!(
            out,
            "{}  {}  {status}  {}  {}  {}  {}  {}",
            pad(&r.id, widths[0]),
            pad(&r.name, widths[1]),
            pad(&r.exit, widths[3]),
            pad(&r.started, widths[4]),
            pad(&r.duration, widths[5]),
            pad(&r.ports, widths[6]),
            truncate(&r.command, command_width),
        )?;
    }
    Ok(())
}

/// The colour of a status.
fn style(status: JobStatus) -> anstyle::Style {
    let colour = match status {
        JobStatus::Running => anstyle::AnsiColor::Cyan,
        JobStatus::Completed => anstyle::AnsiColor::Green,
        JobStatus::Failed => anstyle::AnsiColor::Red,
        JobStatus::Killed => anstyle::AnsiColor::Yellow,
    };
    anstyle::Style::new().fg_color(Some(colour.into()))
}
