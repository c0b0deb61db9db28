//! What travels with a call through every stage: who asked, which call it is, when it arrived,
//! and where its events go. The pipeline makes the call's [`CallTicket`] from it, which is what
//! the upstream sees of the caller.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::{Map, Value};
use tokio::time::Instant;

use super::span::CallTrace;
use crate::auth::Grant;
use crate::provider::{CallTicket, EventRelay, caller_key};

/// A call's id: unique within the daemon's lifetime, shown in traces and on the tracing span.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CallId(u64);

impl CallId {
    /// The next id.
    pub fn next() -> CallId {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        CallId(NEXT.fetch_add(1, Ordering::Relaxed))
    }
}

impl fmt::Display for CallId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "c{}", self.0)
    }
}

/// Who is calling, and where this call sits among others.
#[derive(Clone)]
pub struct CallContext {
    /// The caller's token and its scope.
    pub grant: Grant,
    /// This call.
    pub call_id: CallId,
    /// The call (a chain, a fan-out, an agent run) this one is a step of.
    pub parent_call_id: Option<CallId>,
    /// How deep in nested calls (0 for a call a client made directly).
    pub depth: u32,
    /// Its step number within its parent (a chain's index, an agent's step).
    pub step: Option<u32>,
    /// The session it belongs to, if the caller named one.
    pub session_id: Option<String>,
    /// When the request arrived: every wait of the call is bounded from here.
    pub arrived: Instant,
    /// Where the call's progress, log messages and a server's questions go, when the caller
    /// follows them (`progress: true`) or its timeout restarts on progress; its steps share it.
    pub relay: Option<Arc<dyn EventRelay>>,
    /// Where the call sits in a trace (OpenTelemetry): the span it belongs under.
    pub trace: CallTrace,
    /// The MCP gateway session the request came in on, if it did: MCP tasks created under it
    /// are that session's alone (`pipeline/tasks/`).
    pub mcp_session: Option<String>,
}

impl fmt::Debug for CallContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallContext")
            .field("grant", &self.grant)
            .field("call_id", &self.call_id)
            .field("parent_call_id", &self.parent_call_id)
            .field("depth", &self.depth)
            .field("step", &self.step)
            .field("session_id", &self.session_id)
            .field("arrived", &self.arrived)
            .field("relay", &self.relay.is_some())
            .field("trace", &self.trace)
            .finish()
    }
}

impl CallContext {
    /// A context for a request that arrived just now.
    pub fn new(grant: Grant) -> CallContext {
        CallContext {
            grant,
            call_id: CallId::next(),
            parent_call_id: None,
            depth: 0,
            step: None,
            session_id: None,
            arrived: Instant::now(),
            relay: None,
            trace: CallTrace::default(),
            mcp_session: None,
        }
    }

    /// The ticket of a request made for this call: its caller's key (token and session) and
    /// its event relay.
    pub fn ticket(&self) -> CallTicket {
        CallTicket {
            caller: Some(caller_key(&self.grant.token_id, self.session_id.as_deref()).into()),
            relay: self.relay.clone(),
            usage: None,
            // Requests without a span of their own (a resource read, a prompt) continue the
            // request's span; a tool call's is set by the pipeline.
            trace: self.trace.span.upstream_context().cloned(),
            exchange: None,
            task: None,
        }
    }

    /// The context of step `step` of this call, starting now: a new id, one level deeper, same
    /// caller and session. (A step's own timeout runs from when the step starts; the parent
    /// bounds the whole by passing what is left of its time as the step's timeout.)
    pub fn child(&self, step: u32) -> CallContext {
        CallContext {
            grant: self.grant.clone(),
            call_id: CallId::next(),
            parent_call_id: Some(self.call_id),
            depth: self.depth + 1,
            step: Some(step),
            session_id: self.session_id.clone(),
            arrived: Instant::now(),
            relay: self.relay.clone(),
            // A step is a call of the same request: under the same span, not an agent's.
            trace: CallTrace {
                span: self.trace.span.clone(),
                tool_call: None,
            },
            mcp_session: self.mcp_session.clone(),
        }
    }
}

/// One tool call as the pipeline takes it: the protocol's `callTool` params, checked.
#[derive(Debug, Clone, Default)]
pub struct CallRequest {
    /// The server; `None` lets routing choose among the servers offering the tool.
    pub server: Option<String>,
    /// The tool.
    pub tool: String,
    /// Its arguments.
    pub arguments: Map<String, Value>,
    /// The caller's timeout; `None` means the server's configured one.
    pub timeout: Option<Duration>,
    /// The caller confirmed a destructive tool.
    pub confirm: bool,
    /// Explain the call without making it.
    pub dry_run: bool,
    /// Free text naming what the caller means (a server, a tag, the task), for routing.
    pub hint: Option<String>,
    /// A repeat with the same key returns the first call's answer instead of running again.
    pub idempotency_key: Option<String>,
    /// `resetTimeoutOnProgress`: when set, the timeout restarts at each progress notification of
    /// the call, and this is the most the call may take in all.
    pub progress_resets_timeout: Option<Duration>,
    /// Run it as an MCP task the caller follows itself: the `task` member to send (`{ttl?}`),
    /// and the answer is the server's `CreateTaskResult` (`pipeline/tasks/`).
    pub task: Option<Value>,
}
