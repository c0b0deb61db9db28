//! The MCP pool: one client connection per configured server, and its catalog.
//!
//! Every enabled server connects concurrently at start-up; a server that fails is recorded with
//! its error and never holds up the others. Each connected server is a `Session`: an rmcp
//! client peer (stdio child or Streamable HTTP), the tools it listed, and for stdio the child
//! process. A monitor task per session notices when the connection ends and records why, so a
//! pending call fails with an error naming the server, its exit status and its last stderr lines.
//!
//! The pool only connects and forwards. Deciding whether a call may go out (validation and, later,
//! policy, breakers and retries) is the pipeline's job (`pipeline.rs`).

mod catalog;
mod stderr;
mod stdio;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotificationParam, ClientCapabilities,
    ClientConfig, ClientRequest, ListResourceTemplatesRequest, ListResourcesRequest,
    ListToolsRequest, PaginatedRequestParams, ProtocolVersion, ReadResourceRequest,
    ReadResourceRequestParams,
};
use rmcp::service::{PeerRequestOptions, RunningServiceCancellationToken};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{Peer, RoleClient, ServiceError, ServiceExt as _};
use serde_json::{Map, Value};
use tokio::sync::watch;
use tool_cli_protocol::methods::{ServerState, TransportKind};

use crate::config::{Config, ServerConfig, TransportConfig};
use crate::error::Error;
pub(crate) use catalog::Catalog;
use stdio::{ChildProcess, RawResults, StdioTransport, id_key};

/// The MCP protocol version we request from every server. rmcp's default is newer than what
/// most servers speak, so it is pinned (see docs/peers.md).
pub(crate) const MCP_PROTOCOL_VERSION: ProtocolVersion = ProtocolVersion::V_2025_11_25;

/// How long a server gets to start, complete the MCP handshake and list its tools.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// How many pages of a paginated list we follow before deciding the server is looping.
const MAX_PAGES: usize = 1000;

/// How many stderr lines go into an error message.
const STDERR_TAIL_LINES: usize = 20;

/// Settings of the pool that are not per server.
#[derive(Debug, Clone)]
pub struct PoolOptions {
    /// Largest message accepted from a stdio server.
    pub max_message_bytes: usize,
}

impl Default for PoolOptions {
    fn default() -> Self {
        PoolOptions {
            max_message_bytes: stdio::DEFAULT_MAX_MESSAGE_BYTES,
        }
    }
}

/// Every configured server.
pub struct Pool {
    servers: Vec<Arc<Server>>,
    index: HashMap<String, usize>,
    options: PoolOptions,
    shutting_down: AtomicBool,
}

/// One configured server and its current connection.
pub struct Server {
    /// Its configuration.
    pub config: ServerConfig,
    status: watch::Sender<Status>,
}

/// Where a server's connection stands.
#[derive(Clone)]
pub(crate) enum Status {
    Disabled,
    Connecting,
    Ready(Arc<Session>),
    Failed(String),
    Exited(String),
}

impl Status {
    pub(crate) fn state(&self) -> ServerState {
        match self {
            Status::Disabled => ServerState::Disabled,
            Status::Connecting => ServerState::Connecting,
            Status::Ready(_) => ServerState::Ready,
            Status::Failed(_) => ServerState::Failed,
            Status::Exited(_) => ServerState::Exited,
        }
    }

    pub(crate) fn error(&self) -> Option<&str> {
        match self {
            Status::Failed(error) | Status::Exited(error) => Some(error),
            _ => None,
        }
    }
}

/// A live MCP connection to one server.
pub(crate) struct Session {
    server: String,
    peer: Peer<RoleClient>,
    pub(crate) catalog: Catalog,
    /// Raw results tapped from the wire (stdio only; HTTP results are re-serialized).
    raw: Option<Arc<RawResults>>,
    process: Option<Arc<ChildProcess>>,
    /// Why the stdio stream ended, when it has.
    stream_closed: Arc<Mutex<Option<String>>>,
    cancel: Mutex<Option<RunningServiceCancellationToken>>,
    /// Becomes true once the session's service loop has ended.
    ended: watch::Receiver<bool>,
    pub(crate) supports_resources: bool,
    pub(crate) instructions: Option<String>,
}

impl Pool {
    /// A pool for `config`; nothing is started until [`Pool::start`].
    pub fn new(config: &Config, options: PoolOptions) -> Arc<Pool> {
        let servers: Vec<Arc<Server>> = config
            .servers
            .iter()
            .map(|server| {
                let initial = if server.enabled {
                    Status::Connecting
                } else {
                    Status::Disabled
                };
                Arc::new(Server {
                    config: server.clone(),
                    status: watch::Sender::new(initial),
                })
            })
            .collect();
        let index = servers
            .iter()
            .enumerate()
            .map(|(i, server)| (server.config.name.clone(), i))
            .collect();
        Arc::new(Pool {
            servers,
            index,
            options,
            shutting_down: AtomicBool::new(false),
        })
    }

    /// Connects every enabled server concurrently; returns once each has settled (ready or
    /// failed). One server's failure never affects another.
    pub async fn start(self: &Arc<Self>) {
        let mut tasks = tokio::task::JoinSet::new();
        for server in &self.servers {
            if server.config.enabled {
                let pool = Arc::clone(self);
                let server = Arc::clone(server);
                tasks.spawn(async move { pool.connect(&server).await });
            }
        }
        while tasks.join_next().await.is_some() {}
    }

    /// Every server, in config order.
    pub fn servers(&self) -> &[Arc<Server>] {
        &self.servers
    }

    /// The server called `name`.
    pub fn server(&self, name: &str) -> Result<&Arc<Server>, Error> {
        self.index
            .get(name)
            .map(|&i| &self.servers[i])
            .ok_or_else(|| Error::UnknownServer {
                server: name.to_owned(),
                known_servers: self.servers.iter().map(|s| s.config.name.clone()).collect(),
            })
    }

    #[tracing::instrument(skip_all, fields(server = %server.config.name))]
    async fn connect(self: &Arc<Self>, server: &Arc<Server>) {
        let started = Instant::now();
        server.status.send_replace(Status::Connecting);
        let connected = match &server.config.transport {
            TransportConfig::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                self.connect_stdio(&server.config.name, command, args, env, cwd.as_ref())
                    .await
            }
            TransportConfig::Http { url, headers } => {
                connect_http(&server.config.name, url, headers).await
            }
        };
        match connected {
            Ok((session, service_done)) => {
                tracing::info!(
                    tools = session.catalog.len(),
                    elapsed_ms = started.elapsed().as_millis() as u64,
                    "server ready"
                );
                let session = Arc::new(session);
                server
                    .status
                    .send_replace(Status::Ready(Arc::clone(&session)));
                self.monitor(Arc::clone(server), session, service_done);
            }
            Err(error) => {
                tracing::warn!(%error, "server failed to start");
                server.status.send_replace(Status::Failed(error));
            }
        }
    }

    async fn connect_stdio(
        &self,
        name: &str,
        command: &str,
        args: &[String],
        env: &std::collections::BTreeMap<String, String>,
        cwd: Option<&std::path::PathBuf>,
    ) -> Result<(Session, ServiceDone), String> {
        let (process, stdout, stdin) = ChildProcess::spawn(name, command, args, env, cwd)
            .map_err(|err| format!("cannot start \"{command}\": {err}"))?;
        let process = Arc::new(process);
        let raw = Arc::new(RawResults::default());
        let stream_closed = Arc::new(Mutex::new(None));
        let transport = StdioTransport::new(
            name,
            stdout,
            stdin,
            self.options.max_message_bytes,
            Arc::clone(&raw),
            Arc::clone(&stream_closed),
        );
        let result = establish(name, transport, Some(Arc::clone(&raw))).await;
        match result {
            Ok((mut session, done)) => {
                session.process = Some(process);
                session.stream_closed = stream_closed;
                Ok((session, done))
            }
            Err(error) => {
                // Say how the child ended if that is why the handshake failed.
                let exit = process.wait_exit(Duration::from_millis(300)).await;
                process.stop().await;
                let mut message = error;
                if let Some(exit) = exit {
                    message = format!("{message}; the process ended with {}", exit.description);
                }
                let tail = process.stderr.tail(5);
                if !tail.is_empty() {
                    message = format!("{message}; last stderr: {}", tail.join(" | "));
                }
                Err(message)
            }
        }
    }

    /// Watches a session until its connection ends and records why.
    fn monitor(self: &Arc<Self>, server: Arc<Server>, session: Arc<Session>, done: ServiceDone) {
        let pool = Arc::clone(self);
        tokio::spawn(async move {
            let _ = done.await;
            let reason = session.describe_end().await;
            if let Some(process) = &session.process {
                process.stop().await;
            }
            if !pool.shutting_down.load(Ordering::SeqCst) {
                tracing::warn!(server = %server.config.name, %reason, "server connection ended");
            }
            server.status.send_if_modified(|status| match status {
                Status::Ready(current) if Arc::ptr_eq(current, &session) => {
                    *status = Status::Exited(reason);
                    true
                }
                _ => false,
            });
        });
    }

    /// Closes every connection: stdin closed, then SIGTERM and SIGKILL to each child's group.
    pub async fn shutdown(&self) {
        self.shutting_down.store(true, Ordering::SeqCst);
        let mut stops = tokio::task::JoinSet::new();
        for server in &self.servers {
            if let Status::Ready(session) = &*server.status.borrow() {
                let session = Arc::clone(session);
                stops.spawn(async move { session.close().await });
            }
        }
        while stops.join_next().await.is_some() {}
    }
}

impl Server {
    /// A snapshot of its status.
    pub(crate) fn status(&self) -> Status {
        self.status.borrow().clone()
    }

    /// Its live session, waiting up to `wait` while it is still connecting.
    pub(crate) async fn session(&self, wait: Duration) -> Result<Arc<Session>, Error> {
        let mut status = self.status.subscribe();
        let settled =
            tokio::time::timeout(wait, status.wait_for(|s| !matches!(s, Status::Connecting))).await;
        let current = match settled {
            Ok(Ok(status)) => status.clone(),
            _ => self.status(),
        };
        match current {
            Status::Ready(session) => Ok(session),
            other => Err(Error::ServerUnavailable {
                server: self.config.name.clone(),
                state: other.state().as_str(),
                last_error: other.error().map(str::to_owned),
            }),
        }
    }

    /// How it is reached.
    pub(crate) fn transport_kind(&self) -> TransportKind {
        match self.config.transport {
            TransportConfig::Stdio { .. } => TransportKind::Stdio,
            TransportConfig::Http { .. } => TransportKind::Http,
        }
    }
}

/// Resolves when a session's service loop has ended.
type ServiceDone = tokio::task::JoinHandle<()>;

fn client_config() -> ClientConfig {
    let mut config = ClientConfig::new(
        ClientCapabilities::default(),
        rmcp::model::Implementation::new(
            tool_cli_protocol::IMPLEMENTATION_NAME,
            env!("CARGO_PKG_VERSION"),
        ),
    );
    config.protocol_version = MCP_PROTOCOL_VERSION;
    config
}

/// Our identity and capabilities as an MCP client, for `getBridgeInfo.upstreamMcp`.
pub(crate) fn client_capabilities_json() -> Value {
    serde_json::to_value(client_config().capabilities).unwrap_or(Value::Null)
}

/// Runs the MCP handshake over `transport` and lists the server's tools.
async fn establish<T, E, A>(
    name: &str,
    transport: T,
    raw: Option<Arc<RawResults>>,
) -> Result<(Session, ServiceDone), String>
where
    T: rmcp::transport::IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let service = tokio::time::timeout(CONNECT_TIMEOUT, client_config().serve(transport))
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
    let supports_tools = info
        .as_ref()
        .is_none_or(|info| info.capabilities.tools.is_some());
    let instructions = info.as_ref().and_then(|info| info.instructions.clone());
    let cancel = service.cancellation_token();
    let (ended_tx, ended_rx) = watch::channel(false);
    let done = tokio::spawn(async move {
        let _ = service.waiting().await;
        let _ = ended_tx.send(true);
    });
    let mut session = Session {
        server: name.to_owned(),
        peer,
        catalog: Catalog::default(),
        raw,
        process: None,
        stream_closed: Arc::new(Mutex::new(None)),
        cancel: Mutex::new(Some(cancel)),
        ended: ended_rx,
        supports_resources,
        instructions,
    };
    if supports_tools {
        let tools = session
            .list_all(ListKind::Tools, CONNECT_TIMEOUT)
            .await
            .map_err(|err| format!("listing its tools failed: {err}"));
        match tools {
            Ok(tools) => session.catalog = Catalog::new(tools),
            Err(err) => {
                session.close().await;
                return Err(err);
            }
        }
    }
    Ok((session, done))
}

async fn connect_http(
    name: &str,
    url: &str,
    headers: &std::collections::BTreeMap<String, String>,
) -> Result<(Session, ServiceDone), String> {
    use hyper::http::{HeaderName, HeaderValue};
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_owned());
    let mut custom = HashMap::new();
    for (key, value) in headers {
        if key.eq_ignore_ascii_case("authorization")
            && let Some(token) = value.strip_prefix("Bearer ")
        {
            config = config.auth_header(token.to_owned());
            continue;
        }
        let key = HeaderName::try_from(key.as_str())
            .map_err(|err| format!("header name \"{key}\" is invalid: {err}"))?;
        let value = HeaderValue::try_from(value.as_str())
            .map_err(|err| format!("header \"{key}\" has an invalid value: {err}"))?;
        custom.insert(key, value);
    }
    config = config
        .custom_headers(custom)
        .reinit_on_expired_session(true);
    let transport = StreamableHttpClientTransport::from_config(config);
    establish(name, transport, None).await
}

/// Which paginated list to fetch.
#[derive(Debug, Clone, Copy)]
pub(crate) enum ListKind {
    Tools,
    Resources,
    ResourceTemplates,
}

impl ListKind {
    fn method(self) -> &'static str {
        match self {
            ListKind::Tools => "tools/list",
            ListKind::Resources => "resources/list",
            ListKind::ResourceTemplates => "resources/templates/list",
        }
    }

    fn items_key(self) -> &'static str {
        match self {
            ListKind::Tools => "tools",
            ListKind::Resources => "resources",
            ListKind::ResourceTemplates => "resourceTemplates",
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

impl Session {
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
                    .map_err(|err| Error::Internal(format!("re-encoding a result: {err}"))),
            },
            Err(err) => Err(self.service_error(err, label, timeout).await),
        }
    }

    /// Calls a tool; the result is the server's complete `CallToolResult`.
    pub(crate) async fn call_tool(
        &self,
        tool: &str,
        arguments: Map<String, Value>,
        timeout: Duration,
    ) -> Result<Value, Error> {
        let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        self.request(request, tool, timeout).await
    }

    /// Reads a resource; the result is the server's complete `ReadResourceResult`.
    pub(crate) async fn read_resource(&self, uri: &str, timeout: Duration) -> Result<Value, Error> {
        let request = ClientRequest::ReadResourceRequest(ReadResourceRequest::new(
            ReadResourceRequestParams::new(uri),
        ));
        self.request(request, "resources/read", timeout).await
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
            let page = self
                .request(kind.request(cursor.clone()), kind.method(), timeout)
                .await?;
            if let Some(Value::Array(page_items)) = page.get(kind.items_key()) {
                items.extend(page_items.iter().cloned());
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
        Err(Error::Upstream {
            server: self.server.clone(),
            code: tool_cli_protocol::code::INTERNAL_ERROR.into(),
            message: format!("{} returned more than {MAX_PAGES} pages", kind.method()),
            data: None,
        })
    }

    async fn service_error(&self, err: ServiceError, label: &str, timeout: Duration) -> Error {
        match err {
            ServiceError::McpError(error) => Error::Upstream {
                server: self.server.clone(),
                code: error.code.0.into(),
                message: error.message.into_owned(),
                data: error.data.map(Box::new),
            },
            ServiceError::Timeout { .. } => Error::Timeout {
                server: self.server.clone(),
                tool: label.to_owned(),
                timeout_ms: timeout.as_millis() as u64,
            },
            ServiceError::TransportSend(error) if self.process.is_none() => Error::ServerExited {
                server: self.server.clone(),
                exit: format!("the HTTP transport failed: {error}"),
                stderr_tail: Vec::new(),
            },
            ServiceError::TransportClosed | ServiceError::TransportSend(_) => {
                // The stream ends a moment before the exit status is known; wait for it briefly
                // so the error can say how the server ended.
                let mut ended = self.ended.clone();
                let _ = tokio::time::timeout(
                    Duration::from_millis(500),
                    ended.wait_for(|ended| *ended),
                )
                .await;
                Error::ServerExited {
                    server: self.server.clone(),
                    exit: self.describe_end().await,
                    stderr_tail: self
                        .process
                        .as_ref()
                        .map(|p| p.stderr.tail(STDERR_TAIL_LINES))
                        .unwrap_or_default(),
                }
            }
            other => Error::Internal(format!("{label} on server \"{}\": {other}", self.server)),
        }
    }

    /// Why the connection ended: the exit status for a child, else the stream's close reason.
    async fn describe_end(&self) -> String {
        if let Some(process) = &self.process {
            if let Some(exit) = process.wait_exit(Duration::from_millis(500)).await {
                return format!("the process ended with {}", exit.description);
            }
            if let Some(exit) = process.exit_info() {
                return format!("the process ended with {}", exit.description);
            }
        }
        self.stream_closed
            .lock()
            .unwrap()
            .clone()
            .unwrap_or_else(|| "the connection closed".to_owned())
    }

    /// Ends the session: the service stops (closing the child's stdin), then the child's group
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
