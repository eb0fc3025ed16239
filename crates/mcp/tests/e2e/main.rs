//! End-to-end tests: the built `ptyjobs` binary driven by rmcp's own client over stdio.

mod attach;
mod bad_input;
mod cursors;
mod input;
mod keys;
mod lifecycle;
mod persist;
mod processes;
#[path = "../common/procs.rs"]
mod procs;
mod terminal;
mod tools;
mod util;
mod waits;
