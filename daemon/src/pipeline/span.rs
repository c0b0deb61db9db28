//! Where a call sits in a trace, as values the call path carries: the span a call belongs under
//! (in its [`CallContext`](super::CallContext)) and the upstream span decided before its request
//! is sent (on its [`CallRecord`](super::CallRecord)). They live here, on the call path's floor,
//! so the pipeline never imports the exporter (`crate::otel`), which observes it from above.

use tool_cli_protocol::methods::TransportKind;
use tool_cli_telemetry::context::SpanIds;

/// Where a call sits in a trace, carried in its context: the span it belongs under (the
/// request's SERVER span, or an agent's `invoke_agent`), and whether it is an agent's tool call
/// (then its span is `execute_tool`, not an MCP CLIENT span).
#[derive(Debug, Clone)]
pub struct CallTrace {
    /// The enclosing span (a pass-through of the caller's context when export is off).
    pub span: SpanIds,
    /// Set on an agent's tool call: its `gen_ai.tool.call.id`, if the model gave one.
    pub tool_call: Option<AgentToolCall>,
}

impl Default for CallTrace {
    fn default() -> Self {
        CallTrace {
            span: SpanIds::pass_through(None),
            tool_call: None,
        }
    }
}

/// An agent's tool call, as its `execute_tool` span needs it.
#[derive(Debug, Clone, Default)]
pub struct AgentToolCall {
    /// The model's id of the call.
    pub id: Option<String>,
}

/// The upstream span of one call, decided before the request is sent.
#[derive(Debug, Clone)]
pub struct CallSpan {
    /// Its identity (a child of the call context's span), injected into the request.
    pub ids: SpanIds,
    /// Set when the call is an agent's tool call (`execute_tool`).
    pub tool_call: Option<AgentToolCall>,
    /// How the server is reached, once resolved.
    pub transport: Option<TransportKind>,
}

impl CallSpan {
    /// The span of a call made under `trace`.
    pub(crate) fn under(trace: &CallTrace) -> CallSpan {
        CallSpan {
            ids: trace.span.child(),
            tool_call: trace.tool_call.clone(),
            transport: None,
        }
    }
}
