//! OpenTelemetry export in `health` (docs/observability.md): where spans and metrics go and
//! what became of them. Owner token only; absent when export is off.

use serde::{Deserialize, Serialize};

/// The OTLP exporter in `health`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TelemetryHealth {
    /// Where spans go (no credentials), when traces are exported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traces_endpoint: Option<String>,
    /// Where metrics go, when metrics are exported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics_endpoint: Option<String>,
    /// The span queue's bound (`OTEL_BSP_MAX_QUEUE_SIZE`).
    pub queue_capacity: u64,
    /// Spans waiting in the queue now.
    pub queued: u64,
    /// Spans handed to the exporter since the daemon started.
    pub spans_enqueued: u64,
    /// Spans the collector accepted.
    pub spans_exported: u64,
    /// Spans dropped, whatever the reason (the sum of the three below).
    pub spans_dropped: u64,
    /// Dropped because the queue was full (the collector slow or down).
    pub spans_dropped_queue_full: u64,
    /// Refused by the collector (400, 413, 500, a partial success's rejections).
    pub spans_dropped_refused: u64,
    /// Dropped after the retries ran out.
    pub spans_dropped_failed: u64,
    /// Export requests sent again (after a 429/502/503/504 or a failed connection).
    pub export_retries: u64,
    /// Metric exports the collector accepted.
    pub metric_exports: u64,
    /// Metric exports that failed (the next one carries the totals again).
    pub metric_export_failures: u64,
    /// Callers' `traceparent`/`tracestate` values that were malformed and ignored.
    pub malformed_trace_context: u64,
    /// The last export problem, if any (never a header's value).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
}
