//! A 2026-07-28 host asked a server's question through an `input_required` result (SEP-2322),
//! and the call continued on the host's retry.
//!
//! A streamed stateless call from a host whose request declares `elicitation` or `sampling`
//! (`input_rounds::request_host`) runs with a relay that may ask. Its answer writer
//! ([`write_rounds`]) forwards progress and log messages as `stateless_stream.rs` does; on the
//! relay's first question it ends the response with `{"resultType": "input_required",
//! "inputRequests": {KEY: question}, "requestState": HANDLE}` and keeps the call (its task, its
//! relay and its message receiver) in the table of held calls under a fresh random handle
//! bound to the token, method and params. The host's retry with `inputResponses` and the
//! handle takes the call back (`input_rounds::HeldCalls::take`), gives each response to the
//! relay, and the call's answer (its result, or the next question) comes on the retry's
//! response. A held call not taken by its deadline is aborted (its upstream request cancelled);
//! a host that drops a response while the call runs aborts it, as before.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hyper::body::Bytes;
use rand::RngExt as _;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::super::messages::RpcError;
use super::super::sse::{SseBody, event};
use super::super::stream::{Answered, HostRelay};
use super::{HeldCalls, input_required_result};

/// Most calls held for their hosts' answers at once.
const MAX_HELD_CALLS: usize = 256;
/// How long a held call waits for its host's retry before it is aborted.
const HELD_FOR: Duration = Duration::from_secs(300);

/// A call waiting for its host's answers.
pub(super) struct HeldCall {
    call: JoinHandle<Option<String>>,
    relay: Arc<HostRelay>,
    messages: mpsc::Receiver<Value>,
}

impl HeldCall {
    pub(super) fn new(
        call: JoinHandle<Option<String>>,
        relay: Arc<HostRelay>,
        messages: mpsc::Receiver<Value>,
    ) -> HeldCall {
        HeldCall {
            call,
            relay,
            messages,
        }
    }

    fn abort(&self) {
        self.call.abort();
        self.relay.finish();
    }
}

/// The held calls of every stateless host.
#[derive(Clone)]
pub(in crate::edge::gateway) struct HeldTable(Arc<Mutex<HeldCalls<HeldCall>>>);

impl Default for HeldTable {
    fn default() -> HeldTable {
        HeldTable(Arc::new(Mutex::new(HeldCalls::new(
            MAX_HELD_CALLS,
            HELD_FOR,
        ))))
    }
}

/// What a held call is bound to.
pub(super) struct Binding {
    pub(super) token_id: String,
    pub(super) method: String,
    pub(super) params: Value,
}

impl HeldTable {
    /// A table of at most `limit` calls, each held at most `time_limit`.
    #[cfg(test)]
    fn with(limit: usize, time_limit: Duration) -> HeldTable {
        HeldTable(Arc::new(Mutex::new(HeldCalls::new(limit, time_limit))))
    }

    /// Takes the call held under the retry's handle and gives it the host's answers; the
    /// refusal, as `-32602`, when no call is held for this retry.
    pub(super) fn resume(
        &self,
        binding: &Binding,
        retry: &super::Retry,
    ) -> Result<HeldCall, RpcError> {
        let held = self
            .0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take(
                &retry.handle,
                &binding.token_id,
                &binding.method,
                &binding.params,
                Instant::now(),
            )
            .map_err(|refusal| RpcError::invalid_params(refusal.to_string()))?;
        for (key, response) in &retry.responses {
            let answered = held
                .relay
                .answer(&Value::String(key.clone()), &Ok(response.clone()));
            if let Answered::Declined(reason) = answered {
                tracing::debug!(%reason, "a host's input response was declined");
            }
        }
        Ok(held)
    }

    fn hold(&self, binding: &Binding, held: HeldCall) -> Result<String, HeldCall> {
        let bytes: [u8; 16] = rand::rng().random();
        let handle: String = bytes.iter().map(|byte| format!("{byte:02x}")).collect();
        let held = self.0.lock().unwrap_or_else(|e| e.into_inner()).hold(
            handle.clone(),
            &binding.token_id,
            &binding.method,
            &binding.params,
            Instant::now(),
            held,
        );
        let deadline = held.map_err(|(_, held)| held)?;
        let table = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep_until(deadline.into()).await;
            // The deadline itself, not the clock: a timer that wakes a hair early (or tokio's
            // paused clock in tests) still ends this call.
            let expired = table
                .0
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .expired(deadline.max(Instant::now()));
            for call in expired {
                call.abort();
            }
        });
        Ok(handle)
    }
}

/// Aborts the call it guards when dropped still holding it (the host went away).
struct Guard(Option<HeldCall>);

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(held) = &self.0 {
            held.abort();
        }
    }
}

/// What ended one wait of the writer.
enum Next {
    Message(Value),
    Ended(Result<Option<String>, tokio::task::JoinError>),
}

/// The SSE body of a call's round: see [`write_rounds`].
pub(super) fn round_stream(
    held: HeldCall,
    table: HeldTable,
    binding: Binding,
    answer_id: Value,
) -> SseBody {
    let (frames, receiver) = mpsc::channel(16);
    let writer = tokio::spawn(write_rounds(held, table, binding, answer_id, frames));
    SseBody::new(receiver, writer)
}

/// Writes what the call's relay sends until the call answers (its answer under `answer_id`)
/// or asks (an `input_required` result, the call held for the retry).
async fn write_rounds(
    held: HeldCall,
    table: HeldTable,
    binding: Binding,
    answer_id: Value,
    frames: mpsc::Sender<Bytes>,
) {
    let mut guard = Guard(Some(held));
    let outcome = loop {
        let held = guard.0.as_mut().expect("the writer holds the call");
        let next = tokio::select! {
            biased;
            Some(message) = held.messages.recv() => Next::Message(message),
            outcome = &mut held.call => Next::Ended(outcome),
        };
        let message = match next {
            Next::Ended(outcome) => break outcome,
            Next::Message(message) => message,
        };
        let handle_probe = input_required_result(&message, "");
        if handle_probe.is_none() {
            if frames
                .send(event(None, &message.to_string()))
                .await
                .is_err()
            {
                return;
            }
            continue;
        }
        let call = guard.0.take().expect("the writer holds the call");
        match table.hold(&binding, call) {
            Ok(handle) => {
                let result = input_required_result(&message, &handle).expect("a question");
                let answer = json!({"jsonrpc": "2.0", "id": answer_id, "result": result});
                let _ = frames.send(event(None, &answer.to_string())).await;
                return;
            }
            Err(call) => {
                // Full: the question is declined, as before this path existed.
                let id = message.get("id").cloned().unwrap_or(Value::Null);
                let declined = if message["method"] == "elicitation/create" {
                    Ok(json!({"action": "decline"}))
                } else {
                    Err(json!({"message": "the gateway holds too many calls waiting for hosts"}))
                };
                call.relay.answer(&id, &declined);
                guard.0 = Some(call);
            }
        }
    };
    let held = guard.0.take().expect("the writer holds the call");
    held.relay.finish();
    let answer = match outcome {
        Ok(Some(answer)) => held.relay.with_shown_urls(answer),
        Ok(None) => return,
        Err(error) if error.is_cancelled() => return,
        Err(_) => json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32603,
            "message": "the gateway failed while answering this call"}})
        .to_string(),
    };
    let mut held = held;
    while let Ok(message) = held.messages.try_recv() {
        if input_required_result(&message, "").is_some() {
            continue; // a question of a call that ended has no one to ask
        }
        if frames
            .send(event(None, &message.to_string()))
            .await
            .is_err()
        {
            return;
        }
    }
    // The answer was worded for the first request's id; it answers this one.
    let answer = match serde_json::from_str::<Value>(&answer) {
        Ok(mut answer) => {
            answer["id"] = answer_id;
            answer.to_string()
        }
        Err(_) => answer,
    };
    let _ = frames.send(event(None, &answer)).await;
}

fn event_stream_response(body: SseBody) -> crate::edge::http_body::HttpResponse {
    hyper::Response::builder()
        .status(hyper::StatusCode::OK)
        .header(hyper::header::CONTENT_TYPE, "text/event-stream")
        .header(hyper::header::CACHE_CONTROL, "no-cache")
        .body(crate::edge::http_body::HttpBody::new(body))
        .expect("static response parts are valid")
}

impl super::super::Endpoint {
    /// A streamed 2026-07-28 call from a host that can answer questions: run with a relay
    /// that asks, answered by [`write_rounds`].
    #[allow(clippy::too_many_arguments)]
    pub(in crate::edge::gateway) fn stream_rounds(
        self: &Arc<Self>,
        session: Arc<super::super::sessions::Session>,
        host: super::super::stream::HostCapabilities,
        method: &str,
        params: &Value,
        mut context: crate::pipeline::CallContext,
        log_level: usize,
        id: Value,
    ) -> crate::edge::http_body::HttpResponse {
        let (relay, messages) = HostRelay::new(
            0,
            super::super::stream::progress_token(params),
            host,
            Some(log_level),
        );
        context.relay = Some(Arc::clone(&relay) as Arc<dyn crate::provider::EventRelay>);
        let binding = Binding {
            token_id: context.grant.token_id.clone(),
            method: method.to_owned(),
            params: params.clone(),
        };
        let endpoint = Arc::clone(self);
        let (method, params, first_id) = (method.to_owned(), params.clone(), id.clone());
        let call = tokio::spawn(async move {
            let answer = endpoint.settle(&session, &method, &params, &context).await;
            Some(super::super::stateless_answer::answer_body(
                answer, &first_id,
            ))
        });
        let held = HeldCall::new(call, relay, messages);
        let table = self.stateless.held.clone();
        event_stream_response(round_stream(held, table, binding, id))
    }

    /// A retry of a held call: its continuation on this response, or why it cannot be.
    pub(in crate::edge::gateway) fn resume_round(
        &self,
        grant: &crate::auth::Grant,
        method: &str,
        params: &Value,
        retry: &super::Retry,
        id: Value,
    ) -> Result<crate::edge::http_body::HttpResponse, RpcError> {
        let binding = Binding {
            token_id: grant.token_id.clone(),
            method: method.to_owned(),
            params: params.clone(),
        };
        let table = self.stateless.held.clone();
        let held = table.resume(&binding, retry)?;
        Ok(event_stream_response(round_stream(
            held, table, binding, id,
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::EventRelay as _;

    fn binding() -> Binding {
        Binding {
            token_id: "t".to_owned(),
            method: "tools/call".to_owned(),
            params: json!({"name": "ask"}),
        }
    }

    /// A call that never ends on its own, and a handle that tells whether it was aborted.
    fn endless_call() -> (HeldCall, tokio::task::AbortHandle, Arc<HostRelay>) {
        let call = tokio::spawn(std::future::pending::<Option<String>>());
        let probe = call.abort_handle();
        let (relay, messages) = HostRelay::new(
            0,
            None,
            super::super::super::stream::HostCapabilities::default(),
            None,
        );
        (
            HeldCall::new(call, Arc::clone(&relay), messages),
            probe,
            relay,
        )
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_no_host_retries_is_aborted_at_its_limit() {
        let table = HeldTable::with(1, Duration::from_secs(5));
        let (held, probe, relay) = endless_call();
        let handle = table.hold(&binding(), held).ok().expect("held");
        assert_eq!(handle.len(), 32);
        // The table is bounded: a second call is given back, not held.
        let (second, second_probe, _) = endless_call();
        assert!(table.hold(&binding(), second).is_err());
        second_probe.abort();
        tokio::time::sleep(Duration::from_secs(4)).await;
        assert!(!probe.is_finished());
        // At the limit the call is aborted and its relay ended (its questions closed).
        relay.ended().await;
        while !probe.is_finished() {
            tokio::task::yield_now().await;
        }
        let retry = super::super::Retry {
            responses: serde_json::Map::new(),
            handle,
        };
        let refused = table.resume(&binding(), &retry).err().expect("refused");
        assert_eq!(refused.code, -32602);
    }
}
