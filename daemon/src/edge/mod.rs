//! The edge: everything between a socket and the services. [`server`] owns the accept loop and
//! hyper; `gate` checks the bearer token, `Host`/`Origin` and serves `/metrics`; `shape_layer`
//! reads a body within its limits and classifies it (`shape`), running a batch's entries at once
//! (`batch`); `rpc` maps each JSON-RPC method onto its service and is the only place a typed
//! error becomes a JSON-RPC error; `answer` holds an answer to its share of the response size
//! limit and `spill` writes what does not fit to a file the client reads back.
//!
//! Nothing below the edge imports it (`tests/tidy.rs`). Embedders reach it through
//! [`server::run`] and the few settings re-exported here.

pub(crate) mod answer;
mod batch;
mod gate;
mod gateway;
pub(crate) mod rpc;
pub mod server;
mod shape;
mod shape_layer;
pub(crate) mod spill;

pub use shape::DEFAULT_MAX_BODY_BYTES;
pub use spill::{DEFAULT_TTL as DEFAULT_SPILL_TTL, SpillStore};
