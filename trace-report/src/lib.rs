//! The trace report: what `tool-cli traces report` and the daemon's `tracesReport` compute from
//! trace lines, and what a session summary computes from a session's calls.
//!
//! It is its own small crate because three callers need the very same arithmetic: the daemon
//! (over its trace files, and over a session's in-memory calls), and the client, which with
//! `--file` reads trace files itself and needs no daemon at all. The protocol crate holds the
//! types ([`tool_cli_protocol::trace`]) but stays plain data; the daemon crate is far too heavy
//! for the client to link. So: [`aggregate`] is the pure aggregation, [`since`] reads `--since`,
//! [`time`] writes and reads RFC 3339 timestamps, and [`files`] is the thin I/O that feeds a
//! trace file and its rotated predecessors to the aggregation.

#![deny(missing_docs)]

pub mod aggregate;
pub mod files;
pub mod since;
pub mod time;
