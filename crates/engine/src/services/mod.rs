//! Services a project already describes: its `Procfile` and its `.claude/launch.json`, read
//! into [`ServiceDef`]s, listed beside the live jobs that run them, and started by name as an
//! ensure of their definition (see `docs/SERVICES-FILES.md`).
//!
//! Reading a file runs nothing: a service's command runs only when it is started by name.

mod launch;
mod procfile;
mod verbs;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::job::{JobInfo, JobStatus};

pub use verbs::ServiceStart;

/// The Procfile's name, in the project directory.
pub const PROCFILE: &str = "Procfile";
/// launch.json's place, under the project directory.
pub const LAUNCH_JSON: &str = ".claude/launch.json";
/// Largest service file read; a bigger one is refused (these files are a few lines).
const FILE_MAX: u64 = 1024 * 1024;

/// One service as its project describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceDef {
    /// Its name: the job name it runs under, the key to start and find it by.
    pub name: String,
    /// The command line, run as `<shell> -c <command>`. From launch.json: `runtimeExecutable`
    /// and `runtimeArgs`, each quoted for a POSIX shell.
    pub command: String,
    /// Where it runs: the project directory, or launch.json's `cwd` (relative to it).
    pub cwd: PathBuf,
    /// Its own environment variables (launch.json's `env`).
    pub env: BTreeMap<String, String>,
    /// The port it listens on when ready (launch.json's `port`): starting it waits for it.
    pub port: Option<u16>,
    /// Give it a free port as `PORT` (launch.json's `autoPort`; a Procfile command that uses
    /// `$PORT`).
    pub auto_port: bool,
    /// The file it is defined in.
    pub source: PathBuf,
    /// Where in that file: `line 3` (Procfile) or `configurations[1]` (launch.json).
    pub at: String,
}

/// A configured service beside the live job that runs it.
#[derive(Debug, Clone)]
pub struct Service {
    /// The definition.
    pub def: ServiceDef,
    /// The running job with the service's name in the service's `cwd` (the newest, should
    /// there be several), if any.
    pub job: Option<JobInfo>,
}

/// A malformed service file: which file, where in it, and what is wrong. Faces see it as
/// [`Error::InvalidArgument`] with this text: `<file>: <at>: <problem>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileError {
    /// The file.
    pub file: PathBuf,
    /// Where: `line 3`, `line 2, column 14`, `configurations[2].port`, `top level`, `file`.
    pub at: String,
    /// What is wrong, in words.
    pub problem: String,
}

impl FileError {
    fn new(file: &Path, at: String, problem: String) -> Self {
        Self {
            file: file.to_path_buf(),
            at,
            problem,
        }
    }
}

impl fmt::Display for FileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}: {}", self.file.display(), self.at, self.problem)
    }
}

impl From<FileError> for Error {
    fn from(e: FileError) -> Self {
        Error::InvalidArgument(e.to_string())
    }
}

/// The services `dir` describes: its `Procfile`'s, then its `.claude/launch.json`'s, in file
/// order. A missing file describes none; `dir` itself must exist. Paths are made absolute
/// (symlinks resolved) so that a service's `cwd` compares equal to its job's.
///
/// A name defined in both files is an error, not a silent choice: the two commands may differ,
/// and starting the one the agent did not mean is the failure this exists to prevent.
///
/// # Errors
/// [`Error::InvalidArgument`]: `dir` is not a directory, or a file is unreadable, not UTF-8,
/// larger than 1 MiB or malformed (the message names the file, the line or key path, and what
/// is wrong; see [`FileError`]).
pub fn load(dir: &Path) -> Result<Vec<ServiceDef>> {
    let dir = dir
        .canonicalize()
        .ok()
        .filter(|d| d.is_dir())
        .ok_or_else(|| {
            Error::InvalidArgument(format!(
                "project directory {} does not exist or is not a directory",
                dir.display()
            ))
        })?;
    let mut defs = Vec::new();
    let procfile = dir.join(PROCFILE);
    if let Some(text) = read(&procfile)? {
        defs = procfile::parse(&text, &procfile, &dir)?;
    }
    let launch_json = dir.join(LAUNCH_JSON);
    if let Some(text) = read(&launch_json)? {
        for def in launch::parse(&text, &launch_json, &dir)? {
            if let Some(first) = defs.iter().find(|d| d.name == def.name) {
                return Err(FileError::new(
                    &launch_json,
                    format!("{}.name", def.at),
                    format!(
                        "service {:?} is also defined in {} ({}): rename one of them",
                        def.name,
                        first.source.display(),
                        first.at
                    ),
                )
                .into());
            }
            defs.push(def);
        }
    }
    for def in &mut defs {
        // A cwd that exists is compared resolved; one that does not fails at start, by name.
        if let Ok(c) = def.cwd.canonicalize() {
            def.cwd = c;
        }
    }
    Ok(defs)
}

/// Each of `defs` beside the running job of `jobs` that runs it: the same name, in the same
/// directory (the name is the key; the same name in two worktrees is two services).
pub fn beside(defs: Vec<ServiceDef>, jobs: &[JobInfo]) -> Vec<Service> {
    defs.into_iter()
        .map(|def| {
            let job = jobs
                .iter()
                .filter(|j| j.status == JobStatus::Running)
                .filter(|j| j.name.as_deref() == Some(def.name.as_str()))
                .filter(|j| same_dir(&j.cwd, &def.cwd))
                .max_by_key(|j| j.started)
                .cloned();
            Service { def, job }
        })
        .collect()
}

/// Whether two paths name one directory: equal as written, or once resolved.
fn same_dir(a: &Path, b: &Path) -> bool {
    a == b || matches!((a.canonicalize(), b.canonicalize()), (Ok(x), Ok(y)) if x == y)
}

/// A service file's text; `None` when there is no such file.
fn read(path: &Path) -> Result<Option<String>> {
    let fail = |problem: String| -> Error { FileError::new(path, "file".into(), problem).into() };
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(fail(format!("cannot be read: {e}"))),
    };
    if !meta.is_file() {
        return Err(fail("is not a regular file".into()));
    }
    if meta.len() > FILE_MAX {
        return Err(fail(format!(
            "is {} bytes long; a service file may hold at most {FILE_MAX}",
            meta.len()
        )));
    }
    let mut bytes = std::fs::read(path).map_err(|e| fail(format!("cannot be read: {e}")))?;
    // Editors on Windows may start a file with a byte-order mark: it is not part of the text.
    if bytes.starts_with(b"\xEF\xBB\xBF") {
        bytes.drain(..3);
    }
    String::from_utf8(bytes).map(Some).map_err(|e| {
        fail(format!(
            "is not UTF-8 text (byte {})",
            e.utf8_error().valid_up_to()
        ))
    })
}

/// A piece of a file quoted in an error, cut to a readable length.
fn clip(s: &str) -> String {
    const MAX: usize = 80;
    match s.char_indices().nth(MAX) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project(procfile: Option<&str>, launch: Option<&str>) -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("a temp dir");
        if let Some(p) = procfile {
            std::fs::write(dir.path().join(PROCFILE), p).expect("write");
        }
        if let Some(l) = launch {
            std::fs::create_dir(dir.path().join(".claude")).expect("mkdir");
            std::fs::write(dir.path().join(LAUNCH_JSON), l).expect("write");
        }
        dir
    }

    #[test]
    fn both_files_are_read_procfile_first_with_absolute_dirs() {
        let dir = project(
            Some("web: python3 -m http.server 8000\n"),
            Some(
                r#"{"configurations": [{"name": "api", "runtimeExecutable": "node", "runtimeArgs": ["a.js"], "cwd": "."}]}"#,
            ),
        );
        let defs = load(dir.path()).expect("loads");
        let root = dir.path().canonicalize().expect("canonical");
        assert_eq!(
            defs.iter().map(|d| d.name.as_str()).collect::<Vec<_>>(),
            ["web", "api"]
        );
        assert_eq!(defs[0].source, root.join("Procfile"));
        assert_eq!(defs[1].source, root.join(".claude/launch.json"));
        assert_eq!(defs[1].cwd, root, "`.` resolves to the project directory");
    }

    #[test]
    fn no_files_no_services_and_a_missing_directory_is_an_error() {
        let dir = project(None, None);
        assert!(load(dir.path()).expect("loads").is_empty());
        let e = load(&dir.path().join("nope"))
            .expect_err("missing")
            .to_string();
        assert!(e.contains("does not exist or is not a directory"), "{e}");
    }

    #[test]
    fn a_name_in_both_files_is_an_error_naming_both() {
        let dir = project(
            Some("# x\nweb: a\n"),
            Some(r#"{"configurations": [{"name": "web", "runtimeExecutable": "b"}]}"#),
        );
        let e = load(dir.path()).expect_err("twice").to_string();
        // The file as the platform writes paths (`\` on Windows).
        let launch = std::path::Path::new(".claude").join("launch.json");
        let wanted = format!(
            "{}: configurations[0].name: service \"web\" is also defined in ",
            launch.display()
        );
        assert!(e.contains(&wanted), "{e}");
        assert!(e.contains("Procfile (line 2)"), "{e}");
    }

    #[test]
    fn a_byte_order_mark_is_not_part_of_the_text() {
        let dir = project(Some(""), Some(""));
        std::fs::write(
            dir.path().join(LAUNCH_JSON),
            b"\xEF\xBB\xBF{\"configurations\": [{\"name\": \"a\", \"runtimeExecutable\": \"b\"}]}",
        )
        .expect("write");
        std::fs::write(dir.path().join(PROCFILE), b"\xEF\xBB\xBFweb: a\n").expect("write");
        let names: Vec<String> = load(dir.path())
            .expect("loads")
            .into_iter()
            .map(|d| d.name)
            .collect();
        assert_eq!(names, ["web", "a"]);
    }

    #[test]
    fn unreadable_files_are_errors_naming_them() {
        let dir = project(Some("web: \u{0}"), None);
        std::fs::write(dir.path().join(PROCFILE), b"web: \xff\xfe\n").expect("write");
        let e = load(dir.path()).expect_err("not utf-8").to_string();
        assert!(e.contains("Procfile: file: is not UTF-8 text"), "{e}");
        std::fs::remove_file(dir.path().join(PROCFILE)).expect("rm");
        std::fs::create_dir(dir.path().join(PROCFILE)).expect("mkdir");
        let e = load(dir.path()).expect_err("a directory").to_string();
        assert!(e.contains("Procfile: file: is not a regular file"), "{e}");
    }

    #[test]
    fn beside_matches_running_jobs_by_name_and_directory() {
        let dir = project(Some("web: a\nworker: b\n"), None);
        let defs = load(dir.path()).expect("loads");
        let job = |name: &str, cwd: &Path, status: JobStatus| {
            let mut j: JobInfo = serde_json::from_value(serde_json::json!({
                "id": crate::job::JobId::new(), "command": "a", "cwd": cwd, "pid": 1,
                "status": status.as_str(), "started": "2026-01-01T00:00:00Z", "duration_ms": 0,
                "size": [80, 24], "this_server": true
            }))
            .expect("a job");
            j.name = Some(name.into());
            j
        };
        let other = tempfile::tempdir().expect("another dir");
        let jobs = [
            job("web", other.path(), JobStatus::Running),
            job("worker", dir.path(), JobStatus::Completed),
            job("web", dir.path(), JobStatus::Running),
        ];
        let listed = beside(defs, &jobs);
        assert_eq!(listed[0].job.as_ref().map(|j| j.id), Some(jobs[2].id));
        assert!(listed[1].job.is_none(), "an ended job runs nothing");
    }
}
