//! Wire types of the tool-cli bridge protocol, version 1.
//!
//! This crate is the one definition of what travels between the `tool-cli-daemon` and its clients
//! (the `tool-cli` binary, scripts in any language, agent harnesses): the JSON-RPC 2.0 envelope,
//! the params and result of every method, the error codes and the shape of their `data`, the
//! environment variables a harness hands to its subprocesses, the runtime file the daemon
//! writes so a client can find it, and the trace file it appends every call to.
//!
//! It is plain data: serde types and constants, no I/O, no async runtime, no HTTP. The format is
//! documented for other languages in `docs/protocol.md`; the two must agree.

#![deny(missing_docs)]

pub mod agent;
pub mod elicitation;
pub mod envelope;
pub mod error;
pub mod json;
pub mod manage;
pub mod methods;
pub mod orchestration;
pub mod params;
pub mod remote_auth;
pub mod runtime;
pub mod search;
pub mod telemetry;
pub mod trace;

pub use envelope::{ErrorObject, Request, RequestId, Response};
pub use error::{ArgumentError, ErrorData, ValidationError, code};

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

/// The port a client tries last, when neither `TOOL_CLI_PORT` nor a runtime file names one: the
/// fixed port of the reference 1.x bridge. A listener found there must still prove its identity.
pub const DEFAULT_PORT: u16 = 7179;

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

/// The daemon's proof of identity, asked for before a client sends its token.
///
/// A client that found a port in a stale variable must not hand its token to whatever listens
/// there now. So before the first authenticated request it sends `POST /identity` with no
/// `Authorization` and no body, and the headers [`identity::NONCE_HEADER`] (32 random bytes, 64
/// lowercase hex) and [`identity::TOKEN_ID_HEADER`] (the id of its token (`identity::TOKEN_ID_RULE`)). The
/// daemon answers `200 {"proof": <64 hex>}` with HMAC-SHA256 keyed by the token over
/// [`identity::message`], which binds the proof to the nonce and to the `Host` the client dialed
/// (so a listener cannot relay the challenge to the real daemon on another port). An unknown
/// token id gets 403 with the body `{"error": "unknownTokenId"}` ([`identity::UNKNOWN_TOKEN_ID`]),
/// so a client can say "this daemon does not know your token" rather than suspect an impostor;
/// that answer reveals nothing the status alone did not (see `docs/security.md`). The client
/// compares the proof in constant time and only then sends the token.
pub mod identity {
    /// Path of the challenge.
    pub const PATH: &str = "/identity";
    /// Header carrying the client's nonce.
    pub const NONCE_HEADER: &str = "x-tool-cli-nonce";
    /// Header carrying the id of the token the daemon must prove it holds.
    pub const TOKEN_ID_HEADER: &str = "x-tool-cli-token-id";
    /// Domain separation for the proof.
    pub const CONTEXT: &str = "tool-cli-identity-v1";
    /// The `error` member of the 403 answer to a token id the daemon does not know (never
    /// minted, revoked or expired): `{"error": "unknownTokenId"}`.
    pub const UNKNOWN_TOKEN_ID: &str = "unknownTokenId";

    /// The message the proof is computed over.
    pub fn message(nonce_hex: &str, host: &str) -> String {
        format!("{CONTEXT}\n{nonce_hex}\n{host}")
    }

    /// The public id of a token: the first 8 bytes of its SHA-256, as 16 lowercase hex
    /// characters. Computed by the caller (this crate has no hash function); this documents
    /// the rule and checks the shape.
    pub fn is_token_id(text: &str) -> bool {
        text.len() == 16 && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    }

    /// Whether a nonce has the required shape (64 lowercase hex characters).
    pub fn is_nonce(text: &str) -> bool {
        text.len() == 64 && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    }

    /// The token id rule, for documentation links.
    pub const TOKEN_ID_RULE: &str = "first 8 bytes of SHA-256(token), lowercase hex";
}

/// Keys the daemon adds to a `CallToolResult`'s `_meta` (everything else is the server's own).
pub mod meta {
    /// How many attempts the call took (1 unless a transient failure was retried).
    pub const ATTEMPTS: &str = "tool-cli/attempts";
    /// Present when the server was failing and a cached result of a read-only tool was served
    /// instead: `{"reason": string, "ageMs": integer}`.
    pub const DEGRADED: &str = "tool-cli/degraded";
    /// Which server took the call and why: a [`crate::orchestration::SelectionInfo`].
    pub const SELECTION: &str = "tool-cli/selection";
    /// Present and `true` when the result is the stored answer of an earlier call with the same
    /// idempotency key, not a new call.
    pub const REPLAYED: &str = "tool-cli/replayed";
    /// The call's id, as in traces.
    pub const CALL_ID: &str = "tool-cli/callId";
    /// Present when the answer was too large to send whole and was saved to a file instead:
    /// a [`crate::methods::SpilledAnswer`]. Read it with `readSpilled`.
    pub const SPILLED: &str = "tool-cli/spilled";
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
    /// Daemon side: host names accepted in `Host` besides loopback ones, comma-separated (as
    /// `--allow-host`).
    pub const ALLOW_HOSTS: &str = "TOOL_CLI_ALLOW_HOSTS";
    /// Client side: request timeout in milliseconds (default 30000, at most 300000).
    pub const TIMEOUT_MS: &str = "TOOL_CLI_TIMEOUT_MS";
    /// Daemon side: path of the servers config file.
    pub const CONFIG: &str = "TOOL_CLI_CONFIG";
    /// Both sides: the directory holding the runtime file, overriding the default location.
    pub const RUNTIME_DIR: &str = "TOOL_CLI_RUNTIME_DIR";
    /// Both sides: the pin store (`docs/pinning.md`), overriding the default location
    /// ([`crate::runtime::pin_store_path`]).
    pub const PINS: &str = "TOOL_CLI_PINS";
    /// Client side: `1` keeps `tool-cli` from starting a daemon when none is running.
    pub const NO_AUTOSTART: &str = "TOOL_CLI_NO_AUTOSTART";
    /// Client side: the idle shutdown, in seconds, of a daemon `tool-cli` starts (`0`: none).
    pub const AUTOSTART_IDLE_SECS: &str = "TOOL_CLI_AUTOSTART_IDLE_SECS";
    /// Client side: the daemon's Unix socket, used instead of `TOOL_CLI_PORT`.
    pub const SOCKET: &str = "TOOL_CLI_SOCKET";
    /// Client side: `0` lets the client send its token to a listener that does not serve the
    /// identity proof at all (a tool-cli 1.x bridge); by default it refuses (exit 8).
    pub const REQUIRE_IDENTITY: &str = "TOOL_CLI_REQUIRE_IDENTITY";
    /// Client side: the session every call (and agent run) is attached to, like `--session`.
    pub const SESSION: &str = "TOOL_CLI_SESSION";
    /// Client side: the daemon's instance id ([`crate::runtime::DaemonId`]), printed by
    /// `--print-env` beside the port and token. While that very process is alive, it holds its
    /// port, so the client skips the identity proof and the handshake round trips.
    pub const DAEMON_ID: &str = "TOOL_CLI_DAEMON_ID";
    /// Prefix shared by every variable above; none of them is ever passed to an MCP server.
    pub const PREFIX: &str = "TOOL_CLI_";
    /// The directory of tool search's sentence-embedding model when the config's
    /// `search.model` does not name one; `off` for none.
    pub const SEARCH_MODEL: &str = "TOOL_CLI_SEARCH_MODEL";
}
