//! The spans the daemon emits, built from plain values (pure: no clock, no I/O).
//!
//! | operation | builder | kind | name |
//! |---|---|---|---|
//! | a JSON-RPC request the daemon received | [`daemon_request`] | SERVER | `tools/call {tool}` for `callTool` (MCP server span), else the method (`runAgent`) |
//! | a request to an upstream MCP server | [`mcp_client`] | CLIENT | `{mcp.method.name} {target}` |
//! | the agent's tool call | [`tool_execution`] | INTERNAL | `execute_tool {tool}` |
//! | an agent run | [`agent_run`] | INTERNAL | `invoke_agent {agent}` |
//! | a model call | [`chat`] | CLIENT (INTERNAL for the in-process planner) | `chat {model}` |
//!
//! When the agent calls a tool, the upstream MCP request is described by the `execute_tool`
//! span itself (the MCP conventions: no second span where an outer GenAI instrumentation traces
//! the tool execution); its MCP facts are added to that span through [`ToolExecution::upstream`].
//!
//! Parents come from the [`SpanIds`] the daemon chose when the work began. Every failure sets
//! `error.type` (the JSON-RPC code, `tool_error` for `isError`, or a low-cardinality type) and an
//! `ERROR` status whose description is the redacted message.

use serde_json::Value;

use crate::context::SpanIds;
use crate::redact::ContentPolicy;
use crate::semconv::{gen_ai, general, mcp, rpc, tool_cli, values};
use crate::span::{Attribute, AttributeValue, SpanKind, SpanRecord, Status, Timing};

/// How the daemon reaches an MCP server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// A child process over stdin/stdout: `network.transport=pipe`.
    Stdio,
    /// Streamable HTTP: `network.transport=tcp`, `network.protocol.name=http`.
    Http,
}

impl Transport {
    fn network_transport(self) -> &'static str {
        match self {
            Transport::Stdio => values::TRANSPORT_PIPE,
            Transport::Http => values::TRANSPORT_TCP,
        }
    }
}

/// How the daemon's own endpoint was reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Listener {
    /// A TCP port on loopback: `network.transport=tcp`.
    Tcp,
    /// A Unix socket: `network.transport=unix`.
    Unix,
}

/// What an MCP method acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Target<'a> {
    /// Nothing in particular (`tools/list`).
    #[default]
    None,
    /// A tool: `gen_ai.tool.name`, and the span name's target.
    Tool(&'a str),
    /// A prompt: `gen_ai.prompt.name`, and the span name's target.
    Prompt(&'a str),
    /// A resource: `mcp.resource.uri` (never in the span name: high cardinality).
    Resource(&'a str),
}

impl<'a> Target<'a> {
    /// The low-cardinality target for a span name, if any.
    fn name_part(self) -> Option<&'a str> {
        match self {
            Target::Tool(name) | Target::Prompt(name) => Some(name),
            Target::None | Target::Resource(_) => None,
        }
    }
}

/// How an operation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome<'a> {
    /// It succeeded.
    Ok,
    /// A `tools/call` answered with `isError: true`: `error.type=tool_error`.
    ToolError,
    /// A JSON-RPC error answer: `error.type` and `rpc.response.status_code` are its code.
    RpcError {
        /// The JSON-RPC code.
        code: i64,
        /// The message (redacted before it goes on the status).
        message: &'a str,
        /// The daemon's `kind` tag (`breakerOpen`), as `tool_cli.error.kind`.
        kind: Option<&'a str>,
    },
    /// It failed without a JSON-RPC answer (a timeout, a transport error, a model's HTTP
    /// status): `error_type` is low-cardinality (`timeout`, `500`).
    Failed {
        /// The `error.type`.
        error_type: &'a str,
        /// The message (redacted before it goes on the status).
        message: &'a str,
    },
}

/// The project's extras (`tool_cli.*`); every member is optional.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct CallExtras<'a> {
    /// The configured server.
    pub server: Option<&'a str>,
    /// The caller's tool-cli session.
    pub session_id: Option<&'a str>,
    /// The routing rule that chose the server.
    pub selection_rule: Option<&'a str>,
    /// Attempts sent upstream.
    pub attempts: Option<u32>,
    /// Why the last retry happened.
    pub retry_reason: Option<&'a str>,
    /// Cost in US dollars.
    pub cost_usd: Option<f64>,
    /// The daemon's call id.
    pub call_id: Option<&'a str>,
    /// The step of a chain or fan-out.
    pub step: Option<u32>,
    /// A cached result was served.
    pub degraded: bool,
    /// Nothing was sent (a dry-run).
    pub dry_run: bool,
}

/// A tool call's arguments and result, captured only under [`ContentPolicy::capture`].
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Content<'a> {
    /// The arguments.
    pub arguments: Option<&'a Value>,
    /// The result (captured only when the call succeeded, as the conventions say).
    pub result: Option<&'a Value>,
}

/// The MCP facts of a request to an upstream server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Upstream<'a> {
    /// `tools/call`, `tools/list`, `prompts/get`, …
    pub method: &'a str,
    /// What it acts on.
    pub target: Target<'a>,
    /// The JSON-RPC id the daemon sent, as text (`None` for a notification).
    pub request_id: Option<&'a str>,
    /// The negotiated MCP version.
    pub protocol_version: Option<&'a str>,
    /// The Streamable HTTP session (`Mcp-Session-Id`).
    pub mcp_session_id: Option<&'a str>,
    /// How the server is reached.
    pub transport: Transport,
    /// The server's host, for an HTTP server.
    pub server_address: Option<&'a str>,
    /// The server's port, for an HTTP server.
    pub server_port: Option<u16>,
}

/// A JSON-RPC request the daemon received.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DaemonRequest<'a> {
    /// The daemon's method (`callTool`).
    pub method: &'a str,
    /// The request's id, as text (`None` for a null id).
    pub request_id: Option<&'a str>,
    /// What it acts on (the tool of `callTool`, the prompt of `getPrompt`).
    pub target: Target<'a>,
    /// How the daemon was reached.
    pub listener: Listener,
    /// How it ended.
    pub outcome: Outcome<'a>,
    /// When.
    pub timing: Timing,
    /// Extras.
    pub extras: CallExtras<'a>,
    /// Arguments and result (opt-in).
    pub content: Content<'a>,
}

/// A request to an upstream MCP server.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct McpClientCall<'a> {
    /// The MCP facts.
    pub upstream: Upstream<'a>,
    /// How it ended.
    pub outcome: Outcome<'a>,
    /// When (covering its attempts).
    pub timing: Timing,
    /// Extras.
    pub extras: CallExtras<'a>,
    /// Arguments and result (opt-in).
    pub content: Content<'a>,
}

/// A tool call of the agent.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ToolExecution<'a> {
    /// The tool.
    pub tool: &'a str,
    /// The model's id of the call.
    pub tool_call_id: Option<&'a str>,
    /// The upstream MCP request that carried it, when one was sent; its facts go on this span
    /// (no separate MCP span).
    pub upstream: Option<Upstream<'a>>,
    /// How it ended.
    pub outcome: Outcome<'a>,
    /// When.
    pub timing: Timing,
    /// Extras.
    pub extras: CallExtras<'a>,
    /// Arguments and result (opt-in).
    pub content: Content<'a>,
}

/// Tokens of one model call or a whole run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TokenUsage {
    /// Input tokens, cached ones included.
    pub input: Option<u64>,
    /// Output tokens.
    pub output: Option<u64>,
    /// Input tokens read from the provider's cache.
    pub cache_read: Option<u64>,
    /// Input tokens written to the provider's cache.
    pub cache_creation: Option<u64>,
}

/// An agent run (`runAgent`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AgentRun<'a> {
    /// The agent's name, when it has one (the span is `invoke_agent {name}`).
    pub agent_name: Option<&'a str>,
    /// The provider of its model (`openai`, `anthropic`, `tool_cli.planner`).
    pub provider: &'a str,
    /// The model asked for.
    pub request_model: Option<&'a str>,
    /// The conversation: the tool-cli session when the run has one, else the run id.
    pub conversation_id: Option<&'a str>,
    /// The run's id.
    pub run_id: Option<&'a str>,
    /// Tokens of the whole run.
    pub usage: TokenUsage,
    /// Tool calls made.
    pub tool_calls: Option<u32>,
    /// Cost of the whole run, in US dollars.
    pub cost_usd: Option<f64>,
    /// How it ended.
    pub outcome: Outcome<'a>,
    /// When.
    pub timing: Timing,
}

/// One call of a model.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChatCall<'a> {
    /// `openai`, `anthropic`, or `tool_cli.planner` for the offline planner.
    pub provider: &'a str,
    /// The model asked for.
    pub request_model: &'a str,
    /// The model that answered.
    pub response_model: Option<&'a str>,
    /// The provider's id of the completion.
    pub response_id: Option<&'a str>,
    /// Why the model stopped.
    pub finish_reasons: &'a [&'a str],
    /// Tokens.
    pub usage: TokenUsage,
    /// The model runs in this process (the offline planner): kind INTERNAL.
    pub in_process: bool,
    /// Whether the reply streamed.
    pub streaming: bool,
    /// The output cap asked for.
    pub max_tokens: Option<u64>,
    /// The provider's host.
    pub server_address: Option<&'a str>,
    /// The provider's port.
    pub server_port: Option<u16>,
    /// The conversation (as on the agent run).
    pub conversation_id: Option<&'a str>,
    /// Cost of this call, in US dollars.
    pub cost_usd: Option<f64>,
    /// How it ended.
    pub outcome: Outcome<'a>,
    /// When.
    pub timing: Timing,
}

/// Accumulates a span's attributes.
struct Attributes(Vec<Attribute>);

impl Attributes {
    fn with_capacity(capacity: usize) -> Attributes {
        Attributes(Vec::with_capacity(capacity))
    }

    fn text(&mut self, key: &'static str, value: &str) {
        self.0.push(Attribute {
            key,
            value: AttributeValue::String(value.to_owned()),
        });
    }

    fn optional_text(&mut self, key: &'static str, value: Option<&str>) {
        if let Some(value) = value {
            self.text(key, value);
        }
    }

    fn int(&mut self, key: &'static str, value: i64) {
        self.0.push(Attribute {
            key,
            value: AttributeValue::Int(value),
        });
    }

    fn optional_count(&mut self, key: &'static str, value: Option<u64>) {
        if let Some(value) = value {
            self.int(key, i64::try_from(value).unwrap_or(i64::MAX));
        }
    }

    fn double(&mut self, key: &'static str, value: f64) {
        self.0.push(Attribute {
            key,
            value: AttributeValue::Double(value),
        });
    }

    fn flag(&mut self, key: &'static str, value: bool) {
        self.0.push(Attribute {
            key,
            value: AttributeValue::Bool(value),
        });
    }

    fn target(&mut self, target: Target<'_>) {
        match target {
            Target::None => {}
            Target::Tool(name) => self.text(gen_ai::TOOL_NAME, name),
            Target::Prompt(name) => self.text(gen_ai::PROMPT_NAME, name),
            Target::Resource(uri) => self.text(mcp::RESOURCE_URI, uri),
        }
    }

    fn upstream(&mut self, upstream: &Upstream<'_>, with_target: bool) {
        self.text(mcp::METHOD_NAME, upstream.method);
        if with_target {
            self.target(upstream.target);
        }
        self.optional_text(rpc::JSONRPC_REQUEST_ID, upstream.request_id);
        self.optional_text(mcp::PROTOCOL_VERSION, upstream.protocol_version);
        self.optional_text(mcp::SESSION_ID, upstream.mcp_session_id);
        self.text(
            general::NETWORK_TRANSPORT,
            upstream.transport.network_transport(),
        );
        if upstream.transport == Transport::Http {
            self.text(general::NETWORK_PROTOCOL_NAME, "http");
        }
        self.optional_text(general::SERVER_ADDRESS, upstream.server_address);
        if let Some(port) = upstream.server_port {
            self.int(general::SERVER_PORT, i64::from(port));
        }
    }

    fn extras(&mut self, extras: &CallExtras<'_>) {
        self.optional_text(tool_cli::SERVER, extras.server);
        self.optional_text(tool_cli::SESSION_ID, extras.session_id);
        self.optional_text(tool_cli::SELECTION_RULE, extras.selection_rule);
        if let Some(attempts) = extras.attempts {
            self.int(tool_cli::ATTEMPTS, i64::from(attempts));
        }
        self.optional_text(tool_cli::RETRY_REASON, extras.retry_reason);
        if let Some(cost) = extras.cost_usd {
            self.double(tool_cli::COST_USD, cost);
        }
        self.optional_text(tool_cli::CALL_ID, extras.call_id);
        if let Some(step) = extras.step {
            self.int(tool_cli::STEP, i64::from(step));
        }
        if extras.degraded {
            self.flag(tool_cli::DEGRADED, true);
        }
        if extras.dry_run {
            self.flag(tool_cli::DRY_RUN, true);
        }
    }

    fn content(&mut self, content: &Content<'_>, outcome: Outcome<'_>, policy: &ContentPolicy) {
        if let Some(arguments) = policy.capture(content.arguments) {
            self.text(gen_ai::TOOL_CALL_ARGUMENTS, &arguments);
        }
        // The conventions capture a result only when the call succeeded.
        if outcome == Outcome::Ok
            && let Some(result) = policy.capture(content.result)
        {
            self.text(gen_ai::TOOL_CALL_RESULT, &result);
        }
    }

    fn usage(&mut self, usage: &TokenUsage) {
        self.optional_count(gen_ai::USAGE_INPUT_TOKENS, usage.input);
        self.optional_count(gen_ai::USAGE_OUTPUT_TOKENS, usage.output);
        self.optional_count(gen_ai::USAGE_CACHE_READ_INPUT_TOKENS, usage.cache_read);
        self.optional_count(
            gen_ai::USAGE_CACHE_CREATION_INPUT_TOKENS,
            usage.cache_creation,
        );
    }

    /// Sets `error.type` (and the code and kind) and returns the span's status.
    fn outcome(&mut self, outcome: Outcome<'_>, policy: &ContentPolicy) -> Status {
        match outcome {
            Outcome::Ok => Status::Unset,
            Outcome::ToolError => {
                self.text(general::ERROR_TYPE, values::TOOL_ERROR);
                Status::Error("the tool answered with isError: true".to_owned())
            }
            Outcome::RpcError {
                code,
                message,
                kind,
            } => {
                let code = code.to_string();
                self.text(general::ERROR_TYPE, &code);
                self.text(rpc::RESPONSE_STATUS_CODE, &code);
                self.optional_text(tool_cli::ERROR_KIND, kind);
                Status::Error(policy.message(message))
            }
            Outcome::Failed {
                error_type,
                message,
            } => {
                let error_type = if error_type.is_empty() {
                    values::OTHER_ERROR
                } else {
                    error_type
                };
                self.text(general::ERROR_TYPE, error_type);
                Status::Error(policy.message(message))
            }
        }
    }
}

fn span_name(operation: &str, target: Option<&str>) -> String {
    match target {
        Some(target) if !target.is_empty() => {
            let mut name = String::with_capacity(operation.len() + 1 + target.len());
            name.push_str(operation);
            name.push(' ');
            name.push_str(target);
            name
        }
        _ => operation.to_owned(),
    }
}

fn record(
    ids: &SpanIds,
    name: String,
    kind: SpanKind,
    timing: Timing,
    attributes: Attributes,
    status: Status,
) -> SpanRecord {
    let (start_unix_nanos, end_unix_nanos) = timing.unix_nanos();
    SpanRecord {
        name,
        kind,
        trace_id: ids.context.trace_id,
        span_id: ids.context.span_id,
        parent_span_id: ids.parent_span_id,
        trace_state: ids.context.trace_state.clone(),
        sampled: ids.context.sampled,
        start_unix_nanos,
        end_unix_nanos,
        attributes: attributes.0,
        status,
    }
}

/// The SERVER span of a JSON-RPC request to the daemon. A method with an MCP equivalent
/// (`callTool` → `tools/call`) is named and attributed as the MCP conventions name an MCP
/// server span (`tools/call get-weather`), keeping `rpc.method=callTool`; the others follow the
/// JSON-RPC conventions (named by the method).
pub fn daemon_request(
    ids: &SpanIds,
    request: &DaemonRequest<'_>,
    policy: &ContentPolicy,
) -> SpanRecord {
    let mut attributes = Attributes::with_capacity(16);
    attributes.text(rpc::SYSTEM_NAME, values::JSONRPC);
    attributes.text(rpc::METHOD, request.method);
    attributes.text(rpc::JSONRPC_PROTOCOL_VERSION, "2.0");
    attributes.optional_text(rpc::JSONRPC_REQUEST_ID, request.request_id);
    let mcp_method = crate::semconv::mcp_method_of_daemon_method(request.method);
    if let Some(mcp_method) = mcp_method {
        attributes.text(mcp::METHOD_NAME, mcp_method);
        if mcp_method == values::MCP_TOOLS_CALL {
            attributes.text(gen_ai::OPERATION_NAME, values::OPERATION_EXECUTE_TOOL);
        }
    }
    attributes.target(request.target);
    attributes.text(
        general::NETWORK_TRANSPORT,
        match request.listener {
            Listener::Tcp => values::TRANSPORT_TCP,
            Listener::Unix => values::TRANSPORT_UNIX,
        },
    );
    attributes.text(general::NETWORK_PROTOCOL_NAME, "http");
    attributes.extras(&request.extras);
    attributes.content(&request.content, request.outcome, policy);
    let status = attributes.outcome(request.outcome, policy);
    let name = match mcp_method {
        Some(mcp_method) => span_name(mcp_method, request.target.name_part()),
        None => request.method.to_owned(),
    };
    record(
        ids,
        name,
        SpanKind::Server,
        request.timing,
        attributes,
        status,
    )
}

/// The CLIENT span of a request to an upstream MCP server: `{mcp.method.name} {target}`.
pub fn mcp_client(ids: &SpanIds, call: &McpClientCall<'_>, policy: &ContentPolicy) -> SpanRecord {
    let mut attributes = Attributes::with_capacity(16);
    attributes.upstream(&call.upstream, true);
    if call.upstream.method == values::MCP_TOOLS_CALL {
        attributes.text(gen_ai::OPERATION_NAME, values::OPERATION_EXECUTE_TOOL);
    }
    attributes.extras(&call.extras);
    attributes.content(&call.content, call.outcome, policy);
    let status = attributes.outcome(call.outcome, policy);
    let name = span_name(call.upstream.method, call.upstream.target.name_part());
    record(ids, name, SpanKind::Client, call.timing, attributes, status)
}

/// The INTERNAL `execute_tool {tool}` span of an agent's tool call, carrying the upstream
/// request's MCP attributes when one was sent.
pub fn tool_execution(
    ids: &SpanIds,
    execution: &ToolExecution<'_>,
    policy: &ContentPolicy,
) -> SpanRecord {
    let mut attributes = Attributes::with_capacity(18);
    attributes.text(gen_ai::OPERATION_NAME, values::OPERATION_EXECUTE_TOOL);
    attributes.text(gen_ai::TOOL_TYPE, values::TOOL_TYPE_FUNCTION);
    // The tool as the agent named it; the upstream request's own target would repeat it.
    attributes.text(gen_ai::TOOL_NAME, execution.tool);
    if let Some(upstream) = &execution.upstream {
        attributes.upstream(upstream, false);
    }
    attributes.optional_text(gen_ai::TOOL_CALL_ID, execution.tool_call_id);
    attributes.extras(&execution.extras);
    attributes.content(&execution.content, execution.outcome, policy);
    let status = attributes.outcome(execution.outcome, policy);
    record(
        ids,
        span_name(values::OPERATION_EXECUTE_TOOL, Some(execution.tool)),
        SpanKind::Internal,
        execution.timing,
        attributes,
        status,
    )
}

/// The INTERNAL `invoke_agent {name}` span of an agent run (the agent runs in the daemon).
pub fn agent_run(ids: &SpanIds, run: &AgentRun<'_>, policy: &ContentPolicy) -> SpanRecord {
    let mut attributes = Attributes::with_capacity(14);
    attributes.text(gen_ai::OPERATION_NAME, values::OPERATION_INVOKE_AGENT);
    attributes.text(gen_ai::PROVIDER_NAME, run.provider);
    attributes.optional_text(gen_ai::AGENT_NAME, run.agent_name);
    attributes.optional_text(gen_ai::REQUEST_MODEL, run.request_model);
    attributes.optional_text(gen_ai::CONVERSATION_ID, run.conversation_id);
    attributes.optional_text(tool_cli::RUN_ID, run.run_id);
    attributes.usage(&run.usage);
    if let Some(calls) = run.tool_calls {
        attributes.int(tool_cli::TOOL_CALLS, i64::from(calls));
    }
    if let Some(cost) = run.cost_usd {
        attributes.double(tool_cli::COST_USD, cost);
    }
    let status = attributes.outcome(run.outcome, policy);
    record(
        ids,
        span_name(values::OPERATION_INVOKE_AGENT, run.agent_name),
        SpanKind::Internal,
        run.timing,
        attributes,
        status,
    )
}

/// The `chat {model}` span of a model call: CLIENT for a provider over HTTP, INTERNAL for the
/// in-process planner.
pub fn chat(ids: &SpanIds, call: &ChatCall<'_>, policy: &ContentPolicy) -> SpanRecord {
    let mut attributes = Attributes::with_capacity(16);
    attributes.text(gen_ai::OPERATION_NAME, values::OPERATION_CHAT);
    attributes.text(gen_ai::PROVIDER_NAME, call.provider);
    attributes.text(gen_ai::REQUEST_MODEL, call.request_model);
    attributes.optional_text(gen_ai::RESPONSE_MODEL, call.response_model);
    attributes.optional_text(gen_ai::RESPONSE_ID, call.response_id);
    if !call.finish_reasons.is_empty() {
        attributes.0.push(Attribute {
            key: gen_ai::RESPONSE_FINISH_REASONS,
            value: AttributeValue::StringArray(
                call.finish_reasons
                    .iter()
                    .map(|reason| (*reason).to_owned())
                    .collect(),
            ),
        });
    }
    attributes.optional_count(gen_ai::REQUEST_MAX_TOKENS, call.max_tokens);
    if call.streaming {
        attributes.flag(gen_ai::REQUEST_STREAM, true);
    }
    attributes.usage(&call.usage);
    attributes.optional_text(gen_ai::CONVERSATION_ID, call.conversation_id);
    attributes.optional_text(general::SERVER_ADDRESS, call.server_address);
    if let Some(port) = call.server_port {
        attributes.int(general::SERVER_PORT, i64::from(port));
    }
    if let Some(cost) = call.cost_usd {
        attributes.double(tool_cli::COST_USD, cost);
    }
    let status = attributes.outcome(call.outcome, policy);
    record(
        ids,
        span_name(values::OPERATION_CHAT, Some(call.request_model)),
        if call.in_process {
            SpanKind::Internal
        } else {
            SpanKind::Client
        },
        call.timing,
        attributes,
        status,
    )
}

#[cfg(test)]
mod tests;
