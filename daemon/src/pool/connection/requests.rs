//! Requests on a live connection: through rmcp ([`Connection::request`], the raw result when the
//! transport tapped it) or around it for a stdio server's tool calls
//! ([`Connection::call_tool`] over `direct.rs`), with the guards that tell the server a request
//! was abandoned when its caller goes away.

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotificationParam, ClientRequest,
    GetPromptRequest, GetPromptRequestParams, ReadResourceRequest, ReadResourceRequestParams,
};
use rmcp::service::PeerRequestOptions;
use rmcp::{Peer, RoleClient};
use serde_json::{Map, Value};
use tool_cli_protocol::ErrorData;

use super::super::direct::{Answer, CallToolParams, DirectRequests, ProgressMeta, request_line};
use super::super::raw_results::{RawResults, id_key};
use super::{Connection, ListKind, MAX_PAGES};
use crate::error::Error;
use crate::paging::next_upstream_cursor;
use crate::provider::{CALLER_META_KEY, CallTicket, ExchangeFacts};

/// Forgets a tapped raw result when the request is abandoned (timeout, client gone).
struct RawGuard<'a> {
    raw: Option<&'a RawResults>,
    key: String,
}

impl Drop for RawGuard<'_> {
    fn drop(&mut self) {
        if let Some(raw) = self.raw {
            raw.take(&self.key);
        }
    }
}

/// Tells the server a request is abandoned when the future awaiting it is dropped (the RPC client
/// went away): without this the server would keep working for no one.
struct AbandonGuard {
    peer: Option<Peer<RoleClient>>,
    request_id: rmcp::model::RequestId,
}

impl Drop for AbandonGuard {
    fn drop(&mut self) {
        let Some(peer) = self.peer.take() else {
            return;
        };
        let request_id = self.request_id.clone();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let notice = CancelledNotificationParam::new(
                    Some(request_id),
                    Some("the client of the tool-cli daemon went away".to_owned()),
                );
                let _ = peer.notify_cancelled(notice).await;
            });
        }
    }
}

/// Tells the server a direct request is abandoned when the future awaiting it is dropped.
struct DirectAbandon<'a> {
    direct: Option<&'a Arc<DirectRequests>>,
    id: i64,
}

impl Drop for DirectAbandon<'_> {
    fn drop(&mut self) {
        if let Some(direct) = self.direct.take() {
            direct.cancel(self.id, "the client of the tool-cli daemon went away");
        }
    }
}

impl Connection {
    /// Notes on the ticket (when a span wants them) what the request sent as `request_id`
    /// says of itself and of this connection (`provider/exchange.rs`).
    fn note_exchange(&self, ticket: &CallTicket, request_id: String) {
        let Some(note) = &ticket.exchange else {
            return;
        };
        let facts = &self.facts;
        note.note(ExchangeFacts {
            request_id: Some(request_id),
            protocol_version: facts.protocol_version.clone(),
            mcp_session_id: facts
                .session
                .as_ref()
                .and_then(|session| session.lock().unwrap().as_deref().map(str::to_owned)),
            server_address: facts.address.as_ref().map(|(host, _)| host.clone()),
            server_port: facts.address.as_ref().map(|(_, port)| *port),
        });
    }

    /// Sends one request for the caller `ticket` names and returns its result as JSON,
    /// unnarrowed when the transport tapped it.
    pub(super) async fn request(
        &self,
        request: ClientRequest,
        label: &str,
        timeout: Duration,
        ticket: &CallTicket,
    ) -> Result<Value, Error> {
        let started = tokio::time::Instant::now();
        let handle = self
            .peer
            .send_cancellable_request(request, PeerRequestOptions::with_timeout(timeout))
            .await;
        let handle = match handle {
            Ok(handle) => handle,
            Err(err) => return Err(self.service_error(err, label, timeout, ticket).await),
        };
        self.note_exchange(ticket, handle.id.to_string());
        let guard = RawGuard {
            raw: self.raw.as_deref(),
            key: id_key(&handle.id),
        };
        // Only for a call that asked for progress.
        let progress = self
            .published
            .server_requests
            .watch(&handle.progress_token, ticket.relay.as_ref());
        let mut abandon = AbandonGuard {
            peer: Some(self.peer.clone()),
            request_id: handle.id.clone(),
        };
        let progress_token = handle.progress_token.clone();
        let outcome = handle.await_response().await;
        if progress.is_some() {
            // rmcp hands each notification to the handler on a task of its own, spawned as it
            // arrives, but the answer straight to us: the progress steps and log lines the
            // server sent before its answer are numbered below the horizon, and the watch ends
            // once each of those that concerns this call is relayed (or dropped with a dying
            // connection), within the call's deadline (`notification_order.rs`).
            let horizon = self.order.horizon();
            self.order
                .handled_before(&progress_token, horizon, started + timeout)
                .await;
        }
        drop(progress);
        // Answered, or timed out (rmcp has sent the cancellation itself): nothing to abandon.
        abandon.peer = None;
        let raw = guard.raw.and_then(|raw| raw.take(&guard.key));
        match outcome {
            Ok(result) => match raw {
                Some(raw) => Ok(raw),
                None => serde_json::to_value(&result)
                    .map_err(|err| Error::internal(format!("re-encoding a result: {err}"))),
            },
            Err(err) => {
                // Its answer was dropped for its size (an HTTP response stream cut at the limit,
                // a stdio line skipped), not because the server went away.
                if let Some(oversized) = &self.oversized
                    && let Some(bytes) = oversized.take(&guard.key)
                {
                    return Err(self.too_large(label, bytes, oversized.limit_bytes as u64));
                }
                Err(self.service_error(err, label, timeout, ticket).await)
            }
        }
    }

    /// Sends one request around rmcp (`direct.rs`): the line `line` makes of its id is written
    /// from this task, and the stdout reader hands the answer back. Errors are the ones
    /// [`Connection::request`] gives for the same outcomes.
    pub(super) async fn direct_request(
        &self,
        direct: &Arc<DirectRequests>,
        line: impl FnOnce(i64) -> Vec<u8>,
        (label, timeout): (&str, Duration),
        ticket: &CallTicket,
    ) -> Result<Value, Error> {
        let Some(pending) = direct.register() else {
            return Err(self.closed_error(ticket).await);
        };
        let id = pending.id;
        self.note_exchange(ticket, id.to_string());
        let mut abandon = DirectAbandon {
            direct: Some(direct),
            id,
        };
        let exchange = async {
            direct.send(line(id)).await.ok()?;
            pending.answer.await.ok()
        };
        let outcome = tokio::time::timeout(timeout, exchange).await;
        abandon.direct = None;
        match outcome {
            Ok(Some(Answer::Result(result))) => Ok(result),
            Ok(Some(Answer::TooLarge(bytes))) => {
                let limit = self
                    .oversized
                    .as_ref()
                    .map_or(0, |oversized| oversized.limit_bytes as u64);
                Err(self.too_large(label, Some(bytes), limit))
            }
            Ok(Some(Answer::Error(error))) => Err(ErrorData::Upstream {
                server: self.server.clone(),
                code: error.code.0.into(),
                message: error.message.into_owned(),
                data: error.data,
            }
            .into()),
            // The pipe broke or the stream ended.
            Ok(None) => {
                direct.forget(id);
                Err(self.closed_error(ticket).await)
            }
            Err(_elapsed) => {
                direct.cancel(id, "request timeout");
                Err(Error::timeout(
                    &self.server,
                    label,
                    timeout.as_millis() as u64,
                ))
            }
        }
    }

    /// Calls a tool for the caller `ticket` names; the result is the server's complete
    /// `CallToolResult`.
    pub(crate) async fn call_tool(
        &self,
        tool: &str,
        arguments: &Map<String, Value>,
        deadline: std::time::Instant,
        ticket: &CallTicket,
    ) -> Result<Value, Error> {
        // The call's own deadline, not one recomputed from what was left of it: the 2026 task
        // paths below time their questions against it, and they must fire with (not after) the
        // pipeline's bound of the same instant, which would otherwise drop the call before an
        // open question is closed at the caller.
        let timeout = deadline.saturating_duration_since(std::time::Instant::now());
        // Who the call is for, so a server keeping state per client can keep callers apart
        // on this shared connection (`provider/ticket.rs`).
        let caller = ticket.caller.as_deref();
        let _caller_in_flight = self.callers.enter(ticket.caller.clone());
        // Only for a server whose questions are relayed to the caller (`elicitation: "ask"`) or
        // that may sample (its usage is billed to the call).
        let _in_flight = self.published.server_requests.calling(ticket);
        // A call that relays its events (progress, log messages, a server's questions) keeps
        // rmcp's path: there the answer comes after the notifications sent before it, which the
        // events buffer must have taken before the call ends.
        let direct = self.direct.as_ref().filter(|_| ticket.relay.is_none());
        // The trace context, unprefixed in `_meta` as the MCP conventions say (over Streamable
        // HTTP, `pool/http.rs` also copies it into the headers).
        let traceparent = ticket.trace.as_ref().map(|context| context.traceparent());
        let tracestate = ticket
            .trace
            .as_ref()
            .and_then(|context| context.trace_state.as_ref())
            .map(|state| state.as_str());
        let result = match direct {
            Some(direct) => {
                let line = |id| {
                    let params = CallToolParams {
                        name: tool,
                        arguments,
                        meta: ProgressMeta {
                            progress_token: id,
                            caller,
                            traceparent: traceparent.as_deref(),
                            tracestate,
                        },
                    };
                    request_line(id, "tools/call", &params)
                };
                self.direct_request(direct, line, (tool, timeout), ticket)
                    .await?
            }
            None => {
                let mut params =
                    CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments.clone());
                let mut meta = rmcp::model::RequestMetaObject::new();
                if let Some(caller) = caller {
                    meta.insert(CALLER_META_KEY.to_owned(), Value::from(caller));
                }
                if let Some(traceparent) = &traceparent {
                    meta.insert("traceparent".to_owned(), Value::from(traceparent.as_str()));
                }
                if let Some(tracestate) = tracestate {
                    meta.insert("tracestate".to_owned(), Value::from(tracestate));
                }
                if !meta.is_empty() {
                    params.meta = Some(meta);
                }
                // A stateless server may ask for input first: answered, and the call sent
                // again, within the call's one timeout (`input_rounds.rs`).
                //
                // This path and the task's are boxed: held inline they made this future (and
                // every caller's above it, each moved whole as it is awaited) 8.7 KB for the
                // stdio path's 0.8 KB, the largest share of a call's `memcpy`.
                let result = Box::pin(self.request_answering_input(
                    tool,
                    timeout,
                    ticket,
                    |responses, state| {
                        params.input_responses = responses;
                        params.request_state = state;
                        ClientRequest::CallToolRequest(CallToolRequest::new(params.clone()))
                    },
                ))
                .await?;
                // A 2026 server may run the call as a task (`tasks.rs`).
                if super::tasks::is_task_handle(&result) {
                    Box::pin(self.follow_task(&result, tool, (deadline, timeout), ticket)).await?
                } else {
                    result
                }
            }
        };
        if let Err(malformed) = super::super::result_check::check_call_tool_result(&result) {
            tracing::warn!(server = %self.server, tool, message = %malformed, "malformed tool result");
            return Err(ErrorData::InvalidResult {
                server: self.server.clone(),
                method: tool.to_owned(),
                message: malformed.to_string(),
            }
            .into());
        }
        Ok(result)
    }

    /// Reads a resource for the caller `ticket` names; the result is the server's complete
    /// `ReadResourceResult`.
    pub(crate) async fn read_resource(
        &self,
        uri: &str,
        timeout: Duration,
        ticket: &CallTicket,
    ) -> Result<Value, Error> {
        let mut params = ReadResourceRequestParams::new(uri);
        params.meta = trace_meta(ticket);
        let _caller_in_flight = self.callers.enter(ticket.caller.clone());
        let _in_flight = self.published.server_requests.calling(ticket);
        let result = self
            .request_answering_input("resources/read", timeout, ticket, |responses, state| {
                params.input_responses = responses;
                params.request_state = state;
                ClientRequest::ReadResourceRequest(ReadResourceRequest::new(params.clone()))
            })
            .await?;
        self.input_answered(result, "resources/read")
    }

    /// Sends a request passed on unread (`completion/complete`, `resources/subscribe`,
    /// `resources/unsubscribe`) for the caller `ticket` names; the server's result.
    pub(crate) async fn pass_request(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
        ticket: &CallTicket,
    ) -> Result<Value, Error> {
        // Subscriptions are counted, to be sent again after a restart (`subscribed.rs`); the
        // 2026 revision subscribes on its listen stream (`listen.rs`).
        if matches!(method, "resources/subscribe" | "resources/unsubscribe") {
            return match self.listen.get() {
                Some(control) => {
                    control
                        .subscription(&self.server, method, &params, timeout)
                        .await
                }
                None => {
                    self.counted_subscription(method, params, timeout, ticket)
                        .await
                }
            };
        }
        self.send_unread(method, params, timeout, ticket).await
    }

    /// Renders a prompt for the caller `ticket` names; the result is the server's complete
    /// `GetPromptResult`.
    pub(crate) async fn get_prompt(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        timeout: Duration,
        ticket: &CallTicket,
    ) -> Result<Value, Error> {
        let mut params = GetPromptRequestParams::new(name).with_arguments(arguments);
        params.meta = trace_meta(ticket);
        let _caller_in_flight = self.callers.enter(ticket.caller.clone());
        let _in_flight = self.published.server_requests.calling(ticket);
        let result = self
            .request_answering_input("prompts/get", timeout, ticket, |responses, state| {
                params.input_responses = responses;
                params.request_state = state;
                ClientRequest::GetPromptRequest(GetPromptRequest::new(params.clone()))
            })
            .await?;
        self.input_answered(result, "prompts/get")
    }

    /// `result`, unless it is still asking for input after the last round.
    fn input_answered(&self, result: Value, method: &str) -> Result<Value, Error> {
        match super::super::result_check::check_input_answered(&result) {
            Ok(()) => Ok(result),
            Err(asking) => Err(ErrorData::InvalidResult {
                server: self.server.clone(),
                method: method.to_owned(),
                message: asking.to_string(),
            }
            .into()),
        }
    }

    /// Fetches every page of a list, following `nextCursor`; each page's request carries the
    /// ticket's trace context.
    pub(crate) async fn list_all(
        &self,
        kind: ListKind,
        timeout: Duration,
        ticket: &CallTicket,
    ) -> Result<Vec<Value>, Error> {
        let mut items = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let mut page = self
                .request(
                    kind.request(cursor.clone(), trace_meta(ticket)),
                    kind.method(),
                    timeout,
                    ticket,
                )
                .await?;
            // Moved out, not cloned: a page of ten thousand tools is a tree of ~50 MB.
            if let Some(Value::Array(page_items)) = page.get_mut(kind.items_key()).map(Value::take)
            {
                items.extend(page_items);
            }
            match next_upstream_cursor(&page, cursor.as_deref()) {
                Some(next) => cursor = Some(next),
                None => return Ok(items),
            }
        }
        Err(ErrorData::Upstream {
            server: self.server.clone(),
            code: tool_cli_protocol::code::INTERNAL_ERROR.into(),
            message: format!("{} returned more than {MAX_PAGES} pages", kind.method()),
            data: None,
        }
        .into())
    }
}

/// The `_meta` carrying a request's trace context, unprefixed as the MCP conventions say
/// (`traceparent`, `tracestate`); `None` when there is none to continue. Over Streamable HTTP,
/// `pool/http.rs` copies it into the headers too.
fn trace_meta(ticket: &CallTicket) -> Option<rmcp::model::RequestMetaObject> {
    let context = ticket.trace.as_ref()?;
    let mut meta = rmcp::model::RequestMetaObject::new();
    meta.insert("traceparent".to_owned(), Value::from(context.traceparent()));
    if let Some(state) = &context.trace_state {
        meta.insert("tracestate".to_owned(), Value::from(state.as_str()));
    }
    Some(meta)
}
