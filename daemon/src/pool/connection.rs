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
//!
//! The requests themselves are in `connection/requests.rs`, the errors they end in in
//! `connection/errors.rs`.

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use rmcp::model::{
    ClientConfig, ClientRequest, CustomRequest, CustomResult, ListPromptsRequest,
    ListResourceTemplatesRequest, ListResourcesRequest, ListToolsRequest, PaginatedRequestParams,
    PingRequest, RequestMetaObject,
};
// Roots, sampling and logging are deprecated by rmcp for the 2026 protocol (SEP-2577); the
// protocol version we speak (2025-11-25) has them, and servers use them.
#[allow(deprecated)]
use rmcp::model::{
    CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult,
    ListRootsResult, LoggingMessageNotificationParam, ProgressNotificationParam,
};
use rmcp::service::ClientServiceExt as _;
use rmcp::service::{NotificationContext, RequestContext, RunningServiceCancellationToken};
use rmcp::{ClientHandler, Peer, RoleClient};
use tokio::sync::{Notify, watch};

mod callers;
mod capabilities;
pub(crate) use capabilities::{client_config, client_tasks_capability};
mod client_tasks;
pub(crate) use client_tasks::{declare_in_initialize, mark_task_augmented};
mod errors;
mod input_rounds;
mod listen;
pub(crate) use input_rounds::MAX_INPUT_ROUNDS;
mod requests;
pub(crate) mod subscribed;
mod task_input;
mod tasks;

use super::Published;
use super::child::ChildProcess;
use super::direct::DirectRequests;
use super::notification_order::{NotificationOrder, Sequenced};
use super::oversized::OversizedAnswers;
use super::raw_results::RawResults;
use crate::error::Error;
use crate::provider::CallTicket;

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
    /// Who has requests in flight: a server's stderr tail goes only to a caller that was alone.
    callers: callers::CallersInFlight,
    /// Whether the reason in `stream_closed` is an authorization failure (HTTP only).
    auth_refused: Option<Arc<AtomicBool>>,
    /// Which answers were too large and dropped (HTTP: the response stream cut at the limit;
    /// stdio: the line skipped by the reader), until their requests read it.
    oversized: Option<Arc<OversizedAnswers>>,
    cancel: Mutex<Option<RunningServiceCancellationToken>>,
    /// Becomes true once the connection's service loop has ended.
    ended: watch::Receiver<bool>,
    /// A stateless connection's resource subscriptions (`listen.rs`).
    listen: std::sync::OnceLock<listen::Control>,
    /// Which relayed notifications rmcp has received and not yet handed to the relay, so a
    /// watched call ends only after those sent before its answer (`notification_order.rs`).
    order: Arc<NotificationOrder>,
    pub(crate) supports_resources: bool,
    pub(crate) supports_prompts: bool,
    pub(crate) instructions: Option<String>,
    /// What a request's span says of this connection (`provider/exchange.rs`).
    facts: ConnectionFacts,
}

/// What a request's span says of its connection: the version negotiated, and for an HTTP
/// server where it listens and the session its requests are sent in.
#[derive(Debug, Default)]
struct ConnectionFacts {
    protocol_version: Option<String>,
    address: Option<(String, u16)>,
    /// The `Mcp-Session-Id` the HTTP client last sent (it changes when a session expires).
    session: Option<Arc<Mutex<Option<Arc<str>>>>>,
}

/// Resolves when a connection's service loop has ended.
pub(crate) type ServiceDone = tokio::task::JoinHandle<()>;

/// Our MCP client side: identity, what to do when a server announces a new tool list, and the
/// answers to what a server asks of us (`requests.rs`).
#[derive(Clone)]
struct PoolClient {
    config: ClientConfig,
    tools_changed: Arc<Notify>,
    requests: Arc<super::server_requests::ServerRequests>,
    /// Its name, and where its notifications for the gateway's hosts go.
    server: String,
    notices: tokio::sync::broadcast::Sender<crate::provider::UpstreamNotice>,
    /// The tasks a server asked it to run (`client_tasks.rs`); they die with the connection.
    client_tasks: Arc<client_tasks::ClientTasks>,
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

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        // No receiver (no gateway stream open) is not an error.
        let _ = self
            .notices
            .send(crate::provider::UpstreamNotice::ResourcesChanged {
                server: self.server.clone(),
            });
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self
            .notices
            .send(crate::provider::UpstreamNotice::PromptsChanged {
                server: self.server.clone(),
            });
    }

    async fn on_resource_updated(
        &self,
        params: rmcp::model::ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self
            .notices
            .send(crate::provider::UpstreamNotice::ResourceUpdated {
                server: self.server.clone(),
                uri: params.uri,
            });
    }

    async fn on_custom_notification(
        &self,
        notification: rmcp::model::CustomNotification,
        _context: NotificationContext<RoleClient>,
    ) {
        // MCP 2025-11-25's task status (rmcp 3.9 models only the 2026 extension's): passed to
        // the gateway, which tells the session that owns the task.
        if notification.method == "notifications/tasks/status"
            && let Some(task) = notification.params.filter(serde_json::Value::is_object)
        {
            let _ = self
                .notices
                .send(crate::provider::UpstreamNotice::TaskStatus {
                    server: self.server.clone(),
                    task,
                });
        }
    }

    async fn on_custom_request(
        &self,
        request: CustomRequest,
        context: RequestContext<RoleClient>,
    ) -> Result<CustomResult, rmcp::ErrorData> {
        let tasks = &self.client_tasks;
        tasks
            .answer(request, context, &self.requests)
            .await
            .map(CustomResult)
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
        // The host hears what the server said before it asked, before the question.
        super::notification_order::in_turn(&context.extensions).await;
        let withdrawn = super::server_requests::Withdrawal::by_the_server(&context.ct);
        Ok(self.requests.elicit(&request, withdrawn).await)
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, rmcp::ErrorData> {
        super::notification_order::in_turn(&context.extensions).await;
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
        context: NotificationContext<RoleClient>,
    ) {
        super::notification_order::in_turn(&context.extensions).await;
        self.requests.progress(&params);
        // Its extensions hold the mark that tells a watched call this step is relayed
        // (`notification_order.rs`): dropped only now, after the relay.
        drop(context);
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        context: NotificationContext<RoleClient>,
    ) {
        super::notification_order::in_turn(&context.extensions).await;
        self.requests.log(&params);
        drop(context);
    }
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
    /// Which answers were too large and dropped.
    pub(crate) oversized: Option<Arc<OversizedAnswers>>,
    /// The HTTP server's host and port (`server.address`, `server.port`).
    pub(crate) address: Option<(String, u16)>,
    /// The Streamable HTTP session the client last sent, as the HTTP client notes it.
    pub(crate) session: Option<Arc<Mutex<Option<Arc<str>>>>>,
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
        address,
        session,
    } = extras;
    let tools_changed = Arc::new(Notify::new());
    let lifecycle = super::era::Lifecycle::choose(
        published.protocol,
        published
            .learned_stateless
            .load(std::sync::atomic::Ordering::Relaxed),
    );
    let mut config = client_config(
        published.server_requests.advertises_sampling(),
        published.server_requests.advertises_url_elicitation(),
    );
    lifecycle.declare_extensions(&mut config.capabilities);
    let client = PoolClient {
        config,
        tools_changed: Arc::clone(&tools_changed),
        requests: Arc::clone(&published.server_requests),
        server: name.to_owned(),
        notices: published.notices.clone(),
        client_tasks: Arc::new(client_tasks::ClientTasks::new(name)),
    };
    // Numbers the notifications rmcp hands our handler on tasks of their own, so a watched
    // call can wait for those sent before its answer.
    let order = Arc::new(NotificationOrder::default());
    let transport = Sequenced {
        inner: rmcp::transport::IntoTransport::into_transport(transport),
        order: Arc::clone(&order),
    };
    let started = tokio::time::timeout(
        CONNECT_TIMEOUT,
        client.serve_with_lifecycle(transport, lifecycle.rmcp_mode()),
    )
    .await
    .map_err(|_| {
        let request = match lifecycle {
            super::era::Lifecycle::Handshake => "initialize",
            super::era::Lifecycle::Discover => "server/discover",
        };
        format!(
            "no answer to the MCP {request} request within {} s",
            CONNECT_TIMEOUT.as_secs()
        )
    })?;
    let service = match started {
        Ok(service) => service,
        Err(rmcp::service::ClientInitializeError::JsonRpcError(refusal))
            if lifecycle == super::era::Lifecycle::Handshake
                && published.protocol == crate::config::UpstreamProtocol::Auto
                && super::era::refuses_handshake_for_stateless(&refusal) =>
        {
            // The supervisor reconnects at once, this time with `server/discover`.
            published
                .learned_stateless
                .store(true, std::sync::atomic::Ordering::Relaxed);
            return Err(format!(
                "the server speaks only {} (it refused the initialize handshake: {}); \
                 reconnecting with server/discover",
                super::era::STATELESS_VERSION,
                refusal.message
            ));
        }
        Err(err) => return Err(errors::handshake_error(&err)),
    };
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
    let facts = ConnectionFacts {
        protocol_version: info.as_ref().map(|info| info.protocol_version.to_string()),
        address,
        session,
    };
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
        callers: callers::CallersInFlight::default(),
        auth_refused,
        oversized,
        cancel: Mutex::new(Some(cancel)),
        ended: ended_rx,
        order,
        supports_resources,
        supports_prompts,
        instructions,
        listen: std::sync::OnceLock::new(),
        facts,
    });
    // A stateless server announces changes only on `subscriptions/listen`, opened before the
    // first listing (`listen.rs`); a 2025 one is subscribed again (`subscribed.rs`).
    if lifecycle == super::era::Lifecycle::Discover {
        let control = listen::start(&connection, Arc::clone(&tools_changed)).await;
        let _ = connection.listen.set(control);
    } else if supports_resources {
        subscribed::replay(&connection);
    }
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

    fn request(self, cursor: Option<String>, meta: Option<RequestMetaObject>) -> ClientRequest {
        let mut params = PaginatedRequestParams::default().with_cursor(cursor);
        params.meta = meta;
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

impl Connection {
    /// Lists the tools again and swaps the catalog; returns how many there are.
    async fn refresh_catalog(&self) -> Result<usize, Error> {
        let tools = self
            .list_all(ListKind::Tools, CONNECT_TIMEOUT, &CallTicket::default())
            .await?;
        let count = self.published.catalog_from(&self.server, tools);
        Ok(count)
    }

    /// Whether its connection has ended.
    pub(crate) fn has_ended(&self) -> bool {
        *self.ended.borrow()
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
        // The stateless revision has no `ping`; `server/discover` is its cheapest request.
        let stateless = self
            .peer
            .peer_info()
            .is_some_and(|info| !info.protocol_version.has_initialize());
        let (probe, name) = if stateless {
            let discover = rmcp::model::DiscoverRequest::new(rmcp::model::DiscoverRequestParams {});
            (ClientRequest::DiscoverRequest(discover), "server/discover")
        } else {
            (ClientRequest::PingRequest(PingRequest::default()), "ping")
        };
        self.request(probe, name, timeout, &CallTicket::default())
            .await
            .is_ok()
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
