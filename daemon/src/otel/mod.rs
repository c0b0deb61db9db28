//! OpenTelemetry export wired into the daemon (docs/observability.md): the crate
//! `tool-cli-telemetry` builds and sends the spans and metrics; this module gives it the
//! daemon's facts, from two places only.
//!
//! - The edge (`rpc.rs`): one SERVER span per JSON-RPC request, under the caller's
//!   `traceparent` (HTTP header or `params._meta`), its identity put in the request's
//!   [`CallContext`] as a value ([`CallTrace`]).
//! - The record stage: every tool call's [`CallRecord`] carries the identity of its upstream
//!   span ([`CallSpan`], a child of the context's span, chosen before the request is sent so
//!   the pool can inject it upstream); [`SpanObserver`], one of the pipeline's observers, turns
//!   the record into the CLIENT span (or, for an agent's tool call, the `execute_tool` span
//!   that stands for it: no second span) and `mcp.client.operation.duration`.
//!
//! Nothing here blocks or fails a call: the crate's recording is a `try_send` into a bounded
//! queue. Arguments and results reach a span only with `captureContent`, through the JSONL
//! trace's redactor (`TraceRedaction`).
//!
//! [`CallContext`]: crate::pipeline::CallContext

mod agent;
mod edge;

use std::sync::Arc;

use serde_json::Value;
use tool_cli_protocol::methods::TransportKind;
use tool_cli_telemetry::settings::TelemetrySettings;
use tool_cli_telemetry::span::Timing;
use tool_cli_telemetry::spans::{
    CallExtras, Content, McpClientCall, Outcome, Target, ToolExecution, Transport, Upstream,
};
pub use tool_cli_telemetry::{StartError, Telemetry, TelemetryHealth};

pub(crate) use agent::{AgentSpans, ChatFacts};
pub(crate) use edge::{CallerTraceHeaders, RequestSpan};

use crate::pipeline::{CallObserver, CallRecord, OperationRecord, OperationTarget};
use crate::provider::ExchangeFacts;
use crate::trace::redact::Redactor;

pub use crate::pipeline::span::{AgentToolCall, CallSpan, CallTrace};

/// The JSONL trace's redactor as the exporter's: the same credential-name rule and the same
/// configured secret values, so a span never shows what the trace file would not.
pub(crate) struct TraceRedaction(pub(crate) Redactor);

impl tool_cli_telemetry::redact::Redact for TraceRedaction {
    fn redact(&self, value: &mut Value) {
        self.0.redact(value);
    }

    fn redact_text(&self, text: &str) -> String {
        let mut text = text.to_owned();
        self.0.redact_text(&mut text);
        text
    }
}

/// Starts export as `settings` say, redacting with the configured `secrets` as the JSONL trace
/// does.
pub fn start(
    settings: TelemetrySettings,
    secrets: impl IntoIterator<Item = String>,
) -> Result<Telemetry, StartError> {
    Telemetry::start(settings, Arc::new(TraceRedaction(Redactor::new(secrets))))
}

/// What `health` shows of export (owner token only); `None` when it is off.
pub(crate) fn health(
    telemetry: &Telemetry,
) -> Option<tool_cli_protocol::telemetry::TelemetryHealth> {
    if !telemetry.is_enabled() {
        return None;
    }
    let health = telemetry.health();
    Some(tool_cli_protocol::telemetry::TelemetryHealth {
        traces_endpoint: health.traces_endpoint.clone(),
        metrics_endpoint: health.metrics_endpoint.clone(),
        queue_capacity: health.queue_capacity as u64,
        queued: health.queued as u64,
        spans_enqueued: health.spans_enqueued,
        spans_exported: health.spans_exported,
        spans_dropped: health.spans_dropped(),
        spans_dropped_queue_full: health.spans_dropped_queue_full,
        spans_dropped_refused: health.spans_dropped_refused,
        spans_dropped_failed: health.spans_dropped_failed,
        export_retries: health.export_retries,
        metric_exports: health.metric_exports,
        metric_export_failures: health.metric_export_failures,
        malformed_trace_context: health.malformed_trace_context,
        last_error: health.last_error,
    })
}

/// Turns each finished call's record into its upstream span and duration metric.
pub struct SpanObserver {
    telemetry: Telemetry,
    capture_content: bool,
}

impl SpanObserver {
    /// An observer recording into `telemetry`; `capture_content` as `captureContent` says.
    pub fn new(telemetry: Telemetry, capture_content: bool) -> SpanObserver {
        SpanObserver {
            telemetry,
            capture_content,
        }
    }
}

/// What the pool noted of a span's request (`provider/exchange.rs`); nothing when export was
/// off as it was sent.
fn exchange_facts(span: &CallSpan) -> ExchangeFacts {
    span.exchange
        .as_ref()
        .map(|note| note.facts())
        .unwrap_or_default()
}

/// The MCP facts of an upstream request, for its span.
fn upstream<'a>(
    method: &'a str,
    target: Target<'a>,
    transport: Option<TransportKind>,
    facts: &'a ExchangeFacts,
) -> Upstream<'a> {
    Upstream {
        method,
        target,
        request_id: facts.request_id.as_deref(),
        protocol_version: facts.protocol_version.as_deref(),
        mcp_session_id: facts.mcp_session_id.as_deref(),
        transport: match transport {
            Some(TransportKind::Http) => Transport::Http,
            _ => Transport::Stdio,
        },
        server_address: facts.server_address.as_deref(),
        server_port: facts.server_port,
    }
}

/// How a call ended, in the conventions' terms.
pub(crate) fn outcome(record: &CallRecord) -> Outcome<'_> {
    match &record.error {
        Some(error) => Outcome::RpcError {
            code: i64::from(error.code),
            message: &error.message,
            kind: Some(error.kind),
        },
        None if !record.success => Outcome::ToolError,
        None => Outcome::Ok,
    }
}

impl CallObserver for SpanObserver {
    fn wants_payloads(&self) -> bool {
        self.capture_content
    }

    fn observe(&self, record: &CallRecord) {
        let Some(span) = &record.span else {
            return;
        };
        let call_id = record.call_id.to_string();
        let extras = CallExtras {
            server: record.server.as_deref(),
            session_id: record.session_id.as_deref(),
            selection_rule: record
                .selection
                .as_ref()
                .map(|selection| selection.rule.as_str()),
            attempts: Some(record.attempts),
            retry_reason: record.retry_reason.as_deref(),
            cost_usd: (record.cost_usd > 0.0).then_some(record.cost_usd),
            call_id: Some(&call_id),
            step: record.step,
            degraded: record.degraded,
            dry_run: record.dry_run,
        };
        let facts = exchange_facts(span);
        let upstream = upstream(
            "tools/call",
            Target::Tool(&record.tool),
            span.transport,
            &facts,
        );
        let timing = Timing::ending_at(record.finished_at, record.latency);
        let content = Content {
            arguments: record.arguments.as_ref(),
            result: record.result.as_ref(),
        };
        let outcome = outcome(record);
        match &span.tool_call {
            Some(tool_call) => self.telemetry.tool_execution(
                &span.ids,
                &ToolExecution {
                    tool: &record.tool,
                    tool_call_id: tool_call.id.as_deref(),
                    upstream: record.executed.then_some(upstream),
                    outcome,
                    timing,
                    extras,
                    content,
                },
            ),
            None if record.executed => self.telemetry.mcp_client_call(
                &span.ids,
                &McpClientCall {
                    upstream,
                    outcome,
                    timing,
                    extras,
                    content,
                },
            ),
            None => {}
        }
    }

    fn observe_operation(&self, record: &OperationRecord) {
        let facts = exchange_facts(&record.span);
        let target = match &record.target {
            OperationTarget::None => Target::None,
            OperationTarget::Prompt(name) => Target::Prompt(name),
            OperationTarget::Resource(uri) => Target::Resource(uri),
        };
        let outcome = match &record.error {
            Some(error) => Outcome::RpcError {
                code: i64::from(error.code),
                message: &error.message,
                kind: Some(error.kind),
            },
            None => Outcome::Ok,
        };
        self.telemetry.mcp_client_call(
            &record.span.ids,
            &McpClientCall {
                upstream: upstream(record.method, target, Some(record.transport), &facts),
                outcome,
                timing: Timing::ending_at(record.finished_at, record.latency),
                extras: CallExtras {
                    server: Some(&record.server),
                    session_id: record.session_id.as_deref(),
                    attempts: Some(record.attempts),
                    retry_reason: record.retry_reason.as_deref(),
                    ..CallExtras::default()
                },
                content: Content::default(),
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::pipeline::{CallContext, RecordedError};

    fn record(trace: CallTrace) -> CallRecord {
        let mut context = CallContext::new(crate::auth::Grant {
            token_id: "t".into(),
            is_owner: true,
            scope: Arc::new(crate::policy::Scope::unrestricted()),
        });
        context.trace = trace;
        CallRecord::new(&context, "echo", "0123456789abcdef".into())
    }

    #[test]
    fn a_record_ends_as_ok_a_tool_error_or_the_rpc_error_it_carried() {
        let mut ok = record(CallTrace::default());
        ok.success = true;
        assert_eq!(outcome(&ok), Outcome::Ok);
        let tool_error = record(CallTrace::default());
        assert_eq!(outcome(&tool_error), Outcome::ToolError);
        let mut failed = record(CallTrace::default());
        failed.error = Some(RecordedError {
            code: -32001,
            kind: "timeout",
            message: "timed out".into(),
        });
        assert_eq!(
            outcome(&failed),
            Outcome::RpcError {
                code: -32001,
                message: "timed out",
                kind: Some("timeout"),
            }
        );
    }

    #[test]
    fn a_calls_span_is_a_child_of_its_contexts_and_keeps_the_agent_mark() {
        let telemetry_parent = tool_cli_telemetry::context::SpanIds::new(
            None,
            &tool_cli_telemetry::sampler::Sampler::AlwaysOn,
        );
        let trace = CallTrace {
            span: telemetry_parent.clone(),
            tool_call: Some(AgentToolCall::default()),
        };
        let span = record(trace)
            .span
            .expect("every record has a span identity");
        assert_eq!(span.ids.context.trace_id, telemetry_parent.context.trace_id);
        assert_eq!(
            span.ids.parent_span_id,
            Some(telemetry_parent.context.span_id)
        );
        assert!(span.tool_call.is_some());

        // Export off and no caller context: nothing to send upstream.
        let passed = record(CallTrace::default()).span.unwrap();
        assert!(passed.ids.upstream_context().is_none());
        assert!(!passed.ids.recorded);
    }
}
