//! Record and replay of MCP sessions and of LLM HTTP exchanges, so that a flaky server's
//! session, or an agent run, becomes a test that needs no network and gives the same answers
//! every time.
//!
//! - [`recording`]: the MCP recording format (NDJSON, versioned header, one line per message,
//!   an end marker, a checksum chain), its writer (redacting through [`redact::Redact`]) and its
//!   strict loader.
//! - [`engine`]: the pure replay engine: a recording answers live requests, strictly in order or
//!   by matching normalised requests ([`normalize`]), with notifications at their place, and a
//!   clear JSON-RPC error (never a hang) for what the recording lacks.
//! - [`serve`]: the engine as an MCP server over stdio and over Streamable HTTP.
//! - [`proxy`]: a recording proxy between an MCP client and a real stdio server.
//! - [`llm`]: recording (a reverse proxy) and byte-identical replay (a loopback server) of LLM
//!   HTTP exchanges, SSE streams included.
//!
//! The binary `tool-cli-replay` puts these on the command line (`main.rs`).

pub(crate) mod body;
pub(crate) mod chain;
pub mod engine;
pub mod llm;
pub mod normalize;
pub mod proxy;
pub mod recording;
pub mod redact;
pub mod serve;
