//! From the file as written to absolute paths, checked: `~` is the home directory, relative
//! paths are relative to the server's working directory, read and write roots and listed
//! sockets must exist, exec names are found on PATH.

use std::path::{Path, PathBuf};

use toml::Spanned;

use super::file::Place;

/// `raw` as an absolute path (not checked).
pub(super) fn expand(raw: &str, cwd: &Path) -> Result<PathBuf, String> {
    let path = if raw == "~" || raw.starts_with("~/") {
        let home = dirs::home_dir().ok_or("there is no home directory to expand ~ to")?;
        home.join(raw.trim_start_matches('~').trim_start_matches('/'))
    } else {
        cwd.join(raw)
    };
    Ok(path)
}

/// Each of `list` resolved to an existing path, canonical (symlinks followed).
pub(super) fn existing(
    place: &Place<'_>,
    key: &str,
    list: &[Spanned<String>],
    cwd: &Path,
) -> Result<Vec<PathBuf>, String> {
    list.iter().map(|s| canonical(place, key, s, cwd)).collect()
}

/// The entry `s` resolved to an existing path, canonical; an error naming its line otherwise.
fn canonical(
    place: &Place<'_>,
    key: &str,
    s: &Spanned<String>,
    cwd: &Path,
) -> Result<PathBuf, String> {
    let err = |m: String| place.error(s.span().start, key, m);
    let path = expand(s.get_ref(), cwd).map_err(err)?;
    path.canonicalize()
        .map_err(|e| err(format!("{} does not resolve: {e}", path.display())))
}

/// Each of `list` as an absolute path, whether it exists or not (`watch`).
pub(super) fn any(
    place: &Place<'_>,
    key: &str,
    list: &[Spanned<String>],
    cwd: &Path,
) -> Result<Vec<PathBuf>, String> {
    list.iter()
        .map(|s| expand(s.get_ref(), cwd).map_err(|m| place.error(s.span().start, key, m)))
        .collect()
}

/// Each exec entry: an absolute (or relative) path that exists, or a name found on PATH now.
pub(super) fn programs(
    place: &Place<'_>,
    key: &str,
    list: &[Spanned<String>],
    cwd: &Path,
) -> Result<Vec<PathBuf>, String> {
    list.iter()
        .map(|s| {
            let name = s.get_ref();
            if name.contains('/') || name.starts_with('~') {
                return canonical(place, key, s, cwd);
            }
            on_path(name).ok_or_else(|| {
                place.error(
                    s.span().start,
                    key,
                    format!("{name:?} is not found on PATH"),
                )
            })
        })
        .collect()
}

/// The first file called `name` in a directory of PATH, canonical.
fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
        .and_then(|p| p.canonicalize().ok())
}
