//! The tool-cli daemon: one pool of MCP servers behind a local, authenticated JSON-RPC endpoint.
//!
//! See `ARCHITECTURE.md` for the map. In short: [`config`] reads the servers file, [`pool`] holds
//! one MCP client connection per server and is the [`provider::ToolProvider`] the daemon serves,
//! [`pipeline`] is the one path every call takes (resolve, plan, execute, record),
//! [`services`] answer the methods over it, `rpc` maps methods onto them and is the only
//! place errors become JSON-RPC errors, and [`server`] serves it over HTTP behind the [`auth`]
//! layer. [`trace`] appends a line per call to the trace file, as one of the pipeline's
//! observers.

pub mod answer;
pub mod auth;
mod batch;
pub mod catalog;
pub mod config;
mod elicitation;
pub mod error;
mod gate;
pub mod log_filter;
mod log_text;
pub mod memory;
pub mod oauth;
mod paging;
pub mod pipeline;
pub mod policy;
pub mod pool;
pub mod provider;
pub mod reaper;
pub mod redact;
pub mod resilience;
mod rpc;
pub mod runtime_file;
pub mod sampling;
pub mod server;
pub mod services;
pub mod shape;
pub mod spill;
pub mod subreaper;
mod suggest;
mod tool_search;
pub mod trace;
