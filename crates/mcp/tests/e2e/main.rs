//! End-to-end tests: the built `ptyjobs` binary driven by rmcp's own client over stdio.

mod bad_input;
mod cursors;
mod keys;
mod lifecycle;
mod persist;
mod processes;
#[path = "../common/procs.rs"]
mod procs;
mod takeover;
mod terminal;
mod tools;
mod util;
mod waits;
