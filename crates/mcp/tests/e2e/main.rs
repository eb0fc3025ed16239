//! End-to-end tests: the built `ptyjobs` binary driven by rmcp's own client over stdio.
// Unix only: the harness signals and inspects processes through /proc (Windows: tests/platforms/windows.test.mjs).
#![cfg(unix)]

mod attach;
mod bad_input;
mod budgets;
mod control;
mod cursors;
mod disk_trust;
mod environment;
mod inheritance;
mod input;
mod keep;
mod keep_faults;
mod keys;
mod lifecycle;
mod limits;
mod name_cwd;
mod names;
mod persist;
mod ports;
mod processes;
#[path = "../common/procs.rs"]
mod procs;
mod prompts;
mod protocol;
mod raw;
mod schemas;
mod services;
mod takeover;
mod tasks;
mod terminal;
mod tool_list;
mod tools;
mod util;
mod waits;
