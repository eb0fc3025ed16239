//! The state directory's compound operations, the same on every platform. Each is built from
//! the platform's primitives on [`Dir`] (`sys/<os>/fs.rs`: open a subdirectory without
//! following a link, create a file under a name nobody can guess, rename, unlink), which is
//! where the guarantees of the state directory are kept; nothing here reaches a file by path.

use std::fs::File;
use std::io::{Read, Write};
use std::path::Path;

use super::fs::{Dir, is_link_error};

/// What the store needs to know of a name: its kind, its age and what tells it apart from any
/// other file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Meta {
    /// A directory (not a link to one).
    pub(crate) is_dir: bool,
    /// Last modification, in seconds since the Unix epoch.
    pub(crate) mtime: i64,
    /// Equal for two names of the same file only: device and inode on Unix, volume serial
    /// number and file index on Windows.
    pub(crate) id: (u64, u64),
}

/// A fresh name nobody can guess: `.<name>.<32 random hex digits>.tmp`.
pub(crate) fn temp_name(name: &str) -> String {
    format!(".{name}.{}.tmp", uuid::Uuid::new_v4().simple())
}

/// Whether `name` is one of [`temp_name`]'s (the Unix tests look for leftovers).
#[cfg(all(test, unix))]
pub(crate) fn is_temp_name(name: &str) -> bool {
    name.starts_with('.') && name.ends_with(".tmp")
}

/// How deep [`Dir::remove_tree`] goes: job directories hold only files.
const TREE_DEPTH: u32 = 4;

impl Dir {
    /// Opens the subdirectory `name` (not through a link), creating it private when `create`,
    /// and checks that it is private (the platform's rule); `shown` names it in errors.
    pub(crate) fn private_sub(
        &self,
        name: &str,
        create: bool,
        shown: &Path,
    ) -> std::io::Result<Self> {
        if create {
            self.mkdir(name)?;
        }
        let sub = self.sub(name).map_err(|e| {
            if is_link_error(&e) {
                std::io::Error::new(
                    std::io::ErrorKind::PermissionDenied,
                    format!(
                        "refusing {}: it is not a directory of its own (a symbolic link?)",
                        shown.display()
                    ),
                )
            } else {
                e
            }
        })?;
        sub.check_private(shown)?;
        Ok(sub)
    }

    /// Creates `name` as a new empty file (through a random name and a rename) and returns
    /// it open for writing: whatever was at `name` before is replaced, a link included (it is
    /// replaced, not followed).
    pub(crate) fn create_file(&self, name: &str) -> std::io::Result<File> {
        let (tmp, file) = self.create_temp(name)?;
        self.rename(&tmp, name)
            .inspect_err(|_| self.remove_file_quietly(&tmp))?;
        Ok(file)
    }

    /// Replaces `name` with `bytes` atomically: a reader (or a crash) sees the old or the new
    /// content, never a mix.
    pub(crate) fn write_atomic(&self, name: &str, bytes: &[u8]) -> std::io::Result<()> {
        let (tmp, mut file) = self.create_temp(name)?;
        let written = file.write_all(bytes);
        drop(file);
        written
            .and_then(|()| self.rename(&tmp, name))
            .inspect_err(|_| self.remove_file_quietly(&tmp))
    }

    /// Reads the regular file `name` whole, refusing one larger than `max` bytes.
    pub(crate) fn read(&self, name: &str, max: u64) -> std::io::Result<Vec<u8>> {
        let file = self.open_read(name)?;
        let mut bytes = Vec::new();
        file.take(max.saturating_add(1)).read_to_end(&mut bytes)?;
        if bytes.len() as u64 > max {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("{name} is larger than {max} bytes"),
            ));
        }
        Ok(bytes)
    }

    fn remove_file_quietly(&self, name: &str) {
        let _ = self.remove_file(name);
    }

    /// Removes the directory `name` and what it holds, never following a link: a link at
    /// `name` (or inside) is removed itself and its target left alone. Job directories hold
    /// only files; deeper trees are refused past a few levels.
    pub(crate) fn remove_tree(&self, name: &str) -> std::io::Result<()> {
        self.remove_tree_at(name, TREE_DEPTH)
    }

    fn remove_tree_at(&self, name: &str, depth: u32) -> std::io::Result<()> {
        let sub = match self.sub(name) {
            Ok(sub) => sub,
            // A link or a file where a directory was: remove the name itself.
            Err(e) if is_link_error(&e) => return self.remove_file(name),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e),
        };
        for (entry, is_dir) in sub.entries()? {
            if is_dir {
                if depth == 0 {
                    return Err(std::io::Error::other(format!(
                        "{name} holds directories nested too deep to be a job's"
                    )));
                }
                sub.remove_tree_at(&entry, depth - 1)?;
            } else {
                sub.remove_file(&entry)?;
            }
        }
        drop(sub);
        self.remove_dir(name)
    }
}
