//! What the daemon serves tools from: the seam between the call pipeline and the things that
//! actually run tools.
//!
//! The MCP pool ([`crate::pool::Pool`]) is one [`ToolProvider`]; a Rust harness can implement the
//! trait over its own tools and serve them through the same protocol, authentication, gate and
//! call pipeline (validation, policy, resilience, traces): see `daemon/examples/embedded_bridge.rs`.
//! Unit tests of the pipeline implement it in memory, so every stage is tested without child
//! processes.
//!
//! A provider offers servers ([`Upstream`]); each has settings, a status, a catalog of tools
//! (kept across restarts: the last one known) and the operations the pipeline calls once it has
//! decided a call may go ahead. An upstream never validates or authorises: the pipeline has done
//! that before it calls. Each call comes with its [`CallTicket`] (`ticket.rs`): who it is for,
//! where its events go, what LLM usage it causes.

mod exchange;
mod tasks;
mod ticket;

pub use exchange::{ExchangeFacts, ExchangeNote, address_of};
pub use tasks::TaskRequest;
pub use ticket::{
    CALLER_META_KEY, CallTicket, EventRelay, RelayedAnswer, TaskNote, UrlQuestion, UrlRelay,
    UsageMeter, UsageTotals, caller_key,
};

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};
use tokio::sync::watch;
use tokio::time::Instant;
use tool_cli_protocol::ErrorData;
use tool_cli_protocol::methods::{ServerState, TransportKind};

use crate::catalog::Catalog;
use crate::config::{DEFAULT_CALL_TIMEOUT, DEFAULT_MAX_CONCURRENT, DEFAULT_MAX_QUEUED};
use crate::error::Error;
use crate::policy::ServerPolicy;

/// A boxed future, so that [`Upstream`] stays object-safe.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A source of servers and their tools.
pub trait ToolProvider: Send + Sync + 'static {
    /// Every server, in a stable order (the pool: config order). The order is the last routing
    /// rule's tie-break, after `priority`.
    fn servers(&self) -> Vec<Arc<dyn Upstream>>;

    /// A counter that changes whenever a server's status or catalog changes, so indexes built
    /// over the catalogs (tool search) know when to rebuild. A provider whose tools never change
    /// may keep the default, which never changes.
    fn changes(&self) -> watch::Receiver<u64> {
        watch::channel(0).1
    }

    /// The servers' notifications that hosts of the MCP gateway are told of (a resource or
    /// prompt list changed, a subscribed resource was updated). A provider whose servers say
    /// none may keep the default, a channel that is closed already.
    fn notices(&self) -> tokio::sync::broadcast::Receiver<UpstreamNotice> {
        tokio::sync::broadcast::channel(1).1
    }
}

/// A server's notification that the MCP gateway passes on to its hosts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UpstreamNotice {
    /// `notifications/resources/list_changed` from `server`.
    ResourcesChanged { server: String },
    /// `notifications/prompts/list_changed` from `server`.
    PromptsChanged { server: String },
    /// `notifications/resources/updated` for `uri` from `server`.
    ResourceUpdated { server: String, uri: String },
    /// `notifications/tasks/status` from `server` (MCP 2025-11-25 tasks): the task as
    /// `tasks/get` would answer it, with the server's own task id.
    TaskStatus { server: String, task: Value },
}

impl UpstreamNotice {
    /// The server that sent it.
    pub fn server(&self) -> &str {
        match self {
            UpstreamNotice::ResourcesChanged { server }
            | UpstreamNotice::PromptsChanged { server }
            | UpstreamNotice::ResourceUpdated { server, .. }
            | UpstreamNotice::TaskStatus { server, .. } => server,
        }
    }
}

/// One server of a provider.
pub trait Upstream: Send + Sync + 'static {
    /// Its name, description, tags and the settings the pipeline applies to it.
    fn info(&self) -> &ServerInfo;

    /// Where its connection stands now.
    fn status(&self) -> UpstreamStatus {
        UpstreamStatus::ready()
    }

    /// Its tools: the current catalog, or the last one known while it is not connected.
    fn catalog(&self) -> Arc<Catalog>;

    /// Whether it speaks the stateless revision 2026-07-28, whose tools declare no task
    /// support: any call may run as a task there (the tasks extension), which the provider
    /// follows to its result. The MCP gateway offers such calls to its hosts as tasks.
    fn speaks_stateless(&self) -> bool {
        false
    }

    /// What the pin check holds back of the `items` of `kind` (prompts or resource templates)
    /// it just listed (`docs/pinning.md`); nothing unless its provider checks pins.
    fn pin_item_hold(
        &self,
        kind: tool_cli_gateway_core::pin::ItemKind,
        items: &[Value],
    ) -> crate::catalog::pin_items::ItemHold {
        let _ = (kind, items);
        crate::catalog::pin_items::ItemHold::default()
    }

    /// Whether the pin check can hold back any of its prompts or resource templates (it is
    /// pinned, or the pin store cannot be trusted): only then is it worth listing them to
    /// check a use; nothing unless its provider checks pins.
    fn pins_hold_items(&self) -> bool {
        false
    }

    /// The `instructions` of its handshake as it sent them, held back by the pin check or not
    /// (`pinListing`, for `tool-cli pin`); `status` gives them only when they may be relayed.
    fn handshake_instructions(&self) -> Option<String> {
        self.status().instructions
    }

    /// Waits until it can take a call (connected), at most until `deadline`.
    fn wait_ready(&self, deadline: Instant) -> BoxFuture<'_, Result<(), Error>> {
        let _ = deadline;
        Box::pin(async { Ok(()) })
    }

    /// Starts it again now, whatever its state (a server parked `down` is tried at once, a live
    /// connection replaced), and waits at most until `deadline` for that attempt to settle. A
    /// provider with nothing to reconnect keeps the default, which does nothing.
    fn restart(&self, deadline: Instant) -> BoxFuture<'_, Result<(), Error>> {
        let _ = deadline;
        Box::pin(async { Ok(()) })
    }

    /// Calls `tool`, which the pipeline has resolved, authorised and validated, for the caller
    /// `ticket` names; answers the complete MCP `CallToolResult` as JSON, or fails by
    /// `deadline`.
    fn call_tool<'a>(
        &'a self,
        tool: &'a str,
        arguments: &'a Map<String, Value>,
        deadline: Instant,
        ticket: &'a CallTicket,
    ) -> BoxFuture<'a, Result<Value, Error>>;

    /// Whether it has resources at all.
    fn supports_resources(&self) -> bool {
        false
    }

    /// Every item of a resource list (following pagination); `ticket` carries the trace
    /// context to send and where to note the exchange.
    fn list_resources<'a>(
        &'a self,
        kind: ResourceListKind,
        deadline: Instant,
        ticket: &'a CallTicket,
    ) -> BoxFuture<'a, Result<Vec<Value>, Error>> {
        let _ = (kind, deadline, ticket);
        Box::pin(async { Ok(Vec::new()) })
    }

    /// Reads one resource for the caller `ticket` names; answers the complete MCP
    /// `ReadResourceResult` as JSON.
    fn read_resource<'a>(
        &'a self,
        uri: &'a str,
        deadline: Instant,
        ticket: &'a CallTicket,
    ) -> BoxFuture<'a, Result<Value, Error>> {
        let _ = (deadline, ticket);
        let server = self.info().name.clone();
        Box::pin(async move {
            Err(ErrorData::Upstream {
                server,
                code: tool_cli_protocol::code::METHOD_NOT_FOUND.into(),
                message: format!("this server has no resources, so \"{uri}\" cannot be read"),
                data: None,
            }
            .into())
        })
    }

    /// Whether it has prompts at all.
    fn supports_prompts(&self) -> bool {
        false
    }

    /// Every prompt it offers (following pagination), each as the server described it.
    fn list_prompts<'a>(
        &'a self,
        deadline: Instant,
        ticket: &'a CallTicket,
    ) -> BoxFuture<'a, Result<Vec<Value>, Error>> {
        let _ = (deadline, ticket);
        Box::pin(async { Ok(Vec::new()) })
    }

    /// Sends a request the daemon passes on without reading it (`completion/complete`,
    /// `resources/subscribe`, `resources/unsubscribe`, for the MCP gateway) for the caller
    /// `ticket` names; answers the server's result as JSON.
    fn pass_request<'a>(
        &'a self,
        method: &'a str,
        params: &'a Value,
        deadline: Instant,
        ticket: &'a CallTicket,
    ) -> BoxFuture<'a, Result<Value, Error>> {
        let _ = (params, deadline, ticket);
        let server = self.info().name.clone();
        Box::pin(async move {
            Err(ErrorData::Upstream {
                server,
                code: tool_cli_protocol::code::METHOD_NOT_FOUND.into(),
                message: format!("this server does not take {method}"),
                data: None,
            }
            .into())
        })
    }

    /// Sends one MCP task request (`provider/tasks.rs`) for the caller `ticket` names; answers
    /// the server's result as JSON, unnarrowed. A provider whose servers run no tasks keeps the
    /// default, which says so.
    fn task_request<'a>(
        &'a self,
        request: TaskRequest<'a>,
        deadline: Instant,
        ticket: &'a CallTicket,
    ) -> BoxFuture<'a, Result<Value, Error>> {
        let _ = (deadline, ticket);
        let server = self.info().name.clone();
        let method = request.method();
        Box::pin(async move {
            Err(ErrorData::Upstream {
                server,
                code: tool_cli_protocol::code::METHOD_NOT_FOUND.into(),
                message: format!("this server runs no MCP tasks, so {method} cannot be sent"),
                data: None,
            }
            .into())
        })
    }

    /// Renders one prompt for the caller `ticket` names; answers the complete MCP
    /// `GetPromptResult` as JSON.
    fn get_prompt<'a>(
        &'a self,
        name: &'a str,
        arguments: &'a Map<String, Value>,
        deadline: Instant,
        ticket: &'a CallTicket,
    ) -> BoxFuture<'a, Result<Value, Error>> {
        let _ = (arguments, deadline, ticket);
        let server = self.info().name.clone();
        Box::pin(async move {
            Err(ErrorData::Upstream {
                server,
                code: tool_cli_protocol::code::METHOD_NOT_FOUND.into(),
                message: format!("this server has no prompts, so \"{name}\" cannot be got"),
                data: None,
            }
            .into())
        })
    }
}

/// Which resource list to fetch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResourceListKind {
    /// `resources/list`.
    Resources,
    /// `resources/templates/list`.
    Templates,
}

/// A server's identity and the settings the pipeline applies to its calls.
#[derive(Debug, Clone)]
pub struct ServerInfo {
    /// Its name: the first word of `tool-cli SERVER`.
    pub name: String,
    /// A description shown by `listServers`.
    pub description: Option<String>,
    /// Tags shown by `listServers` and matched by routing.
    pub tags: Vec<String>,
    /// How it is reached.
    pub transport: TransportKind,
    /// Limits and policy.
    pub settings: ServerSettings,
}

/// The pipeline's settings for one server.
#[derive(Debug, Clone)]
pub struct ServerSettings {
    /// Default timeout of each call.
    pub call_timeout: Duration,
    /// Most calls executing at once.
    pub max_concurrent: usize,
    /// Most calls waiting for a slot; more are refused as busy.
    pub max_queued: usize,
    /// How long a read-only tool's last good result may be served while the server fails;
    /// `None` turns the degradation cache off.
    pub cache_ttl: Option<Duration>,
    /// Which tools may be seen and called, and which need confirmation.
    pub policy: ServerPolicy,
    /// Routing preference among servers offering the same tool (higher first).
    pub priority: i64,
}

impl Default for ServerSettings {
    fn default() -> Self {
        ServerSettings {
            call_timeout: DEFAULT_CALL_TIMEOUT,
            max_concurrent: DEFAULT_MAX_CONCURRENT,
            max_queued: DEFAULT_MAX_QUEUED,
            cache_ttl: None,
            policy: ServerPolicy::default(),
            priority: 0,
        }
    }
}

/// Where a server's connection stands.
#[derive(Debug, Clone)]
pub struct UpstreamStatus {
    /// Its state, as `listServers` and `health` report it.
    pub state: ServerState,
    /// Why it is not ready, when it is not.
    pub error: Option<String>,
    /// How many times it was restarted.
    pub restarts: u32,
    /// How long its current connection has been up.
    pub uptime: Option<Duration>,
    /// The `instructions` it sent in its MCP handshake.
    pub instructions: Option<String>,
    /// Problems worth the operator's attention that do not stop it (a refused tool override).
    pub warnings: Vec<String>,
    /// What its sampling requests cost, for a server with `allowSampling`.
    pub sampling: Option<tool_cli_protocol::methods::SamplingHealth>,
}

impl UpstreamStatus {
    /// Ready, with nothing else to say.
    pub fn ready() -> UpstreamStatus {
        UpstreamStatus {
            state: ServerState::Ready,
            error: None,
            restarts: 0,
            uptime: None,
            instructions: None,
            warnings: Vec::new(),
            sampling: None,
        }
    }
}
