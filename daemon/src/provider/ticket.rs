//! What travels with one call down to its upstream, beside the request itself: a
//! [`CallTicket`] holding who the call is for (an opaque caller key), where its by-products go
//! (an [`EventRelay`] when the caller follows its progress) and what LLM usage it causes (a
//! [`UsageMeter`]).
//!
//! These are per-call facts, so they travel as values: the pipeline makes the ticket from the
//! call's context and hands it to [`super::Upstream`] with the request. A provider uses what it
//! needs (the MCP pool writes the caller key into `tools/call`, relays progress and a server's
//! questions, and bills a server's sampling requests to the meter); a provider with no such
//! things ignores it.
//!
//! The caller key: the daemon holds one MCP connection per server, shared by every client, so a
//! server that keeps state per client (the demo server's resource handles) cannot tell two
//! tokens, or two sessions of one token, apart by the connection. Each call therefore carries a
//! key derived from the caller's token id and session id: the same for every call of one (token,
//! session), different across tokens and sessions, and telling the server neither (a SHA-256 of
//! both, cut to 128 bits). A call without a session gets its token's key, so one token's calls
//! keep sharing what they opened.

use std::fmt::Write as _;
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value};
use sha2::{Digest as _, Sha256};
use tokio::sync::{oneshot, watch};
use tool_cli_protocol::elicitation::ElicitationAnswer;
use tool_cli_telemetry::context::SpanContext;

use super::BoxFuture;
use super::exchange::ExchangeNote;

/// The `_meta` member the caller key travels in; the demo server reads the same name.
pub const CALLER_META_KEY: &str = "tool-cli/sessionId";

/// Who one call is for and where its by-products go.
#[derive(Clone, Default)]
pub struct CallTicket {
    /// The caller key ([`caller_key`]); `None` for work done for no one caller (a listing).
    pub caller: Option<Arc<str>>,
    /// Where the call's progress, log messages and a server's questions go, when its caller
    /// follows them (`progress: true`) or its timeout restarts on progress.
    pub relay: Option<Arc<dyn EventRelay>>,
    /// The call's LLM usage: a server's sampling requests while the call runs.
    pub usage: Option<Arc<UsageMeter>>,
    /// The trace context to send upstream (`traceparent`/`tracestate` in `params._meta`, and
    /// as headers over Streamable HTTP): the call's upstream span, or the caller's own context
    /// passed through when export is off. `None`: nothing to continue.
    pub trace: Option<SpanContext>,
    /// Where the pool notes what it learned sending the request (its JSON-RPC id, the
    /// negotiated version, the HTTP session), for the request's span; `None` when no span
    /// wants them.
    pub exchange: Option<Arc<ExchangeNote>>,
    /// Where the pool notes the id of the task a 2026-07-28 server ran the call as
    /// (`pool/connection/tasks.rs`), for the call's record; `None` when no record wants it.
    pub task: Option<Arc<TaskNote>>,
}

/// The server's id of the task a call ran as, noted by the pool while the call runs.
#[derive(Debug, Default)]
pub struct TaskNote(Mutex<Option<String>>);

impl TaskNote {
    /// Notes the server's task id.
    pub fn note(&self, task_id: &str) {
        *self.0.lock().unwrap() = Some(task_id.to_owned());
    }

    /// The noted task id, if any.
    pub fn task_id(&self) -> Option<String> {
        self.0.lock().unwrap().clone()
    }
}

impl std::fmt::Debug for CallTicket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallTicket")
            .field("caller", &self.caller)
            .field("relay", &self.relay.is_some())
            .field("usage", &self.usage)
            .field("trace", &self.trace)
            .field("exchange", &self.exchange)
            .field("task", &self.task)
            .finish()
    }
}

/// A server's question relayed to a caller, answered: the action and, with `accept`, the
/// checked fields.
pub type RelayedAnswer = (ElicitationAnswer, Option<Map<String, Value>>);

/// A server's URL-mode elicitation: it asks that the user be sent to a web page (a sign-in, a
/// payment), whose data never passes through the client.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UrlQuestion {
    /// What the server says about it.
    pub message: String,
    /// The page.
    pub url: String,
    /// The server's id of this elicitation.
    pub elicitation_id: String,
}

/// What a caller did with a [`UrlQuestion`].
#[derive(Debug)]
pub enum UrlRelay {
    /// Asked as its own question (`id`); the receiver gets the caller's answer (accept,
    /// decline or cancel; no content), dropped when the question is closed.
    Asked(String, oneshot::Receiver<RelayedAnswer>),
    /// The caller cannot put a URL in front of its user as a question (an MCP host that
    /// declared form elicitation only), but the URL goes back to it in the call's result.
    InResult,
    /// The caller has no way to show it.
    Unsupported,
}

/// Where a call's events go while it runs: its progress and log notifications, and a server's
/// questions (`"elicitation": "ask"`) when a caller reads them.
pub trait EventRelay: Send + Sync + 'static {
    /// Whether a caller reads the events (the call has a `progressId`), so that a server's
    /// questions may be relayed to it.
    fn is_followed(&self) -> bool;

    /// Appends an event (`{"type": "progress" | "log", …}`); never waits.
    fn push(&self, event: Map<String, Value>);

    /// Relays a server's question: records it and pushes `event` (an `elicitation` event) with
    /// the question's id. The receiver gets the caller's answer; it is dropped unanswered when
    /// the question is closed.
    fn ask(
        &self,
        schema: Value,
        event: Map<String, Value>,
    ) -> (String, oneshot::Receiver<RelayedAnswer>);

    /// Closes a question still open (the daemon declines it), telling the caller; whether it
    /// was open.
    fn close_question(&self, id: &str, reason: &str) -> bool;

    /// Resolves once the call has ended (no answer can reach its server after that).
    fn ended(&self) -> BoxFuture<'_, ()>;

    /// Changes at each progress notification of the call, for a timeout that restarts on
    /// progress.
    fn progress_beats(&self) -> watch::Receiver<u64>;

    /// Relays a server's URL-mode elicitation (`"elicitation": "ask"`), as far as the caller
    /// can show one.
    fn ask_url(&self, question: &UrlQuestion) -> UrlRelay {
        let _ = question;
        UrlRelay::Unsupported
    }

    /// Whether the caller answers a server's `sampling/createMessage` itself (an MCP host
    /// behind the gateway that declared `sampling`).
    fn can_sample(&self) -> bool {
        false
    }

    /// Asks the caller to answer a server's `sampling/createMessage` (its params as JSON);
    /// the caller's `CreateMessageResult`, or why there is none.
    fn sample(&self, request: Value) -> BoxFuture<'_, Result<Value, String>> {
        let _ = request;
        Box::pin(async { Err("the caller does not answer sampling requests".to_owned()) })
    }
}

/// Tokens and cost attributed to one call: the sampling requests its server makes while it
/// runs (answered by the agent backend), so the call's record carries them.
#[derive(Debug, Default)]
pub struct UsageMeter {
    totals: Mutex<UsageTotals>,
}

/// What a [`UsageMeter`] has counted.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct UsageTotals {
    /// LLM input tokens.
    pub tokens_in: u64,
    /// LLM output tokens.
    pub tokens_out: u64,
    /// Cost in US dollars (0 when the model has no price).
    pub cost_usd: f64,
}

impl UsageMeter {
    /// Adds one LLM request's usage.
    pub fn add(&self, tokens_in: u64, tokens_out: u64, cost_usd: Option<f64>) {
        let mut totals = self.totals.lock().unwrap();
        totals.tokens_in += tokens_in;
        totals.tokens_out += tokens_out;
        totals.cost_usd += cost_usd.unwrap_or(0.0);
    }

    /// What was counted.
    pub fn totals(&self) -> UsageTotals {
        *self.totals.lock().unwrap()
    }
}

/// The key of the caller with `token_id`, in `session` (when the call names one).
pub fn caller_key(token_id: &str, session: Option<&str>) -> String {
    let mut digest = Sha256::new();
    digest.update(b"tool-cli caller key v1\0");
    digest.update(token_id.as_bytes());
    match session {
        // The length keeps ("ab", "c") apart from ("a", "bc").
        Some(session) => {
            digest.update(b"\0session\0");
            digest.update((session.len() as u64).to_be_bytes());
            digest.update(session.as_bytes());
        }
        None => digest.update(b"\0token"),
    }
    let digest = digest.finalize();
    let mut text = String::with_capacity(34);
    text.push_str("c-");
    for byte in &digest[..16] {
        // Writing to a `String` cannot fail; no string per byte.
        let _ = write!(text, "{byte:02x}");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_separate_tokens_and_sessions_and_reveal_neither() {
        let owner = caller_key("0123456789abcdef", None);
        assert_eq!(owner, caller_key("0123456789abcdef", None), "stable");
        assert_eq!(owner.len(), 34);
        assert!(owner.starts_with("c-"));
        let keys = [
            owner.clone(),
            caller_key("fedcba9876543210", None),
            caller_key("0123456789abcdef", Some("s1")),
            caller_key("0123456789abcdef", Some("s2")),
            caller_key("fedcba9876543210", Some("s1")),
            caller_key("0123456789abcdef", Some("")),
        ];
        for (i, a) in keys.iter().enumerate() {
            for b in &keys[i + 1..] {
                assert_ne!(a, b);
            }
            assert!(!a.contains("0123456789abcdef") && !a.contains("s1"));
        }
    }

    #[test]
    fn usage_adds_up_and_a_missing_price_costs_nothing() {
        let meter = UsageMeter::default();
        meter.add(100, 20, Some(0.5));
        meter.add(1, 2, None);
        assert_eq!(
            meter.totals(),
            UsageTotals {
                tokens_in: 101,
                tokens_out: 22,
                cost_usd: 0.5
            }
        );
    }
}
