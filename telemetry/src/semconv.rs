//! The names the daemon's spans and metrics use, from the OpenTelemetry semantic conventions for
//! MCP, GenAI and JSON-RPC (status: Development, kept in the `semantic-conventions-genai`
//! repository), plus the project's own `tool_cli.*` extras.
//!
//! One constant per name, so a typo is a compile error and `docs/observability.md` can list them
//! from one place. The conventions were read at `semantic-conventions-genai` `docs/gen-ai/mcp.md`,
//! `gen-ai-spans.md`, `gen-ai-agent-spans.md` and `gen-ai-metrics.md`, and the JSON-RPC page of
//! the main conventions (`rpc.system.name`, `rpc.response.status_code`).

/// The `tool_cli.*` namespace: facts of ours that no convention names.
pub mod tool_cli {
    /// The configured name of the MCP server a call went to (or would have gone to).
    pub const SERVER: &str = "tool_cli.server";
    /// The caller's tool-cli session (not an MCP session).
    pub const SESSION_ID: &str = "tool_cli.session.id";
    /// How the server was chosen: `named`, `explicit-mention`, `argument-type`, …
    pub const SELECTION_RULE: &str = "tool_cli.selection.rule";
    /// Attempts sent upstream (retries included).
    pub const ATTEMPTS: &str = "tool_cli.attempts";
    /// Why the last retry happened.
    pub const RETRY_REASON: &str = "tool_cli.retry.reason";
    /// Cost attributed to the operation, in US dollars.
    pub const COST_USD: &str = "tool_cli.cost_usd";
    /// The daemon's call id.
    pub const CALL_ID: &str = "tool_cli.call.id";
    /// The step of a chain or fan-out this call is.
    pub const STEP: &str = "tool_cli.step";
    /// A cached result was served instead of a live one.
    pub const DEGRADED: &str = "tool_cli.degraded";
    /// The daemon's error kind tag (`breakerOpen`, `timeout`, …), beside the numeric `error.type`.
    pub const ERROR_KIND: &str = "tool_cli.error.kind";
    /// A dry-run: nothing was sent.
    pub const DRY_RUN: &str = "tool_cli.dry_run";
    /// The agent run's id.
    pub const RUN_ID: &str = "tool_cli.run.id";
    /// Agent tool calls in the run.
    pub const TOOL_CALLS: &str = "tool_cli.tool_calls";
}

/// `mcp.*` attributes.
pub mod mcp {
    /// The request or notification method (`tools/call`).
    pub const METHOD_NAME: &str = "mcp.method.name";
    /// The MCP protocol version negotiated (`2025-06-18`).
    pub const PROTOCOL_VERSION: &str = "mcp.protocol.version";
    /// The MCP session (Streamable HTTP `Mcp-Session-Id`).
    pub const SESSION_ID: &str = "mcp.session.id";
    /// The resource read (never in a span name by default: high cardinality).
    pub const RESOURCE_URI: &str = "mcp.resource.uri";
}

/// `gen_ai.*` attributes.
pub mod gen_ai {
    /// `chat`, `execute_tool`, `invoke_agent`.
    pub const OPERATION_NAME: &str = "gen_ai.operation.name";
    /// `openai`, `anthropic`, …
    pub const PROVIDER_NAME: &str = "gen_ai.provider.name";
    /// The model asked for.
    pub const REQUEST_MODEL: &str = "gen_ai.request.model";
    /// The model that answered.
    pub const RESPONSE_MODEL: &str = "gen_ai.response.model";
    /// The provider's id of the completion.
    pub const RESPONSE_ID: &str = "gen_ai.response.id";
    /// Why the model stopped, per choice.
    pub const RESPONSE_FINISH_REASONS: &str = "gen_ai.response.finish_reasons";
    /// The request's output cap.
    pub const REQUEST_MAX_TOKENS: &str = "gen_ai.request.max_tokens";
    /// Whether the request streamed.
    pub const REQUEST_STREAM: &str = "gen_ai.request.stream";
    /// Input tokens (cached ones included).
    pub const USAGE_INPUT_TOKENS: &str = "gen_ai.usage.input_tokens";
    /// Output tokens.
    pub const USAGE_OUTPUT_TOKENS: &str = "gen_ai.usage.output_tokens";
    /// Input tokens served from the provider's cache.
    pub const USAGE_CACHE_READ_INPUT_TOKENS: &str = "gen_ai.usage.cache_read.input_tokens";
    /// Input tokens written to the provider's cache.
    pub const USAGE_CACHE_CREATION_INPUT_TOKENS: &str = "gen_ai.usage.cache_creation.input_tokens";
    /// The conversation (session, thread, run) the operation belongs to.
    pub const CONVERSATION_ID: &str = "gen_ai.conversation.id";
    /// The agent's name.
    pub const AGENT_NAME: &str = "gen_ai.agent.name";
    /// The agent's id.
    pub const AGENT_ID: &str = "gen_ai.agent.id";
    /// The tool's name.
    pub const TOOL_NAME: &str = "gen_ai.tool.name";
    /// The model's id of the tool call.
    pub const TOOL_CALL_ID: &str = "gen_ai.tool.call.id";
    /// `function` for the tools the agent calls.
    pub const TOOL_TYPE: &str = "gen_ai.tool.type";
    /// Opt-in: the tool call's arguments (JSON text, redacted).
    pub const TOOL_CALL_ARGUMENTS: &str = "gen_ai.tool.call.arguments";
    /// Opt-in: the tool call's result (JSON text, redacted).
    pub const TOOL_CALL_RESULT: &str = "gen_ai.tool.call.result";
    /// The prompt's name.
    pub const PROMPT_NAME: &str = "gen_ai.prompt.name";
    /// `input` or `output`, on `gen_ai.client.token.usage`.
    pub const TOKEN_TYPE: &str = "gen_ai.token.type";
}

/// JSON-RPC and RPC attributes.
pub mod rpc {
    /// `jsonrpc` for the daemon's own requests.
    pub const SYSTEM_NAME: &str = "rpc.system.name";
    /// The daemon's method (`callTool`).
    pub const METHOD: &str = "rpc.method";
    /// The JSON-RPC error code, as a string.
    pub const RESPONSE_STATUS_CODE: &str = "rpc.response.status_code";
    /// The request id, as a string (never for a notification or a null id).
    pub const JSONRPC_REQUEST_ID: &str = "jsonrpc.request.id";
    /// `2.0`.
    pub const JSONRPC_PROTOCOL_VERSION: &str = "jsonrpc.protocol.version";
}

/// General attributes.
pub mod general {
    /// The class of error an operation ended with.
    pub const ERROR_TYPE: &str = "error.type";
    /// `pipe` (stdio), `tcp` (HTTP) or `unix` (a Unix socket).
    pub const NETWORK_TRANSPORT: &str = "network.transport";
    /// `http` when the transport is HTTP.
    pub const NETWORK_PROTOCOL_NAME: &str = "network.protocol.name";
    /// The peer's host.
    pub const SERVER_ADDRESS: &str = "server.address";
    /// The peer's port.
    pub const SERVER_PORT: &str = "server.port";
}

/// Attribute values with a fixed meaning.
pub mod values {
    /// `network.transport` of a stdio server.
    pub const TRANSPORT_PIPE: &str = "pipe";
    /// `network.transport` of an HTTP server.
    pub const TRANSPORT_TCP: &str = "tcp";
    /// `network.transport` of a Unix socket.
    pub const TRANSPORT_UNIX: &str = "unix";
    /// `error.type` of a `tools/call` answered with `isError: true`.
    pub const TOOL_ERROR: &str = "tool_error";
    /// `error.type` when nothing more precise is known.
    pub const OTHER_ERROR: &str = "_OTHER";
    /// `rpc.system.name` of the daemon's protocol.
    pub const JSONRPC: &str = "jsonrpc";
    /// `gen_ai.operation.name` of a model call.
    pub const OPERATION_CHAT: &str = "chat";
    /// `gen_ai.operation.name` of a tool execution.
    pub const OPERATION_EXECUTE_TOOL: &str = "execute_tool";
    /// `gen_ai.operation.name` of an agent run.
    pub const OPERATION_INVOKE_AGENT: &str = "invoke_agent";
    /// `gen_ai.tool.type` of the tools the agent calls.
    pub const TOOL_TYPE_FUNCTION: &str = "function";
    /// `gen_ai.token.type` of input tokens.
    pub const TOKEN_INPUT: &str = "input";
    /// `gen_ai.token.type` of output tokens.
    pub const TOKEN_OUTPUT: &str = "output";
    /// The MCP method of a tool call.
    pub const MCP_TOOLS_CALL: &str = "tools/call";
    /// The MCP method of a prompt fetch.
    pub const MCP_PROMPTS_GET: &str = "prompts/get";
    /// The MCP method of a resource read.
    pub const MCP_RESOURCES_READ: &str = "resources/read";
}

/// Metric names, units and the conventions' bucket boundaries.
pub mod metrics {
    /// MCP request duration seen by the client (the daemon towards a server).
    pub const MCP_CLIENT_OPERATION_DURATION: &str = "mcp.client.operation.duration";
    /// MCP request duration seen by the server (the daemon's own requests).
    pub const MCP_SERVER_OPERATION_DURATION: &str = "mcp.server.operation.duration";
    /// GenAI operation duration (model calls, agent runs).
    pub const GEN_AI_CLIENT_OPERATION_DURATION: &str = "gen_ai.client.operation.duration";
    /// Tokens per GenAI operation, split by `gen_ai.token.type`.
    pub const GEN_AI_CLIENT_TOKEN_USAGE: &str = "gen_ai.client.token.usage";

    /// Bucket boundaries (seconds) of both MCP duration histograms, as the MCP conventions
    /// recommend.
    pub const MCP_DURATION_BUCKETS: &[f64] = &[
        0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
    ];
    /// Bucket boundaries (seconds) of `gen_ai.client.operation.duration`.
    pub const GEN_AI_DURATION_BUCKETS: &[f64] = &[
        0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
    ];
    /// Bucket boundaries (tokens) of `gen_ai.client.token.usage`.
    pub const GEN_AI_TOKEN_BUCKETS: &[f64] = &[
        1.0, 4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0, 65536.0, 262144.0, 1048576.0,
        4194304.0, 16777216.0, 67108864.0,
    ];
}

/// The MCP method a daemon method stands for, when it has one: `callTool` is the daemon's
/// `tools/call`, `getPrompt` its `prompts/get`, and so on. The daemon's SERVER span of such a
/// request follows the MCP server-span convention (name, `mcp.method.name`) and feeds
/// `mcp.server.operation.duration`; the others (`runAgent`, `health`, …) follow the JSON-RPC
/// convention only.
pub fn mcp_method_of_daemon_method(method: &str) -> Option<&'static str> {
    use tool_cli_protocol::methods::name as daemon;
    Some(match method {
        daemon::CALL_TOOL => values::MCP_TOOLS_CALL,
        daemon::LIST_TOOLS => "tools/list",
        daemon::GET_PROMPT => values::MCP_PROMPTS_GET,
        daemon::LIST_PROMPTS => "prompts/list",
        daemon::READ_RESOURCE => values::MCP_RESOURCES_READ,
        daemon::LIST_RESOURCES => "resources/list",
        daemon::LIST_RESOURCE_TEMPLATES => "resources/templates/list",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_boundaries_are_increasing_and_as_many_as_the_conventions_list() {
        for buckets in [
            metrics::MCP_DURATION_BUCKETS,
            metrics::GEN_AI_DURATION_BUCKETS,
            metrics::GEN_AI_TOKEN_BUCKETS,
        ] {
            assert_eq!(buckets.len(), 14);
            assert!(buckets.windows(2).all(|pair| pair[0] < pair[1]));
        }
    }

    #[test]
    fn daemon_methods_with_an_mcp_equivalent_map_to_it() {
        assert_eq!(mcp_method_of_daemon_method("callTool"), Some("tools/call"));
        assert_eq!(
            mcp_method_of_daemon_method("getPrompt"),
            Some("prompts/get")
        );
        assert_eq!(
            mcp_method_of_daemon_method("readResource"),
            Some("resources/read")
        );
        assert_eq!(mcp_method_of_daemon_method("runAgent"), None);
        assert_eq!(mcp_method_of_daemon_method("health"), None);
    }
}
