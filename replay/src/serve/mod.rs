//! The replay engine served as an MCP server: over stdio ([`stdio`], what a client launches as
//! a command) and over Streamable HTTP on loopback ([`http`]).

pub mod http;
pub mod stdio;

use serde_json::{Value, json};

/// The JSON-RPC answer to a line that is not JSON.
pub(crate) fn parse_error(reason: &str) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {"code": -32700, "message": format!("not JSON: {reason}; expected one JSON-RPC message per line")},
    })
}
