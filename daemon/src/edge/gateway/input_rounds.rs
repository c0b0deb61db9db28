//! The pure parts of asking a 2026-07-28 host a server's question through multi-round-trip
//! results (SEP-2322).
//!
//! The revision has no session to send a server's `elicitation/create` or
//! `sampling/createMessage` to, so the answer to the host's `tools/call` (`prompts/get`,
//! `resources/read`) becomes `{"resultType": "input_required", "inputRequests": {KEY: {method,
//! params}}, "requestState": HANDLE}`, and the host sends the same request again with
//! `inputResponses` `{KEY: result}` and the handle echoed back. The call itself keeps running
//! in the gateway meanwhile (its upstream server is still waiting for the answer), so the
//! handle is an opaque random key into a table of held calls, never state the host could forge.
//!
//! Decided here, I/O-free and tested:
//! - what a host can answer, from the request's own
//!   `_meta["io.modelcontextprotocol/clientCapabilities"]` ([`request_host`]);
//! - the `input_required` result for a relay's question ([`input_required_result`]);
//! - a retry's parts and what is wrong with them ([`retry_of`]);
//! - the table of held calls ([`HeldCalls`]): a handle is bound to the token, the method and
//!   the params it was given for, is taken at most once (one answer per request), expires at
//!   its time limit, and the table holds a bounded number of calls.
//!
//! The calls held and their answer writer are [`held`].

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

pub(super) mod held;

use super::messages::RpcError;
use super::stream::HostCapabilities;

/// `_meta` key of a 2026-era request's client capabilities.
const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";

/// The methods a server may ask a host through `inputRequests` (SEP-2322).
const INPUT_METHODS: [&str; 3] = ["elicitation/create", "sampling/createMessage", "roots/list"];

/// What a 2026-07-28 host can answer, from the capabilities its request declares (the revision
/// has no `initialize`; each request carries them).
pub(super) fn request_host(params: &Value) -> HostCapabilities {
    HostCapabilities::of(
        params
            .get("_meta")
            .and_then(|meta| meta.get(META_CLIENT_CAPABILITIES)),
    )
}

/// The `input_required` result asking the host the question a call's relay sent (a JSON-RPC
/// request of ours: `id`, `method`, `params`), keyed by the request's id so the host's answer
/// under that key goes back to the same question; `None` when the message is not a question
/// the revision lets a server ask (a notification, or another method).
pub(super) fn input_required_result(question: &Value, handle: &str) -> Option<Value> {
    let key = question.get("id")?.as_str()?;
    let method = question.get("method")?.as_str()?;
    if !INPUT_METHODS.contains(&method) {
        return None;
    }
    let params = question.get("params").cloned().unwrap_or_else(|| json!({}));
    Some(json!({
        "resultType": "input_required",
        "inputRequests": {key: {"method": method, "params": params}},
        "requestState": handle,
    }))
}

/// The requests a server's question can interrupt, and so a host can retry with answers.
const ROUND_METHODS: [&str; 3] = ["tools/call", "prompts/get", "resources/read"];

/// A 2026-07-28 request's retry of an `input_required` result: `Ok(None)` for a first request
/// or a method no question interrupts, the retry's parts, or why they are malformed.
pub(super) fn round_retry(method: &str, params: &Value) -> Result<Option<Retry>, RpcError> {
    if !ROUND_METHODS.contains(&method) {
        return Ok(None);
    }
    retry_of(params)
}

/// A host's retry: its answers by key and the handle it echoed.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Retry {
    pub(super) responses: Map<String, Value>,
    pub(super) handle: String,
}

/// A request's retry parts: `Ok(None)` for a first request (neither `inputResponses` nor
/// `requestState`), else both, or an error saying what would be right.
pub(super) fn retry_of(params: &Value) -> Result<Option<Retry>, RpcError> {
    let responses = params.get("inputResponses");
    let handle = params.get("requestState");
    match (responses, handle) {
        (None, None) => Ok(None),
        (Some(Value::Object(responses)), Some(Value::String(handle))) => Ok(Some(Retry {
            responses: responses.clone(),
            handle: handle.clone(),
        })),
        (_, None) => Err(RpcError::invalid_params(
            "params has inputResponses but no requestState; a retry echoes the requestState \
             of the input_required result it answers"
                .to_owned(),
        )),
        (None, Some(_)) => Err(RpcError::invalid_params(
            "params has requestState but no inputResponses; a retry answers the result's \
             inputRequests in params.inputResponses, an object by their keys"
                .to_owned(),
        )),
        (Some(_), Some(_)) => Err(RpcError::invalid_params(
            "params.inputResponses is an object of answers by the inputRequests' keys and \
             params.requestState the string the input_required result gave"
                .to_owned(),
        )),
    }
}

/// The part of a request's params a held call is bound to: all but its `_meta` (a retry may
/// carry a new progress token) and the retry's own fields.
pub(super) fn bound_params(params: &Value) -> Value {
    let mut params = params.clone();
    if let Some(object) = params.as_object_mut() {
        for key in ["_meta", "inputResponses", "requestState"] {
            object.remove(key);
        }
    }
    params
}

/// Why a retry was not matched to a held call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum RetryRefusal {
    /// No call is held under the handle (never given, answered already, or expired).
    #[error(
        "requestState is not one this gateway holds: it was answered already, its call was \
         aborted at its time limit, or it was never given; send the request again without \
         inputResponses and requestState to start the call over"
    )]
    Unknown,
    /// The handle was given to another request.
    #[error(
        "requestState was given for another request; a retry repeats the method and params \
         (all but _meta) of the request whose input_required result it answers"
    )]
    OtherRequest,
}

/// Why a call could not be held.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the gateway holds {0} calls waiting for their hosts' answers already")]
pub(super) struct TableFull(pub(super) usize);

/// One held call: who may take it, for which request, until when.
struct Held<T> {
    token_id: String,
    method: String,
    params: Value,
    deadline: Instant,
    call: T,
}

/// Calls waiting for their hosts' answers, by handle.
pub(super) struct HeldCalls<T> {
    held: HashMap<String, Held<T>>,
    limit: usize,
    time_limit: Duration,
}

impl<T> HeldCalls<T> {
    /// A table of at most `limit` calls, each held at most `time_limit`.
    pub(super) fn new(limit: usize, time_limit: Duration) -> HeldCalls<T> {
        HeldCalls {
            held: HashMap::new(),
            limit,
            time_limit,
        }
    }

    /// Holds `call` under `handle` (a fresh random string of the caller's) for the token's
    /// request `method` with `params` (bound as [`bound_params`]); its deadline. A full table
    /// gives the call back with the refusal, so the caller can still end it.
    pub(super) fn hold(
        &mut self,
        handle: String,
        token_id: &str,
        method: &str,
        params: &Value,
        now: Instant,
        call: T,
    ) -> Result<Instant, (TableFull, T)> {
        if self.held.len() >= self.limit {
            return Err((TableFull(self.limit), call));
        }
        let deadline = now + self.time_limit;
        self.held.insert(
            handle,
            Held {
                token_id: token_id.to_owned(),
                method: method.to_owned(),
                params: bound_params(params),
                deadline,
                call,
            },
        );
        Ok(deadline)
    }

    /// Takes the call held under `handle` for the token's retry of `method` with `params`.
    /// Another token's handle is `Unknown` (a token learns nothing of another's calls); a
    /// handle past its deadline is `Unknown` and stays for [`HeldCalls::expired`] to end.
    pub(super) fn take(
        &mut self,
        handle: &str,
        token_id: &str,
        method: &str,
        params: &Value,
        now: Instant,
    ) -> Result<T, RetryRefusal> {
        let Some(held) = self.held.get(handle) else {
            return Err(RetryRefusal::Unknown);
        };
        if held.token_id != token_id || now >= held.deadline {
            return Err(RetryRefusal::Unknown);
        }
        if held.method != method || held.params != bound_params(params) {
            return Err(RetryRefusal::OtherRequest);
        }
        Ok(self.held.remove(handle).expect("the handle is held").call)
    }

    /// Removes and gives back the calls whose deadline has come, for the caller to abort.
    pub(super) fn expired(&mut self, now: Instant) -> Vec<T> {
        let handles: Vec<String> = self
            .held
            .iter()
            .filter(|(_, held)| now >= held.deadline)
            .map(|(handle, _)| handle.clone())
            .collect();
        handles
            .into_iter()
            .filter_map(|handle| self.held.remove(&handle))
            .map(|held| held.call)
            .collect()
    }

    /// How many calls are held.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.held.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call_params() -> Value {
        json!({"name": "ask", "arguments": {"q": 1}, "_meta": {"progressToken": 1}})
    }

    #[test]
    fn a_host_can_answer_what_its_request_declares() {
        let declaring = |capabilities: Value| {
            request_host(&json!({"_meta": {META_CLIENT_CAPABILITIES: capabilities}}))
        };
        assert_eq!(request_host(&json!({})), HostCapabilities::default());
        assert_eq!(declaring(json!({})), HostCapabilities::default());
        let both = declaring(json!({"elicitation": {}, "sampling": {}}));
        assert!(both.elicitation && both.sampling && !both.url_elicitation);
        let url_only = declaring(json!({"elicitation": {"url": {}}}));
        assert!(!url_only.elicitation && url_only.url_elicitation);
    }

    #[test]
    fn a_relay_question_becomes_an_input_required_result_keyed_by_its_id() {
        let question = json!({"jsonrpc": "2.0", "id": "tool-cli/3/e1",
            "method": "elicitation/create",
            "params": {"message": "name?", "requestedSchema": {"type": "object"}}});
        assert_eq!(
            input_required_result(&question, "h1"),
            Some(json!({
                "resultType": "input_required",
                "inputRequests": {"tool-cli/3/e1": {"method": "elicitation/create",
                    "params": {"message": "name?", "requestedSchema": {"type": "object"}}}},
                "requestState": "h1",
            }))
        );
        let sample = json!({"id": "tool-cli/3/s1", "method": "sampling/createMessage"});
        let asked = input_required_result(&sample, "h2").unwrap();
        assert_eq!(asked["inputRequests"]["tool-cli/3/s1"]["params"], json!({}));
        // A notification, or a method the revision does not let a server ask, is no question.
        let progress = json!({"method": "notifications/progress", "params": {}});
        assert_eq!(input_required_result(&progress, "h"), None);
        let ping = json!({"id": "tool-cli/3/p1", "method": "ping"});
        assert_eq!(input_required_result(&ping, "h"), None);
    }

    #[test]
    fn a_retry_has_both_parts_or_is_refused_saying_which_is_missing() {
        assert_eq!(retry_of(&call_params()), Ok(None));
        let retry = json!({"name": "ask", "inputResponses": {"k": {"action": "accept"}},
            "requestState": "h"});
        let parts = retry_of(&retry).unwrap().unwrap();
        assert_eq!(parts.handle, "h");
        assert_eq!(parts.responses["k"], json!({"action": "accept"}));
        let no_state = retry_of(&json!({"inputResponses": {}})).unwrap_err();
        assert_eq!(no_state.code, -32602);
        assert!(no_state.message.contains("no requestState"), "{no_state:?}");
        let no_answers = retry_of(&json!({"requestState": "h"})).unwrap_err();
        assert!(
            no_answers.message.contains("no inputResponses"),
            "{no_answers:?}"
        );
        let wrong_shapes = retry_of(&json!({"inputResponses": [], "requestState": 1}));
        assert_eq!(wrong_shapes.unwrap_err().code, -32602);
    }

    #[test]
    fn a_held_call_is_taken_once_by_its_own_token_and_request() {
        let now = Instant::now();
        let mut table = HeldCalls::new(4, Duration::from_secs(30));
        let deadline = table
            .hold("h".into(), "t1", "tools/call", &call_params(), now, 7)
            .unwrap();
        assert_eq!(deadline, now + Duration::from_secs(30));
        let mut retry = call_params();
        retry["_meta"] = json!({"progressToken": 2});
        retry["inputResponses"] = json!({"k": {}});
        retry["requestState"] = json!("h");
        // Another token learns nothing of the call; another request is told what is right.
        assert_eq!(
            table.take("h", "t2", "tools/call", &retry, now),
            Err(RetryRefusal::Unknown)
        );
        assert_eq!(
            table.take("h", "t1", "prompts/get", &retry, now),
            Err(RetryRefusal::OtherRequest)
        );
        let mut other_arguments = retry.clone();
        other_arguments["arguments"] = json!({"q": 2});
        assert_eq!(
            table.take("h", "t1", "tools/call", &other_arguments, now),
            Err(RetryRefusal::OtherRequest)
        );
        assert_eq!(table.take("h", "t1", "tools/call", &retry, now), Ok(7));
        // One answer per request: the handle is spent.
        assert_eq!(
            table.take("h", "t1", "tools/call", &retry, now),
            Err(RetryRefusal::Unknown)
        );
        assert_eq!(
            table.take("never", "t1", "tools/call", &retry, now),
            Err(RetryRefusal::Unknown)
        );
        assert_eq!(table.len(), 0);
    }

    #[test]
    fn a_held_call_expires_at_its_limit_and_the_table_is_bounded() {
        let now = Instant::now();
        let limit = Duration::from_secs(5);
        let mut table = HeldCalls::new(2, limit);
        table
            .hold("a".into(), "t", "tools/call", &call_params(), now, 1)
            .unwrap();
        let later = now + Duration::from_secs(1);
        table
            .hold("b".into(), "t", "tools/call", &call_params(), later, 2)
            .unwrap();
        let (full, given_back) = table
            .hold("c".into(), "t", "tools/call", &call_params(), later, 3)
            .unwrap_err();
        assert_eq!((full, given_back), (TableFull(2), 3));
        assert!(
            table
                .expired(now + limit - Duration::from_millis(1))
                .is_empty()
        );
        // Past its deadline a handle is not taken, and is given back once for aborting.
        assert_eq!(
            table.take("a", "t", "tools/call", &call_params(), now + limit),
            Err(RetryRefusal::Unknown)
        );
        assert_eq!(table.expired(now + limit), vec![1]);
        assert_eq!(table.expired(now + limit), Vec::<i32>::new());
        assert_eq!(table.len(), 1);
        assert_eq!(table.expired(later + limit), vec![2]);
    }
}
