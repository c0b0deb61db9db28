//! The MCP gateway: the daemon's pool served as one MCP server (protocol 2025-11-25, also
//! answering 2025-06-18 and 2025-03-26 hosts) over Streamable HTTP at [`PATH`], behind the same
//! gate and bearer token as the JSON-RPC endpoint (`gate.rs` admits the request and attaches
//! its `Grant`; a scoped token sees only its scope; a foreign `Origin` never gets here).
//!
//! Each `initialize` opens a session (`Mcp-Session-Id`) bound to the token that opened it, in
//! one of two modes fixed for its life: pass-through (`pass_through.rs`: every visible tool as
//! `server__tool`) or progressive (`progressive.rs`: six meta-tools). The mode comes from the
//! query (`?mode=progressive`), else the `Tool-Cli-Gateway-Mode` header, else pass-through.
//! Every tool call goes through the calls service (the one pipeline); listings read the
//! catalogs the daemon already holds and never wait for a server.
//!
//! Answers are single JSON bodies, except a `tools/call`, `resources/read` or `prompts/get` from
//! a host that accepts `text/event-stream`: that one is answered with an SSE stream
//! (`stream.rs`) carrying the request's progress, the server's log messages and its
//! elicitation questions before its answer; the host's answers to the questions come back as
//! POSTs, and its `notifications/cancelled` (or a dropped stream) stops the request upstream. A
//! host's `GET` opens the session's standalone stream (`notices.rs`), which tells it when its
//! `tools/list` changed, when a server's resources or prompts changed, and when a resource it
//! subscribed to was updated.

mod input_rounds;
mod listen;
mod messages;
mod notices;
mod pass_through;
mod progressive;
mod released;
mod replay;
mod resources;
mod session_runs;
mod sessions;
mod sse;
mod stateless;
mod stateless_answer;
mod stateless_stream;
mod stateless_tasks;
mod stream;
mod task_runs;
mod tasks;
mod url_elicitation;

use std::sync::Arc;

use hyper::body::Bytes;
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Method, Response, StatusCode};
use serde_json::{Value, json};

use crate::auth::Grant;
use crate::edge::http_body::{HttpBody, HttpResponse};
use crate::services::Services;
pub(crate) use messages::Mode;
use messages::{Incoming, RpcError, requested_mode};
use sessions::{Session, SessionTable};

/// Where the gateway is served.
pub(crate) const PATH: &str = "/mcp";

/// The header naming a session's mode when the query does not.
pub(crate) const MODE_HEADER: &str = "tool-cli-gateway-mode";

/// MCP's session header.
const SESSION_HEADER: &str = "mcp-session-id";

/// MCP's protocol version header, sent by hosts after `initialize`.
const PROTOCOL_VERSION_HEADER: &str = "mcp-protocol-version";

/// The requests answered with an SSE stream when the host accepts one: those during which a
/// server may report progress, log, or ask the host (a server may ask while it reads a resource
/// or renders a prompt as well as while it runs a tool).
const STREAMED_METHODS: &[&str] = &["tools/call", "resources/read", "prompts/get"];

/// The protocol revisions answered, newest first; the first is offered to a host asking for
/// any other.
pub(crate) const PROTOCOL_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26"];

/// One request the gate admitted to the gateway.
pub(crate) struct GatewayRequest {
    /// Its caller.
    pub(crate) grant: Grant,
    /// `POST`, `GET` or `DELETE`.
    pub(crate) method: Method,
    /// The query, if any (`mode=…`).
    pub(crate) query: Option<String>,
    /// Its headers.
    pub(crate) headers: HeaderMap,
    /// Its body.
    pub(crate) body: Bytes,
}

/// The gateway endpoint: the services it answers from and its sessions.
pub(crate) struct Endpoint {
    services: Arc<Services>,
    sessions: SessionTable,
    /// Recent pass-through `tools/list` answers, encoded.
    lists: pass_through::ListCache,
    /// What progressive mode remembers for 2026-07-28 (stateless) requests.
    stateless: stateless::Stateless,
    /// Turns `true` when the shutdown grace period is over: a request still running then is
    /// answered with a shutdown error (its call cancelled), as on the JSON-RPC endpoint.
    grace_over: tokio::sync::watch::Receiver<bool>,
    /// Turns `true` when shutdown starts: standalone streams end at once.
    shutting_down: tokio::sync::watch::Receiver<bool>,
    /// The grace period, for that error.
    grace_ms: u64,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("gateway::Endpoint")
    }
}

impl Endpoint {
    pub(crate) fn new(
        services: Arc<Services>,
        grace_over: tokio::sync::watch::Receiver<bool>,
        shutting_down: tokio::sync::watch::Receiver<bool>,
        grace_ms: u64,
    ) -> Endpoint {
        Endpoint {
            // Before `services` moves in: an ended session's subscriptions are released.
            sessions: SessionTable::releasing(released::hook(&services)),
            services,
            lists: pass_through::ListCache::default(),
            stateless: stateless::Stateless::default(),
            grace_over,
            shutting_down,
            grace_ms,
        }
    }

    /// Answers one HTTP request.
    pub(crate) async fn handle(self: &Arc<Self>, request: GatewayRequest) -> HttpResponse {
        let mode = match requested_mode(request.query.as_deref(), &request.headers) {
            Ok(mode) => mode,
            Err(message) => {
                return error_answer(
                    StatusCode::BAD_REQUEST,
                    None,
                    RpcError::invalid_request(message),
                );
            }
        };
        let session_id = request
            .headers
            .get(SESSION_HEADER)
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned);
        if request.method == Method::DELETE {
            return match session_id {
                Some(id) if self.sessions.remove(&id, &request.grant.token_id) => {
                    status_answer(StatusCode::OK)
                }
                _ => status_answer(StatusCode::NOT_FOUND),
            };
        }
        if request.method == Method::GET {
            return self.notice_stream(&request, session_id.as_deref());
        }
        if let Some(version) = request
            .headers
            .get(PROTOCOL_VERSION_HEADER)
            .and_then(|value| value.to_str().ok())
            && !PROTOCOL_VERSIONS.contains(&version)
            && version != stateless::STATELESS_VERSION
        {
            return error_answer(
                StatusCode::BAD_REQUEST,
                None,
                RpcError::invalid_request(format!(
                    "unsupported MCP-Protocol-Version {:?}; this gateway speaks {}, {}",
                    messages::excerpt(version),
                    stateless::STATELESS_VERSION,
                    PROTOCOL_VERSIONS.join(", ")
                )),
            );
        }
        let incoming = match messages::parse(&request.body) {
            Ok(incoming) => incoming,
            Err(error) => return error_answer(StatusCode::BAD_REQUEST, None, error),
        };
        // A notification or an answer naming a session we do not know gets what a request
        // would: 404, so the host starts a new session.
        let known_session = session_id
            .as_deref()
            .map(|id| self.sessions.get(id, &request.grant.token_id).is_some());
        if known_session == Some(false) && !matches!(incoming, Incoming::Request { .. }) {
            return status_answer(StatusCode::NOT_FOUND);
        }
        let (id, method, params) = match incoming {
            // A notification or a host's answer: taken, nothing to say back.
            Incoming::Notification { method, params } => {
                if method == "notifications/cancelled"
                    && let Some(session) = session_id
                        .as_deref()
                        .and_then(|id| self.sessions.get(id, &request.grant.token_id))
                    && let Some(call) = params.get("requestId")
                    && session.cancel(call)
                {
                    tracing::info!(request = %call, "gateway call cancelled by the host");
                }
                return status_answer(StatusCode::ACCEPTED);
            }
            Incoming::Response { id, answer } => {
                let answered = session_id
                    .as_deref()
                    .and_then(|session| self.sessions.get(session, &request.grant.token_id))
                    .map(|session| session.answer(&id, &answer));
                match answered {
                    Some(stream::Answered::Delivered) => {}
                    Some(stream::Answered::Declined(reason)) => {
                        tracing::info!(%reason, "a host's answer to a question was not delivered");
                    }
                    _ => tracing::debug!(%id, "a host's answer matched no open question"),
                }
                return status_answer(StatusCode::ACCEPTED);
            }
            Incoming::Request { id, method, params } => (id, method, params),
        };
        // A 2026-07-28 request is answered without a session (`stateless.rs`).
        let has_session = session_id.is_some();
        match stateless::classify_request(&request.headers, has_session, &method, &params) {
            Err(refusal) => return error_answer(refusal.status, Some(id), refusal.error),
            Ok(stateless::Era::Stateless) => {
                return self
                    .answer_stateless(&request, mode, id, &method, &params)
                    .await;
            }
            Ok(stateless::Era::Session) => {}
        }
        if method == "initialize" {
            // The URL or header, else the mode the token was minted with, else pass-through.
            let mode = mode
                .or_else(|| {
                    self.services
                        .tokens()
                        .gateway_mode(&request.grant.token_id)
                        .map(Mode::from)
                })
                .unwrap_or(Mode::PassThrough);
            return self.initialize(&request.grant, mode, id, &params);
        }
        let Some(session_id) = session_id else {
            return error_answer(
                StatusCode::BAD_REQUEST,
                Some(id),
                RpcError::invalid_request(format!(
                    "no Mcp-Session-Id header: send initialize first and then the session id it \
                     answered with every request ({method}), or {}",
                    stateless::STATELESS_HINT
                )),
            );
        };
        let Some(session) = self.sessions.get(&session_id, &request.grant.token_id) else {
            // MCP: a session the server does not know is answered 404, and the host starts a
            // new one. A session of another token is not this caller's to use.
            return error_answer(
                StatusCode::NOT_FOUND,
                Some(id),
                RpcError::invalid_request(
                    "unknown or expired Mcp-Session-Id; initialize a new session".to_owned(),
                ),
            );
        };
        let mut context = crate::pipeline::CallContext::new(request.grant.clone());
        // The MCP tasks a request creates are its session's (`tasks.rs`).
        context.mcp_session = Some(session_id);
        if STREAMED_METHODS.contains(&method.as_str()) && accepts_event_stream(&request.headers) {
            return self.stream_call(session, id, method, params, context);
        }
        let body = self.answer(&session, &method, &params, &context, &id).await;
        Response::builder()
            .status(StatusCode::OK)
            .header(header::CONTENT_TYPE, "application/json")
            .body(HttpBody::from(body))
            .expect("static response parts are valid")
    }

    /// `GET`: the session's standalone stream, if the host accepts one and names a session of
    /// its token that has none open.
    fn notice_stream(
        self: &Arc<Self>,
        request: &GatewayRequest,
        session_id: Option<&str>,
    ) -> HttpResponse {
        if !accepts_event_stream(&request.headers) {
            return error_answer(
                StatusCode::NOT_ACCEPTABLE,
                None,
                RpcError::invalid_request(
                    "GET /mcp opens the session's event stream: send Accept: text/event-stream"
                        .to_owned(),
                ),
            );
        }
        let Some(session_id) = session_id else {
            return error_answer(
                StatusCode::BAD_REQUEST,
                None,
                RpcError::invalid_request(
                    "no Mcp-Session-Id header: GET /mcp opens the event stream of a session; \
                     send initialize first and then the session id it answered with"
                        .to_owned(),
                ),
            );
        };
        let Some(session) = self.sessions.get(session_id, &request.grant.token_id) else {
            return error_answer(
                StatusCode::NOT_FOUND,
                None,
                RpcError::invalid_request(
                    "unknown or expired Mcp-Session-Id; initialize a new session".to_owned(),
                ),
            );
        };
        let last_event_id = match notices::resumption(&request.headers, &session) {
            Ok(last_event_id) => last_event_id,
            Err(refused) => return *refused,
        };
        let Some(generation) = session.notices.open(last_event_id.is_some()) else {
            return error_answer(
                StatusCode::CONFLICT,
                None,
                RpcError::invalid_request(
                    "this session's event stream is open already; one GET stream per session \
                     (a reconnect sends Last-Event-ID to take it over)"
                        .to_owned(),
                ),
            );
        };
        let mut context = crate::pipeline::CallContext::new(request.grant.clone());
        // The status of the session's own MCP tasks comes on its stream (`tasks.rs`).
        context.mcp_session = Some(session_id.to_owned());
        let stream = notices::open(
            Arc::clone(self),
            &session,
            context,
            self.shutting_down.clone(),
            generation,
            last_event_id,
        );
        Response::builder()
            .status(StatusCode::OK)
            .header(header::CONTENT_TYPE, "text/event-stream")
            .header(header::CACHE_CONTROL, "no-cache")
            .body(HttpBody::new(stream))
            .expect("static response parts are valid")
    }

    /// A request of [`STREAMED_METHODS`] answered with an SSE stream: it runs in a task of its
    /// own, whose relay sends the host what the server says meanwhile; the stream ends with the
    /// answer.
    fn stream_call(
        self: &Arc<Self>,
        session: Arc<Session>,
        id: Value,
        method: String,
        params: Value,
        mut context: crate::pipeline::CallContext,
    ) -> HttpResponse {
        let (relay, messages) = session.relay(stream::progress_token(&params));
        context.relay = Some(Arc::clone(&relay) as Arc<dyn crate::provider::EventRelay>);
        let endpoint = Arc::clone(self);
        let call_session = Arc::clone(&session);
        let call_id = id.clone();
        let call = tokio::spawn(async move {
            let answer = endpoint
                .answer(&call_session, &method, &params, &context, &call_id)
                .await;
            call_session.call_ended(&call_id);
            Some(answer)
        });
        session.call_started(&id, call.abort_handle());
        Response::builder()
            .status(StatusCode::OK)
            .header(header::CONTENT_TYPE, "text/event-stream")
            .header(header::CACHE_CONTROL, "no-cache")
            .body(HttpBody::new(stream::event_stream(messages, call, relay)))
            .expect("static response parts are valid")
    }

    /// The JSON-RPC response to one request of an open session, encoded; a request still
    /// running when the shutdown grace period ends gets the shutdown error.
    async fn answer(
        &self,
        session: &Session,
        method: &str,
        params: &Value,
        context: &crate::pipeline::CallContext,
        id: &Value,
    ) -> String {
        let answer = self.settle(session, method, params, context).await;
        match answer {
            Ok(Reply::Json(result)) => {
                json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string()
            }
            Ok(Reply::Encoded(result)) => {
                format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{result}}}"#)
            }
            Err(error) => json!({"jsonrpc": "2.0", "id": id, "error": error.to_json()}).to_string(),
        }
    }

    /// The result of one request, or the shutdown error when the grace period ends first.
    async fn settle(
        &self,
        session: &Session,
        method: &str,
        params: &Value,
        context: &crate::pipeline::CallContext,
    ) -> Result<Reply, RpcError> {
        // Boxed: a call's future holds the whole pipeline's state.
        let work = Box::pin(self.dispatch(session, method, params, context));
        let mut grace_over = self.grace_over.clone();
        tokio::select! {
            answer = work => answer,
            // A dropped sender (no shutdown will come) disables this branch.
            Ok(_) = grace_over.wait_for(|over| *over) => Err(RpcError {
                code: i64::from(tool_cli_protocol::code::SHUTTING_DOWN),
                message: format!(
                    "the daemon is shutting down and this request did not finish within the {} ms \
                     grace period; it was cancelled",
                    self.grace_ms
                ),
                data: None,
            }),
        }
    }

    /// `initialize`: a new session for this token, in `mode`.
    fn initialize(&self, grant: &Grant, mode: Mode, id: Value, params: &Value) -> HttpResponse {
        let asked = params
            .get("protocolVersion")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let version = PROTOCOL_VERSIONS
            .iter()
            .find(|version| **version == asked)
            .unwrap_or(&PROTOCOL_VERSIONS[0]);
        let host = stream::HostCapabilities::of(params.get("capabilities"));
        let session_id = self.sessions.open(grant, mode, host);
        let mut result = json!({
            "protocolVersion": version,
            "capabilities": {
                // The standalone stream tells a pass-through host when its list changed; the
                // meta-tools never do.
                "tools": {"listChanged": mode == Mode::PassThrough},
                // Told on the standalone stream (`notices.rs`), as are the updates of a
                // subscribed resource.
                "resources": {"listChanged": true, "subscribe": true},
                "prompts": {"listChanged": true},
                "logging": {},
                "completions": {},
            },
            "serverInfo": {
                "name": "tool-cli",
                "title": "tool-cli gateway",
                "version": env!("CARGO_PKG_VERSION"),
            },
        });
        if let Some(tasks) = tasks::capability(
            &self.services,
            &crate::pipeline::CallContext::new(grant.clone()),
        ) {
            result["capabilities"]["tasks"] = tasks;
        }
        if mode == Mode::Progressive {
            result["instructions"] = json!(tool_cli_gateway_core::meta_tools::INSTRUCTIONS);
        }
        let mut response = json_answer(
            StatusCode::OK,
            &json!({"jsonrpc": "2.0", "id": id, "result": result}),
        );
        if let Ok(value) = HeaderValue::from_str(&session_id) {
            response.headers_mut().insert(SESSION_HEADER, value);
        }
        response
    }

    /// Answers one request of an open session.
    async fn dispatch(
        &self,
        session: &Session,
        method: &str,
        params: &Value,
        context: &crate::pipeline::CallContext,
    ) -> Result<Reply, RpcError> {
        if method == "tools/list" && session.mode == Mode::PassThrough {
            messages::no_cursor(params)?;
            let encoded = pass_through::list_encoded(&self.services, &self.lists, context);
            return Ok(Reply::Encoded(encoded));
        }
        self.dispatch_json(session, method, params, context)
            .await
            .map(Reply::Json)
    }

    /// Answers every request but a pass-through `tools/list`.
    async fn dispatch_json(
        &self,
        session: &Session,
        method: &str,
        params: &Value,
        context: &crate::pipeline::CallContext,
    ) -> Result<Value, RpcError> {
        let services = &self.services;
        if let Some(answer) = self
            .answer_session_runs(session.mode, method, params, context)
            .await
        {
            return answer; // A 2026 server's tool run as a 2025 task (`session_runs.rs`).
        }
        match (method, session.mode) {
            ("ping", _) => Ok(json!({})),
            ("logging/setLevel", _) => {
                let level = params.get("level").and_then(Value::as_str).unwrap_or("");
                let rank = stream::log_level_rank(level).ok_or_else(|| {
                    RpcError::invalid_params(format!(
                        "unknown log level {:?}; expected debug, info, notice, warning, error, \
                         critical, alert or emergency",
                        messages::excerpt(level)
                    ))
                })?;
                session.set_log_level(rank);
                Ok(json!({}))
            }
            ("tools/list", Mode::Progressive) => {
                messages::no_cursor(params)?;
                Ok(json!({"tools": tool_cli_gateway_core::meta_tools::definitions()}))
            }
            ("tools/call", Mode::PassThrough) => {
                pass_through::call(services, params, context).await
            }
            ("tools/call", Mode::Progressive) => {
                progressive::call(services, session, params, context).await
            }
            ("resources/list", _) => {
                messages::no_cursor(params)?;
                resources::list(services, session, context).await
            }
            ("resources/templates/list", _) => {
                messages::no_cursor(params)?;
                resources::templates(services, context).await
            }
            ("resources/read", _) => resources::read(services, session, params, context).await,
            ("prompts/list", _) => {
                messages::no_cursor(params)?;
                resources::prompts(services, context).await
            }
            ("prompts/get", _) => resources::get_prompt(services, params, context).await,
            ("completion/complete", _) => resources::complete(services, params, context).await,
            ("resources/subscribe" | "resources/unsubscribe", _) => {
                resources::subscription(services, session, method, params, context).await
            }
            (method, _) if tasks::is_task_method(method) => {
                tasks::answer(services, method, params, context).await
            }
            (other, _) => Err(RpcError::method_not_found(other)),
        }
    }
}

/// A result: a JSON value, or one encoded already (a cached `tools/list`).
enum Reply {
    Json(Value),
    Encoded(Arc<str>),
}

/// Whether the host accepts an SSE answer (`Accept: …, text/event-stream`).
fn accepts_event_stream(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .any(|value| value.contains("text/event-stream"))
}

fn json_answer(code: StatusCode, body: &Value) -> HttpResponse {
    Response::builder()
        .status(code)
        .header(header::CONTENT_TYPE, "application/json")
        .body(HttpBody::from(body.to_string()))
        .expect("static response parts are valid")
}

fn error_answer(code: StatusCode, id: Option<Value>, error: RpcError) -> HttpResponse {
    json_answer(
        code,
        &json!({"jsonrpc": "2.0", "id": id.unwrap_or(Value::Null), "error": error.to_json()}),
    )
}

fn status_answer(code: StatusCode) -> HttpResponse {
    Response::builder()
        .status(code)
        .body(HttpBody::empty())
        .expect("static response parts are valid")
}
