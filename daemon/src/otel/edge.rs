//! The edge's part of export: the caller's trace context (the `traceparent` and `tracestate`
//! HTTP headers the gate kept, or `params._meta`), and one SERVER span per JSON-RPC request,
//! begun before the handler runs (so the calls it makes are its children) and ended with the
//! request's outcome.

use std::time::SystemTime;

use serde::Deserialize;
use serde_json::Value;
use tokio::time::Instant;
use tool_cli_protocol::methods::name as method_name;
use tool_cli_telemetry::Telemetry;
use tool_cli_telemetry::context::SpanIds;
use tool_cli_telemetry::span::Timing;
use tool_cli_telemetry::spans::{CallExtras, Content, DaemonRequest, Listener, Outcome, Target};

/// The caller's `traceparent` and `tracestate` header values, as the gate found them (every
/// occurrence: two `traceparent` headers make the context malformed).
#[derive(Debug, Clone, Default)]
pub(crate) struct CallerTraceHeaders {
    pub(crate) traceparent: Vec<String>,
    pub(crate) tracestate: Vec<String>,
}

impl CallerTraceHeaders {
    /// The trace headers of a request, when it has any.
    pub(crate) fn of(headers: &hyper::header::HeaderMap) -> Option<CallerTraceHeaders> {
        let values = |name: &str| -> Vec<String> {
            headers
                .get_all(name)
                .iter()
                // A value that is not visible ASCII is malformed; the parser says so.
                .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned())
                .collect()
        };
        let traceparent = values("traceparent");
        if traceparent.is_empty() {
            return None;
        }
        Some(CallerTraceHeaders {
            traceparent,
            tracestate: values("tracestate"),
        })
    }
}

/// What the SERVER span needs from a request's params: its target and its `_meta` (which may
/// carry the caller's context, as an MCP request's would).
#[derive(Deserialize, Default)]
struct Peek {
    tool: Option<String>,
    name: Option<String>,
    uri: Option<String>,
    #[serde(rename = "_meta")]
    meta: Option<Value>,
}

/// One request's SERVER span, from its beginning.
pub(crate) struct RequestSpan {
    ids: SpanIds,
    method: &'static str,
    target: Option<String>,
    started: SystemTime,
    arrived: Instant,
}

impl RequestSpan {
    /// Begins the span of a request for `method` under the caller's context: its headers
    /// first, else its params' `_meta`. A malformed context is ignored (and counted): the span
    /// becomes a root.
    pub(crate) fn begin(
        telemetry: &Telemetry,
        method: &'static str,
        headers: Option<&CallerTraceHeaders>,
        params: Option<&str>,
    ) -> RequestSpan {
        // The params are read only when something needs them: export on, or a context in them.
        let peek = params
            .filter(|text| telemetry.is_enabled() || text.contains("traceparent"))
            .and_then(|text| serde_json::from_str::<Peek>(text).ok())
            .unwrap_or_default();
        let parent = match headers {
            Some(headers) => telemetry.extract_from_headers(
                headers.traceparent.iter().map(String::as_str),
                headers.tracestate.iter().map(String::as_str),
            ),
            None => peek
                .meta
                .as_ref()
                .and_then(|meta| telemetry.extract_from_meta(Some(meta))),
        };
        let target = match method {
            method_name::CALL_TOOL => peek.tool,
            method_name::GET_PROMPT => peek.name,
            method_name::READ_RESOURCE => peek.uri,
            _ => None,
        };
        RequestSpan {
            ids: telemetry.begin(parent.as_ref()),
            method,
            target,
            started: SystemTime::now(),
            arrived: Instant::now(),
        }
    }

    /// The span's identity: the parent of every call the request makes.
    pub(crate) fn ids(&self) -> &SpanIds {
        &self.ids
    }

    /// Ends the span with the request's outcome.
    pub(crate) fn end(self, telemetry: &Telemetry, listener: Listener, outcome: Outcome<'_>) {
        if !telemetry.is_enabled() {
            return;
        }
        let target = match (self.method, self.target.as_deref()) {
            (method_name::CALL_TOOL, Some(tool)) => Target::Tool(tool),
            (method_name::GET_PROMPT, Some(prompt)) => Target::Prompt(prompt),
            (method_name::READ_RESOURCE, Some(uri)) => Target::Resource(uri),
            _ => Target::None,
        };
        let duration = self.arrived.elapsed();
        telemetry.daemon_request(
            &self.ids,
            &DaemonRequest {
                method: self.method,
                request_id: None,
                target,
                listener,
                outcome,
                timing: Timing {
                    start: self.started,
                    duration,
                },
                extras: CallExtras::default(),
                content: Content::default(),
            },
        );
    }
}
