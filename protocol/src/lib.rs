//! Wire types of the tool-cli bridge protocol, version 1.
//!
//! This crate is the one definition of what travels between the `tool-cli-daemon` and its clients
//! (the `tool-cli` binary, scripts in any language, agent harnesses): the JSON-RPC 2.0 envelope,
//! the params and result of every method, the error codes and the shape of their `data`, the
//! environment variables a harness hands to its subprocesses, and the runtime file the daemon
//! writes so a client can find it.
//!
//! It is plain data: serde types and constants, no I/O, no async runtime, no HTTP. The format is
//! documented for other languages in `docs/protocol.md`; the two must agree.

#![deny(missing_docs)]

pub mod envelope;
pub mod error;
pub mod methods;
pub mod runtime;

pub use envelope::{ErrorObject, Request, RequestId, Response};
pub use error::{ArgumentError, ErrorData, code};

/// Name of the bridge protocol, as announced by `getBridgeInfo`. Clients refuse any other.
pub const BRIDGE_PROTOCOL_NAME: &str = "tool-cli-bridge";

/// Major version of the bridge protocol. Clients refuse a bridge whose major differs.
pub const BRIDGE_PROTOCOL_MAJOR: u32 = 1;

/// Full version of the bridge protocol this crate describes.
pub const BRIDGE_PROTOCOL_VERSION: &str = "1.0";

/// Name of our implementation in `getBridgeInfo.serverImplementation`.
pub const IMPLEMENTATION_NAME: &str = "tool-cli-daemon-rs";

/// Default host a client connects to and the daemon binds.
pub const DEFAULT_HOST: &str = "127.0.0.1";

/// Default client request timeout in milliseconds.
pub const DEFAULT_TIMEOUT_MS: u64 = 30_000;

/// Largest client request timeout in milliseconds; larger values are clamped.
pub const MAX_TIMEOUT_MS: u64 = 300_000;

/// Length in bytes of a generated bearer token (written as twice as many hex characters).
pub const TOKEN_BYTES: usize = 32;

/// The JSON Schema dialect used for a tool's `inputSchema` when it names none.
pub const DEFAULT_JSON_SCHEMA_DIALECT: &str = "https://json-schema.org/draft/2020-12/schema";

/// Every JSON Schema dialect `callTool` validates arguments against.
pub const SUPPORTED_JSON_SCHEMA_DIALECTS: &[&str] = &[
    "https://json-schema.org/draft/2020-12/schema",
    "https://json-schema.org/draft/2019-09/schema",
    "http://json-schema.org/draft-07/schema#",
];

/// Keys the daemon adds to a `CallToolResult`'s `_meta` (everything else is the server's own).
pub mod meta {
    /// How many attempts the call took (1 unless a transient failure was retried).
    pub const ATTEMPTS: &str = "tool-cli/attempts";
    /// Present when the server was failing and a cached result of a read-only tool was served
    /// instead: `{"reason": string, "ageMs": integer}`.
    pub const DEGRADED: &str = "tool-cli/degraded";
}

/// Names of the environment variables of the protocol.
pub mod env {
    /// Client side: the daemon's TCP port.
    pub const PORT: &str = "TOOL_CLI_PORT";
    /// Client side: the bearer token. Daemon side: a token to use instead of a random one.
    pub const TOKEN: &str = "TOOL_CLI_TOKEN";
    /// Client side: the address to reach the daemon at (default `127.0.0.1`).
    pub const HOST: &str = "TOOL_CLI_HOST";
    /// Daemon side: the address to bind (default `127.0.0.1`).
    pub const BIND_HOST: &str = "TOOL_CLI_BIND_HOST";
    /// Client side: request timeout in milliseconds (default 30000, at most 300000).
    pub const TIMEOUT_MS: &str = "TOOL_CLI_TIMEOUT_MS";
    /// Daemon side: path of the servers config file.
    pub const CONFIG: &str = "TOOL_CLI_CONFIG";
    /// Both sides: the directory holding the runtime file, overriding the default location.
    pub const RUNTIME_DIR: &str = "TOOL_CLI_RUNTIME_DIR";
    /// Prefix shared by every variable above; none of them is ever passed to an MCP server.
    pub const PREFIX: &str = "TOOL_CLI_";
}
