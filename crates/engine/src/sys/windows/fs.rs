//! The file-system primitives of the state directory on Windows, with the same interface as on
//! Unix but weaker guarantees, said here plainly:
//!
//! - Directories are reached by path (Windows has no `openat`): a name is checked not to be a
//!   symbolic link or junction (a reparse point) before it is used, which leaves a race a
//!   local attacker with write access to the directory could win. The directory lives under
//!   `%LOCALAPPDATA%`, which only its user (and administrators) can write by default.
//! - The state directory, `jobs\` and each job's directory are created with a user-only
//!   security descriptor (owner the user, a protected DACL granting only the user), and an
//!   existing state directory or `jobs\` is refused unless the user owns it and no one else
//!   may use it: see [`super::acl`], which says what is allowed and why.
//! - A file is written under a fresh random name created with `create_new` (it cannot exist
//!   before), then renamed into place (`MoveFileEx` with replace): a reader sees the old or the
//!   new content, never a mix.

use std::fs::{File, OpenOptions};
use std::os::windows::fs::{MetadataExt, OpenOptionsExt};
use std::os::windows::io::AsRawHandle;
use std::path::{Path, PathBuf};

use super::acl;
pub(crate) use crate::sys::dir::Meta;
use crate::sys::dir::temp_name;
use windows_sys::Win32::Storage::FileSystem::{
    BY_HANDLE_FILE_INFORMATION, FILE_ATTRIBUTE_REPARSE_POINT, FILE_FLAG_BACKUP_SEMANTICS,
    FILE_FLAG_OPEN_REPARSE_POINT, GetFileInformationByHandle,
};

/// What a link (reparse point) met where a file or directory was expected is reported as:
/// `ERROR_CANT_RESOLVE_FILENAME`.
const LINK_ERROR: i32 = 1921;
/// `ERROR_DIRECTORY`: a file where a directory was expected.
const NOT_A_DIRECTORY: i32 = 267;

/// An open directory of the state directory (by path; see the module docs).
#[derive(Debug)]
pub(crate) struct Dir {
    path: PathBuf,
}

/// Whether `e` says a name is a link where a directory or file was expected.
pub(crate) fn is_link_error(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(LINK_ERROR | NOT_A_DIRECTORY))
}

fn link_error() -> std::io::Error {
    std::io::Error::from_raw_os_error(LINK_ERROR)
}

fn is_link(m: &std::fs::Metadata) -> bool {
    m.file_type().is_symlink() || m.file_attributes() & FILE_ATTRIBUTE_REPARSE_POINT != 0
}

/// Opens `path` itself (a link is opened as the link, a directory as a directory).
fn open_any(path: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .read(true)
        .custom_flags(FILE_FLAG_BACKUP_SEMANTICS | FILE_FLAG_OPEN_REPARSE_POINT)
        .open(path)
}

fn meta_of(path: &Path) -> std::io::Result<Meta> {
    let m = std::fs::symlink_metadata(path)?;
    let file = open_any(path)?;
    // SAFETY: a zeroed plain-data struct filled by the call from a valid handle.
    let info = unsafe {
        let mut info: BY_HANDLE_FILE_INFORMATION = std::mem::zeroed();
        if GetFileInformationByHandle(file.as_raw_handle(), &mut info) == 0 {
            return Err(std::io::Error::last_os_error());
        }
        info
    };
    let mtime = m
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
    Ok(Meta {
        is_dir: m.is_dir() && !is_link(&m),
        mtime,
        id: (
            u64::from(info.dwVolumeSerialNumber),
            u64::from(info.nFileIndexHigh) << 32 | u64::from(info.nFileIndexLow),
        ),
    })
}

impl Dir {
    /// Opens the state directory at `path`, creating it user-only (and its parents as they
    /// come) when `create` and it is missing. It must be a directory (a link to one is
    /// followed: where it lives is the user's choice) that is the user's own ([`acl`]).
    pub(crate) fn open_state(path: &Path, create: bool) -> std::io::Result<Self> {
        if create {
            if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
                std::fs::create_dir_all(parent)?;
            }
            acl::create_dir_private(path)?;
        }
        let m = std::fs::metadata(path)?;
        if !m.is_dir() {
            return Err(std::io::Error::from_raw_os_error(NOT_A_DIRECTORY));
        }
        let dir = OpenOptions::new()
            .read(true)
            .custom_flags(FILE_FLAG_BACKUP_SEMANTICS)
            .open(path)?;
        acl::check_private(dir.as_raw_handle(), path)?;
        Ok(Self {
            path: path.to_path_buf(),
        })
    }

    /// Refuses this directory unless it is the user's own ([`acl`]); `shown` names it.
    pub(crate) fn check_private(&self, shown: &Path) -> std::io::Result<()> {
        acl::check_private(open_any(&self.path)?.as_raw_handle(), shown)
    }

    fn at(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// Creates the directory `name` user-only ([`acl`]); an existing one is fine.
    pub(crate) fn mkdir(&self, name: &str) -> std::io::Result<()> {
        acl::create_dir_private(&self.at(name)).map(drop)
    }

    /// Creates the directory `name` user-only ([`acl`]); it must not exist yet.
    pub(crate) fn mkdir_new(&self, name: &str) -> std::io::Result<()> {
        if acl::create_dir_private(&self.at(name))? {
            Ok(())
        } else {
            Err(std::io::ErrorKind::AlreadyExists.into())
        }
    }

    /// Opens the subdirectory `name`; a link there is an error ([`is_link_error`]).
    pub(crate) fn sub(&self, name: &str) -> std::io::Result<Self> {
        let path = self.at(name);
        let m = std::fs::symlink_metadata(&path)?;
        if is_link(&m) {
            return Err(link_error());
        }
        if !m.is_dir() {
            return Err(std::io::Error::from_raw_os_error(NOT_A_DIRECTORY));
        }
        Ok(Self { path })
    }

    /// Creates a new empty file under a random name (`create_new`); returns the name and the
    /// file, open for writing.
    pub(crate) fn create_temp(&self, name: &str) -> std::io::Result<(String, File)> {
        let tmp = temp_name(name);
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(self.at(&tmp))?;
        Ok((tmp, file))
    }

    /// Renames `from` to `to` in this directory, replacing what `to` was.
    pub(crate) fn rename(&self, from: &str, to: &str) -> std::io::Result<()> {
        std::fs::rename(self.at(from), self.at(to))
    }

    /// Opens the regular file `name` for reading, never through a link.
    pub(crate) fn open_read(&self, name: &str) -> std::io::Result<File> {
        let path = self.at(name);
        let m = std::fs::symlink_metadata(&path)?;
        if is_link(&m) {
            return Err(link_error());
        }
        if !m.is_file() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("{name} is not a regular file"),
            ));
        }
        OpenOptions::new()
            .read(true)
            .custom_flags(FILE_FLAG_OPEN_REPARSE_POINT)
            .open(path)
    }

    /// What the store needs to know of `name` itself (a link is described, not followed).
    pub(crate) fn meta(&self, name: &str) -> std::io::Result<Meta> {
        meta_of(&self.at(name))
    }

    /// [`Meta`] of this directory itself.
    pub(crate) fn meta_self(&self) -> std::io::Result<Meta> {
        meta_of(&self.path)
    }

    /// Whether `name` exists (as anything, a link included).
    pub(crate) fn exists(&self, name: &str) -> bool {
        std::fs::symlink_metadata(self.at(name)).is_ok()
    }

    /// The names in this directory, each with whether it is a directory (not a link to one).
    pub(crate) fn entries(&self) -> std::io::Result<Vec<(String, bool)>> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(&self.path)? {
            let entry = entry?;
            let Ok(name) = entry.file_name().into_string() else {
                continue;
            };
            let kind = entry.file_type()?;
            out.push((name, kind.is_dir() && !kind.is_symlink()));
        }
        Ok(out)
    }

    /// Bytes of the regular files directly in this directory.
    pub(crate) fn size(&self) -> u64 {
        self.entries()
            .unwrap_or_default()
            .iter()
            .filter_map(|(name, _)| std::fs::symlink_metadata(self.at(name)).ok())
            .filter(std::fs::Metadata::is_file)
            .map(|m| m.len())
            .sum()
    }

    /// Removes the file (or link) `name`; a missing one is fine.
    pub(crate) fn remove_file(&self, name: &str) -> std::io::Result<()> {
        let path = self.at(name);
        let r = match std::fs::symlink_metadata(&path) {
            // A directory link (junction, directory symlink) is removed as a directory entry,
            // which removes the link, not its target.
            Ok(m) if is_link(&m) && m.is_dir() => std::fs::remove_dir(&path),
            _ => std::fs::remove_file(&path),
        };
        match r {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }

    /// Removes the empty directory `name`; a missing one is fine.
    pub(crate) fn remove_dir(&self, name: &str) -> std::io::Result<()> {
        match std::fs::remove_dir(self.at(name)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }
}

/// Fills `buf` from `file` at `offset`.
pub(crate) fn read_exact_at(
    file: &File,
    mut buf: &mut [u8],
    mut offset: u64,
) -> std::io::Result<()> {
    use std::os::windows::fs::FileExt;
    while !buf.is_empty() {
        match file.seek_read(buf, offset) {
            Ok(0) => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    "failed to fill whole buffer",
                ));
            }
            Ok(n) => {
                buf = &mut buf[n..];
                offset += n as u64;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Waits for an exclusive lock on the first byte of `file` (`LockFileEx`: held by the
/// handle), released when the file is closed.
pub(crate) fn lock_exclusive(file: &File) -> std::io::Result<()> {
    use windows_sys::Win32::Storage::FileSystem::{LOCKFILE_EXCLUSIVE_LOCK, LockFileEx};
    use windows_sys::Win32::System::IO::OVERLAPPED;
    // SAFETY: all-zero is a valid OVERLAPPED (offset 0, no event).
    let mut overlapped: OVERLAPPED = unsafe { std::mem::zeroed() };
    // SAFETY: the handle is open for the call; `overlapped` outlives it (a synchronous
    // handle: the call returns once the lock is held).
    let ok = unsafe {
        LockFileEx(
            file.as_raw_handle(),
            LOCKFILE_EXCLUSIVE_LOCK,
            0,
            1,
            0,
            &mut overlapped,
        )
    };
    if ok == 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn files_are_replaced_through_temp_names_and_trees_removed() {
        let root = tempfile::tempdir().unwrap();
        let state = root.path().join("state");
        let dir = Dir::open_state(&state, true).unwrap();
        let jobs = dir.private_sub("jobs", true, &state.join("jobs")).unwrap();
        jobs.write_atomic("meta.json", b"{}").unwrap();
        jobs.write_atomic("meta.json", b"{\"a\":1}").unwrap();
        assert_eq!(jobs.read("meta.json", 100).unwrap(), b"{\"a\":1}");
        assert!(jobs.read("meta.json", 3).is_err(), "over the cap");
        let mut log = jobs.create_file("log").unwrap();
        log.write_all(b"line\n").unwrap();
        drop(log);
        let mut buf = [0u8; 4];
        read_exact_at(&jobs.open_read("log").unwrap(), &mut buf, 1).unwrap();
        assert_eq!(&buf, b"ine\n");
        let names: Vec<String> = jobs
            .entries()
            .unwrap()
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        assert!(names.iter().all(|n| !n.ends_with(".tmp")), "{names:?}");
        assert_eq!(jobs.size(), 12);
        jobs.mkdir_new("job").unwrap();
        assert!(jobs.mkdir_new("job").is_err(), "it exists");
        let job = jobs.sub("job").unwrap();
        job.write_atomic("x", b"x").unwrap();
        let (a, b) = (jobs.meta("job").unwrap(), job.meta_self().unwrap());
        assert!(a.is_dir);
        assert_eq!(a.id, b.id, "the same directory by two names");
        assert_ne!(a.id, jobs.meta("log").unwrap().id);
        assert!(jobs.sub("log").is_err(), "a file is not a directory");
        jobs.remove_tree("job").unwrap();
        assert!(!jobs.exists("job"));
        jobs.remove_file("missing").unwrap();
    }

    #[test]
    fn a_state_directory_or_jobs_dir_others_may_use_is_refused() {
        let root = tempfile::tempdir().unwrap();
        let state = root.path().join("deep").join("state");
        let dir = Dir::open_state(&state, true).unwrap();
        dir.private_sub("jobs", true, &state.join("jobs")).unwrap();
        // Reopened as they were made: fine.
        let dir = Dir::open_state(&state, false).unwrap();
        dir.private_sub("jobs", false, &state.join("jobs")).unwrap();
        super::acl::grant_everyone(&state.join("jobs"));
        let e = dir
            .private_sub("jobs", false, &state.join("jobs"))
            .unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::PermissionDenied);
        assert!(
            e.to_string()
                .contains("jobs: its access control list grants S-1-1-0"),
            "{e}"
        );
        super::acl::grant_everyone(&state);
        let e = Dir::open_state(&state, true).unwrap_err();
        assert!(e.to_string().contains("grants S-1-1-0 access"), "{e}");
    }
}
