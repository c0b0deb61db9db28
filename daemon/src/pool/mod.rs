//! The MCP pool: every configured server and its supervised connection; the daemon's
//! [`ToolProvider`].
//!
//! Each enabled server has a supervisor task (`supervisor.rs`). It connects (a stdio child,
//! `child.rs` and `stdio.rs`, or Streamable HTTP, `http.rs`), marks the server ready, waits for
//! the connection to end, and then asks the restart tracker what to do: start again after an
//! exponential backoff with jitter, or, for a server that keeps dying, park it `down` with its
//! last error and probe it on a slow schedule; `restartServer` cuts any wait short. One server's
//! troubles never touch another's. What a server says goes out through the configured secrets'
//! redaction (`redact.rs`).
//!
//! A live connection is a `Connection` (`connection.rs`). The server outlives its connections:
//! it keeps the last catalog it knew across restarts and publishes every status and catalog
//! change (a `watch` channel per server and a change counter for the whole pool), so routing and
//! tool search can follow them. The pool only connects and forwards, and replaces a connection
//! that stopped answering (an HTTP server that restarted); deciding whether and how a call goes
//! out — validation, policy, breakers, bulkheads, retries — is the call pipeline's job
//! (`pipeline/`).

mod child;
mod connection;
mod direct;
mod era;
mod http;
pub mod http_client;
mod http_tap;
mod lifecycle;
mod lines;
mod log_budget;
mod notification_order;
mod oversized;
pub mod pins;
mod raw_results;
mod result_check;
mod server_requests;
mod stderr;
mod stdio;
mod supervisor;
pub mod tls;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::ProtocolVersion;
use serde_json::{Map, Value};
use tokio::sync::{oneshot, watch};
use tokio::time::Instant;
use tool_cli_protocol::ErrorData;
use tool_cli_protocol::methods::{SamplingHealth, ServerState, TransportKind};

use crate::catalog::Catalog;
use crate::catalog::overrides::ToolOverride;
use crate::config::{Config, ServerConfig, TransportConfig};
use crate::error::Error;
use crate::oauth::RemoteAuth;
use crate::provider::{
    BoxFuture, CallTicket, ResourceListKind, ServerInfo, ServerSettings, ToolProvider, Upstream,
    UpstreamStatus,
};
use crate::redact::Secrets;
use crate::resilience::backoff::Backoff;
use crate::resilience::restart::RestartPolicy;
pub(crate) use connection::{Connection, ListKind};

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
    /// Largest message accepted from a server: a stdio line, or an SSE event over HTTP.
    pub max_message_bytes: usize,
    /// How crashing servers are restarted.
    pub restart: RestartPolicy,
    /// The daemon's own executable, to run each stdio server under `tool-cli-daemon subreaper`
    /// (see [`crate::subreaper`]); `None` spawns servers directly, as a pool embedded in another
    /// program (or a test) must.
    pub subreaper: Option<PathBuf>,
    /// The daemon's state directory, where remote servers' OAuth tokens are kept (`oauth/`);
    /// `None` keeps no tokens (a server that asks for OAuth then cannot be signed in to).
    pub state_dir: Option<PathBuf>,
    /// The agent backend that answers sampling requests of servers with `allowSampling`
    /// (`crate::sampling`); `None` declines them with a reason.
    pub sampler: Option<Arc<crate::sampling::Sampler>>,
    /// The pin store every catalog is checked against when it is built (`pins.rs`); `None`
    /// checks nothing (a pool embedded in another program, most tests).
    pub pins: Option<Arc<pins::PinGuard>>,
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
            subreaper: None,
            state_dir: None,
            sampler: None,
            pins: None,
        }
    }
}

/// Every configured server.
pub struct Pool {
    /// The servers now, swapped whole when one is added, replaced or removed
    /// (`lifecycle.rs`).
    servers: std::sync::RwLock<Arc<Vec<Arc<Server>>>>,
    /// Servers taken out of the set that are still draining their calls; stopped with the rest
    /// at shutdown if they have not stopped by then.
    retiring: Mutex<Vec<Arc<Server>>>,
    options: PoolOptions,
    shutdown: watch::Sender<bool>,
    supervisors: Mutex<tokio::task::JoinSet<()>>,
    /// Bumped on every status or catalog change of any server.
    changes: Arc<watch::Sender<u64>>,
    /// The servers' notifications for the gateway's hosts.
    notices: tokio::sync::broadcast::Sender<crate::provider::UpstreamNotice>,
    /// The OAuth state of the remote servers.
    remote_auth: Arc<RemoteAuth>,
}

/// One configured server: its supervised connection and what it last knew of its tools.
pub struct Server {
    /// Its configuration.
    pub config: ServerConfig,
    /// Every configured secret, kept out of its statuses and errors.
    secrets: Arc<Secrets>,
    info: ServerInfo,
    status: watch::Sender<Status>,
    published: Arc<Published>,
    restarts: AtomicU32,
    ready_since: Mutex<Option<Instant>>,
    /// Whether it is down waiting for a sign-in (`tool-cli auth login`), so a call is told
    /// `authRequired` rather than `serverUnavailable`.
    needs_login: AtomicBool,
    /// Bumped by each restart request; the supervisor answers every request up to the value it
    /// read when an attempt began.
    restart_requested: watch::Sender<u64>,
    /// The request generation the last settled attempt answered (ready, restarting or down).
    settled: watch::Sender<u64>,
    /// Set to stop this server alone (removed or replaced) or, with every other, at shutdown.
    stop: watch::Sender<bool>,
    /// Calls and reads running on it now, so a removed server drains before it stops.
    in_flight: lifecycle::InFlight,
    /// Whether its supervisor was started (by [`Pool::start`] or when it was added), so no
    /// server ever gets two.
    supervised: std::sync::atomic::AtomicBool,
}

/// What a server publishes beyond its status: its catalog, kept across restarts, and the pool's
/// change counter, bumped with every change so subscribers (tool search) rebuild.
/// Most server notifications held for a slow gateway stream; past it the stream skips the
/// oldest (a list change carries no data; an update is re-read by the host anyway).
const NOTICE_QUEUE: usize = 256;

pub(crate) struct Published {
    catalog: watch::Sender<Arc<Catalog>>,
    changes: Arc<watch::Sender<u64>>,
    /// Where its notifications for the gateway's hosts go (the pool's, shared).
    pub(crate) notices: tokio::sync::broadcast::Sender<crate::provider::UpstreamNotice>,
    /// The config's overrides of this server's tools.
    overrides: Arc<BTreeMap<String, ToolOverride>>,
    /// Overrides refused (or unused) when the catalog was last built.
    problems: Mutex<Vec<String>>,
    /// What it gets when it asks the daemon something; kept across restarts.
    pub(crate) server_requests: Arc<server_requests::ServerRequests>,
    /// The pin store each new catalog is checked against.
    pins: Option<Arc<pins::PinGuard>>,
    /// The config's `protocol` for it.
    pub(crate) protocol: crate::config::UpstreamProtocol,
    /// Set once it refused the handshake for the stateless revision (`era.rs`): its later
    /// connections open with `server/discover` at once.
    pub(crate) learned_stateless: AtomicBool,
    /// The hosts' resource subscriptions to it, counted per URI; kept across restarts, so
    /// each new connection subscribes to them again (`connection/subscribed.rs`).
    pub(crate) subscribed: connection::subscribed::Subscribed,
}

impl Published {
    /// Builds the catalog from the server's `tools/list` items with the config's overrides,
    /// replaces it and announces the change; returns how many tools there are.
    pub(crate) fn catalog_from(&self, server: &str, items: Vec<Value>) -> usize {
        let (catalog, problems) = Catalog::with_overrides(items, &self.overrides);
        for problem in &problems {
            tracing::error!(server, %problem, "tool override refused");
        }
        *self.problems.lock().unwrap() = problems;
        // Checked before it is published: a changed tool is never listed, not even for an
        // instant. The store is read again here, so the check is against it as it is now.
        if let Some(guard) = &self.pins {
            pins::PinGuard::check(server, &catalog, &guard.reload());
        }
        let count = catalog.len();
        // The previous catalog goes here, and with it what parsing the new one left behind.
        drop(self.catalog.send_replace(Arc::new(catalog)));
        crate::memory::release_freed("building a catalog");
        self.changed();
        count
    }

    fn changed(&self) {
        self.changes.send_modify(|generation| *generation += 1);
    }

    /// Checks the published catalog again against `state` (after `reloadPins`) and announces
    /// the change, so search and the gateway rebuild; answers whether the server is checked.
    pub(crate) fn recheck_pins(&self, server: &str, state: &pins::StoreState) -> bool {
        let catalog = Arc::clone(&self.catalog.borrow());
        let checked = pins::PinGuard::check(server, &catalog, state);
        self.changed();
        checked
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
        let notices = tokio::sync::broadcast::Sender::new(NOTICE_QUEUE);
        let secrets = Arc::new(crate::config::secrets_of(config));
        let servers = config
            .servers
            .iter()
            .map(|server| {
                Server::new(
                    server,
                    Arc::clone(&secrets),
                    Arc::clone(&changes),
                    notices.clone(),
                    options.sampler.clone(),
                    options.pins.clone(),
                )
            })
            .collect();
        let remote_auth = Arc::new(RemoteAuth::new(
            &config.servers,
            options.state_dir.as_deref(),
        ));
        Arc::new(Pool {
            servers: std::sync::RwLock::new(Arc::new(servers)),
            retiring: Mutex::new(Vec::new()),
            remote_auth,
            options,
            shutdown: watch::Sender::new(false),
            supervisors: Mutex::new(tokio::task::JoinSet::new()),
            changes,
            notices,
        })
    }

    /// The OAuth state of the remote servers (`authLogin`, `authStatus`, …).
    pub fn remote_auth(&self) -> Arc<RemoteAuth> {
        Arc::clone(&self.remote_auth)
    }

    /// Starts every enabled server's supervisor; returns once each server's first connection
    /// attempt has settled (ready, restarting or down). One server's failure never affects another.
    pub async fn start(self: &Arc<Self>) {
        self.start_until(ReadyWhen::All).await;
    }

    /// As [`Pool::start`], but returns as soon as `ready` says: when the first server has
    /// settled, when all have, or at once. The other first attempts carry on regardless.
    pub async fn start_until(self: &Arc<Self>, ready: ReadyWhen) {
        let first_attempts: Vec<_> = self
            .servers()
            .iter()
            .filter_map(|server| self.supervise_once(server))
            .collect();
        match ready {
            ReadyWhen::None => {}
            ReadyWhen::First if first_attempts.is_empty() => {}
            ReadyWhen::First => {
                let _ = futures_util::future::select_all(first_attempts).await;
            }
            ReadyWhen::All => {
                for settled in first_attempts {
                    let _ = settled.await;
                }
            }
        }
    }

    /// Every server, in config order (servers added at run time last).
    pub fn servers(&self) -> Arc<Vec<Arc<Server>>> {
        Arc::clone(&self.servers.read().unwrap())
    }

    /// Closes every connection: stdin closed, then SIGTERM and SIGKILL to each child's group.
    pub async fn shutdown(&self) {
        self.shutdown.send_replace(true);
        let retiring = self.retiring.lock().unwrap().clone();
        for server in self.servers().iter().chain(retiring.iter()) {
            server.stop.send_replace(true);
        }
        let mut supervisors = std::mem::take(&mut *self.supervisors.lock().unwrap());
        while supervisors.join_next().await.is_some() {}
    }
}

impl ToolProvider for Pool {
    fn servers(&self) -> Vec<Arc<dyn Upstream>> {
        self.servers()
            .iter()
            .map(|server| Arc::clone(server) as Arc<dyn Upstream>)
            .collect()
    }

    fn changes(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    fn notices(&self) -> tokio::sync::broadcast::Receiver<crate::provider::UpstreamNotice> {
        self.notices.subscribe()
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
    /// A server for `config`, not started.
    fn new(
        config: &ServerConfig,
        secrets: Arc<Secrets>,
        changes: Arc<watch::Sender<u64>>,
        notices: tokio::sync::broadcast::Sender<crate::provider::UpstreamNotice>,
        sampler: Option<Arc<crate::sampling::Sampler>>,
        pins: Option<Arc<pins::PinGuard>>,
    ) -> Arc<Server> {
        let initial = if config.enabled {
            Status::Connecting
        } else {
            Status::Disabled
        };
        Arc::new(Server {
            secrets,
            info: server_info(config),
            config: config.clone(),
            status: watch::Sender::new(initial),
            published: Arc::new(Published {
                catalog: watch::Sender::new(Arc::new(Catalog::default())),
                changes,
                notices,
                overrides: Arc::clone(&config.tool_overrides),
                problems: Mutex::new(Vec::new()),
                server_requests: Arc::new(server_requests::ServerRequests::new(
                    &config.name,
                    config.server_requests.clone(),
                    sampler,
                )),
                pins,
                protocol: config.protocol,
                learned_stateless: AtomicBool::new(false),
                subscribed: connection::subscribed::Subscribed::default(),
            }),
            restarts: AtomicU32::new(0),
            ready_since: Mutex::new(None),
            needs_login: AtomicBool::new(false),
            restart_requested: watch::Sender::new(0),
            settled: watch::Sender::new(0),
            stop: watch::Sender::new(false),
            in_flight: lifecycle::InFlight::default(),
            supervised: std::sync::atomic::AtomicBool::new(false),
        })
    }

    fn set_status(&self, status: Status) {
        let status = match status {
            Status::Restarting(reason) => Status::Restarting(self.secrets.redact(&reason).into()),
            Status::Down(reason) => Status::Down(self.secrets.redact(&reason).into()),
            Status::Exited(reason) => Status::Exited(self.secrets.redact(&reason).into()),
            other => other,
        };
        self.status.send_replace(status);
        self.published.changed();
    }

    /// Announces that an attempt settled: to `Pool::start` the first time, and to whoever asked
    /// for a restart up to `generation`.
    fn settle(&self, first: &mut Option<oneshot::Sender<()>>, generation: u64) {
        if let Some(first) = first.take() {
            let _ = first.send(());
        }
        self.settled.send_replace(generation);
    }

    /// Asks the supervisor for a new connection now (parked or not, connected or not) and waits
    /// until `deadline` for that attempt to settle.
    async fn request_restart(&self, deadline: Instant) -> Result<(), Error> {
        if !self.config.enabled {
            return Err(ErrorData::ServerUnavailable {
                server: self.config.name.clone(),
                state: ServerState::Disabled.as_str().to_owned(),
                last_error: Some(
                    "it is disabled in the config; set \"disabled\": false and restart the daemon"
                        .to_owned(),
                ),
            }
            .into());
        }
        let mut generation = 0;
        self.restart_requested.send_modify(|requested| {
            *requested += 1;
            generation = *requested;
        });
        let mut settled = self.settled.subscribe();
        // Out of time: the caller is told the state it is in now (connecting, say).
        let _ =
            tokio::time::timeout_at(deadline, settled.wait_for(|done| *done >= generation)).await;
        Ok(())
    }

    /// A snapshot of its status.
    pub(crate) fn current_status(&self) -> Status {
        self.status.borrow().clone()
    }

    /// Its live connection, waiting until `deadline` while it is connecting or restarting: for
    /// the attempt under way or the next one, not through a crash loop. A caller that came while
    /// the server was restarting gets the next attempt's outcome; an attempt that fails ends the
    /// wait with its reason (an endpoint that refuses connections failed the call only when the
    /// server was parked, half a minute of restarts later).
    pub(crate) async fn connection(&self, deadline: Instant) -> Result<Arc<Connection>, Error> {
        let mut status = self.status.subscribe();
        let restarts_before = self.restarts.load(Ordering::Relaxed);
        let mut attempting = false;
        let settled = tokio::time::timeout_at(
            deadline,
            status.wait_for(|s| match s {
                Status::Connecting => {
                    attempting = true;
                    false
                }
                // An attempt made since the wait began failed.
                Status::Restarting(_) => {
                    attempting || self.restarts.load(Ordering::Relaxed) > restarts_before + 1
                }
                Status::Ready(connection) => !connection.has_ended(),
                _ => true,
            }),
        )
        .await;
        let current = match settled {
            Ok(Ok(status)) => status.clone(),
            _ => self.current_status(),
        };
        match current {
            Status::Ready(connection) if !connection.has_ended() => Ok(connection),
            Status::Down(reason) if self.needs_login.load(Ordering::Relaxed) => {
                Err(ErrorData::AuthRequired {
                    server: self.config.name.clone(),
                    message: reason,
                }
                .into())
            }
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

    /// Sends one request over its live connection; every request the pool sends a server goes
    /// through here, so none forgets a step: it counts as in flight (a drain before `removeServer`
    /// or a reload waits for it), waits for the connection until `deadline`, checks a failed HTTP
    /// request for a lost session, and cleans the error of secrets.
    async fn request<T, SendRequest, Answer>(
        &self,
        deadline: Instant,
        send: SendRequest,
    ) -> Result<T, Error>
    where
        SendRequest: FnOnce(Arc<Connection>) -> Answer,
        Answer: Future<Output = Result<T, Error>>,
    {
        let _in_flight = self.in_flight.enter();
        let connection = self
            .connection(deadline)
            .await
            .map_err(|error| self.secrets.clean_error(error))?;
        let result = send(Arc::clone(&connection)).await;
        self.check_after_failure(&connection, &result);
        result.map_err(|error| self.secrets.clean_error(error))
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

/// A server's sampling bill as `health` shows it.
fn sampling_health(bill: &crate::sampling::SamplingBill) -> SamplingHealth {
    SamplingHealth {
        answered: bill.answered,
        declined: bill.declined,
        input_tokens: bill.usage.prompt_tokens(),
        output_tokens: bill.usage.output_tokens,
        cost_usd: bill.cost_usd,
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

    fn speaks_stateless(&self) -> bool {
        let learned = self.published.learned_stateless.load(Ordering::Relaxed);
        era::Lifecycle::choose(self.published.protocol, learned) == era::Lifecycle::Discover
    }

    fn status(&self) -> UpstreamStatus {
        let status = self.current_status();
        // Instructions the pin check holds back are not relayed, only warned of.
        let instructions = self.handshake_instructions();
        let instructions_held = self
            .published
            .instructions_hold(&self.info.name, instructions.as_deref());
        UpstreamStatus {
            state: status.state(),
            error: status.error().map(str::to_owned),
            restarts: self.restarts(),
            uptime: self.uptime(),
            instructions: instructions.filter(|_| instructions_held.is_none()),
            warnings: self
                .published
                .problems
                .lock()
                .unwrap()
                .iter()
                .map(|problem| format!("config: {problem}"))
                .chain(self.catalog().pin_hold().warnings(&self.info.name))
                .chain(instructions_held.map(|held| {
                    crate::catalog::pin_items::instructions_warning(&self.info.name, &held)
                }))
                .collect(),
            sampling: self
                .published
                .server_requests
                .advertises_sampling()
                .then(|| sampling_health(&self.published.server_requests.sampling_bill())),
        }
    }

    fn catalog(&self) -> Arc<Catalog> {
        Arc::clone(&self.published.catalog.borrow())
    }

    fn pin_item_hold(
        &self,
        kind: tool_cli_gateway_core::pin::ItemKind,
        items: &[Value],
    ) -> crate::catalog::pin_items::ItemHold {
        self.published.item_hold(&self.info.name, kind, items)
    }

    fn pins_hold_items(&self) -> bool {
        self.published.pins_hold_items(&self.info.name)
    }

    fn handshake_instructions(&self) -> Option<String> {
        match self.current_status() {
            Status::Ready(connection) => connection.instructions.clone(),
            _ => None,
        }
    }

    fn wait_ready(&self, deadline: Instant) -> BoxFuture<'_, Result<(), Error>> {
        Box::pin(async move {
            self.connection(deadline)
                .await
                .map(|_| ())
                .map_err(|error| self.secrets.clean_error(error))
        })
    }

    fn restart(&self, deadline: Instant) -> BoxFuture<'_, Result<(), Error>> {
        Box::pin(self.request_restart(deadline))
    }

    fn call_tool<'a>(
        &'a self,
        tool: &'a str,
        arguments: &'a Map<String, Value>,
        deadline: Instant,
        ticket: &'a CallTicket,
    ) -> BoxFuture<'a, Result<Value, Error>> {
        Box::pin(self.request(deadline, move |connection| async move {
            connection
                .call_tool(tool, arguments, deadline.into_std(), ticket)
                .await
        }))
    }

    fn supports_resources(&self) -> bool {
        match self.current_status() {
            Status::Ready(connection) => connection.supports_resources,
            _ => false,
        }
    }

    fn list_resources<'a>(
        &'a self,
        kind: ResourceListKind,
        deadline: Instant,
        ticket: &'a CallTicket,
    ) -> BoxFuture<'a, Result<Vec<Value>, Error>> {
        Box::pin(self.request(deadline, move |connection| async move {
            if !connection.supports_resources {
                return Ok(Vec::new());
            }
            let kind = match kind {
                ResourceListKind::Resources => ListKind::Resources,
                ResourceListKind::Templates => ListKind::ResourceTemplates,
            };
            connection.list_all(kind, remaining(deadline), ticket).await
        }))
    }

    fn read_resource<'a>(
        &'a self,
        uri: &'a str,
        deadline: Instant,
        ticket: &'a CallTicket,
    ) -> BoxFuture<'a, Result<Value, Error>> {
        Box::pin(self.request(deadline, move |connection| async move {
            connection
                .read_resource(uri, remaining(deadline), ticket)
                .await
        }))
    }

    fn supports_prompts(&self) -> bool {
        match self.current_status() {
            Status::Ready(connection) => connection.supports_prompts,
            _ => false,
        }
    }

    fn list_prompts<'a>(
        &'a self,
        deadline: Instant,
        ticket: &'a CallTicket,
    ) -> BoxFuture<'a, Result<Vec<Value>, Error>> {
        Box::pin(self.request(deadline, move |connection| async move {
            if !connection.supports_prompts {
                return Ok(Vec::new());
            }
            connection
                .list_all(ListKind::Prompts, remaining(deadline), ticket)
                .await
        }))
    }

    fn pass_request<'a>(
        &'a self,
        method: &'a str,
        params: &'a Value,
        deadline: Instant,
        ticket: &'a CallTicket,
    ) -> BoxFuture<'a, Result<Value, Error>> {
        Box::pin(self.request(deadline, move |connection| async move {
            connection
                .pass_request(method, params.clone(), remaining(deadline), ticket)
                .await
        }))
    }

    fn task_request<'a>(
        &'a self,
        request: crate::provider::TaskRequest<'a>,
        deadline: Instant,
        ticket: &'a CallTicket,
    ) -> BoxFuture<'a, Result<Value, Error>> {
        Box::pin(self.request(deadline, move |connection| async move {
            connection
                .task_request(request, remaining(deadline), ticket)
                .await
        }))
    }

    fn get_prompt<'a>(
        &'a self,
        name: &'a str,
        arguments: &'a Map<String, Value>,
        deadline: Instant,
        ticket: &'a CallTicket,
    ) -> BoxFuture<'a, Result<Value, Error>> {
        Box::pin(self.request(deadline, move |connection| async move {
            connection
                .get_prompt(name, arguments.clone(), remaining(deadline), ticket)
                .await
        }))
    }
}

/// Our identity and capabilities as an MCP client, for `getBridgeInfo.upstreamMcp`: as a server
/// with `allowSampling` sees them (the others are not offered `sampling`; URL-mode elicitation
/// is offered only to servers with `"elicitation": "ask"`, and not shown here).
pub(crate) fn client_capabilities_json() -> Value {
    serde_json::to_value(connection::client_config(true, false).capabilities).unwrap_or(Value::Null)
}

/// When [`Pool::start_until`] returns (`--ready-when`): the daemon is ready, and `--print-env`
/// prints, once the first enabled server's first attempt has settled, once every one has (the
/// default), or at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadyWhen {
    /// The first server settled (connected, or its first attempt failed).
    First,
    /// Every server settled.
    All,
    /// Do not wait for any server.
    None,
}
