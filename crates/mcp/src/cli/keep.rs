//! The CLI's kept jobs: `ptyjobs run --keep`, `ptyjobs services --start` and
//! `ptyjobs kill --kept`. A job the CLI started itself would end with it, so it has the state
//! directory's keeper start it (see the engine's `keep_job`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use ptyjobs_engine::{Error, JobInfo, JobSpec, JobStatus, Store, keep_job, load_services};

use super::format::{json_safe, one_line};
use super::out::Out;
use super::{CmdResult, Failure, describe};

/// A kept job's lifetime when none is given: a day.
pub(crate) const DEFAULT_TTL_SECS: u64 = 86_400;

/// `ptyjobs run` options.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// Keep the job running after this command exits (required: a job this command ran itself
    /// would end with it). The state directory's keeper runs it.
    #[arg(long)]
    pub keep: bool,
    /// A name, unique among live jobs of one directory; other subcommands take it as the id.
    #[arg(long)]
    pub name: Option<String>,
    /// With --name: if a live job has this name and command, print it; start none.
    #[arg(long, requires = "name")]
    pub ensure: bool,
    /// The job's working directory. Default: the current directory.
    #[arg(long)]
    pub cwd: Option<PathBuf>,
    /// End the kept job after this many seconds (0: only when killed).
    #[arg(long, default_value_t = DEFAULT_TTL_SECS)]
    pub keep_ttl: u64,
    /// Print the job's record as JSON instead of its id.
    #[arg(long)]
    pub json: bool,
    /// The command line (words after `--` are joined with spaces and run by the shell).
    #[arg(required = true, last = true)]
    pub command: Vec<String>,
}

/// The TTL of `secs` (0: none).
fn ttl(secs: u64) -> Option<Duration> {
    (secs > 0).then(|| Duration::from_secs(secs))
}

/// The `ptyjobs` executable, for starting a keeper.
fn program() -> Option<PathBuf> {
    std::env::current_exe().ok()
}

/// `ptyjobs run --keep [--name N] [--ensure] [--cwd D] [--keep-ttl S] -- CMD…`.
pub(crate) fn run(state_dir: &Path, args: RunArgs) -> CmdResult {
    if !args.keep {
        return Err(Failure::msg(
            "ptyjobs run starts kept jobs only: add --keep (a job this command ran itself \
             would end with it; MCP clients start other jobs with execute_command)",
        ));
    }
    let spec = JobSpec {
        command: args.command.join(" "),
        cwd: Some(absolute(args.cwd)?),
        name: args.name,
        ensure: args.ensure,
        keep: true,
        keep_ttl: ttl(args.keep_ttl),
        ..JobSpec::default()
    };
    let (job, _) = keep_job(state_dir, program().as_deref(), &spec)?;
    print(&job, args.json)
}

/// `ptyjobs services --start NAME`: an ensure of the service's definition, kept.
pub(crate) fn start_service(
    state_dir: &Path,
    dir: Option<&Path>,
    name: &str,
    keep_ttl: u64,
    json: bool,
) -> CmdResult {
    let dir = absolute(dir.map(Path::to_path_buf))?;
    let defs = load_services(&dir)?;
    let Some(def) = defs.into_iter().find(|d| d.name == name) else {
        return Err(Failure::msg(format!(
            "no service named {:?} in {} (ptyjobs services lists them)",
            one_line(name),
            one_line(&dir.display().to_string())
        )));
    };
    let spec = JobSpec {
        command: def.command,
        cwd: Some(def.cwd),
        env: def.env,
        name: Some(def.name),
        ensure: true,
        auto_port: def.auto_port,
        keep: true,
        keep_ttl: ttl(keep_ttl),
        ..JobSpec::default()
    };
    let (job, _) = keep_job(state_dir, program().as_deref(), &spec)?;
    print(&job, json)
}

/// `ptyjobs kill --kept`: ends every kept job that runs, or whose keeper is gone while its
/// record still said running (what ignored the hang-up is ended; the record is rewritten), through
/// the kill path, and prints each.
pub(crate) fn kill_kept(store: &Store, grace_ms: u64) -> CmdResult {
    let kept: Vec<_> = store
        .records()
        .into_iter()
        .filter(|j| j.record.kept && (j.record.status == JobStatus::Running || j.orphaned))
        .collect();
    let mut out = Out::new();
    if kept.is_empty() {
        out.line("no kept job runs")?;
        out.flush()?;
        return Ok(());
    }
    let mut failed = false;
    for job in kept {
        let id = job.record.id;
        match store.kill(id, Duration::from_millis(grace_ms)) {
            Ok(report) if report.survivors.is_empty() => out.line(&format!("killed {id}"))?,
            Ok(report) => out.line(&format!(
                "killed {id}; still alive after SIGKILL: pid {:?}",
                report.survivors
            ))?,
            // Its keeper is gone and nothing of it was left: the record now says so.
            Err(Error::NotRunning { .. }) if job.orphaned => {
                out.line(&format!("{id} had ended with its keeper"))?;
            }
            Err(e) => {
                eprintln!("ptyjobs: {id}: {}", one_line(&describe(&e)));
                failed = true;
            }
        }
    }
    out.flush()?;
    if failed {
        return Err(Failure::Reported);
    }
    Ok(())
}

/// `dir`, or the current directory, made absolute (the keeper's own is not ours).
fn absolute(dir: Option<PathBuf>) -> Result<PathBuf, Failure> {
    let here = std::env::current_dir()
        .map_err(|e| Failure::msg(format!("cannot read the current directory: {e}")))?;
    Ok(dir.map_or_else(|| here.clone(), |d| here.join(d)))
}

/// The job's id, or its record as JSON.
fn print(job: &JobInfo, json: bool) -> CmdResult {
    let mut out = Out::new();
    if json {
        let text = serde_json::to_string_pretty(job).map_err(|e| Failure::msg(e.to_string()))?;
        out.line(&json_safe(&text))?;
    } else {
        out.line(&job.id.to_string())?;
    }
    out.flush()?;
    Ok(())
}
