//! The tool-cli daemon: one pool of MCP servers behind a local, authenticated JSON-RPC endpoint.
//!
//! See `ARCHITECTURE.md` for the map. In short: [`config`] reads the servers file, [`pool`] holds
//! one MCP client connection per server, [`pipeline`] is the one path every call takes
//! (resolve, validate, execute, trace), `rpc` maps methods onto it and is the only place errors
//! become JSON-RPC errors, and [`server`] serves it over HTTP behind the [`auth`] layer.

pub mod answer;
pub mod auth;
mod client_fields;
pub mod config;
pub mod error;
mod gate;
pub mod pipeline;
pub mod policy;
pub mod pool;
pub mod reaper;
pub mod resilience;
mod rpc;
pub mod runtime_file;
pub mod server;
pub mod shape;
pub mod spill;
mod validate;
