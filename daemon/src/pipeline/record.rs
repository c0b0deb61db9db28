//! The last stage: what happened to a call, as one plain value, and who is told.
//!
//! A [`CallRecord`] is built for every call the pipeline was asked to make — executed, refused,
//! dry-run or failed at any stage — and handed to each [`CallObserver`] (the trace writer, the
//! session store). Observers must not block: they get the record by reference and copy what they
//! keep.

use std::time::{Duration, SystemTime};

use serde_json::Value;

use super::context::{CallContext, CallId};
use super::routing::Selection;
use super::span::CallSpan;
use crate::resilience::cache::canonical_json;

/// Everything known about one finished call.
#[derive(Debug, Clone)]
pub struct CallRecord {
    /// When it finished.
    pub finished_at: SystemTime,
    /// The call.
    pub call_id: CallId,
    /// The call it is a step of.
    pub parent_call_id: Option<CallId>,
    /// Nesting depth.
    pub depth: u32,
    /// Step within the parent.
    pub step: Option<u32>,
    /// The caller's session.
    pub session_id: Option<String>,
    /// The caller's token id (for session scoping; never traced).
    pub token_id: String,
    /// The server as the caller named it (`None` for a routed call).
    pub requested_server: Option<String>,
    /// The server it went to (or would have), when resolved.
    pub server: Option<String>,
    /// The tool asked for.
    pub tool: String,
    /// A short hash of the canonical arguments (the same arguments always hash the same).
    pub arguments_hash: String,
    /// From arrival to answer.
    pub latency: Duration,
    /// Whether a request reached an upstream server (false for dry-runs and refusals).
    pub executed: bool,
    /// Whether it was a dry-run.
    pub dry_run: bool,
    /// Whether the caller got a result (a tool's own `isError` result counts as a failure).
    pub success: bool,
    /// How the server was chosen.
    pub selection: Option<Selection>,
    /// Attempts sent (0 when nothing was sent).
    pub attempts: u32,
    /// Why the last retry happened, if any did.
    pub retry_reason: Option<String>,
    /// Sent again in its session after a validation refusal of the same tool, with other
    /// arguments (the session decided it before the call: `sessions::store::Advice`).
    pub corrective_retry: bool,
    /// The MCP task it ran as, by the id its caller knows (`pipeline/tasks/`).
    pub task_id: Option<String>,
    /// The error, as the caller saw it: JSON-RPC code, kind and message.
    pub error: Option<RecordedError>,
    /// A cached result was served instead of a live one.
    pub degraded: bool,
    /// LLM tokens attributed to the call (an agent's step), 0 otherwise.
    pub tokens_in: u64,
    /// LLM output tokens attributed to the call.
    pub tokens_out: u64,
    /// Cost attributed to the call, in US dollars.
    pub cost_usd: f64,
    /// The arguments, when an observer asked for payloads (verbose traces).
    pub arguments: Option<Value>,
    /// The result, when an observer asked for payloads.
    pub result: Option<Value>,
    /// The identity of the call's upstream span (OpenTelemetry), chosen before it was sent.
    pub span: Option<CallSpan>,
}

/// An error in a record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedError {
    /// Its JSON-RPC code.
    pub code: i32,
    /// Its `kind` tag.
    pub kind: &'static str,
    /// Its message (what the caller was told).
    pub message: String,
}

impl CallRecord {
    /// A record for a call of `tool` in `context`, everything else empty; stages fill it in.
    pub(crate) fn new(context: &CallContext, tool: &str, arguments_hash: String) -> CallRecord {
        CallRecord {
            finished_at: SystemTime::now(),
            call_id: context.call_id,
            parent_call_id: context.parent_call_id,
            depth: context.depth,
            step: context.step,
            session_id: context.session_id.clone(),
            token_id: context.grant.token_id.clone(),
            requested_server: None,
            server: None,
            tool: tool.to_owned(),
            arguments_hash,
            latency: context.arrived.elapsed(),
            executed: false,
            dry_run: false,
            success: false,
            selection: None,
            attempts: 0,
            retry_reason: None,
            corrective_retry: false,
            task_id: None,
            error: None,
            degraded: false,
            tokens_in: 0,
            tokens_out: 0,
            cost_usd: 0.0,
            arguments: None,
            result: None,
            span: Some(CallSpan::under(&context.trace)),
        }
    }

    /// The number of retries (attempts after the first).
    pub fn retries(&self) -> u32 {
        self.attempts.saturating_sub(1)
    }
}

/// Told about every finished call.
pub trait CallObserver: Send + Sync + 'static {
    /// Whether records should carry the arguments and result (costly: only verbose traces).
    fn wants_payloads(&self) -> bool {
        false
    }

    /// One finished call. Must not block.
    fn observe(&self, record: &CallRecord);

    /// One finished upstream operation other than a tool call (a prompt, a resource read, a
    /// listing), recorded only with export on. Must not block.
    fn observe_operation(&self, record: &super::OperationRecord) {
        let _ = record;
    }
}

/// The hash of a call's arguments: 16 hex digits of SHA-256 over their canonical JSON, so the
/// same arguments in any key order hash the same, and the arguments themselves never appear.
pub fn arguments_hash(arguments: &serde_json::Map<String, Value>) -> String {
    use sha2::{Digest as _, Sha256};
    use std::fmt::Write as _;
    let text = canonical_json(&Value::Object(arguments.clone()));
    let digest = Sha256::digest(text.as_bytes());
    let mut hash = String::with_capacity(16);
    for byte in &digest[..8] {
        // Writing to a `String` cannot fail; one string, not one per byte.
        let _ = write!(hash, "{byte:02x}");
    }
    hash
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_arguments_hash_ignores_key_order_and_hides_values() {
        let a = json!({"b": 1, "a": {"y": [1, 2], "x": "secret"}});
        let b = json!({"a": {"x": "secret", "y": [1, 2]}, "b": 1});
        let hash = arguments_hash(a.as_object().unwrap());
        assert_eq!(hash, arguments_hash(b.as_object().unwrap()));
        assert_eq!(hash.len(), 16);
        assert!(!hash.contains("secret"));
        let c = json!({"b": 2});
        assert_ne!(hash, arguments_hash(c.as_object().unwrap()));
    }
}
