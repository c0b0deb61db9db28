//! The exporter's counters as Prometheus text families, for the daemon's `GET /metrics` page
//! (appended to what `daemon/src/metrics/render.rs` writes). Pure.

use std::fmt::Write as _;

use crate::telemetry::TelemetryHealth;

fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

/// The families, in the text exposition format (version 0.0.4).
pub fn render(health: &TelemetryHealth) -> String {
    let mut out = String::new();
    family(
        &mut out,
        "tool_cli_telemetry_enabled",
        "gauge",
        "Whether OpenTelemetry export is on (1) or off (0).",
    );
    let _ = writeln!(
        out,
        "tool_cli_telemetry_enabled {}",
        u8::from(health.enabled)
    );
    family(
        &mut out,
        "tool_cli_telemetry_spans_exported_total",
        "counter",
        "Spans the OTLP collector accepted.",
    );
    let _ = writeln!(
        out,
        "tool_cli_telemetry_spans_exported_total {}",
        health.spans_exported
    );
    family(
        &mut out,
        "tool_cli_telemetry_spans_dropped_total",
        "counter",
        "Spans dropped: queue_full (collector slow or down), refused (by the collector), failed \
         (retries ran out).",
    );
    for (reason, count) in [
        ("queue_full", health.spans_dropped_queue_full),
        ("refused", health.spans_dropped_refused),
        ("failed", health.spans_dropped_failed),
    ] {
        let _ = writeln!(
            out,
            "tool_cli_telemetry_spans_dropped_total{{reason=\"{reason}\"}} {count}"
        );
    }
    family(
        &mut out,
        "tool_cli_telemetry_queue_spans",
        "gauge",
        "Spans waiting to be exported.",
    );
    let _ = writeln!(out, "tool_cli_telemetry_queue_spans {}", health.queued);
    family(
        &mut out,
        "tool_cli_telemetry_queue_capacity_spans",
        "gauge",
        "The span queue's bound.",
    );
    let _ = writeln!(
        out,
        "tool_cli_telemetry_queue_capacity_spans {}",
        health.queue_capacity
    );
    family(
        &mut out,
        "tool_cli_telemetry_export_retries_total",
        "counter",
        "Export requests sent again after 429/502/503/504 or a failed connection.",
    );
    let _ = writeln!(
        out,
        "tool_cli_telemetry_export_retries_total {}",
        health.export_retries
    );
    family(
        &mut out,
        "tool_cli_telemetry_metric_exports_total",
        "counter",
        "Metric exports, by outcome.",
    );
    let _ = writeln!(
        out,
        "tool_cli_telemetry_metric_exports_total{{outcome=\"ok\"}} {}",
        health.metric_exports
    );
    let _ = writeln!(
        out,
        "tool_cli_telemetry_metric_exports_total{{outcome=\"failed\"}} {}",
        health.metric_export_failures
    );
    family(
        &mut out,
        "tool_cli_telemetry_malformed_trace_context_total",
        "counter",
        "Callers' traceparent/tracestate values that were malformed and ignored.",
    );
    let _ = writeln!(
        out,
        "tool_cli_telemetry_malformed_trace_context_total {}",
        health.malformed_trace_context
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_drop_reason_is_a_labelled_series() {
        let health = TelemetryHealth {
            enabled: true,
            spans_dropped_queue_full: 3,
            spans_dropped_refused: 2,
            spans_dropped_failed: 1,
            malformed_trace_context: 4,
            ..TelemetryHealth::default()
        };
        let text = render(&health);
        assert!(text.contains("tool_cli_telemetry_spans_dropped_total{reason=\"queue_full\"} 3\n"));
        assert!(text.contains("tool_cli_telemetry_spans_dropped_total{reason=\"refused\"} 2\n"));
        assert!(text.contains("tool_cli_telemetry_spans_dropped_total{reason=\"failed\"} 1\n"));
        assert!(text.contains("tool_cli_telemetry_malformed_trace_context_total 4\n"));
        assert!(text.contains("tool_cli_telemetry_enabled 1\n"));
        // Every sample line belongs to a family declared above it.
        for line in text.lines().filter(|line| !line.starts_with('#')) {
            let name = line.split(['{', ' ']).next().unwrap();
            assert!(text.contains(&format!("# TYPE {name} ")), "{line}");
        }
    }
}
