//! The MCP pool: every configured server and its supervised connection; the daemon's
//! [`ToolProvider`].
//!
//! Each enabled server has a supervisor task. It connects (stdio child or Streamable HTTP), marks
//! the server ready, waits for the connection to end, and then asks the [`RestartTracker`] what
//! to do: start again after an exponential backoff with jitter, or, for a server that keeps dying,
//! park it `down` with its last error. One server's troubles never touch another's.
//!
//! A live connection is a `Connection` (`connection.rs`). The server outlives its connections:
//! it keeps the last catalog it knew across restarts and publishes every status and catalog
//! change (a `watch` channel per server and a change counter for the whole pool), so routing and
//! tool search can follow them. The pool only connects and forwards, and replaces a connection
//! that stopped answering (an HTTP server that restarted); deciding whether and how a call goes
//! out — validation, policy, breakers, bulkheads, retries — is the call pipeline's job
//! (`pipeline/`).

mod connection;
mod stderr;
mod stdio;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::ProtocolVersion;
use serde_json::{Map, Value};
use tokio::sync::{oneshot, watch};
use tokio::time::Instant;
use tool_cli_protocol::ErrorData;
use tool_cli_protocol::methods::{ServerState, TransportKind};

use crate::catalog::Catalog;
use crate::config::{Config, ServerConfig, TransportConfig};
use crate::error::Error;
use crate::provider::{
    BoxFuture, ResourceListKind, ServerInfo, ServerSettings, ToolProvider, Upstream, UpstreamStatus,
};
use crate::resilience::backoff::{Backoff, random_jitter};
use crate::resilience::restart::{Decision, RestartPolicy, RestartTracker};
pub(crate) use connection::{Connection, ListKind};
use stdio::{ChildProcess, RawResults, StdioTransport};

/// The MCP protocol version we request from every server. rmcp's default is newer than what
/// most servers speak, so it is pinned (see docs/peers.md).
pub(crate) const MCP_PROTOCOL_VERSION: ProtocolVersion = ProtocolVersion::V_2025_11_25;

/// How many stderr lines go into an error message.
const STDERR_TAIL_LINES: usize = 20;

/// How long an HTTP server gets to answer a `ping` after a failed call before its connection is
/// replaced.
const HTTP_PING_TIMEOUT: Duration = Duration::from_secs(2);

/// Settings of the pool that are not per server.
#[derive(Debug, Clone)]
pub struct PoolOptions {
    /// Largest message accepted from a stdio server.
    pub max_message_bytes: usize,
    /// How crashing servers are restarted.
    pub restart: RestartPolicy,
}

impl Default for PoolOptions {
    fn default() -> Self {
        PoolOptions {
            max_message_bytes: stdio::DEFAULT_MAX_MESSAGE_BYTES,
            // The backoff is capped at 5 s so that a server dying at every start reaches its
            // restart limit (10) within a minute and is parked, instead of being retried forever.
            restart: RestartPolicy {
                backoff: Backoff {
                    base: Duration::from_millis(500),
                    factor: 2.0,
                    max: Duration::from_secs(5),
                },
                ..RestartPolicy::default()
            },
        }
    }
}

/// Every configured server.
pub struct Pool {
    servers: Vec<Arc<Server>>,
    options: PoolOptions,
    shutdown: watch::Sender<bool>,
    supervisors: Mutex<tokio::task::JoinSet<()>>,
    /// Bumped on every status or catalog change of any server.
    changes: Arc<watch::Sender<u64>>,
}

/// One configured server: its supervised connection and what it last knew of its tools.
pub struct Server {
    /// Its configuration.
    pub config: ServerConfig,
    info: ServerInfo,
    status: watch::Sender<Status>,
    published: Arc<Published>,
    restarts: AtomicU32,
    ready_since: Mutex<Option<Instant>>,
}

/// What a server publishes beyond its status: its catalog, kept across restarts, and the pool's
/// change counter, bumped with every change so subscribers (tool search) rebuild.
pub(crate) struct Published {
    catalog: watch::Sender<Arc<Catalog>>,
    changes: Arc<watch::Sender<u64>>,
}

impl Published {
    /// Replaces the catalog and announces the change.
    pub(crate) fn catalog(&self, catalog: Arc<Catalog>) {
        self.catalog.send_replace(catalog);
        self.changed();
    }

    fn changed(&self) {
        self.changes.send_modify(|generation| *generation += 1);
    }
}

/// Where a server's connection stands.
#[derive(Clone)]
pub(crate) enum Status {
    Disabled,
    Connecting,
    Ready(Arc<Connection>),
    /// Failed or exited; will be started again after a backoff.
    Restarting(String),
    /// Kept failing; parked.
    Down(String),
    /// Stopped because the daemon is shutting down.
    Exited(String),
}

impl Status {
    pub(crate) fn state(&self) -> ServerState {
        match self {
            Status::Disabled => ServerState::Disabled,
            Status::Connecting => ServerState::Connecting,
            Status::Ready(_) => ServerState::Ready,
            Status::Restarting(_) => ServerState::Restarting,
            Status::Down(_) => ServerState::Down,
            Status::Exited(_) => ServerState::Exited,
        }
    }

    pub(crate) fn error(&self) -> Option<&str> {
        match self {
            Status::Restarting(error) | Status::Down(error) | Status::Exited(error) => Some(error),
            _ => None,
        }
    }
}

impl Pool {
    /// A pool for `config`; nothing is started until [`Pool::start`].
    pub fn new(config: &Config, options: PoolOptions) -> Arc<Pool> {
        let changes = Arc::new(watch::Sender::new(0));
        let servers = config
            .servers
            .iter()
            .map(|server| {
                let initial = if server.enabled {
                    Status::Connecting
                } else {
                    Status::Disabled
                };
                Arc::new(Server {
                    info: server_info(server),
                    config: server.clone(),
                    status: watch::Sender::new(initial),
                    published: Arc::new(Published {
                        catalog: watch::Sender::new(Arc::new(Catalog::default())),
                        changes: Arc::clone(&changes),
                    }),
                    restarts: AtomicU32::new(0),
                    ready_since: Mutex::new(None),
                })
            })
            .collect();
        Arc::new(Pool {
            servers,
            options,
            shutdown: watch::Sender::new(false),
            supervisors: Mutex::new(tokio::task::JoinSet::new()),
            changes,
        })
    }

    /// Starts every enabled server's supervisor; returns once each server's first connection
    /// attempt has settled (ready, restarting or down). One server's failure never affects another.
    pub async fn start(self: &Arc<Self>) {
        let mut first_attempts = Vec::new();
        {
            let mut supervisors = self.supervisors.lock().unwrap();
            for server in &self.servers {
                if server.config.enabled {
                    let (settled, settled_rx) = oneshot::channel();
                    first_attempts.push(settled_rx);
                    let pool = Arc::clone(self);
                    let server = Arc::clone(server);
                    supervisors.spawn(async move { pool.supervise(server, settled).await });
                }
            }
        }
        for settled in first_attempts {
            let _ = settled.await;
        }
    }

    /// Every server, in config order.
    pub fn servers(&self) -> &[Arc<Server>] {
        &self.servers
    }

    /// Connects, watches and restarts one server until the daemon shuts down or the server is
    /// parked.
    #[tracing::instrument(skip_all, fields(server = %server.config.name))]
    async fn supervise(self: Arc<Self>, server: Arc<Server>, settled: oneshot::Sender<()>) {
        let mut settled = Some(settled);
        let mut tracker = RestartTracker::new(self.options.restart);
        let mut shutdown = self.shutdown.subscribe();
        loop {
            server.set_status(Status::Connecting);
            let started = Instant::now();
            // Dropping a connection attempt (on shutdown) drops its child, which kills its group.
            let connected = tokio::select! {
                connected = self.connect(&server) => connected,
                _ = shutdown.wait_for(|stop| *stop) => Err("the daemon is shutting down".to_owned()),
            };
            let reason = match connected {
                Ok((connection, done)) => {
                    tracing::info!(
                        tools = server.published.catalog.borrow().len(),
                        elapsed_ms = started.elapsed().as_millis() as u64,
                        "server ready"
                    );
                    *server.ready_since.lock().unwrap() = Some(Instant::now());
                    server.set_status(Status::Ready(Arc::clone(&connection)));
                    if let Some(settled) = settled.take() {
                        let _ = settled.send(());
                    }
                    let stopping = tokio::select! {
                        _ = done => false,
                        _ = shutdown.wait_for(|stop| *stop) => true,
                    };
                    *server.ready_since.lock().unwrap() = None;
                    if stopping {
                        connection.close().await;
                        server.set_status(Status::Exited("stopped by the daemon".to_owned()));
                        return;
                    }
                    let reason = connection.describe_end().await;
                    // The stream may have ended with the child still alive (an oversized
                    // message): stop its whole group before starting another.
                    if let Some(process) = &connection.process {
                        process.stop().await;
                    }
                    tracing::warn!(%reason, "server connection ended");
                    reason
                }
                Err(error) => {
                    tracing::warn!(%error, "server failed to start");
                    error
                }
            };
            if *shutdown.borrow() {
                server.set_status(Status::Exited(reason));
                return;
            }
            match tracker.record_exit(Instant::now(), started.elapsed(), random_jitter()) {
                Decision::RestartAfter(delay) => {
                    tracing::info!(delay_ms = delay.as_millis() as u64, "restarting server");
                    server.set_status(Status::Restarting(reason));
                    if let Some(settled) = settled.take() {
                        let _ = settled.send(());
                    }
                    tokio::select! {
                        _ = tokio::time::sleep(delay) => {}
                        _ = shutdown.wait_for(|stop| *stop) => {
                            server.status.send_modify(|status| {
                                if let Status::Restarting(reason) = status {
                                    *status = Status::Exited(std::mem::take(reason));
                                }
                            });
                            server.published.changed();
                            return;
                        }
                    }
                    server.restarts.fetch_add(1, Ordering::Relaxed);
                }
                Decision::Park => {
                    let restarts = server.restarts.load(Ordering::Relaxed);
                    tracing::error!(restarts, %reason, "server keeps failing; parked as down");
                    server.set_status(Status::Down(format!(
                        "{reason} (gave up after {restarts} restarts)"
                    )));
                    if let Some(settled) = settled.take() {
                        let _ = settled.send(());
                    }
                    return;
                }
            }
        }
    }

    async fn connect(
        &self,
        server: &Server,
    ) -> Result<(Arc<Connection>, connection::ServiceDone), String> {
        let published = Arc::clone(&server.published);
        match &server.config.transport {
            TransportConfig::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                self.connect_stdio(
                    &server.config.name,
                    published,
                    command,
                    args,
                    env,
                    cwd.as_ref(),
                )
                .await
            }
            TransportConfig::Http { url, headers } => {
                connection::connect_http(&server.config.name, published, url, headers).await
            }
        }
    }

    async fn connect_stdio(
        &self,
        name: &str,
        published: Arc<Published>,
        command: &str,
        args: &[String],
        env: &BTreeMap<String, String>,
        cwd: Option<&PathBuf>,
    ) -> Result<(Arc<Connection>, connection::ServiceDone), String> {
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
        let established = connection::establish(
            name,
            published,
            transport,
            Some(raw),
            Some(Arc::clone(&process)),
            Arc::clone(&stream_closed),
        )
        .await;
        match established {
            Ok(connected) => Ok(connected),
            Err(error) => {
                // Say how the child ended if that is why the handshake failed.
                let exit = process.wait_exit(Duration::from_millis(300)).await;
                process.stop().await;
                let mut message = error;
                if let Some(exit) = exit
                    && !message.contains(&exit.description)
                {
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

    /// Closes every connection: stdin closed, then SIGTERM and SIGKILL to each child's group.
    pub async fn shutdown(&self) {
        self.shutdown.send_replace(true);
        let mut supervisors = std::mem::take(&mut *self.supervisors.lock().unwrap());
        while supervisors.join_next().await.is_some() {}
    }
}

impl ToolProvider for Pool {
    fn servers(&self) -> Vec<Arc<dyn Upstream>> {
        self.servers
            .iter()
            .map(|server| Arc::clone(server) as Arc<dyn Upstream>)
            .collect()
    }

    fn changes(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }
}

/// The pipeline's view of a configured server.
fn server_info(config: &ServerConfig) -> ServerInfo {
    ServerInfo {
        name: config.name.clone(),
        description: config.description.clone(),
        tags: config.tags.clone(),
        transport: match config.transport {
            TransportConfig::Stdio { .. } => TransportKind::Stdio,
            TransportConfig::Http { .. } => TransportKind::Http,
        },
        settings: ServerSettings {
            call_timeout: config.call_timeout,
            max_concurrent: config.max_concurrent,
            max_queued: config.max_queued,
            cache_ttl: config.cache_ttl,
            policy: config.policy.clone(),
            priority: config.priority,
        },
    }
}

impl Server {
    fn set_status(&self, status: Status) {
        self.status.send_replace(status);
        self.published.changed();
    }

    /// A snapshot of its status.
    pub(crate) fn current_status(&self) -> Status {
        self.status.borrow().clone()
    }

    /// Its live connection, waiting until `deadline` while it is connecting or restarting.
    pub(crate) async fn connection(&self, deadline: Instant) -> Result<Arc<Connection>, Error> {
        let mut status = self.status.subscribe();
        let settled = tokio::time::timeout_at(
            deadline,
            status.wait_for(|s| {
                !matches!(s, Status::Connecting | Status::Restarting(_))
                    && !matches!(s, Status::Ready(connection) if connection.has_ended())
            }),
        )
        .await;
        let current = match settled {
            Ok(Ok(status)) => status.clone(),
            _ => self.current_status(),
        };
        match current {
            Status::Ready(connection) if !connection.has_ended() => Ok(connection),
            other => Err(ErrorData::ServerUnavailable {
                server: self.config.name.clone(),
                state: match other {
                    Status::Ready(_) => "restarting".to_owned(),
                    ref other => other.state().as_str().to_owned(),
                },
                last_error: other.error().map(str::to_owned),
            }
            .into()),
        }
    }

    /// How many times it has been restarted.
    pub(crate) fn restarts(&self) -> u32 {
        self.restarts.load(Ordering::Relaxed)
    }

    /// How long its current connection has been up.
    pub(crate) fn uptime(&self) -> Option<Duration> {
        self.ready_since
            .lock()
            .unwrap()
            .map(|since| since.elapsed())
    }

    /// After a failed request over HTTP: a server that restarted has forgotten our session, and
    /// rmcp may keep waiting on it, so if a ping goes unanswered too, reconnect.
    fn check_after_failure<T>(&self, connection: &Arc<Connection>, result: &Result<T, Error>) {
        let failed = matches!(
            result.as_ref().err().and_then(Error::data),
            Some(ErrorData::Timeout { .. } | ErrorData::ServerExited { .. })
        );
        if connection.is_http() && failed {
            let connection = Arc::clone(connection);
            tokio::spawn(async move {
                if !connection.is_responsive(HTTP_PING_TIMEOUT).await {
                    connection.recycle();
                }
            });
        }
    }
}

/// What is left of the time until `deadline`.
fn remaining(deadline: Instant) -> Duration {
    deadline.saturating_duration_since(Instant::now())
}

impl Upstream for Server {
    fn info(&self) -> &ServerInfo {
        &self.info
    }

    fn status(&self) -> UpstreamStatus {
        let status = self.current_status();
        UpstreamStatus {
            state: status.state(),
            error: status.error().map(str::to_owned),
            restarts: self.restarts(),
            uptime: self.uptime(),
            instructions: match &status {
                Status::Ready(connection) => connection.instructions.clone(),
                _ => None,
            },
        }
    }

    fn catalog(&self) -> Arc<Catalog> {
        Arc::clone(&self.published.catalog.borrow())
    }

    fn wait_ready(&self, deadline: Instant) -> BoxFuture<'_, Result<(), Error>> {
        Box::pin(async move { self.connection(deadline).await.map(|_| ()) })
    }

    fn call_tool<'a>(
        &'a self,
        tool: &'a str,
        arguments: &'a Map<String, Value>,
        deadline: Instant,
    ) -> BoxFuture<'a, Result<Value, Error>> {
        Box::pin(async move {
            let connection = self.connection(deadline).await?;
            let result = connection
                .call_tool(tool, arguments.clone(), remaining(deadline))
                .await;
            self.check_after_failure(&connection, &result);
            result
        })
    }

    fn supports_resources(&self) -> bool {
        match self.current_status() {
            Status::Ready(connection) => connection.supports_resources,
            _ => false,
        }
    }

    fn list_resources(
        &self,
        kind: ResourceListKind,
        deadline: Instant,
    ) -> BoxFuture<'_, Result<Vec<Value>, Error>> {
        Box::pin(async move {
            let connection = self.connection(deadline).await?;
            if !connection.supports_resources {
                return Ok(Vec::new());
            }
            let kind = match kind {
                ResourceListKind::Resources => ListKind::Resources,
                ResourceListKind::Templates => ListKind::ResourceTemplates,
            };
            let result = connection.list_all(kind, remaining(deadline)).await;
            self.check_after_failure(&connection, &result);
            result
        })
    }

    fn read_resource<'a>(
        &'a self,
        uri: &'a str,
        deadline: Instant,
    ) -> BoxFuture<'a, Result<Value, Error>> {
        Box::pin(async move {
            let connection = self.connection(deadline).await?;
            let result = connection.read_resource(uri, remaining(deadline)).await;
            self.check_after_failure(&connection, &result);
            result
        })
    }
}

/// Our identity and capabilities as an MCP client, for `getBridgeInfo.upstreamMcp`.
pub(crate) fn client_capabilities_json() -> Value {
    serde_json::to_value(connection::client_config().capabilities).unwrap_or(Value::Null)
}
