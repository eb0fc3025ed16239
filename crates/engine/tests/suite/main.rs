//! The engine's integration tests, in one binary so that `cargo test` links it once.
//!
//! A test belongs here unless it measures or changes the state of the whole process (threads,
//! open files, resource limits, peak memory, counters of the process): those tests run beside
//! every other test of their binary, so each has a binary of its own — `exhaustion.rs`
//! (lowers `RLIMIT_NOFILE`, counts zombies), `kill_many.rs` (counts `/proc` scans),
//! `open_files.rs` (counts open files), `scale.rs` (threads and memory), `terminal_memory.rs`
//! (peak RSS) — and `layering.rs` checks the crate's dependencies with cargo.

#[path = "../common/mod.rs"]
mod common;

mod agent;
mod attach;
mod differential;
mod input;
mod io;
mod kill;
mod names;
mod planted;
mod policy;
mod ports;
mod processes;
mod services;
mod store;
mod terminal_cases;
mod terminal_queries;
