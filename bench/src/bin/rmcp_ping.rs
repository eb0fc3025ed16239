//! The reference MCP server: rmcp with no tools at all, on tokio's default multi-threaded
//! runtime (as `ptyjobs` is). Its `ping` answer is the SDK's round-trip floor that `roundtrip`
//! compares the real server with.
//!
//! By default it serves on `rmcp::transport::stdio_pipes()`, the transport `ptyjobs` uses;
//! `rmcp_ping --stdio` uses the SDK's generic `stdio()` instead.

use rmcp::{ServerHandler, ServiceExt};

#[derive(Clone)]
struct Trivial;

impl ServerHandler for Trivial {}

#[tokio::main]
async fn main() {
    let service = if std::env::args().any(|a| a == "--stdio") {
        Trivial.serve(rmcp::transport::stdio()).await
    } else {
        Trivial.serve(rmcp::transport::stdio_pipes()).await
    };
    if let Ok(service) = service {
        let _ = service.waiting().await;
    }
}
