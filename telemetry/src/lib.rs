//! OpenTelemetry export of what the daemon does, following the semantic conventions for MCP and
//! GenAI: spans and metrics built from plain facts, W3C trace context in and out, and an OTLP
//! exporter over HTTP/protobuf that never slows a call down.
//!
//! The parts, each usable alone:
//! - [`settings`]: the `OTEL_*` variables and the config's `telemetry` block → [`settings::TelemetrySettings`]
//!   (off unless asked for; a bad value is an error naming the variable).
//! - [`context`]: `traceparent`/`tracestate` parsing and formatting, extraction from HTTP headers
//!   or `params._meta`, injection into upstream requests; [`context::SpanIds`], a span's identity
//!   chosen before its work starts.
//! - [`spans`]: pure builders of the daemon's spans (SERVER per JSON-RPC request, CLIENT per
//!   upstream MCP request, `invoke_agent`, `chat`, `execute_tool`); [`semconv`] holds the names.
//! - [`metrics`]: the conventions' histograms, aggregated in process.
//! - [`Telemetry`]: the handle the daemon holds: identities, recording, health, flush.
//! - [`prometheus`]: the exporter's counters as `/metrics` families.
//! - `testing` (feature `testing`): an OTLP receiver on `127.0.0.1:0` for tests.
//!
//! **Architecture Invariant:** nothing here blocks a call or fails it: recording is a few
//! allocations and a `try_send`; export runs on a thread of its own with its own runtime; a full
//! queue drops and counts.

pub mod context;
mod export;
pub mod metrics;
pub mod otlp;
pub mod prometheus;
pub mod redact;
pub mod sampler;
pub mod semconv;
pub mod settings;
pub mod span;
pub mod spans;
mod telemetry;
#[cfg(feature = "testing")]
pub mod testing;

pub use export::http::ClientError;
pub use export::retry::{self, RetryPolicy};
pub use telemetry::{StartError, Telemetry, TelemetryHealth};
