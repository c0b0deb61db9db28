//! [`Telemetry`], the handle the daemon holds: it decides span identities, records the spans
//! and metrics of each operation from plain facts, counts malformed trace contexts, and reports
//! its health. A disabled handle ([`Telemetry::disabled`]) costs a branch per call.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::context::{self, Extraction, SpanContext, SpanIds};
use crate::export::http::{ClientError, Collector};
use crate::export::retry::RetryPolicy;
use crate::export::{Exporter, Setup};
use crate::metrics::{Instrument, Metrics};
use crate::otlp;
use crate::redact::{ContentPolicy, Redact};
use crate::sampler::Sampler;
use crate::semconv::{gen_ai, general, mcp, rpc, tool_cli, values};
use crate::settings::TelemetrySettings;
use crate::span::SpanRecord;
use crate::spans::{
    self, AgentRun, ChatCall, DaemonRequest, Listener, McpClientCall, Outcome, Target,
    ToolExecution, Upstream,
};

/// Why export could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StartError {
    /// The collector client could not be built (a bad CA file, a header HTTP cannot carry).
    #[error(transparent)]
    Client(#[from] ClientError),
    /// The exporter thread could not be started.
    #[error("cannot start the OTLP exporter thread: {0}")]
    Thread(#[from] std::io::Error),
}

/// What `health` and `/metrics` show of the exporter.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TelemetryHealth {
    /// Whether export is on.
    pub enabled: bool,
    /// Where spans go (no credentials), when traces are exported.
    pub traces_endpoint: Option<String>,
    /// Where metrics go, when metrics are exported.
    pub metrics_endpoint: Option<String>,
    /// The span queue's bound.
    pub queue_capacity: usize,
    /// Spans waiting now.
    pub queued: usize,
    /// Spans handed to the exporter.
    pub spans_enqueued: u64,
    /// Spans the collector accepted.
    pub spans_exported: u64,
    /// Spans dropped because the queue was full (the collector slow or down).
    pub spans_dropped_queue_full: u64,
    /// Spans the collector refused (400, 413, 500, a partial success's rejections).
    pub spans_dropped_refused: u64,
    /// Spans dropped after retries ran out.
    pub spans_dropped_failed: u64,
    /// Requests sent again after a 429/502/503/504 or a failed connection.
    pub export_retries: u64,
    /// Metric exports the collector accepted.
    pub metric_exports: u64,
    /// Metric exports that failed (the next one carries the totals again).
    pub metric_export_failures: u64,
    /// Callers' `traceparent`/`tracestate` values that were malformed and ignored.
    pub malformed_trace_context: u64,
    /// The last export problem, if any (never a header's value).
    pub last_error: Option<String>,
}

impl TelemetryHealth {
    /// Every span dropped, whatever the reason.
    pub fn spans_dropped(&self) -> u64 {
        self.spans_dropped_queue_full + self.spans_dropped_refused + self.spans_dropped_failed
    }
}

struct Enabled {
    exporter: Exporter,
    metrics: Option<Arc<Metrics>>,
    traces_on: bool,
    sampler: Sampler,
    content: ContentPolicy,
    traces_endpoint: Option<String>,
    metrics_endpoint: Option<String>,
}

/// The telemetry of one daemon. Cheap to clone; every clone feeds the same exporter.
#[derive(Clone)]
pub struct Telemetry {
    enabled: Option<Arc<Enabled>>,
    malformed: Arc<AtomicU64>,
}

impl std::fmt::Debug for Telemetry {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Telemetry")
            .field("enabled", &self.enabled.is_some())
            .finish_non_exhaustive()
    }
}

impl Telemetry {
    /// Export off: nothing is recorded; callers' contexts are passed through unchanged.
    pub fn disabled() -> Telemetry {
        Telemetry {
            enabled: None,
            malformed: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Starts exporting as `settings` say; `redactor` is the daemon's (its JSONL trace's).
    pub fn start(
        settings: TelemetrySettings,
        redactor: Arc<dyn Redact>,
    ) -> Result<Telemetry, StartError> {
        Telemetry::start_with(settings, redactor, RetryPolicy::default())
    }

    /// As [`Telemetry::start`], with the retry spacing chosen (tests use milliseconds).
    pub fn start_with(
        settings: TelemetrySettings,
        redactor: Arc<dyn Redact>,
        retry: RetryPolicy,
    ) -> Result<Telemetry, StartError> {
        let traces = settings.traces.as_ref().map(Collector::new).transpose()?;
        let metrics = match &settings.metrics {
            Some(signal) => Some((Collector::new(signal)?, Arc::new(Metrics::default()))),
            None => None,
        };
        let metrics_handle = metrics.as_ref().map(|(_, metrics)| Arc::clone(metrics));
        let instance_id = format!("{:032x}", rand::random::<u128>());
        let traces_on = traces.is_some();
        let exporter = Exporter::start(Setup {
            traces,
            metrics,
            resource: otlp::resource(&settings.resource, &instance_id),
            batch: settings.batch,
            metric_export_interval: settings.metric_export_interval,
            metric_export_timeout: settings.metric_export_timeout,
            retry,
        })?;
        Ok(Telemetry {
            enabled: Some(Arc::new(Enabled {
                exporter,
                metrics: metrics_handle,
                traces_on,
                sampler: settings.sampler,
                content: ContentPolicy {
                    capture: settings.capture_content,
                    redactor,
                },
                traces_endpoint: settings
                    .traces
                    .as_ref()
                    .map(|signal| signal.endpoint.display_url()),
                metrics_endpoint: settings
                    .metrics
                    .as_ref()
                    .map(|signal| signal.endpoint.display_url()),
            })),
            malformed: Arc::new(AtomicU64::new(0)),
        })
    }

    /// Whether export is on.
    pub fn is_enabled(&self) -> bool {
        self.enabled.is_some()
    }

    /// The identity of a span about to begin under `parent` (the caller's context, or a span of
    /// ours). With export off (or traces off), the caller's context is passed through.
    pub fn begin(&self, parent: Option<&SpanContext>) -> SpanIds {
        match &self.enabled {
            Some(enabled) if enabled.traces_on => SpanIds::new(parent, &enabled.sampler),
            _ => SpanIds::pass_through(parent),
        }
    }

    /// The caller's context from its HTTP headers; a malformed one is ignored and counted.
    pub fn extract_from_headers<'a>(
        &self,
        traceparent: impl IntoIterator<Item = &'a str>,
        tracestate: impl IntoIterator<Item = &'a str>,
    ) -> Option<SpanContext> {
        self.counted(context::extract_from_headers(traceparent, tracestate))
    }

    /// The caller's context from an MCP request's `params._meta`; a malformed one is ignored
    /// and counted.
    pub fn extract_from_meta(&self, meta: Option<&serde_json::Value>) -> Option<SpanContext> {
        self.counted(context::extract_from_meta(meta))
    }

    fn counted(&self, extraction: Extraction) -> Option<SpanContext> {
        if extraction.malformed.is_some() {
            self.malformed.fetch_add(1, Ordering::Relaxed);
        }
        extraction.parent
    }

    fn enqueue(&self, enabled: &Enabled, ids: &SpanIds, build: impl FnOnce() -> SpanRecord) {
        if ids.recorded && enabled.traces_on {
            enabled.exporter.enqueue(build());
        }
    }

    /// A JSON-RPC request the daemon answered: its SERVER span, and for a method with an MCP
    /// equivalent, `mcp.server.operation.duration`.
    pub fn daemon_request(&self, ids: &SpanIds, request: &DaemonRequest<'_>) {
        let Some(enabled) = &self.enabled else {
            return;
        };
        self.enqueue(enabled, ids, || {
            spans::daemon_request(ids, request, &enabled.content)
        });
        if let (Some(metrics), Some(method)) = (
            &enabled.metrics,
            crate::semconv::mcp_method_of_daemon_method(request.method),
        ) {
            let mut attributes = MetricAttributes::default();
            attributes.push(mcp::METHOD_NAME, method);
            if method == values::MCP_TOOLS_CALL {
                attributes.push(gen_ai::OPERATION_NAME, values::OPERATION_EXECUTE_TOOL);
            }
            attributes.target(request.target);
            attributes.push(
                general::NETWORK_TRANSPORT,
                match request.listener {
                    Listener::Tcp => values::TRANSPORT_TCP,
                    Listener::Unix => values::TRANSPORT_UNIX,
                },
            );
            attributes.with_outcome(request.outcome, |attributes| {
                metrics.record(
                    Instrument::McpServerDuration,
                    attributes,
                    request.timing.duration.as_secs_f64(),
                );
            });
        }
    }

    /// A request to an upstream MCP server: its CLIENT span and
    /// `mcp.client.operation.duration`.
    pub fn mcp_client_call(&self, ids: &SpanIds, call: &McpClientCall<'_>) {
        let Some(enabled) = &self.enabled else {
            return;
        };
        self.enqueue(enabled, ids, || {
            spans::mcp_client(ids, call, &enabled.content)
        });
        if let Some(metrics) = &enabled.metrics {
            record_upstream(
                metrics,
                &call.upstream,
                call.extras.server,
                call.outcome,
                call.timing.duration,
            );
        }
    }

    /// An agent's tool call: its `execute_tool` span (with the upstream request's MCP facts, no
    /// separate MCP span) and, when a request was sent, `mcp.client.operation.duration`.
    pub fn tool_execution(&self, ids: &SpanIds, execution: &ToolExecution<'_>) {
        let Some(enabled) = &self.enabled else {
            return;
        };
        self.enqueue(enabled, ids, || {
            spans::tool_execution(ids, execution, &enabled.content)
        });
        if let (Some(metrics), Some(upstream)) = (&enabled.metrics, &execution.upstream) {
            record_upstream(
                metrics,
                upstream,
                execution.extras.server,
                execution.outcome,
                execution.timing.duration,
            );
        }
    }

    /// An agent run: its `invoke_agent` span and `gen_ai.client.operation.duration`.
    pub fn agent_run(&self, ids: &SpanIds, run: &AgentRun<'_>) {
        let Some(enabled) = &self.enabled else {
            return;
        };
        self.enqueue(enabled, ids, || {
            spans::agent_run(ids, run, &enabled.content)
        });
        if let Some(metrics) = &enabled.metrics {
            let mut attributes = MetricAttributes::default();
            attributes.push(gen_ai::OPERATION_NAME, values::OPERATION_INVOKE_AGENT);
            attributes.push(gen_ai::PROVIDER_NAME, run.provider);
            if let Some(model) = run.request_model {
                attributes.push(gen_ai::REQUEST_MODEL, model);
            }
            attributes.with_outcome(run.outcome, |attributes| {
                metrics.record(
                    Instrument::GenAiDuration,
                    attributes,
                    run.timing.duration.as_secs_f64(),
                );
            });
        }
    }

    /// A model call: its `chat` span, `gen_ai.client.operation.duration` and
    /// `gen_ai.client.token.usage` (input and output).
    pub fn chat(&self, ids: &SpanIds, call: &ChatCall<'_>) {
        let Some(enabled) = &self.enabled else {
            return;
        };
        self.enqueue(enabled, ids, || spans::chat(ids, call, &enabled.content));
        let Some(metrics) = &enabled.metrics else {
            return;
        };
        let port = call.server_port.map(|port| port.to_string());
        let mut attributes = MetricAttributes::default();
        attributes.push(gen_ai::OPERATION_NAME, values::OPERATION_CHAT);
        attributes.push(gen_ai::PROVIDER_NAME, call.provider);
        attributes.push(gen_ai::REQUEST_MODEL, call.request_model);
        if let Some(model) = call.response_model {
            attributes.push(gen_ai::RESPONSE_MODEL, model);
        }
        if let Some(address) = call.server_address {
            attributes.push(general::SERVER_ADDRESS, address);
        }
        if let Some(port) = &port {
            attributes.push(general::SERVER_PORT, port);
        }
        for (token_type, count) in [
            (values::TOKEN_INPUT, call.usage.input),
            (values::TOKEN_OUTPUT, call.usage.output),
        ] {
            if let Some(count) = count {
                let mut with_type = attributes.clone();
                with_type.push(gen_ai::TOKEN_TYPE, token_type);
                metrics.record(Instrument::GenAiTokens, &with_type.0, count as f64);
            }
        }
        attributes.with_outcome(call.outcome, |attributes| {
            metrics.record(
                Instrument::GenAiDuration,
                attributes,
                call.timing.duration.as_secs_f64(),
            );
        });
    }

    /// The exporter's state.
    pub fn health(&self) -> TelemetryHealth {
        let malformed_trace_context = self.malformed.load(Ordering::Relaxed);
        let Some(enabled) = &self.enabled else {
            return TelemetryHealth {
                malformed_trace_context,
                ..TelemetryHealth::default()
            };
        };
        let counters = &enabled.exporter.counters;
        TelemetryHealth {
            enabled: true,
            traces_endpoint: enabled.traces_endpoint.clone(),
            metrics_endpoint: enabled.metrics_endpoint.clone(),
            queue_capacity: if enabled.traces_on {
                enabled.exporter.queue_capacity
            } else {
                0
            },
            queued: enabled.exporter.queued(),
            spans_enqueued: counters.enqueued.load(Ordering::Relaxed),
            spans_exported: counters.exported.load(Ordering::Relaxed),
            spans_dropped_queue_full: counters.dropped_queue_full.load(Ordering::Relaxed),
            spans_dropped_refused: counters.dropped_refused.load(Ordering::Relaxed),
            spans_dropped_failed: counters.dropped_failed.load(Ordering::Relaxed),
            export_retries: counters.retries.load(Ordering::Relaxed),
            metric_exports: counters.metric_exports.load(Ordering::Relaxed),
            metric_export_failures: counters.metric_export_failures.load(Ordering::Relaxed),
            malformed_trace_context,
            last_error: counters
                .last_error
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .clone(),
        }
    }

    /// Waits (at most `timeout`) until every span recorded before now has been exported or
    /// dropped and the metrics exported; `false` when that took longer (or export is off).
    pub async fn flush(&self, timeout: Duration) -> bool {
        match &self.enabled {
            Some(enabled) => enabled.exporter.flush(timeout).await,
            None => false,
        }
    }

    /// As [`Telemetry::flush`], then stops the exporter: the daemon's last act at shutdown.
    pub async fn shutdown(&self, timeout: Duration) -> bool {
        match &self.enabled {
            Some(enabled) => enabled.exporter.shutdown(timeout).await,
            None => true,
        }
    }
}

/// A metric's attribute set as it is recorded: borrowed, in a fixed order per call site.
#[derive(Clone, Default)]
struct MetricAttributes<'a>(Vec<(&'static str, &'a str)>);

impl<'a> MetricAttributes<'a> {
    fn push(&mut self, key: &'static str, value: &'a str) {
        self.0.push((key, value));
    }

    fn target(&mut self, target: Target<'a>) {
        match target {
            Target::Tool(name) => self.push(gen_ai::TOOL_NAME, name),
            Target::Prompt(name) => self.push(gen_ai::PROMPT_NAME, name),
            // A resource URI is opt-in on metrics (high cardinality).
            Target::Resource(_) | Target::None => {}
        }
    }

    /// Adds `error.type` (and the code) for a failure and hands the set to `record`.
    fn with_outcome(mut self, outcome: Outcome<'_>, record: impl FnOnce(&[(&'static str, &str)])) {
        let code;
        match outcome {
            Outcome::Ok => record(&self.0),
            Outcome::ToolError => {
                self.push(general::ERROR_TYPE, values::TOOL_ERROR);
                record(&self.0);
            }
            Outcome::RpcError {
                code: number, kind, ..
            } => {
                code = number.to_string();
                let mut with = self.0.clone();
                with.push((general::ERROR_TYPE, &code));
                with.push((rpc::RESPONSE_STATUS_CODE, &code));
                if let Some(kind) = kind {
                    with.push((tool_cli::ERROR_KIND, kind));
                }
                record(&with);
            }
            Outcome::Failed { error_type, .. } => {
                let error_type = if error_type.is_empty() {
                    values::OTHER_ERROR
                } else {
                    error_type
                };
                let mut with = self.0.clone();
                with.push((general::ERROR_TYPE, error_type));
                record(&with);
            }
        }
    }
}

fn record_upstream(
    metrics: &Metrics,
    upstream: &Upstream<'_>,
    server: Option<&str>,
    outcome: Outcome<'_>,
    duration: Duration,
) {
    let mut attributes = MetricAttributes::default();
    attributes.push(mcp::METHOD_NAME, upstream.method);
    if upstream.method == values::MCP_TOOLS_CALL {
        attributes.push(gen_ai::OPERATION_NAME, values::OPERATION_EXECUTE_TOOL);
    }
    attributes.target(upstream.target);
    attributes.push(
        general::NETWORK_TRANSPORT,
        match upstream.transport {
            spans::Transport::Stdio => values::TRANSPORT_PIPE,
            spans::Transport::Http => values::TRANSPORT_TCP,
        },
    );
    if let Some(version) = upstream.protocol_version {
        attributes.push(mcp::PROTOCOL_VERSION, version);
    }
    if let Some(server) = server {
        attributes.push(tool_cli::SERVER, server);
    }
    attributes.with_outcome(outcome, |attributes| {
        metrics.record(
            Instrument::McpClientDuration,
            attributes,
            duration.as_secs_f64(),
        );
    });
}

#[cfg(test)]
mod tests;
