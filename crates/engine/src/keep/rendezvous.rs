//! `keeper.lock`: who keeps the state directory's jobs, and where to reach it.

use std::fs::File;
use std::io::{self, Read, Seek, Write};
use std::path::{Path, PathBuf};

use crate::attach::attach_socket_path;
use crate::sys::{attach, keeper};

/// What a starter found.
pub(super) enum Found {
    /// No keeper holds the lock.
    None,
    /// A keeper holds it but is not reachable yet (it has not written its instance, or not
    /// bound its socket), or is leaving.
    NotReady,
    /// The keeper's socket: a socket of this user in the private socket directory.
    At(PathBuf),
}

/// The lock file of `state_dir`, opened without following links.
pub(super) fn open(state_dir: &Path) -> io::Result<File> {
    keeper::open_private(&state_dir.join(super::LOCK_FILE), false)
}

/// Looks for the keeper of `state_dir`.
///
/// # Errors
/// When the lock file is not a private regular file of this user (planted), or when the
/// keeper's socket path holds something that is not this user's socket (planted): refused,
/// never followed.
pub(super) fn find(state_dir: &Path) -> io::Result<Found> {
    let file = open(state_dir)?;
    if keeper::try_lock(&file, true)? {
        // Nobody holds it exclusively: no keeper (our shared lock goes with the file).
        return Ok(Found::None);
    }
    let mut text = String::new();
    file.take(256).read_to_string(&mut text)?;
    let instance = text.trim();
    if instance.is_empty() || !instance.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
        return Ok(Found::NotReady);
    }
    attach::socket_dir(state_dir)?;
    let path = attach_socket_path(state_dir, instance);
    match std::fs::symlink_metadata(&path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Found::NotReady),
        Err(e) => Err(e),
        Ok(_) if attach::is_own_socket(&path) => Ok(Found::At(path)),
        Ok(_) => Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{} is not a socket of this user: refused (never followed)",
                path.display()
            ),
        )),
    }
}

/// The keeper's hold on the lock: taken for its whole life, with its instance written in.
pub(super) struct Held(#[allow(dead_code)] File);

/// Takes the lock of `state_dir` for a keeper, trying for `within` (a starter holds it shared
/// for a moment while it looks). `None`: another keeper holds it.
pub(super) fn take(state_dir: &Path, within: std::time::Duration) -> io::Result<Option<File>> {
    let file = open(state_dir)?;
    let deadline = std::time::Instant::now() + within;
    loop {
        if keeper::try_lock(&file, false)? {
            return Ok(Some(file));
        }
        if std::time::Instant::now() >= deadline {
            return Ok(None);
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// Writes the keeper's `instance` into the lock file it holds.
pub(super) fn publish(mut file: File, instance: &str) -> io::Result<Held> {
    file.set_len(0)?;
    file.rewind()?;
    file.write_all(instance.as_bytes())?;
    file.sync_data()?;
    Ok(Held(file))
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    fn found(dir: &Path) -> &'static str {
        match find(dir) {
            Ok(Found::None) => "none",
            Ok(Found::NotReady) => "not ready",
            Ok(Found::At(_)) => "at",
            Err(_) => "refused",
        }
    }

    #[test]
    fn a_keeper_is_found_only_through_its_lock_and_its_own_socket() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        assert_eq!(found(dir), "none", "nobody holds the lock");
        let held = take(dir, std::time::Duration::ZERO)
            .unwrap()
            .expect("the lock");
        assert!(
            take(dir, std::time::Duration::ZERO).unwrap().is_none(),
            "a second keeper leaves"
        );
        assert_eq!(found(dir), "not ready", "no instance written yet");
        let instance = "0123456789abcdef-0000";
        let held = publish(held, instance).unwrap();
        assert_eq!(found(dir), "not ready", "no socket yet");
        let sock = attach_socket_path(dir, instance);
        let elsewhere = dir.join("elsewhere.sock");
        let _listener = std::os::unix::net::UnixListener::bind(&elsewhere).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &sock).unwrap();
        assert_eq!(found(dir), "refused", "a link is never followed");
        std::fs::remove_file(&sock).unwrap();
        let _own = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        assert_eq!(found(dir), "at");
        drop(held);
        assert_eq!(found(dir), "none", "the lock goes with the keeper");
    }

    #[test]
    fn a_planted_lock_file_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let target = tmp.path().join("target");
        std::fs::write(&target, "x").unwrap();
        std::os::unix::fs::symlink(&target, tmp.path().join(crate::keep::LOCK_FILE)).unwrap();
        assert_eq!(found(tmp.path()), "refused");
        assert!(take(tmp.path(), std::time::Duration::ZERO).is_err());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "x");
    }
}
