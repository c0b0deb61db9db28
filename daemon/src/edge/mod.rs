//! The edge: everything between a socket and the services. [`server`] owns the accept loop and
//! hyper; `dispatch` is the one hyper service: `gate` checks the bearer token, `Host`/`Origin`
//! and serves `/metrics`, then the body is read within its limits and its JSON-RPC request,
//! notification or batch answered through jsonrpsee's method table (`dispatch/jsonrpc`, with
//! `shape` classifying what is no request and `batch` splitting and joining a batch whose entries
//! run at once); `rpc` maps each JSON-RPC method onto its service and is the only place a typed
//! error becomes a JSON-RPC error; `answer` holds an answer to its share of the response size
//! limit and `spill` writes what does not fit to a file the client reads back; `http_body` is
//! the body of every response.
//!
//! Nothing below the edge imports it (`tests/tidy.rs`). Embedders reach it through
//! [`server::run`] and the few settings re-exported here.

pub(crate) mod answer;
mod batch;
mod dispatch;
mod gate;
mod gateway;
mod http_body;
pub(crate) mod rpc;
pub mod server;
mod shape;
pub(crate) mod spill;

pub use shape::DEFAULT_MAX_BODY_BYTES;
pub use spill::{DEFAULT_TTL as DEFAULT_SPILL_TTL, SpillStore};
