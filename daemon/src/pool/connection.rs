//! One live MCP connection: the rmcp client peer and, for stdio, the child.
//!
//! A connection is established once (handshake, then the first tool listing) and ends when its
//! transport does; the supervisor in `pool/mod.rs` then decides whether to start a new one.
//! Requests go through [`Connection::request`], which returns the raw JSON result when the
//! transport tapped it, so what clients see is what the server sent. Tool calls on a stdio
//! server go around rmcp's service task (`direct.rs`), the one hand-off left being the stdout
//! reader's. The tool catalog lives on the
//! server ([`super::Published`]), not here, so it outlives a restart; the connection replaces it
//! whole when the server announces `notifications/tools/list_changed` (bursts coalesced), so a
//! removed tool stops being callable at once.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotificationParam, ClientCapabilities,
    ClientConfig, ClientRequest, GetPromptRequest, GetPromptRequestParams, ListPromptsRequest,
    ListResourceTemplatesRequest, ListResourcesRequest, ListToolsRequest, PaginatedRequestParams,
    PingRequest, ReadResourceRequest, ReadResourceRequestParams,
};
// Roots, sampling and logging are deprecated by rmcp for the 2026 protocol (SEP-2577); the
// protocol version we speak (2025-11-25) has them, and servers use them.
#[allow(deprecated)]
use rmcp::model::{
    CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult,
    ElicitationCapability, FormElicitationCapability, ListRootsResult,
    LoggingMessageNotificationParam, ProgressNotificationParam, RootsCapabilities,
    SamplingCapability,
};
use rmcp::service::{
    NotificationContext, PeerRequestOptions, RequestContext, RunningServiceCancellationToken,
};
use rmcp::{ClientHandler, Peer, RoleClient, ServiceError, ServiceExt as _};
use serde_json::{Map, Value};
use tokio::sync::{Notify, watch};

use super::Published;
use super::child::ChildProcess;
use super::direct::{Answer, CallToolParams, DirectRequests, ProgressMeta, request_line};
use super::http::{OversizedAnswers, size_limit_in};
use super::raw_results::{RawResults, id_key};
use super::{MCP_PROTOCOL_VERSION, STDERR_TAIL_LINES};
use crate::error::Error;
use tool_cli_protocol::ErrorData;

/// How long a server gets to start, complete the MCP handshake and list its tools.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// How many pages of a paginated list we follow before deciding the server is looping.
const MAX_PAGES: usize = 1000;

/// How long after a `list_changed` notification the catalog is refreshed; notifications arriving
/// meanwhile are folded into the same refresh.
const LIST_CHANGED_COALESCE: Duration = Duration::from_millis(50);

/// A live MCP connection to one server.
pub(crate) struct Connection {
    server: String,
    peer: Peer<RoleClient>,
    /// Where its catalog is published (the server's, kept across restarts).
    published: Arc<Published>,
    /// Raw results tapped from the wire (stdio only; HTTP results are re-serialized).
    raw: Option<Arc<RawResults>>,
    /// Requests sent around rmcp (stdio, with a protocol version that has no per-request
    /// association rules rmcp would have to enforce).
    direct: Option<Arc<DirectRequests>>,
    pub(crate) process: Option<Arc<ChildProcess>>,
    /// Why the stdio stream ended, when it has.
    stream_closed: Arc<Mutex<Option<String>>>,
    /// Whether the reason in `stream_closed` is an authorization failure (HTTP only).
    auth_refused: Option<Arc<AtomicBool>>,
    /// Which answers were too large (HTTP only; stdio closes the stream instead).
    oversized: Option<Arc<OversizedAnswers>>,
    cancel: Mutex<Option<RunningServiceCancellationToken>>,
    /// Becomes true once the connection's service loop has ended.
    ended: watch::Receiver<bool>,
    pub(crate) supports_resources: bool,
    pub(crate) supports_prompts: bool,
    pub(crate) instructions: Option<String>,
}

/// Resolves when a connection's service loop has ended.
pub(crate) type ServiceDone = tokio::task::JoinHandle<()>;

/// Our MCP client side: identity, what to do when a server announces a new tool list, and the
/// answers to what a server asks of us (`requests.rs`).
#[derive(Clone)]
struct PoolClient {
    config: ClientConfig,
    tools_changed: Arc<Notify>,
    requests: Arc<super::requests::ServerRequests>,
}

#[allow(deprecated)] // Roots, sampling and logging: see the import above.
impl ClientHandler for PoolClient {
    fn get_info(&self) -> ClientConfig {
        self.config.clone()
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        // A stored permit: a burst of notifications wakes the refresher once.
        self.tools_changed.notify_one();
    }

    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, rmcp::ErrorData> {
        Ok(self.requests.list_roots())
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, rmcp::ErrorData> {
        Ok(self.requests.elicit(&request, &context.ct).await)
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, rmcp::ErrorData> {
        // A server that cancels its request (or goes away) stops the backend request with it,
        // so nothing more is billed for an answer nobody reads.
        tokio::select! {
            answer = self.requests.sample(&params) => answer,
            () = context.ct.cancelled() => Err(rmcp::ErrorData::new(
                rmcp::model::ErrorCode(-1),
                "sampling cancelled by the server",
                None,
            )),
        }
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.requests.progress(&params);
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.requests.log(&params);
    }
}

/// Our identity and capabilities as an MCP client; `sampling` only for a server with
/// `allowSampling`, so the others do not offer tools that need it.
pub(crate) fn client_config(sampling: bool) -> ClientConfig {
    // Roots (from the config) and elicitation are declared so servers may ask: the answers are
    // the config's roots and reasoned declines (`requests.rs`), never silence.
    let mut capabilities = ClientCapabilities::default();
    capabilities.roots = Some(RootsCapabilities::default());
    capabilities.elicitation =
        Some(ElicitationCapability::new().with_form(FormElicitationCapability::default()));
    if sampling {
        capabilities.sampling = Some(SamplingCapability::default());
    }
    let mut config = ClientConfig::new(
        capabilities,
        rmcp::model::Implementation::new(
            tool_cli_protocol::IMPLEMENTATION_NAME,
            env!("CARGO_PKG_VERSION"),
        ),
    );
    config.protocol_version = MCP_PROTOCOL_VERSION;
    config
}

/// What a connection has beyond its rmcp peer, depending on its transport.
#[derive(Default)]
pub(crate) struct Extras {
    /// Raw results tapped from the wire (stdio).
    pub(crate) raw: Option<Arc<RawResults>>,
    /// Requests sent around rmcp (stdio).
    pub(crate) direct: Option<Arc<DirectRequests>>,
    /// The child (stdio).
    pub(crate) process: Option<Arc<ChildProcess>>,
    /// Why the stdio stream ended, once it has.
    pub(crate) stream_closed: Arc<Mutex<Option<String>>>,
    /// Set by the HTTP client when the failure it noted is about authorization.
    pub(crate) auth_refused: Option<Arc<AtomicBool>>,
    /// Which answers were too large (HTTP).
    pub(crate) oversized: Option<Arc<OversizedAnswers>>,
}

/// Runs the MCP handshake over `transport` and lists the server's tools.
pub(crate) async fn establish<T, E, A>(
    name: &str,
    published: Arc<Published>,
    transport: T,
    extras: Extras,
) -> Result<(Arc<Connection>, ServiceDone), String>
where
    T: rmcp::transport::IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let Extras {
        raw,
        direct,
        process,
        stream_closed,
        auth_refused,
        oversized,
    } = extras;
    let tools_changed = Arc::new(Notify::new());
    let client = PoolClient {
        config: client_config(published.server_requests.advertises_sampling()),
        tools_changed: Arc::clone(&tools_changed),
        requests: Arc::clone(&published.server_requests),
    };
    let service = tokio::time::timeout(CONNECT_TIMEOUT, client.serve(transport))
        .await
        .map_err(|_| {
            format!(
                "no answer to the MCP initialize request within {} s",
                CONNECT_TIMEOUT.as_secs()
            )
        })?
        .map_err(|err| format!("the MCP handshake failed: {err}"))?;
    let peer = service.peer().clone();
    let info = peer.peer_info();
    let supports_resources = info
        .as_ref()
        .is_some_and(|info| info.capabilities.resources.is_some());
    let supports_prompts = info
        .as_ref()
        .is_some_and(|info| info.capabilities.prompts.is_some());
    let supports_tools = info
        .as_ref()
        .is_none_or(|info| info.capabilities.tools.is_some());
    let instructions = info.as_ref().and_then(|info| info.instructions.clone());
    // From 2026-07-28 on, rmcp checks that a server's requests belong to one of ours in flight
    // (SEP-2260), which it can only do for the requests it sent itself.
    let direct = direct.filter(|_| {
        info.as_ref()
            .is_some_and(|info| info.protocol_version < rmcp::model::ProtocolVersion::V_2026_07_28)
    });
    let cancel = service.cancellation_token();
    let (ended_tx, ended_rx) = watch::channel(false);
    let done = tokio::spawn(async move {
        let _ = service.waiting().await;
        let _ = ended_tx.send(true);
    });
    let connection = Arc::new(Connection {
        server: name.to_owned(),
        peer,
        published,
        raw,
        direct,
        process,
        stream_closed,
        auth_refused,
        oversized,
        cancel: Mutex::new(Some(cancel)),
        ended: ended_rx,
        supports_resources,
        supports_prompts,
        instructions,
    });
    if supports_tools {
        if let Err(err) = connection.refresh_catalog().await {
            connection.close().await;
            return Err(format!("listing its tools failed: {err}"));
        }
        tokio::spawn(refresh_on_list_changed(
            Arc::downgrade(&connection),
            tools_changed,
        ));
    }
    Ok((connection, done))
}

/// Keeps the server's catalog fresh until the connection goes away.
async fn refresh_on_list_changed(connection: Weak<Connection>, tools_changed: Arc<Notify>) {
    loop {
        tools_changed.notified().await;
        tokio::time::sleep(LIST_CHANGED_COALESCE).await;
        let Some(connection) = connection.upgrade() else {
            return;
        };
        if *connection.ended.borrow() {
            return;
        }
        match connection.refresh_catalog().await {
            Ok(count) => {
                tracing::info!(server = %connection.server, tools = count, "tool list changed")
            }
            Err(error) => {
                tracing::warn!(server = %connection.server, %error, "refreshing the tool list failed")
            }
        }
    }
}

/// Which paginated list to fetch.
#[derive(Debug, Clone, Copy)]
pub(crate) enum ListKind {
    Tools,
    Resources,
    ResourceTemplates,
    Prompts,
}

impl ListKind {
    fn method(self) -> &'static str {
        match self {
            ListKind::Tools => "tools/list",
            ListKind::Resources => "resources/list",
            ListKind::ResourceTemplates => "resources/templates/list",
            ListKind::Prompts => "prompts/list",
        }
    }

    fn items_key(self) -> &'static str {
        match self {
            ListKind::Tools => "tools",
            ListKind::Resources => "resources",
            ListKind::ResourceTemplates => "resourceTemplates",
            ListKind::Prompts => "prompts",
        }
    }

    fn request(self, cursor: Option<String>) -> ClientRequest {
        let params = PaginatedRequestParams::default().with_cursor(cursor);
        match self {
            ListKind::Tools => {
                ClientRequest::ListToolsRequest(ListToolsRequest::with_param(params))
            }
            ListKind::Resources => {
                ClientRequest::ListResourcesRequest(ListResourcesRequest::with_param(params))
            }
            ListKind::ResourceTemplates => ClientRequest::ListResourceTemplatesRequest(
                ListResourceTemplatesRequest::with_param(params),
            ),
            ListKind::Prompts => {
                ClientRequest::ListPromptsRequest(ListPromptsRequest::with_param(params))
            }
        }
    }
}

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
    /// Lists the tools again and swaps the catalog; returns how many there are.
    async fn refresh_catalog(&self) -> Result<usize, Error> {
        let tools = self.list_all(ListKind::Tools, CONNECT_TIMEOUT).await?;
        let count = self.published.catalog_from(&self.server, tools);
        Ok(count)
    }

    /// Whether its connection has ended.
    pub(crate) fn has_ended(&self) -> bool {
        *self.ended.borrow()
    }

    /// Sends one request and returns its result as JSON, unnarrowed when the transport tapped it.
    async fn request(
        &self,
        request: ClientRequest,
        label: &str,
        timeout: Duration,
    ) -> Result<Value, Error> {
        let handle = self
            .peer
            .send_cancellable_request(request, PeerRequestOptions::with_timeout(timeout))
            .await;
        let handle = match handle {
            Ok(handle) => handle,
            Err(err) => return Err(self.service_error(err, label, timeout).await),
        };
        let guard = RawGuard {
            raw: self.raw.as_deref(),
            key: id_key(&handle.id),
        };
        // Only for a call that asked for progress (a task-local read otherwise).
        let _progress = self.published.server_requests.watch(&handle.progress_token);
        let mut abandon = AbandonGuard {
            peer: Some(self.peer.clone()),
            request_id: handle.id.clone(),
        };
        let outcome = handle.await_response().await;
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
                // Its response stream was cut for size, not because the server went away.
                if matches!(err, ServiceError::TransportClosed)
                    && let Some(oversized) = &self.oversized
                    && oversized.take(&guard.key)
                {
                    return Err(self.too_large(label, oversized.limit_bytes as u64));
                }
                Err(self.service_error(err, label, timeout).await)
            }
        }
    }

    /// Sends one request around rmcp (`direct.rs`): the line `line` makes of its id is written
    /// from this task, and the stdout reader hands the answer back. Errors are the ones
    /// [`Connection::request`] gives for the same outcomes.
    async fn direct_request(
        &self,
        direct: &Arc<DirectRequests>,
        line: impl FnOnce(i64) -> Vec<u8>,
        label: &str,
        timeout: Duration,
    ) -> Result<Value, Error> {
        let Some(pending) = direct.register() else {
            return Err(self.closed_error().await);
        };
        let id = pending.id;
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
                Err(self.closed_error().await)
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

    /// Calls a tool; the result is the server's complete `CallToolResult`.
    pub(crate) async fn call_tool(
        &self,
        tool: &str,
        arguments: &Map<String, Value>,
        timeout: Duration,
    ) -> Result<Value, Error> {
        // Who the call is for, so a server keeping state per client can keep callers apart
        // on this shared connection (`crate::caller`).
        let caller = crate::caller::current();
        // Only for a server whose questions are relayed to the caller (`elicitation: "ask"`) or
        // that may sample (its usage is billed to the call).
        let _in_flight = self.published.server_requests.calling();
        // A call that relays its events (progress, log messages, a server's questions) keeps
        // rmcp's path: there the answer comes after the notifications sent before it, which the
        // events buffer must have taken before the call ends.
        let direct = self
            .direct
            .as_ref()
            .filter(|_| crate::call_events::current().is_none());
        let result = match direct {
            Some(direct) => {
                let line = |id| {
                    let params = CallToolParams {
                        name: tool,
                        arguments,
                        meta: ProgressMeta {
                            progress_token: id,
                            caller: caller.as_deref(),
                        },
                    };
                    request_line(id, "tools/call", &params)
                };
                self.direct_request(direct, line, tool, timeout).await?
            }
            None => {
                let mut params =
                    CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments.clone());
                if let Some(caller) = &caller {
                    let mut meta = rmcp::model::RequestMetaObject::new();
                    meta.insert(crate::caller::META_KEY.to_owned(), Value::from(&**caller));
                    params.meta = Some(meta);
                }
                let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
                self.request(request, tool, timeout).await?
            }
        };
        if let Err(message) = super::answer::check_call_tool_result(&result) {
            tracing::warn!(server = %self.server, tool, %message, "malformed tool result");
            return Err(ErrorData::InvalidResult {
                server: self.server.clone(),
                method: tool.to_owned(),
                message,
            }
            .into());
        }
        Ok(result)
    }

    /// Reads a resource; the result is the server's complete `ReadResourceResult`.
    pub(crate) async fn read_resource(&self, uri: &str, timeout: Duration) -> Result<Value, Error> {
        let request = ClientRequest::ReadResourceRequest(ReadResourceRequest::new(
            ReadResourceRequestParams::new(uri),
        ));
        let _in_flight = self.published.server_requests.calling();
        self.request(request, "resources/read", timeout).await
    }

    /// Renders a prompt; the result is the server's complete `GetPromptResult`.
    pub(crate) async fn get_prompt(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        timeout: Duration,
    ) -> Result<Value, Error> {
        let params = GetPromptRequestParams::new(name).with_arguments(arguments);
        let request = ClientRequest::GetPromptRequest(GetPromptRequest::new(params));
        let _in_flight = self.published.server_requests.calling();
        self.request(request, "prompts/get", timeout).await
    }

    /// Fetches every page of a list, following `nextCursor`.
    pub(crate) async fn list_all(
        &self,
        kind: ListKind,
        timeout: Duration,
    ) -> Result<Vec<Value>, Error> {
        let mut items = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let mut page = self
                .request(kind.request(cursor.clone()), kind.method(), timeout)
                .await?;
            // Moved out, not cloned: a page of ten thousand tools is a tree of ~50 MB.
            if let Some(Value::Array(page_items)) = page.get_mut(kind.items_key()).map(Value::take)
            {
                items.extend(page_items);
            }
            let next = page
                .get("nextCursor")
                .and_then(Value::as_str)
                .filter(|next| !next.is_empty())
                .map(str::to_owned);
            if next.is_none() || next == cursor {
                return Ok(items);
            }
            cursor = next;
        }
        Err(ErrorData::Upstream {
            server: self.server.clone(),
            code: tool_cli_protocol::code::INTERNAL_ERROR.into(),
            message: format!("{} returned more than {MAX_PAGES} pages", kind.method()),
            data: None,
        }
        .into())
    }

    async fn service_error(&self, err: ServiceError, label: &str, timeout: Duration) -> Error {
        match err {
            ServiceError::McpError(error) => ErrorData::Upstream {
                server: self.server.clone(),
                code: error.code.0.into(),
                message: error.message.into_owned(),
                data: error.data,
            }
            .into(),
            ServiceError::Timeout { .. } => {
                Error::timeout(&self.server, label, timeout.as_millis() as u64)
            }
            ServiceError::TransportSend(error) if self.process.is_none() => {
                if let Some(limit) = size_limit_in(&error_chain(&error)) {
                    return self.too_large(label, limit);
                }
                // The HTTP client noted why (a 401 naming `tool-cli auth login`, a 403 for scope).
                if let Some(reason) = self.stream_closed.lock().unwrap().take() {
                    if self
                        .auth_refused
                        .as_ref()
                        .is_some_and(|refused| refused.swap(false, Ordering::Relaxed))
                    {
                        return ErrorData::AuthRequired {
                            server: self.server.clone(),
                            message: reason,
                        }
                        .into();
                    }
                    return ErrorData::ServerExited {
                        server: self.server.clone(),
                        exit: reason,
                        stderr_tail: Vec::new(),
                    }
                    .into();
                }
                ErrorData::ServerExited {
                    server: self.server.clone(),
                    exit: format!("the HTTP transport failed: {error}"),
                    stderr_tail: Vec::new(),
                }
                .into()
            }
            ServiceError::TransportClosed | ServiceError::TransportSend(_) => {
                self.closed_error().await
            }
            other => Error::internal(format!("{label} on server \"{}\": {other}", self.server)),
        }
    }

    /// The error of a request whose stream ended or whose pipe broke: how the server ended.
    async fn closed_error(&self) -> Error {
        // The stream ends a moment before the exit status is known; wait for it briefly so the
        // error can say how the server ended.
        let mut ended = self.ended.clone();
        let _ =
            tokio::time::timeout(Duration::from_millis(500), ended.wait_for(|ended| *ended)).await;
        ErrorData::ServerExited {
            server: self.server.clone(),
            exit: self.describe_end().await,
            stderr_tail: self
                .process
                .as_ref()
                .map(|p| p.stderr.tail(STDERR_TAIL_LINES))
                .unwrap_or_default(),
        }
        .into()
    }

    /// The error for an answer to `label` over `limit` bytes.
    fn too_large(&self, label: &str, limit: u64) -> Error {
        tracing::warn!(server = %self.server, method = label, limit, "answer over the size limit");
        ErrorData::MessageTooLarge {
            server: self.server.clone(),
            method: label.to_owned(),
            limit_bytes: limit,
        }
        .into()
    }

    /// Why the connection ended: the stream's close reason (an oversized message, say) and the
    /// exit status for a child.
    pub(crate) async fn describe_end(&self) -> String {
        let closed = self.stream_closed.lock().unwrap().clone();
        let exit = match &self.process {
            Some(process) => match process.wait_exit(Duration::from_millis(500)).await {
                Some(exit) => Some(exit),
                None => process.exit_info(),
            },
            None => None,
        };
        match (closed, exit) {
            (Some(closed), Some(exit)) if !closed.starts_with("the server closed its stdout") => {
                format!("{closed}; the process ended with {}", exit.description)
            }
            (_, Some(exit)) => format!("the process ended with {}", exit.description),
            (Some(closed), None) => closed,
            (None, None) => "the connection closed".to_owned(),
        }
    }

    /// Whether this is a Streamable HTTP connection (no child process).
    pub(crate) fn is_http(&self) -> bool {
        self.process.is_none()
    }

    /// Whether the server answers a `ping` within `timeout`.
    pub(crate) async fn is_responsive(&self, timeout: Duration) -> bool {
        let ping = ClientRequest::PingRequest(PingRequest::default());
        self.request(ping, "ping", timeout).await.is_ok()
    }

    /// Ends the connection without stopping anything else: the supervisor sees it end and
    /// connects again. Used for an HTTP connection whose server no longer knows it (restarted, or
    /// a proxy in between lost it), which rmcp would otherwise keep using.
    pub(crate) fn recycle(&self) {
        if let Some(cancel) = self.cancel.lock().unwrap().take() {
            tracing::warn!(server = %self.server, "the HTTP connection stopped answering; reconnecting");
            cancel.cancel();
        }
    }

    /// Ends the connection: the service stops (closing the child's stdin), then the child's group
    /// is stopped.
    pub(crate) async fn close(&self) {
        if let Some(cancel) = self.cancel.lock().unwrap().take() {
            cancel.cancel();
        }
        let mut ended = self.ended.clone();
        let _ = tokio::time::timeout(Duration::from_secs(2), ended.wait_for(|e| *e)).await;
        if let Some(process) = &self.process {
            process.stop().await;
        }
    }
}

/// An error and its sources, joined: rmcp wraps transport errors a few levels deep.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
