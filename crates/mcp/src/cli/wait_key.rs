//! A job named by the CLI's `<id|name>` argument, found over the state directory's records.
//!
//! merge: the names branch resolves names for `kill`, `logs` and `status`; one resolver should
//! serve them all (this one is `ptyjobs wait`'s until then).

use std::path::Path;

use ptyjobs_engine::{JobId, Store, StoredJob};

use super::{Failure, describe};

/// The job `key` names: a job whose name is exactly `key`, else the job whose id starts with
/// it (as every subcommand takes ids).
///
/// Among jobs of that name, a running one wins over finished ones; among several running,
/// the one started in the current directory; among finished ones, the newest.
///
/// # Errors
/// No job has that name or id; several running jobs have the name (none of them in the
/// current directory, or more than one); the id prefix is ambiguous.
pub(crate) fn resolve(store: &Store, key: &str) -> Result<JobId, Failure> {
    let named: Vec<StoredJob> = store
        .records()
        .into_iter()
        .filter(|j| j.record.name.as_deref() == Some(key))
        .collect();
    if named.is_empty() {
        return store.resolve(key).map_err(|e| match e {
            ptyjobs_engine::Error::InvalidArgument(m) if m.starts_with("no job id") => {
                Failure::msg(format!("no job has the id or name {key:?}"))
            }
            e => Failure::msg(describe(&e)),
        });
    }
    let cwd = std::env::current_dir()
        .ok()
        .map(|c| c.canonicalize().unwrap_or(c));
    pick(&named, cwd.as_deref()).ok_or_else(|| {
        let ids: Vec<String> = named
            .iter()
            .filter(|j| !j.record.status.is_final())
            .map(|j| j.record.id.to_string())
            .collect();
        Failure::msg(format!(
            "several running jobs are named {key:?} ({}): give an id",
            ids.join(", ")
        ))
    })
}

/// The one job of `named` (newest first) the name means, as [`resolve`] says.
fn pick(named: &[StoredJob], cwd: Option<&Path>) -> Option<JobId> {
    let running: Vec<&StoredJob> = named
        .iter()
        .filter(|j| !j.record.status.is_final())
        .collect();
    match running.as_slice() {
        [] => named.first().map(|j| j.record.id),
        [one] => Some(one.record.id),
        many => {
            let here: Vec<&&StoredJob> = many
                .iter()
                .filter(|j| cwd.is_some_and(|c| same_dir(&j.record.cwd, c)))
                .collect();
            match here.as_slice() {
                [one] => Some(one.record.id),
                _ => None,
            }
        }
    }
}

/// Whether two paths name the same directory (symbolic links resolved where they can be).
fn same_dir(a: &Path, b: &Path) -> bool {
    a == b || a.canonicalize().is_ok_and(|a| a == b)
}
