//! The file-system primitives of the state directory. Nothing else in the store does
//! path-based I/O: every file is reached through a [`Dir`] handle, one name at a time, and
//! nothing is followed through a symbolic link.
//!
//! - A directory is opened `O_DIRECTORY|O_NOFOLLOW` relative to its parent's handle (only the
//!   state directory itself is opened by path: where it lives is the user's choice).
//! - The state directory and its `jobs/` must be owned by this user and not writable by group
//!   or others; anything else is refused (another user could plant files in it).
//! - A file is written under a fresh random name opened `O_CREAT|O_EXCL|O_NOFOLLOW` (mode
//!   0600), then renamed into place: a link planted at the final name is replaced, never
//!   written through, and no name can be guessed in advance.
//! - A file is read `O_NOFOLLOW|O_NONBLOCK` and only if it is a regular file (a FIFO would
//!   block a reader forever), and at most a given number of bytes of it.
//! - Removal unlinks names (`unlinkat` never follows a link); a directory is emptied through
//!   its own `O_NOFOLLOW` handle, so a symlink in place of a directory is unlinked as a link
//!   and its target is left alone.

use std::fs::File;
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;

use rustix::fs::{AtFlags, FileType, Mode, OFlags};

pub(crate) use crate::sys::dir::Meta;
use crate::sys::dir::temp_name;

/// An open directory of the state directory.
#[derive(Debug)]
pub(crate) struct Dir {
    fd: OwnedFd,
}

#[allow(clippy::unnecessary_cast)] // the field types differ between targets
fn meta_of(st: &rustix::fs::Stat) -> Meta {
    Meta {
        is_dir: FileType::from_raw_mode(st.st_mode) == FileType::Directory,
        mtime: st.st_mtime as i64,
        id: (st.st_dev as u64, st.st_ino as u64),
    }
}

/// Mode bits that would let someone else plant files: group and other write. (`RawMode`:
/// `st_mode` is a `u32` on Linux and a `u16` on macOS.)
const FOREIGN_WRITE: rustix::fs::RawMode = 0o022;

fn io(e: rustix::io::Errno) -> std::io::Error {
    e.into()
}

/// Whether `e` says a name is a symbolic link where a directory or file was expected.
pub(crate) fn is_link_error(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ELOOP) | Some(libc::ENOTDIR))
}

/// Refuses a directory another user could write to (or owns).
fn refuse_unless_private(fd: impl AsFd, what: &Path) -> std::io::Result<()> {
    let st = rustix::fs::fstat(fd).map_err(io)?;
    let me = rustix::process::geteuid().as_raw();
    if st.st_uid != me {
        return Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            format!(
                "refusing {}: it is owned by uid {}, not by this user (uid {me}); another user \
                 could plant files in it. Use a directory of your own",
                what.display(),
                st.st_uid
            ),
        ));
    }
    let mode = st.st_mode & 0o7777;
    if mode & FOREIGN_WRITE != 0 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            format!(
                "refusing {}: it is writable by group or others (mode {mode:04o}); run \
                 `chmod 700 {}` or use another directory",
                what.display(),
                what.display()
            ),
        ));
    }
    Ok(())
}

impl Dir {
    /// Opens the state directory at `path`, creating it (and its parents) with mode 0700 when
    /// `create` and it is missing, and checks that it is private (see the module docs).
    pub(crate) fn open_state(path: &Path, create: bool) -> std::io::Result<Self> {
        if create {
            use std::os::unix::fs::DirBuilderExt;
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(path)?;
        }
        let fd = rustix::fs::open(
            path,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(io)?;
        refuse_unless_private(&fd, path)?;
        Ok(Self { fd })
    }

    /// Refuses this directory if another user owns it or could write to it; `shown` names it.
    pub(crate) fn check_private(&self, shown: &Path) -> std::io::Result<()> {
        refuse_unless_private(&self.fd, shown)
    }

    /// Creates the directory `name`, mode 0700; an existing one is fine.
    pub(crate) fn mkdir(&self, name: &str) -> std::io::Result<()> {
        match rustix::fs::mkdirat(&self.fd, name, Mode::from_raw_mode(0o700)) {
            Ok(()) | Err(rustix::io::Errno::EXIST) => Ok(()),
            Err(e) => Err(io(e)),
        }
    }

    /// Creates the directory `name`, mode 0700; it must not exist yet.
    pub(crate) fn mkdir_new(&self, name: &str) -> std::io::Result<()> {
        rustix::fs::mkdirat(&self.fd, name, Mode::from_raw_mode(0o700)).map_err(io)
    }

    /// Opens the subdirectory `name`; a symbolic link there is an error (`ELOOP`/`ENOTDIR`).
    pub(crate) fn sub(&self, name: &str) -> std::io::Result<Self> {
        let fd = rustix::fs::openat(
            &self.fd,
            name,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(io)?;
        Ok(Self { fd })
    }

    /// Creates a new empty file under a random name (`O_EXCL|O_NOFOLLOW`, mode 0600); returns
    /// the name and the file, open for writing.
    pub(crate) fn create_temp(&self, name: &str) -> std::io::Result<(String, File)> {
        let tmp = temp_name(name);
        let fd = rustix::fs::openat(
            &self.fd,
            tmp.as_str(),
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        )
        .map_err(io)?;
        Ok((tmp, File::from(fd)))
    }

    /// Renames `from` to `to` in this directory, replacing what `to` was (a link included,
    /// which is replaced, not followed).
    pub(crate) fn rename(&self, from: &str, to: &str) -> std::io::Result<()> {
        rustix::fs::renameat(&self.fd, from, &self.fd, to).map_err(io)
    }

    /// Opens the regular file `name` for reading, never through a link.
    pub(crate) fn open_read(&self, name: &str) -> std::io::Result<File> {
        let fd = rustix::fs::openat(
            &self.fd,
            name,
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(io)?;
        let st = rustix::fs::fstat(&fd).map_err(io)?;
        if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("{name} is not a regular file"),
            ));
        }
        Ok(File::from(fd))
    }

    /// Metadata of `name` itself (a link is described, not followed).
    pub(crate) fn stat(&self, name: &str) -> std::io::Result<rustix::fs::Stat> {
        rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW).map_err(io)
    }

    /// What the store needs to know of `name` itself (a link is described, not followed).
    pub(crate) fn meta(&self, name: &str) -> std::io::Result<Meta> {
        self.stat(name).map(|st| meta_of(&st))
    }

    /// [`Meta`] of this directory itself.
    pub(crate) fn meta_self(&self) -> std::io::Result<Meta> {
        self.stat_self().map(|st| meta_of(&st))
    }

    /// Whether `name` exists (as anything, a link included).
    pub(crate) fn exists(&self, name: &str) -> bool {
        self.stat(name).is_ok()
    }

    /// This directory's own metadata.
    pub(crate) fn stat_self(&self) -> std::io::Result<rustix::fs::Stat> {
        rustix::fs::fstat(&self.fd).map_err(io)
    }

    /// The names in this directory (not `.` and `..`), each with whether it is a directory (not
    /// a link to one) as the directory says.
    pub(crate) fn entries(&self) -> std::io::Result<Vec<(String, bool)>> {
        let mut out = Vec::new();
        for entry in rustix::fs::Dir::read_from(&self.fd).map_err(io)? {
            let entry = entry.map_err(io)?;
            let Ok(name) = entry.file_name().to_str() else {
                continue;
            };
            if name == "." || name == ".." {
                continue;
            }
            out.push((name.to_owned(), entry.file_type() == FileType::Directory));
        }
        Ok(out)
    }

    /// Bytes of the regular files directly in this directory.
    pub(crate) fn size(&self) -> u64 {
        self.entries()
            .unwrap_or_default()
            .iter()
            .filter_map(|(name, _)| self.stat(name).ok())
            .filter(|st| FileType::from_raw_mode(st.st_mode) == FileType::RegularFile)
            .map(|st| u64::try_from(st.st_size).unwrap_or(0))
            .sum()
    }

    /// Unlinks the file (or link) `name`; a missing one is fine.
    pub(crate) fn remove_file(&self, name: &str) -> std::io::Result<()> {
        match rustix::fs::unlinkat(&self.fd, name, AtFlags::empty()) {
            Ok(()) | Err(rustix::io::Errno::NOENT) => Ok(()),
            Err(e) => Err(io(e)),
        }
    }

    /// Removes the empty directory `name` (`unlinkat(AT_REMOVEDIR)`); a missing one is fine.
    pub(crate) fn remove_dir(&self, name: &str) -> std::io::Result<()> {
        match rustix::fs::unlinkat(&self.fd, name, AtFlags::REMOVEDIR) {
            Ok(()) | Err(rustix::io::Errno::NOENT) => Ok(()),
            Err(e) => Err(io(e)),
        }
    }
}

/// Fills `buf` from `file` at `offset` (positional: the file's cursor is not used).
pub(crate) fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
}

/// Waits for an exclusive lock on `file` (`flock`: held by its open file description, so two
/// opens in one process exclude each other too), released when the file is closed.
pub(crate) fn lock_exclusive(file: &File) -> std::io::Result<()> {
    rustix::fs::flock(file, rustix::fs::FlockOperation::LockExclusive).map_err(Into::into)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::dir::is_temp_name;
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn writes_replace_planted_links_and_never_follow_them() {
        let root = tempfile::tempdir().unwrap();
        let outside = root.path().join("outside");
        std::fs::write(&outside, "precious").unwrap();
        let state = root.path().join("state");
        let dir = Dir::open_state(&state, true).unwrap();
        std::os::unix::fs::symlink(&outside, state.join("meta.json")).unwrap();
        dir.write_atomic("meta.json", b"{}").unwrap();
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "precious");
        assert_eq!(
            std::fs::read_to_string(state.join("meta.json")).unwrap(),
            "{}"
        );
        std::os::unix::fs::symlink(&outside, state.join("log")).unwrap();
        assert!(dir.open_read("log").is_err(), "a link is not read through");
        let mut f = dir.create_file("log").unwrap();
        f.write_all(b"x").unwrap();
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "precious");
        assert!(
            std::fs::read_dir(&state)
                .unwrap()
                .all(|e| !is_temp_name(e.unwrap().file_name().to_str().unwrap()))
        );
    }

    #[test]
    fn removal_unlinks_a_linked_directory_and_leaves_its_target() {
        let root = tempfile::tempdir().unwrap();
        let target = root.path().join("target");
        std::fs::create_dir(&target).unwrap();
        std::fs::write(target.join("meta.json"), "keep").unwrap();
        let state = root.path().join("state");
        let dir = Dir::open_state(&state, true).unwrap();
        std::os::unix::fs::symlink(&target, state.join("job")).unwrap();
        assert!(dir.sub("job").is_err());
        dir.remove_tree("job").unwrap();
        assert!(!state.join("job").exists());
        assert_eq!(
            std::fs::read_to_string(target.join("meta.json")).unwrap(),
            "keep"
        );
        // A real directory with a link inside: the link goes, its target stays.
        dir.mkdir_new("real").unwrap();
        std::os::unix::fs::symlink(&target, state.join("real/inner")).unwrap();
        dir.remove_tree("real").unwrap();
        assert!(!state.join("real").exists());
        assert!(target.join("meta.json").exists());
    }

    #[test]
    fn open_directories_must_be_private() {
        let root = tempfile::tempdir().unwrap();
        let state = root.path().join("state");
        std::fs::create_dir(&state).unwrap();
        std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = Dir::open_state(&state, true).unwrap_err();
        assert!(e.to_string().contains("writable by group or others"), "{e}");
        std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o700)).unwrap();
        let dir = Dir::open_state(&state, false).unwrap();
        let made = dir.private_sub("jobs", true, &state.join("jobs")).unwrap();
        assert_eq!(made.stat_self().unwrap().st_mode & 0o777, 0o700);
        std::fs::write(state.join("fifo-stand-in"), "x").unwrap();
        assert_eq!(dir.read("fifo-stand-in", 1).unwrap(), b"x");
        assert!(dir.read("fifo-stand-in", 0).is_err(), "over the cap");
    }
}
