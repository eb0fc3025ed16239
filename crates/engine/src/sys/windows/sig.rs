//! Signal numbers. Windows has no signals: these are the POSIX numbers (as Linux numbers
//! them), so names, parsing and records read the same everywhere. A "signal" sent to a job
//! ends its whole Job Object, with `128 + number` as the exit code (see [`super::tree`]).

pub(crate) const SIGHUP: i32 = 1;
pub(crate) const SIGINT: i32 = 2;
pub(crate) const SIGQUIT: i32 = 3;
pub(crate) const SIGILL: i32 = 4;
pub(crate) const SIGTRAP: i32 = 5;
pub(crate) const SIGABRT: i32 = 6;
pub(crate) const SIGBUS: i32 = 7;
pub(crate) const SIGFPE: i32 = 8;
pub(crate) const SIGKILL: i32 = 9;
pub(crate) const SIGUSR1: i32 = 10;
pub(crate) const SIGSEGV: i32 = 11;
pub(crate) const SIGUSR2: i32 = 12;
pub(crate) const SIGPIPE: i32 = 13;
pub(crate) const SIGALRM: i32 = 14;
pub(crate) const SIGTERM: i32 = 15;
pub(crate) const SIGCONT: i32 = 18;
pub(crate) const SIGSTOP: i32 = 19;
pub(crate) const SIGTSTP: i32 = 20;
pub(crate) const SIGWINCH: i32 = 28;
