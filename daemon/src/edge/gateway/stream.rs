//! What an upstream server says to the host while one of the host's tool calls runs, sent as an
//! SSE answer to the call's POST (Streamable HTTP, 2025-11-25): the call's
//! `notifications/progress` (under the host's own `progressToken`, only when it gave one), the
//! server's `notifications/message` (at or above the session's `logging/setLevel`), and the
//! server's `elicitation/create` questions and `sampling/createMessage` requests (when the host
//! declared those capabilities), sent to the host as requests of ours whose answers the host
//! POSTs back (`answer`) and which reach the server's waiting request. Then the call's one
//! answer, and the stream ends.
//!
//! [`HostRelay`] is the call's [`EventRelay`]: the pool pushes progress and log events into it
//! and asks it questions, as it does the events buffer of a `callTool` with a `progressId`, so
//! the same routing rules hold (a question goes to the one call in flight of its server, or is
//! declined with the reason). [`event_stream`] makes the response body (`sse.rs`, shared with
//! the standalone stream): it owns the call's task, so a host that drops the stream mid-call
//! cancels the call (traced as cancelled, its upstream
//! request cancelled) instead of leaving it to run for no one.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use hyper::body::Bytes;
use serde_json::{Map, Value, json};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;
use tool_cli_protocol::elicitation::ElicitationAnswer;

use super::sse::{SseBody, event};
use crate::elicitation::{Book, Refusal};
use crate::provider::{BoxFuture, EventRelay, RelayedAnswer, UrlQuestion, UrlRelay};

/// Most messages waiting to be written to a slow host; past that, progress and log messages
/// are dropped (and counted), never the call's answer.
const QUEUE: usize = 256;

/// Most URL-mode elicitations one call's result names (a server asking more is declined all
/// the same, unnamed).
const MAX_SHOWN_URLS: usize = 8;

/// MCP's log levels, least severe first.
const LOG_LEVELS: [&str; 8] = [
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
];

/// A least log level no message reaches: what a 2026-07-28 request that names no
/// `io.modelcontextprotocol/logLevel` gets, since the revision sends log messages only to a
/// request that asks for them.
pub(crate) const NO_LOG_MESSAGES: usize = LOG_LEVELS.len();

/// The host's `progressToken` of a request (`params._meta.progressToken`), when it is one
/// (a string or an integer).
pub(crate) fn progress_token(params: &Value) -> Option<Value> {
    params
        .get("_meta")
        .and_then(|meta| meta.get("progressToken"))
        .filter(|token| token.is_string() || token.is_i64() || token.is_u64())
        .cloned()
}

/// The rank of an MCP log level (`debug` 0 … `emergency` 7); `None` for anything else.
pub(crate) fn log_level_rank(level: &str) -> Option<usize> {
    LOG_LEVELS.iter().position(|known| *known == level)
}

/// The host's side of one streamed call.
pub(crate) struct HostRelay {
    /// Tells this call's questions apart from other calls' in the host's answers.
    serial: u64,
    outgoing: mpsc::Sender<Value>,
    /// The host's `progressToken`, when it asked for progress.
    progress_token: Option<Value>,
    /// Whether the host declared the `elicitation` capability.
    elicitation: bool,
    /// Whether the host declared the `sampling` capability.
    sampling: bool,
    /// Whether the host declared URL-mode elicitation (`elicitation.url`).
    url_elicitation: bool,
    /// The questions of ours that are URL-mode elicitations (their answers carry no content).
    url_questions: Mutex<Vec<String>>,
    /// URL-mode elicitations the host could not be asked about, for the call's result.
    shown_urls: Mutex<Vec<UrlQuestion>>,
    /// Our `sampling/createMessage` requests waiting for the host, by id.
    samples: Mutex<HashMap<String, oneshot::Sender<Result<Value, Value>>>>,
    next_sample: AtomicU64,
    /// The least severe log level the host wants (`logging/setLevel`); `None`: every level.
    log_level: Option<usize>,
    questions: Mutex<Book<oneshot::Sender<RelayedAnswer>>>,
    dropped: AtomicU64,
    done: watch::Sender<bool>,
    beats: watch::Sender<u64>,
}

/// What the host said it can do at `initialize`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct HostCapabilities {
    /// It shows forms (`elicitation`, or `elicitation.form`).
    pub(crate) elicitation: bool,
    /// It answers `sampling/createMessage`.
    pub(crate) sampling: bool,
    /// It sends its user to a web page a server names (`elicitation.url`).
    pub(crate) url_elicitation: bool,
}

impl HostCapabilities {
    /// From `initialize`'s `capabilities`.
    pub(crate) fn of(capabilities: Option<&Value>) -> HostCapabilities {
        let modes = capabilities
            .and_then(|capabilities| capabilities.get("elicitation"))
            .and_then(Value::as_object);
        let elicitation = modes.is_some_and(|modes| modes.is_empty() || modes.contains_key("form"));
        let url_elicitation = modes.is_some_and(|modes| modes.contains_key("url"));
        let sampling = capabilities
            .and_then(|capabilities| capabilities.get("sampling"))
            .is_some_and(Value::is_object);
        HostCapabilities {
            elicitation,
            sampling,
            url_elicitation,
        }
    }
}

/// What a host's answer to one of our requests did.
#[derive(Debug, PartialEq)]
pub(crate) enum Answered {
    /// It reached the server's waiting request.
    Delivered,
    /// It was refused (or the host answered with an error); the server's question is declined
    /// with this reason.
    Declined(String),
    /// It is not an answer to this call's questions.
    NotOurs,
}

impl HostRelay {
    /// A relay and the receiver of what it sends the host.
    pub(crate) fn new(
        serial: u64,
        progress_token: Option<Value>,
        host: HostCapabilities,
        log_level: Option<usize>,
    ) -> (Arc<HostRelay>, mpsc::Receiver<Value>) {
        let (outgoing, incoming) = mpsc::channel(QUEUE);
        let relay = HostRelay {
            serial,
            outgoing,
            progress_token,
            elicitation: host.elicitation,
            sampling: host.sampling,
            url_elicitation: host.url_elicitation,
            url_questions: Mutex::default(),
            shown_urls: Mutex::default(),
            samples: Mutex::default(),
            next_sample: AtomicU64::new(1),
            log_level,
            questions: Mutex::new(Book::default()),
            dropped: AtomicU64::new(0),
            done: watch::Sender::new(false),
            beats: watch::Sender::new(0),
        };
        (Arc::new(relay), incoming)
    }

    /// The id our `elicitation/create` request carries for question `question` (`e1`, …).
    fn request_id(&self, question: &str) -> String {
        format!("tool-cli/{}/{question}", self.serial)
    }

    fn send(&self, message: Value) {
        if self.outgoing.try_send(message).is_err() {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Takes the host's answer to request `id`: delivered to the server when it is one of this
    /// call's open questions and fits its schema, else the question is declined with why.
    pub(crate) fn answer(&self, id: &Value, answer: &Result<Value, Value>) -> Answered {
        let Some(question) = id
            .as_str()
            .and_then(|id| id.strip_prefix(&format!("tool-cli/{}/", self.serial)))
        else {
            return Answered::NotOurs;
        };
        if question.starts_with('s') {
            let waiting = self.samples.lock().unwrap().remove(question);
            return match waiting.map(|waiting| waiting.send(answer.clone())) {
                Some(Ok(())) => Answered::Delivered,
                Some(Err(_)) => Answered::Declined(
                    "the server's request ended before the answer arrived".to_owned(),
                ),
                None => Answered::NotOurs,
            };
        }
        let result = match answer {
            Ok(result) => result,
            Err(error) => {
                let message = error
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("no message");
                let reason = format!(
                    "the host answered the question with an error: {}",
                    super::messages::excerpt(message)
                );
                self.questions.lock().unwrap().close(question, &reason);
                return Answered::Declined(reason);
            }
        };
        let action = match result
            .get("action")
            .cloned()
            .map(serde_json::from_value::<ElicitationAnswer>)
        {
            Some(Ok(action)) => action,
            _ => {
                let reason = "the host's answer has no action accept, decline or cancel".to_owned();
                self.questions.lock().unwrap().close(question, &reason);
                return Answered::Declined(reason);
            }
        };
        let url_question = self
            .url_questions
            .lock()
            .unwrap()
            .iter()
            .any(|asked| asked == question);
        let mut questions = self.questions.lock().unwrap();
        match questions.answer(question, action, result.get("content")) {
            Ok((waiter, content)) => {
                // A URL-mode answer carries no content (the user's data went to the page).
                let content = content.filter(|_| !url_question);
                if waiter.send((action, content)).is_err() {
                    let reason = "the server's request ended before the answer arrived";
                    questions.mark_closed(question, reason);
                    return Answered::Declined(reason.to_owned());
                }
                Answered::Delivered
            }
            Err(Refusal::Invalid(why)) => {
                // A host's form is the user's one answer; asking again is the host's to do,
                // and it has no way to know, so the question is closed with the reason.
                let reason = format!("the host's answer does not fit the question: {why}");
                questions.close(question, &reason);
                Answered::Declined(reason)
            }
            Err(Refusal::Unknown { .. }) => Answered::NotOurs,
            Err(Refusal::AlreadyAnswered(_)) => {
                Answered::Declined("the question was answered already".to_owned())
            }
            Err(Refusal::Closed(reason)) => Answered::Declined(reason),
        }
    }

    /// Marks the call ended: open questions can no longer reach its server.
    pub(crate) fn finish(&self) {
        self.done.send_replace(true);
    }

    /// The call's encoded answer settled for the host's URL handling (`url_elicitation.rs`):
    /// the URL-mode elicitations it could not be asked about put in its result, and a server's
    /// `-32042` error given back as that error or as pages in the result.
    pub(super) fn with_shown_urls(&self, answer: String) -> String {
        let shown = std::mem::take(&mut *self.shown_urls.lock().unwrap());
        super::url_elicitation::settle(answer, &shown, self.url_elicitation)
    }
}

impl EventRelay for HostRelay {
    fn is_followed(&self) -> bool {
        self.elicitation || self.url_elicitation || self.sampling
    }

    fn ask_url(&self, question: &UrlQuestion) -> UrlRelay {
        if !self.url_elicitation {
            // A form-only host cannot be asked to open a page; its user still gets the URL,
            // in the call's result.
            let mut shown = self.shown_urls.lock().unwrap();
            if shown.len() < MAX_SHOWN_URLS {
                shown.push(question.clone());
            }
            return UrlRelay::InResult;
        }
        let (sender, receiver) = oneshot::channel();
        let no_fields = json!({"type": "object", "properties": {}});
        let id = self.questions.lock().unwrap().open(no_fields, sender);
        self.url_questions.lock().unwrap().push(id.clone());
        self.send(json!({
            "jsonrpc": "2.0",
            "id": self.request_id(&id),
            "method": "elicitation/create",
            "params": {
                "mode": "url",
                "message": question.message,
                "url": question.url,
                "elicitationId": question.elicitation_id,
            },
        }));
        UrlRelay::Asked(id, receiver)
    }

    fn push(&self, event: Map<String, Value>) {
        match event.get("type").and_then(Value::as_str) {
            Some("progress") => {
                self.beats.send_modify(|beats| *beats += 1);
                let Some(token) = &self.progress_token else {
                    return;
                };
                let mut params = Map::new();
                params.insert("progressToken".to_owned(), token.clone());
                for key in ["progress", "total", "message"] {
                    if let Some(value) = event.get(key) {
                        params.insert(key.to_owned(), value.clone());
                    }
                }
                self.send(
                    json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": params}),
                );
            }
            Some("log") => {
                let level = event.get("level").and_then(Value::as_str).unwrap_or("info");
                let rank = log_level_rank(level).unwrap_or(1);
                if self.log_level.is_some_and(|least| rank < least) {
                    return;
                }
                let mut params = Map::new();
                params.insert("level".to_owned(), json!(level));
                if let Some(logger) = event.get("logger") {
                    params.insert("logger".to_owned(), logger.clone());
                }
                params.insert(
                    "data".to_owned(),
                    event.get("data").cloned().unwrap_or(Value::Null),
                );
                self.send(
                    json!({"jsonrpc": "2.0", "method": "notifications/message", "params": params}),
                );
            }
            _ => {}
        }
    }

    fn ask(
        &self,
        schema: Value,
        event: Map<String, Value>,
    ) -> (String, oneshot::Receiver<RelayedAnswer>) {
        let (sender, receiver) = oneshot::channel();
        let question = self.questions.lock().unwrap().open(schema.clone(), sender);
        if !self.elicitation {
            // Followed for sampling only: the host shows no forms, so the question is declined
            // (its waiter dropped) rather than sent to a host that cannot answer it.
            self.questions.lock().unwrap().close(
                &question,
                "the caller's MCP host did not declare the elicitation capability",
            );
            return (question, receiver);
        }
        let message = event.get("message").cloned().unwrap_or(json!(""));
        self.send(json!({
            "jsonrpc": "2.0",
            "id": self.request_id(&question),
            "method": "elicitation/create",
            "params": {"message": message, "requestedSchema": schema},
        }));
        (question, receiver)
    }

    fn close_question(&self, id: &str, reason: &str) -> bool {
        if !self.questions.lock().unwrap().close(id, reason) {
            return false;
        }
        // MCP's way to withdraw a request: the host stops asking its user.
        self.send(json!({
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": self.request_id(id), "reason": reason},
        }));
        true
    }

    fn ended(&self) -> BoxFuture<'_, ()> {
        let mut done = self.done.subscribe();
        Box::pin(async move {
            let _ = done.wait_for(|done| *done).await;
        })
    }

    fn progress_beats(&self) -> watch::Receiver<u64> {
        self.beats.subscribe()
    }

    fn can_sample(&self) -> bool {
        self.sampling
    }

    fn sample(&self, request: Value) -> BoxFuture<'_, Result<Value, String>> {
        let (sender, receiver) = oneshot::channel();
        let number = self.next_sample.fetch_add(1, Ordering::Relaxed);
        let question = format!("s{number}");
        self.samples
            .lock()
            .unwrap()
            .insert(question.clone(), sender);
        let id = self.request_id(&question);
        self.send(
            json!({"jsonrpc": "2.0", "id": id, "method": "sampling/createMessage",
                         "params": request}),
        );
        Box::pin(async move {
            let outcome = tokio::select! {
                answered = receiver => answered.ok(),
                () = self.ended() => None,
            };
            // Withdrawn if unanswered (the call ended, or the server gave up).
            if self.samples.lock().unwrap().remove(&question).is_some() {
                self.send(
                    json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                                 "params": {"requestId": id, "reason": "the call ended"}}),
                );
            }
            match outcome {
                Some(Ok(result)) => Ok(result),
                Some(Err(error)) => Err(format!(
                    "the host answered with an error: {}",
                    super::messages::excerpt(
                        error
                            .get("message")
                            .and_then(Value::as_str)
                            .unwrap_or("no message")
                    )
                )),
                None => Err("the call ended before the host answered".to_owned()),
            }
        })
    }
}

/// Frames on their way to the host. What is dropped for a slow host is decided by the relay's
/// own queue ([`QUEUE`]); this one only hands frames over, and the answer waits for room.
const FRAMES: usize = 16;

/// The SSE body of a streamed call (`sse.rs`): the messages its relay sends, then the call's
/// answer (the task's output, one JSON-RPC response), then the end. Dropped (the host went
/// away), it aborts its writer, which aborts the call's task.
pub(crate) fn event_stream(
    messages: mpsc::Receiver<Value>,
    call: JoinHandle<Option<String>>,
    relay: Arc<HostRelay>,
) -> SseBody {
    let (frames, receiver) = mpsc::channel(FRAMES);
    let writer = tokio::spawn(write_call_stream(messages, call, relay, frames));
    SseBody::new(receiver, writer)
}

/// Writes a call's stream: each message its relay sends while it runs, then what it sent just
/// before its answer, then the answer.
async fn write_call_stream(
    mut messages: mpsc::Receiver<Value>,
    mut call: JoinHandle<Option<String>>,
    relay: Arc<HostRelay>,
    frames: mpsc::Sender<Bytes>,
) {
    // However this ends (the host dropping the body aborts it here), the call goes with it.
    let _guard = CallGuard {
        call: call.abort_handle(),
        relay: Arc::clone(&relay),
    };
    let outcome = loop {
        tokio::select! {
            // What the server said before the call ended goes first.
            biased;
            Some(message) = messages.recv() => {
                if frames.send(event(None, &message.to_string())).await.is_err() {
                    return;
                }
            }
            outcome = &mut call => break outcome,
        }
    };
    relay.finish();
    // A call the host cancelled has no answer (MCP: none is sent); a task that panicked gets
    // an internal error, so the request still has its one answer.
    let answer = match outcome {
        Ok(answer) => answer.map(|answer| relay.with_shown_urls(answer)),
        Err(error) if error.is_cancelled() => None,
        Err(_) => Some(
            json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32603,
                "message": "the gateway failed while answering this call"}})
            .to_string(),
        ),
    };
    while let Ok(message) = messages.try_recv() {
        if frames
            .send(event(None, &message.to_string()))
            .await
            .is_err()
        {
            return;
        }
    }
    if let Some(answer) = answer {
        let _ = frames.send(event(None, &answer)).await;
    }
}

/// Ends a streamed call with its stream: aborts its task (cancelling the upstream request when
/// it still runs), closes the relay's questions, and counts what a slow host did not read.
struct CallGuard {
    call: tokio::task::AbortHandle,
    relay: Arc<HostRelay>,
}

impl Drop for CallGuard {
    fn drop(&mut self) {
        self.call.abort();
        self.relay.finish();
        let dropped = self.relay.dropped.load(Ordering::Relaxed);
        if dropped > 0 {
            tracing::warn!(
                dropped,
                "the gateway dropped {dropped} progress or log messages a slow host did not read"
            );
        }
    }
}

#[cfg(test)]
mod tests;
