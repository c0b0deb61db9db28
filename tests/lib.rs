//! Shared harness of the end-to-end tests: start the real `tool-cli-daemon` on a config written
//! to a fresh temp dir, talk to it over loopback HTTP, run the real `tool-cli` binary against it,
//! and build configs for the real MCP peers installed by `scripts/install-peers.sh`.
//!
//! Everything here is synchronous and uses only `std::net` and `std::process`, so a test can send
//! exactly the bytes it wants (a malformed body, a wrong token) and nothing hides what the
//! binaries do. Every process a test starts is owned by a value whose `Drop` stops it, so a
//! panicking test leaves no daemon, no peer and no child of either behind.

use std::time::Duration;

mod daemon;
mod http;
mod locations;
mod mcp_gateway;
pub mod output;
mod peers;
mod processes;
mod results;
pub mod scripted_llm;

pub use daemon::*;
pub use http::*;
pub use locations::*;
pub use mcp_gateway::*;
pub use peers::*;
pub use processes::*;
pub use results::*;

/// How long a daemon may take to print its `export` lines: every configured server's first
/// connection attempt must settle first, and Node or Python peers start in about a second.
pub const STARTUP_TIMEOUT: Duration = Duration::from_secs(30);

/// How long one HTTP exchange with the daemon may take before the test fails.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// How long a process is given to exit after SIGTERM before it is killed.
pub const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(15);

/// How long one run of the `tool-cli` binary may take.
pub const CLIENT_TIMEOUT: Duration = Duration::from_secs(60);
