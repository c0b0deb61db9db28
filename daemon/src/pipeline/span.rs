//! Where a call sits in a trace, as values the call path carries: the span a call belongs under
//! (in its [`CallContext`](super::CallContext)) and the upstream span decided before its request
//! is sent (on its [`CallRecord`](super::CallRecord)). They live here, on the call path's floor,
//! so the pipeline never imports the exporter (`crate::otel`), which observes it from above.

use std::sync::Arc;

use tool_cli_protocol::methods::TransportKind;
use tool_cli_telemetry::context::SpanIds;

use crate::provider::ExchangeNote;

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
    /// Where the pool notes the request's id, the negotiated version and the HTTP session
    /// (`provider/exchange.rs`); only with export on.
    pub exchange: Option<Arc<ExchangeNote>>,
}

impl CallSpan {
    /// The span of a call made under `trace`.
    pub(crate) fn under(trace: &CallTrace) -> CallSpan {
        let ids = trace.span.child();
        CallSpan {
            exchange: ids.is_ours().then(Arc::default),
            ids,
            tool_call: trace.tool_call.clone(),
            transport: None,
        }
    }

    /// The span of an operation other than a tool call (a prompt, a resource read, a
    /// listing) made under `trace`: a CLIENT span even for an agent's, which has no
    /// `execute_tool` standing for it.
    pub(crate) fn for_operation(trace: &CallTrace) -> CallSpan {
        CallSpan {
            tool_call: None,
            ..CallSpan::under(trace)
        }
    }

    /// The ticket's part of this span: the context to send upstream and where to note the
    /// exchange.
    pub(crate) fn upstream(
        &self,
    ) -> (
        Option<tool_cli_telemetry::context::SpanContext>,
        Option<Arc<ExchangeNote>>,
    ) {
        (self.ids.upstream_context().cloned(), self.exchange.clone())
    }
}
