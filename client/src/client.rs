//! [`Client`]: the library's way to a tool-cli daemon (or any tool-cli 1.x bridge), which the
//! `tool-cli` binary uses too.
//!
//! A client finds the daemon ([`Client::from_env`]) or is told where it is ([`Client::tcp`],
//! [`Client::unix_socket`]), and on its first request opens one connection, has the listener
//! prove it holds the token, and checks the handshake (`getBridgeInfo`: protocol
//! `tool-cli-bridge`, major 1) before anything else. Requests then share that connection.
//! Typed methods cover discovery and calls; [`Client::call`] sends any method with raw JSON
//! params, so a method the daemon adds later needs no new client. Every failure is an
//! [`Error`] with the exit code `tool-cli` documents for it.
//!
//! Cancellation is by dropping: a request's future that is dropped (by `tokio::time::timeout`,
//! `select!`, an aborted task) closes the connection, and the daemon cancels the call upstream
//! (`notifications/cancelled`) when it sees its caller go; the next request opens a new
//! connection.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Map, Value};
use tool_cli_protocol::methods::{
    CallToolParams, DescribeToolParams, ListServersResult, ListToolsResult, ReadSpilledParams,
    ReadSpilledResult, ServerParams, SpilledAnswer, name,
};
use tool_cli_protocol::{
    BRIDGE_PROTOCOL_MAJOR, BRIDGE_PROTOCOL_NAME, DEFAULT_HOST, DEFAULT_TIMEOUT_MS, MAX_TIMEOUT_MS,
};

use crate::endpoint::{Endpoint, EndpointEnv, Target, resolve_endpoint};
use crate::error::Error;
use crate::link::{Identity, Link};
use crate::settings;

/// Longest wait for the connection: a live daemon on loopback accepts in microseconds, so a
/// second is generous and keeps a dead or firewalled address from hanging an agent.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);

/// Extra time the HTTP request of `callTool` gets beyond the call's own `timeoutMs`, so that the
/// daemon's structured timeout error (which names the server and tool) arrives before ours.
pub(crate) const CALL_TIMEOUT_MARGIN: Duration = Duration::from_secs(2);

/// How long a call without a timeout of its own may wait for the daemon's answer. Such a call is
/// bounded by its server's configured `timeoutMs` (60 s unless the config says otherwise), which
/// the daemon enforces and answers with `-32002`; this ceiling only guards against a daemon that
/// never answers, so it is generous: twice the largest timeout a caller may ask for.
pub(crate) const UNTIMED_CALL_CEILING: Duration = Duration::from_millis(2 * MAX_TIMEOUT_MS);

/// A connection to a tool-cli daemon: discovery, calls and any other method, over one
/// kept-alive HTTP/1.1 connection opened on the first request.
///
/// ```no_run
/// # async fn example() -> Result<(), tool_cli::Error> {
/// use serde_json::json;
/// use tool_cli::{Client, ToolCall};
///
/// // TOOL_CLI_PORT / TOOL_CLI_TOKEN, else the daemon's runtime file, else port 7179.
/// let mut client = Client::from_env()?;
/// for server in client.list_servers().await?.servers {
///     println!("{}: {} tools", server.name, server.tool_count);
/// }
/// let schema = client.describe_tool("demo", "sql_query").await?;
/// println!("{}", schema["inputSchema"]);
/// let result = client
///     .call_tool(&ToolCall::new("demo", "sql_query").arguments(json!({"sql": "SELECT 1"})))
///     .await?;
/// println!("{}", result["structuredContent"]);
/// # Ok(())
/// # }
/// ```
///
/// Methods take `&mut self`: requests on one client are sequential (use one client per task
/// for concurrency; the daemon pipelines them). The client must be used inside a tokio runtime,
/// which drives its connection.
pub struct Client {
    endpoint: Endpoint,
    /// The timeout the user gave; `None` means each method's default (see [`Client::with_timeout`]).
    timeout: Option<Duration>,
    require_identity: bool,
    link: Option<Link>,
    /// Whether requests go over a blocking socket, with no async runtime
    /// ([`crate::link::blocking`]); the default is hyper on the caller's tokio runtime.
    blocking: bool,
    /// `getBridgeInfo`'s result, once the handshake passed.
    bridge_info: Option<Value>,
    /// Whether the endpoint's daemon id vouches for the listener ([`crate::vouch`]), checked
    /// once, on the first request.
    vouched: Option<bool>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The token stays out of logs.
        f.debug_struct("Client")
            .field("address", &self.address())
            .field("timeout", &self.timeout)
            .field("require_identity", &self.require_identity)
            .field("connected", &self.link.is_some())
            .finish_non_exhaustive()
    }
}

impl Client {
    /// The daemon the environment names, as `tool-cli` finds it: `TOOL_CLI_SOCKET`, or
    /// `TOOL_CLI_HOST` (default `127.0.0.1`) and `TOOL_CLI_PORT`, with `TOOL_CLI_TOKEN`;
    /// whatever is unset is read from the daemon's runtime file (`daemon.json` in
    /// `$TOOL_CLI_RUNTIME_DIR`, else `$XDG_RUNTIME_DIR/tool-cli/`, else
    /// `<temp dir>/tool-cli-<uid>/`); when a token is set but nothing names an address, port
    /// 7179 (the reference bridge's) is tried. `TOOL_CLI_TIMEOUT_MS` sets the timeout and
    /// `TOOL_CLI_REQUIRE_IDENTITY=0` accepts a bridge that does not prove its identity.
    ///
    /// Nothing is connected yet: the first request does that.
    pub fn from_env() -> Result<Client, Error> {
        use tool_cli_protocol::env;
        let endpoint = resolve_endpoint(&EndpointEnv::from_process(), |path| {
            std::fs::read_to_string(path)
        })?;
        let variable = |name: &str| std::env::var(name).ok();
        // A clamped timeout's warning has no terminal to go to here; the clamp itself applies.
        let timeout =
            settings::timeout_ms(None, variable(env::TIMEOUT_MS).as_deref(), &mut Vec::new())?;
        let require_identity =
            settings::require_identity(false, variable(env::REQUIRE_IDENTITY).as_deref())?;
        let mut client = Client::from_endpoint(endpoint).with_identity_required(require_identity);
        client.timeout = timeout.map(Duration::from_millis);
        Ok(client)
    }

    /// The daemon at `host:port` (an IP address or a name, e.g. `127.0.0.1`), with `token`.
    pub fn tcp(host: impl Into<String>, port: u16, token: impl Into<String>) -> Client {
        let host = host.into();
        Client::from_endpoint(Endpoint {
            target: Target::Tcp {
                host: if host.is_empty() {
                    DEFAULT_HOST.to_owned()
                } else {
                    host
                },
                port,
            },
            token: token.into(),
            fallback: None,
            daemon_id: None,
        })
    }

    /// The daemon listening on the Unix socket at `path`, with `token`.
    pub fn unix_socket(path: impl Into<PathBuf>, token: impl Into<String>) -> Client {
        Client::from_endpoint(Endpoint {
            target: Target::Unix { path: path.into() },
            token: token.into(),
            fallback: None,
            daemon_id: None,
        })
    }

    pub(crate) fn from_endpoint(endpoint: Endpoint) -> Client {
        Client {
            endpoint,
            timeout: None,
            require_identity: true,
            link: None,
            blocking: false,
            bridge_info: None,
            vouched: None,
        }
    }

    /// Bounds every request by `timeout` (at most 300 s; longer is clamped), and sends it to the
    /// daemon as each call's `timeoutMs`. Without it, requests other than calls wait 30 s, and
    /// a call is bounded by its server's configured `timeoutMs`, which the daemon enforces.
    pub fn with_timeout(mut self, timeout: Duration) -> Client {
        self.timeout = Some(timeout.min(Duration::from_millis(MAX_TIMEOUT_MS)));
        self
    }

    /// Whether the listener must prove it holds the token before the token is sent (the
    /// default). `false` also accepts a listener that does not serve the proof at all (a
    /// tool-cli 1.x bridge answers it 401): use it only for an address you trust, since any
    /// program listening there would then receive the token. A listener that answers the proof
    /// wrongly is refused either way.
    pub fn with_identity_required(mut self, required: bool) -> Client {
        self.require_identity = required;
        self
    }

    /// Sends every request over a blocking socket (when the address allows it,
    /// [`crate::link::blocking::can_reach`]): the client then needs no async runtime, and its
    /// futures complete when first polled. For a command whose requests all come one after
    /// another, with nothing running beside them.
    pub(crate) fn with_blocking_transport(mut self) -> Client {
        self.blocking = crate::link::blocking::can_reach(&self.endpoint.target);
        self
    }

    /// Whether requests go over the blocking socket ([`Client::with_blocking_transport`]).
    pub(crate) fn is_blocking(&self) -> bool {
        self.blocking
    }

    /// A new client of the same daemon with the same settings, not connected yet: for a request
    /// that runs beside one of this client's (`tool-cli agent` follows a run's events while the
    /// run's own request waits).
    pub(crate) fn sibling(&self) -> Client {
        Client {
            endpoint: self.endpoint.clone(),
            timeout: self.timeout,
            require_identity: self.require_identity,
            link: None,
            // A sibling runs beside another request, which only the runtime allows.
            blocking: false,
            bridge_info: None,
            vouched: self.vouched,
        }
    }

    /// Where the daemon is, for messages: `127.0.0.1:40123` or the socket's path.
    pub fn address(&self) -> String {
        self.endpoint.target.describe()
    }

    /// Whether the listener proved it holds the token: `Some(true)` once it did, `Some(false)`
    /// when it does not serve the proof and that was allowed, `None` before the first request.
    pub fn identity_proven(&self) -> Option<bool> {
        self.link
            .as_ref()
            .map(|link| matches!(link.identity(), Identity::Proven | Identity::Vouched))
    }

    /// The result of the handshake (`getBridgeInfo`), made on the first request: protocol,
    /// implementation, operations and capabilities of the bridge.
    pub async fn bridge_info(&mut self) -> Result<Value, Error> {
        if self.bridge_info.is_none() {
            self.fetch_bridge_info().await?;
        }
        Ok(self.bridge_info.clone().unwrap_or(Value::Null))
    }

    /// `listServers`: every server the token may see, in config order.
    pub async fn list_servers(&mut self) -> Result<ListServersResult, Error> {
        let result = self.call(name::LIST_SERVERS, None).await?;
        parse_result(name::LIST_SERVERS, result)
    }

    /// `listTools`: one server's tools (name, description, whether it returns structured
    /// output).
    pub async fn list_tools(&mut self, server: &str) -> Result<ListToolsResult, Error> {
        let params = to_params(&ServerParams {
            server: server.to_owned(),
        })?;
        let result = self.call(name::LIST_TOOLS, Some(params)).await?;
        parse_result(name::LIST_TOOLS, result)
    }

    /// `describeTool`: the tool exactly as its server listed it (`name`, `description`,
    /// `inputSchema`, `outputSchema`, `annotations`, and anything else it sent).
    pub async fn describe_tool(&mut self, server: &str, tool: &str) -> Result<Value, Error> {
        let params = to_params(&DescribeToolParams {
            server: server.to_owned(),
            tool: tool.to_owned(),
        })?;
        self.call(name::DESCRIBE_TOOL, Some(params)).await
    }

    /// `callTool`: runs the tool and returns its complete MCP `CallToolResult` (`content`,
    /// `structuredContent`, `isError`, `_meta`, ...). A tool that runs and fails is not an
    /// error here: the result says `isError: true`.
    ///
    /// The call is bounded by its own timeout, else the client's, else its server's configured
    /// one (enforced by the daemon). To give up earlier, drop the future; the daemon then
    /// cancels the call upstream:
    ///
    /// ```no_run
    /// # async fn example(client: &mut tool_cli::Client) -> Result<(), tool_cli::Error> {
    /// use std::time::Duration;
    /// use tool_cli::ToolCall;
    ///
    /// let call = ToolCall::new("demo", "sql_query")
    ///     .arguments(serde_json::json!({"sql": "SELECT count(*) FROM orders"}));
    /// match tokio::time::timeout(Duration::from_secs(5), client.call_tool(&call)).await {
    ///     Ok(result) => println!("{}", result?["content"]),
    ///     Err(_elapsed) => eprintln!("gave up; the daemon cancels the call"),
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub async fn call_tool(&mut self, call: &ToolCall) -> Result<Value, Error> {
        let arguments = match &call.arguments {
            Value::Object(arguments) => arguments.clone(),
            Value::Null => Map::new(),
            other => {
                return Err(Error::Usage(format!(
                    "the arguments of {}/{} must be a JSON object, got {}",
                    call.server,
                    call.tool,
                    tool_cli_protocol::json::kind(other)
                )));
            }
        };
        let timeout = call.timeout.or(self.timeout);
        let params = to_params(&CallToolParams {
            // "*" (or no server) lets the daemon route the call among the servers offering it.
            server: Some(call.server.clone()).filter(|server| server != "*"),
            tool: call.tool.clone(),
            arguments: Some(arguments),
            // Sent only when given, so that the server's configured timeout applies otherwise.
            timeout_ms: timeout
                .map(|timeout| timeout.as_millis().clamp(1, u128::from(MAX_TIMEOUT_MS)) as u64),
            session_id: call.session.clone(),
            // Sent only when asked, so a plain call stays exactly what it was.
            confirm: call.confirm.then_some(true),
            dry_run: call.dry_run.then_some(true),
            hint: call.hint.clone(),
            idempotency_key: call.idempotency_key.clone(),
            alternatives: None,
            progress: None,
            progress_id: call.progress_id.clone(),
            reset_timeout_on_progress: None,
            max_total_timeout_ms: None,
            task: None,
        })?;
        self.handshake().await?;
        // The margin lets our daemon's own deadline error (naming the server and tool) arrive
        // first; another bridge enforces no `timeoutMs`, so its call gets the timeout itself.
        let wait = match timeout {
            Some(timeout) if self.is_tool_cli_daemon() => timeout + CALL_TIMEOUT_MARGIN,
            Some(timeout) => timeout,
            None => UNTIMED_CALL_CEILING,
        };
        let result = self.send(name::CALL_TOOL, Some(params), wait).await?;
        self.unspill(result).await
    }

    /// A result too large for one response arrives as a reference to the file the daemon saved
    /// it in (`_meta["tool-cli/spilled"]`); this fetches the whole result with `readSpilled`,
    /// page by page (which works wherever the daemon runs, a container included), so callers
    /// see what the tool returned. Other results pass through.
    pub(crate) async fn unspill(&mut self, result: Value) -> Result<Value, Error> {
        let Some(reference) = result
            .get("_meta")
            .and_then(|meta| meta.get(tool_cli_protocol::meta::SPILLED))
        else {
            return Ok(result);
        };
        let spilled: SpilledAnswer = serde_json::from_value(reference.clone()).map_err(|err| {
            Error::Protocol(format!(
                "a spilled-answer reference that does not parse: {err}"
            ))
        })?;
        // Bounded: the size comes from the daemon, which is not to be trusted with our memory.
        let mut text = String::with_capacity(spilled.bytes.min(64 * 1024 * 1024) as usize);
        let mut offset = 0;
        loop {
            let params = to_params(&ReadSpilledParams {
                id: spilled.id.clone(),
                offset: Some(offset),
                length: None,
            })?;
            let page: ReadSpilledResult = parse_result(
                name::READ_SPILLED,
                self.call(name::READ_SPILLED, Some(params)).await?,
            )?;
            text.push_str(&page.text);
            match page.next_offset {
                Some(next) if next > offset => offset = next,
                Some(_) => {
                    return Err(Error::Protocol(format!(
                        "readSpilled made no progress at offset {offset} of {}",
                        spilled.id
                    )));
                }
                None => break,
            }
        }
        serde_json::from_str(&text).map_err(|err| {
            Error::Protocol(format!(
                "the spilled answer {} ({} bytes) is not JSON: {err}",
                spilled.id,
                text.len()
            ))
        })
    }

    /// Any method, with raw JSON params and result: for the methods without a typed helper
    /// (`health`, `listResources`, `mintToken`, ...) and for those a newer daemon adds. Bounded
    /// by the client's timeout (default 30 s).
    ///
    /// ```no_run
    /// # async fn example(client: &mut tool_cli::Client) -> Result<(), tool_cli::Error> {
    /// let health = client.call("health", None).await?;
    /// let resources = client
    ///     .call("listResources", Some(serde_json::json!({"server": "demo"})))
    ///     .await?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn call(&mut self, method: &str, params: Option<Value>) -> Result<Value, Error> {
        self.handshake().await?;
        let timeout = self.request_timeout();
        let outcome = self.send(method, params, timeout).await;
        outcome.map_err(|error| self.lacking_method(method, error))
    }

    /// [`Client::call`] with its own bound, for a method known to take longer than a request
    /// usually does (`restartServer` waits for the new connection to settle).
    pub async fn call_with_timeout(
        &mut self,
        method: &str,
        params: Option<Value>,
        timeout: Duration,
    ) -> Result<Value, Error> {
        self.handshake().await?;
        let timeout = timeout.max(self.request_timeout());
        let outcome = self.send(method, params, timeout).await;
        outcome.map_err(|error| self.lacking_method(method, error))
    }

    /// The handshake's `serverImplementation` as `name version`, once it was made (a vouched
    /// daemon makes none: it is ours).
    fn implementation(&self) -> Option<String> {
        let implementation = self.bridge_info.as_ref()?.get("serverImplementation")?;
        let name = implementation.get("name")?.as_str()?;
        let version = implementation
            .get("version")
            .and_then(Value::as_str)
            .unwrap_or("");
        Some(format!("{name} {version}").trim_end().to_owned())
    }

    /// Whether the bridge is known to be tool-cli-daemon: its id vouched for it, or its
    /// handshake names it. Only ours enforces `timeoutMs` and serves our own methods.
    fn is_tool_cli_daemon(&self) -> bool {
        self.vouched == Some(true)
            || self
                .bridge_info
                .as_ref()
                .and_then(|info| info.pointer("/serverImplementation/name"))
                .and_then(Value::as_str)
                == Some(tool_cli_protocol::IMPLEMENTATION_NAME)
    }

    /// A "method not found" from a bridge that is not tool-cli-daemon, said as such: it is
    /// another program, not an older daemon. Anything else passes through.
    fn lacking_method(&self, method: &str, error: Error) -> Error {
        match (&error, self.implementation()) {
            (Error::Rpc { error: rpc, .. }, Some(implementation))
                if rpc.code == tool_cli_protocol::code::METHOD_NOT_FOUND
                    && !self.is_tool_cli_daemon() =>
            {
                Error::BridgeLacksMethod {
                    address: self.address(),
                    implementation,
                    method: method.to_owned(),
                }
            }
            _ => error,
        }
    }

    fn request_timeout(&self) -> Duration {
        self.timeout
            .unwrap_or(Duration::from_millis(DEFAULT_TIMEOUT_MS))
    }

    /// Connects, proves the identity and checks `getBridgeInfo`, once per client: only
    /// `tool-cli-bridge` major 1 is spoken here. Only `bridgeProtocol` is read, so that a bridge
    /// with fewer or more capabilities than ours is still accepted.
    ///
    /// A daemon whose id vouches for it ([`crate::vouch`]) is known to speak our protocol major:
    /// the handshake is skipped, and `getBridgeInfo` is asked only by [`Client::bridge_info`].
    async fn handshake(&mut self) -> Result<(), Error> {
        if self.bridge_info.is_some() || self.is_vouched() {
            return Ok(());
        }
        self.fetch_bridge_info().await
    }

    /// Whether the endpoint's daemon id names a live daemon at its address.
    fn is_vouched(&mut self) -> bool {
        *self.vouched.get_or_insert_with(|| {
            self.endpoint.daemon_id.as_deref().is_some_and(|id| {
                crate::vouch::vouches(id, &self.endpoint.target, |path| {
                    std::fs::read_to_string(path)
                })
            })
        })
    }

    /// `getBridgeInfo`, checked: only `tool-cli-bridge` major 1 is spoken here.
    async fn fetch_bridge_info(&mut self) -> Result<(), Error> {
        let timeout = self.request_timeout();
        let info = self.send(name::GET_BRIDGE_INFO, None, timeout).await?;
        let protocol = info.get("bridgeProtocol").cloned().unwrap_or(Value::Null);
        let name = protocol
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("(unnamed)")
            .to_owned();
        let major = protocol.get("major").and_then(Value::as_u64).unwrap_or(0);
        if name != BRIDGE_PROTOCOL_NAME || major != u64::from(BRIDGE_PROTOCOL_MAJOR) {
            return Err(Error::IncompatibleBridge { name, major });
        }
        // Also accept it as our wire type, to catch a malformed bridgeProtocol early.
        serde_json::from_value::<tool_cli_protocol::methods::BridgeProtocol>(protocol).map_err(
            |error| {
                Error::Protocol(format!(
                    "getBridgeInfo.bridgeProtocol is malformed: {error}"
                ))
            },
        )?;
        self.bridge_info = Some(info);
        Ok(())
    }

    /// One request on the link, opening it first when there is none.
    async fn send(
        &mut self,
        method: &str,
        params: Option<Value>,
        timeout: Duration,
    ) -> Result<Value, Error> {
        // The link is taken out of `self` for the request: if this future is dropped mid-way,
        // the link is dropped with it, which closes the connection and so cancels the request
        // in the daemon, and no half-used connection is left behind for the next request.
        let mut link = match self.link.take() {
            // A connection the daemon closed while it was idle is replaced, not reported: no
            // request was lost, and a long-lived client must outlive the daemon's idle timeout.
            Some(link) if !link.is_closed() => link,
            _ => {
                let vouched = self.is_vouched();
                Link::connect(
                    &self.endpoint,
                    (
                        CONNECT_TIMEOUT.min(self.request_timeout()),
                        self.request_timeout(),
                    ),
                    self.require_identity,
                    vouched,
                    self.blocking,
                )
                .await?
            }
        };
        let outcome = link.call(method, params, timeout).await;
        // After a timeout or a broken connection the link still carries the abandoned request:
        // it is dropped (which cancels that request) and the next request opens a new one.
        if !matches!(
            outcome,
            Err(Error::Timeout { .. } | Error::Transport(_) | Error::ClosedUnanswered { .. })
        ) {
            self.link = Some(link);
        }
        outcome
    }
}

/// One tool call for [`Client::call_tool`]: server, tool, arguments and options.
///
/// ```
/// use std::time::Duration;
/// use tool_cli::ToolCall;
///
/// let call = ToolCall::new("fs", "delete_file")
///     .arguments(serde_json::json!({"path": "/tmp/x"}))
///     .timeout(Duration::from_secs(10))
///     .confirm();
/// # let _ = call;
/// ```
#[derive(Debug, Clone)]
pub struct ToolCall {
    server: String,
    tool: String,
    arguments: Value,
    timeout: Option<Duration>,
    confirm: bool,
    dry_run: bool,
    session: Option<String>,
    hint: Option<String>,
    idempotency_key: Option<String>,
    progress_id: Option<String>,
}

impl ToolCall {
    /// A call of `tool` on `server` with no arguments (`{}`). A server of `"*"` lets the daemon
    /// route the call (see [`ToolCall::routed`]).
    pub fn new(server: impl Into<String>, tool: impl Into<String>) -> ToolCall {
        ToolCall {
            server: server.into(),
            tool: tool.into(),
            arguments: Value::Object(Map::new()),
            timeout: None,
            confirm: false,
            dry_run: false,
            session: None,
            hint: None,
            idempotency_key: None,
            progress_id: None,
        }
    }

    /// A call of `tool` on whichever server the daemon's routing picks among those offering it;
    /// the result's `_meta["tool-cli/selection"]` says which and why.
    pub fn routed(tool: impl Into<String>) -> ToolCall {
        ToolCall::new("*", tool)
    }

    /// Explains the call without making it: the answer says which server would take it, with
    /// which arguments, and what would refuse it (`dryRun`).
    pub fn dry_run(mut self) -> ToolCall {
        self.dry_run = true;
        self
    }

    /// Makes the call in this session (`sessionId`): its task and history inform routing, its
    /// guards apply, and its summary counts the call.
    pub fn session(mut self, session_id: impl Into<String>) -> ToolCall {
        self.session = Some(session_id.into());
        self
    }

    /// Words for routing: a server or tag this call means, or what it is for.
    pub fn hint(mut self, hint: impl Into<String>) -> ToolCall {
        self.hint = Some(hint.into());
        self
    }

    /// A key under which the daemon answers a repeat of this call without running it again.
    pub fn idempotency_key(mut self, key: impl Into<String>) -> ToolCall {
        self.idempotency_key = Some(key.into());
        self
    }

    /// Asks for the call's progress and its server's log messages under this name
    /// (`progressId`, 1-128 characters, fresh for each call): read them with the `callEvents`
    /// method on another client of the same token while the call runs.
    pub fn progress_id(mut self, progress_id: impl Into<String>) -> ToolCall {
        self.progress_id = Some(progress_id.into());
        self
    }

    /// The arguments: a JSON object, validated by the daemon against the tool's input schema.
    pub fn arguments(mut self, arguments: Value) -> ToolCall {
        self.arguments = arguments;
        self
    }

    /// This call's timeout, sent as `timeoutMs` (at most 300 s) instead of the client's or the
    /// server's.
    pub fn timeout(mut self, timeout: Duration) -> ToolCall {
        self.timeout = Some(timeout);
        self
    }

    /// Confirms a destructive tool (`"confirm": true`); without it the daemon refuses one with
    /// `-32006 confirmationRequired`.
    pub fn confirm(mut self) -> ToolCall {
        self.confirm = true;
        self
    }
}

fn to_params<T: serde::Serialize>(params: &T) -> Result<Value, Error> {
    serde_json::to_value(params)
        .map_err(|error| Error::Other(format!("cannot encode the params: {error}")))
}

/// Deserializes a result into its wire type.
pub(crate) fn parse_result<T: serde::de::DeserializeOwned>(
    method: &str,
    result: Value,
) -> Result<T, Error> {
    serde_json::from_value(result)
        .map_err(|error| Error::Protocol(format!("the result of {method} is malformed: {error}")))
}

#[cfg(test)]
mod tests;
