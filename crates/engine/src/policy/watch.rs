//! The files a profile watches (`watch`): hashed before a job starts and after it ends, so a
//! change to a git hook or an agent's config made by a job is reported in its status and the
//! server's log. A hash, not a lock: it tells, it does not prevent.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use super::JobPolicy;

/// Most files hashed under one watched directory (a bound on the cost of each start).
const MAX_FILES: usize = 2000;

/// A job's policy answer and its watched files' state at its start.
#[derive(Debug)]
pub(crate) struct Watched {
    report: JobPolicy,
    before: Vec<(PathBuf, Option<u64>)>,
    changed: OnceLock<Vec<String>>,
    /// The job's own TMPDIR, removed when it ends.
    tmpdir: Option<PathBuf>,
    /// The policy file, named by the refusals' hints.
    file: PathBuf,
    /// Its seccomp supervision (its refused calls), once spawned.
    supervision: Option<crate::sys::sandbox::Supervision>,
}

impl Watched {
    /// Hashes `watch` now, before the job starts.
    pub(crate) fn start(
        report: JobPolicy,
        watch: &[PathBuf],
        tmpdir: Option<PathBuf>,
        file: PathBuf,
    ) -> Self {
        Self {
            tmpdir,
            file,
            supervision: None,
            report,
            before: watch.iter().map(|p| (p.clone(), digest(p))).collect(),
            changed: OnceLock::new(),
        }
    }

    /// The job was spawned with `supervision` (its refused calls are counted there).
    pub(crate) fn supervised(
        mut self,
        supervision: Option<crate::sys::sandbox::Supervision>,
    ) -> Self {
        self.supervision = supervision;
        self
    }

    /// Hashes the watched files again once the job has ended; a change is kept for the job's
    /// answers and logged. Its seccomp listener is closed (what it left running gets ENOSYS
    /// for every notified call).
    pub(crate) fn end(&self, job: impl std::fmt::Display) {
        if let Some(s) = &self.supervision {
            s.close();
        }
        let changed: Vec<String> = self
            .before
            .iter()
            .filter(|(p, before)| digest(p) != *before)
            .map(|(p, _)| p.display().to_string())
            .collect();
        if !changed.is_empty() {
            tracing::warn!(
                "job {job} (profile {}) changed watched files: {}",
                self.report.profile,
                changed.join(", ")
            );
        }
        let _ = self.changed.set(changed);
        if let Some(dir) = &self.tmpdir {
            let _ = std::fs::remove_dir_all(dir);
        }
    }

    /// The job's policy as its answers carry it.
    pub(crate) fn report(&self) -> JobPolicy {
        let refusals = self
            .supervision
            .as_ref()
            .map(crate::sys::sandbox::Supervision::refusals)
            .unwrap_or_default();
        let (refused, hints) = super::hints::report(&refusals, &self.report.profile, &self.file);
        JobPolicy {
            changed: self.changed.get().cloned().unwrap_or_default(),
            refused,
            hints,
            ..self.report.clone()
        }
    }
}

/// A hash of `path`'s contents (a directory: of every file under it, with their names and
/// modes); `None` when it does not exist.
fn digest(path: &Path) -> Option<u64> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    let mut h = DefaultHasher::new();
    let mut files = 0;
    feed(path, &meta, &mut h, &mut files);
    Some(h.finish())
}

fn feed(path: &Path, meta: &std::fs::Metadata, h: &mut DefaultHasher, files: &mut usize) {
    path.hash(h);
    meta.len().hash(h);
    format!("{:?}", meta.permissions()).hash(h);
    if *files >= MAX_FILES {
        return;
    }
    *files += 1;
    if meta.is_dir() {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(path)
            .map(|rd| rd.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        entries.sort();
        for e in entries {
            if let Ok(m) = std::fs::symlink_metadata(&e) {
                feed(&e, &m, h, files);
            }
        }
    } else if meta.is_symlink() {
        std::fs::read_link(path).ok().hash(h);
    } else if let Ok(bytes) = std::fs::read(path) {
        bytes.hash(h);
    }
}
