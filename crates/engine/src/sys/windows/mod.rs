//! Windows: a pseudo console (ConPTY) per job, its shell (`cmd.exe /d /s /c` by default)
//! started suspended, put in a Job Object that is the job's process tree, then resumed.
//!
//! Raw `windows-sys` calls rather than portable-pty: portable-pty 0.9 always passes
//! `PSEUDOCONSOLE_INHERIT_CURSOR` and sets `STARTF_USESTDHANDLES` with invalid handles, and
//! under Wine (the only Windows the test suite has) the first makes the console host exit and
//! the second leaves the child writing nowhere.

pub(crate) mod acl;
pub(crate) mod attach;
pub(crate) mod control;
pub(crate) mod fs;
pub(crate) mod keeper;
mod lane;
pub(crate) mod launch;
pub(crate) mod net;
pub(crate) mod procs;
pub(crate) mod pty;
pub(crate) mod sig;
pub(crate) mod spawn;
pub(crate) mod tree;

/// `s` as a NUL-terminated UTF-16 string.
pub(crate) fn wide(s: &std::ffi::OsStr) -> Vec<u16> {
    use std::os::windows::ffi::OsStrExt;
    s.encode_wide().chain(std::iter::once(0)).collect()
}
