//! The MCP pool: every configured server, its supervised connection and its resilience state.
//!
//! Each enabled server has a supervisor task. It connects (stdio child or Streamable HTTP), marks
//! the server ready, waits for the connection to end, and then asks the [`RestartTracker`] what
//! to do: start again after an exponential backoff with jitter, or, for a server that keeps dying,
//! park it `down` with its last error. One server's troubles never touch another's.
//!
//! A connection is a `Session` (`session.rs`). Besides it, a server carries what the call
//! pipeline needs to protect it and report on it: a circuit breaker, a bulkhead, an optional
//! degradation cache, and call statistics for `health`. The pool only connects and forwards;
//! deciding whether and how a call goes out is the pipeline's job (`pipeline.rs`).

mod catalog;
mod session;
mod stats;
mod stderr;
mod stdio;

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::ProtocolVersion;
use serde_json::Value;
use tokio::sync::{oneshot, watch};
use tokio::time::Instant;
use tool_cli_protocol::methods::{ServerState, TransportKind};

use crate::config::{Config, ServerConfig, TransportConfig};
use crate::error::Error;
use crate::resilience::backoff::{Backoff, random_jitter};
use crate::resilience::breaker::{BreakerConfig, CircuitBreaker};
use crate::resilience::bulkhead::Bulkhead;
use crate::resilience::cache::ResultCache;
use crate::resilience::restart::{Decision, RestartPolicy, RestartTracker};
pub(crate) use catalog::{Catalog, CatalogTool};
pub(crate) use session::{ListKind, Session};
pub(crate) use stats::CallStats;
use stdio::{ChildProcess, RawResults, StdioTransport};

/// The MCP protocol version we request from every server. rmcp's default is newer than what
/// most servers speak, so it is pinned (see docs/peers.md).
pub(crate) const MCP_PROTOCOL_VERSION: ProtocolVersion = ProtocolVersion::V_2025_11_25;

/// How many stderr lines go into an error message.
const STDERR_TAIL_LINES: usize = 20;

/// Most entries in one server's degradation cache.
const CACHE_MAX_ENTRIES: usize = 256;

/// Settings of the pool that are not per server.
#[derive(Debug, Clone)]
pub struct PoolOptions {
    /// Largest message accepted from a stdio server.
    pub max_message_bytes: usize,
    /// How crashing servers are restarted.
    pub restart: RestartPolicy,
    /// How each server's circuit breaker decides.
    pub breaker: BreakerConfig,
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
            breaker: BreakerConfig::default(),
        }
    }
}

/// Every configured server.
pub struct Pool {
    servers: Vec<Arc<Server>>,
    index: HashMap<String, usize>,
    options: PoolOptions,
    shutdown: watch::Sender<bool>,
    supervisors: Mutex<tokio::task::JoinSet<()>>,
}

/// One configured server: its connection and its protection.
pub struct Server {
    /// Its configuration.
    pub config: ServerConfig,
    status: watch::Sender<Status>,
    /// Refuses calls while the server is failing; guarded by a std mutex because it is only
    /// touched for a moment, never across an await.
    pub(crate) breaker: Mutex<CircuitBreaker>,
    /// Bounds the calls in flight and waiting.
    pub(crate) bulkhead: Bulkhead,
    /// Last good results of read-only tools, served when the server fails (when configured).
    pub(crate) cache: Option<Mutex<ResultCache>>,
    /// Calls, errors and latencies for `health`.
    pub(crate) stats: Mutex<CallStats>,
    restarts: AtomicU32,
    ready_since: Mutex<Option<Instant>>,
}

/// Where a server's connection stands.
#[derive(Clone)]
pub(crate) enum Status {
    Disabled,
    Connecting,
    Ready(Arc<Session>),
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
        let servers: Vec<Arc<Server>> = config
            .servers
            .iter()
            .map(|server| {
                let initial = if server.enabled {
                    Status::Connecting
                } else {
                    Status::Disabled
                };
                let cache = server
                    .cache_ttl
                    .map(|ttl| Mutex::new(ResultCache::new(ttl, CACHE_MAX_ENTRIES)));
                Arc::new(Server {
                    config: server.clone(),
                    status: watch::Sender::new(initial),
                    breaker: Mutex::new(CircuitBreaker::new(options.breaker, Instant::now())),
                    bulkhead: Bulkhead::new(server.max_concurrent, server.max_queued),
                    cache,
                    stats: Mutex::new(CallStats::default()),
                    restarts: AtomicU32::new(0),
                    ready_since: Mutex::new(None),
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
            shutdown: watch::Sender::new(false),
            supervisors: Mutex::new(tokio::task::JoinSet::new()),
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

    /// Connects, watches and restarts one server until the daemon shuts down or the server is
    /// parked.
    #[tracing::instrument(skip_all, fields(server = %server.config.name))]
    async fn supervise(self: Arc<Self>, server: Arc<Server>, settled: oneshot::Sender<()>) {
        let mut settled = Some(settled);
        let mut tracker = RestartTracker::new(self.options.restart);
        let mut shutdown = self.shutdown.subscribe();
        loop {
            server.status.send_replace(Status::Connecting);
            let started = Instant::now();
            // Dropping a connection attempt (on shutdown) drops its child, which kills its group.
            let connected = tokio::select! {
                connected = self.connect(&server) => connected,
                _ = shutdown.wait_for(|stop| *stop) => Err("the daemon is shutting down".to_owned()),
            };
            let reason = match connected {
                Ok((session, done)) => {
                    tracing::info!(
                        tools = session.catalog().len(),
                        elapsed_ms = started.elapsed().as_millis() as u64,
                        "server ready"
                    );
                    *server.ready_since.lock().unwrap() = Some(Instant::now());
                    server
                        .status
                        .send_replace(Status::Ready(Arc::clone(&session)));
                    if let Some(settled) = settled.take() {
                        let _ = settled.send(());
                    }
                    let stopping = tokio::select! {
                        _ = done => false,
                        _ = shutdown.wait_for(|stop| *stop) => true,
                    };
                    *server.ready_since.lock().unwrap() = None;
                    if stopping {
                        session.close().await;
                        server
                            .status
                            .send_replace(Status::Exited("stopped by the daemon".to_owned()));
                        return;
                    }
                    let reason = session.describe_end().await;
                    // The stream may have ended with the child still alive (an oversized
                    // message): stop its whole group before starting another.
                    if let Some(process) = &session.process {
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
                server.status.send_replace(Status::Exited(reason));
                return;
            }
            match tracker.record_exit(Instant::now(), started.elapsed(), random_jitter()) {
                Decision::RestartAfter(delay) => {
                    tracing::info!(delay_ms = delay.as_millis() as u64, "restarting server");
                    server.status.send_replace(Status::Restarting(reason));
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
                            return;
                        }
                    }
                    server.restarts.fetch_add(1, Ordering::Relaxed);
                }
                Decision::Park => {
                    let restarts = server.restarts.load(Ordering::Relaxed);
                    tracing::error!(restarts, %reason, "server keeps failing; parked as down");
                    server.status.send_replace(Status::Down(format!(
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
    ) -> Result<(Arc<Session>, session::ServiceDone), String> {
        match &server.config.transport {
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
                session::connect_http(&server.config.name, url, headers).await
            }
        }
    }

    async fn connect_stdio(
        &self,
        name: &str,
        command: &str,
        args: &[String],
        env: &BTreeMap<String, String>,
        cwd: Option<&PathBuf>,
    ) -> Result<(Arc<Session>, session::ServiceDone), String> {
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
        let established = session::establish(
            name,
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

impl Server {
    /// A snapshot of its status.
    pub(crate) fn status(&self) -> Status {
        self.status.borrow().clone()
    }

    /// Its live session, waiting up to `wait` while it is connecting or restarting.
    pub(crate) async fn session(&self, wait: Duration) -> Result<Arc<Session>, Error> {
        let mut status = self.status.subscribe();
        let settled = tokio::time::timeout(
            wait,
            status.wait_for(|s| {
                !matches!(s, Status::Connecting | Status::Restarting(_))
                    && !matches!(s, Status::Ready(session) if session.has_ended())
            }),
        )
        .await;
        let current = match settled {
            Ok(Ok(status)) => status.clone(),
            _ => self.status(),
        };
        match current {
            Status::Ready(session) if !session.has_ended() => Ok(session),
            other => Err(Error::ServerUnavailable {
                server: self.config.name.clone(),
                state: match other {
                    Status::Ready(_) => "restarting",
                    ref other => other.state().as_str(),
                },
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
}

/// Our identity and capabilities as an MCP client, for `getBridgeInfo.upstreamMcp`.
pub(crate) fn client_capabilities_json() -> Value {
    serde_json::to_value(session::client_config().capabilities).unwrap_or(Value::Null)
}
