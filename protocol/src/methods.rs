//! Params and results of every method.
//!
//! Where a result is an MCP object passed through unnarrowed (a tool as discovered, a
//! `CallToolResult`, a resource's contents) it is a `serde_json::Value`: the daemon must not drop
//! fields it does not know. Params structs accept and ignore unknown members so that newer clients
//! keep working within major version 1.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Method names.
pub mod name {
    /// Handshake: identity, protocol version, operations and capabilities.
    pub const GET_BRIDGE_INFO: &str = "getBridgeInfo";
    /// Every configured server with its tool count.
    pub const LIST_SERVERS: &str = "listServers";
    /// One server's tools, one line each.
    pub const LIST_TOOLS: &str = "listTools";
    /// One tool, complete, as discovered.
    pub const DESCRIBE_TOOL: &str = "describeTool";
    /// Validate arguments and call a tool.
    pub const CALL_TOOL: &str = "callTool";
    /// One server's resources.
    pub const LIST_RESOURCES: &str = "listResources";
    /// One server's resource templates.
    pub const LIST_RESOURCE_TEMPLATES: &str = "listResourceTemplates";
    /// Read one resource.
    pub const READ_RESOURCE: &str = "readResource";
    /// Per-server health: state, restarts, calls, errors, latency, breaker (ours).
    pub const HEALTH: &str = "health";
    /// Mint a scoped child token (owner token only; ours).
    pub const MINT_TOKEN: &str = "mintToken";
    /// Revoke a minted token (owner token only; ours).
    pub const REVOKE_TOKEN: &str = "revokeToken";
    /// List minted tokens, without their secrets (owner token only; ours).
    pub const LIST_TOKENS: &str = "listTokens";
    /// Start a session: per-agent state for routing, guards and usage (ours).
    pub const OPEN_SESSION: &str = "openSession";
    /// What a session did: calls, errors, latency, cost, tools, rules (ours).
    pub const SESSION_SUMMARY: &str = "sessionSummary";
    /// The caller's sessions (ours).
    pub const LIST_SESSIONS: &str = "listSessions";
    /// End a session (ours).
    pub const CLOSE_SESSION: &str = "closeSession";
    /// Sequential calls whose arguments may bind earlier results (ours).
    pub const CALL_CHAIN: &str = "callChain";
    /// Concurrent calls, each answered, order preserved (ours).
    pub const CALL_MANY: &str = "callMany";
    /// Rank every visible tool against a natural-language request (ours).
    pub const SEARCH_TOOLS: &str = "searchTools";
    /// Run the agent loop on a task over the tools the caller can see (ours).
    pub const RUN_AGENT: &str = "runAgent";
    /// A run's events after a sequence number: a long-poll (ours).
    pub const AGENT_EVENTS: &str = "agentEvents";
    /// Cancel a run (ours).
    pub const CANCEL_AGENT: &str = "cancelAgent";
    /// Read a page of an answer too large to send whole, which the daemon saved to a file
    /// (ours).
    pub const READ_SPILLED: &str = "readSpilled";
    /// Restart one server now, clearing its park and its breakers (owner token only; ours).
    pub const RESTART_SERVER: &str = "restartServer";
    /// Aggregate the daemon's trace files: calls, errors, latency, tokens, cost per group
    /// (owner token only; ours).
    pub const TRACES_REPORT: &str = "tracesReport";
    /// Start an OAuth 2.1 sign-in to a remote server (owner token only; ours).
    pub const AUTH_LOGIN: &str = "authLogin";
    /// Finish a sign-in with the redirect URL (owner token only; ours).
    pub const AUTH_COMPLETE: &str = "authComplete";
    /// Every remote server's sign-in state (owner token only; ours).
    pub const AUTH_STATUS: &str = "authStatus";
    /// Delete a remote server's tokens (owner token only; ours).
    pub const AUTH_LOGOUT: &str = "authLogout";
    /// List the prompts of one server, or of every server the token may see.
    pub const LIST_PROMPTS: &str = "listPrompts";
    /// Render one prompt of a server with its arguments (`prompts/get`).
    pub const GET_PROMPT: &str = "getPrompt";
    /// Long-poll the progress and log events of a call made with `progress: true`.
    pub const CALL_EVENTS: &str = "callEvents";
    /// Answer a server's question relayed as a `callEvents` event (`elicitation: "ask"`).
    pub const ANSWER_ELICITATION: &str = "answerElicitation";
    /// Start a server that is not in the config file (owner token only; ours).
    pub const ADD_SERVER: &str = "addServer";
    /// Drain and stop a server (owner token only; ours).
    pub const REMOVE_SERVER: &str = "removeServer";
    /// Read the config file again and apply what changed (owner token only; ours).
    pub const RELOAD_CONFIG: &str = "reloadConfig";
    /// Read the pin store again and verify every server against it (owner token only; ours).
    pub const RELOAD_PINS: &str = "reloadPins";
    /// Every tool of a server the pins are checked on, held back or not, as it lists it now
    /// (owner token only; ours): what `tool-cli pin` records and diffs.
    pub const PIN_LISTING: &str = "pinListing";
    /// `startRecording` (owner token only; ours): restart a server under the recording proxy.
    pub const START_RECORDING: &str = "startRecording";
    /// `stopRecording` (owner token only; ours): end a recording, restart the server unrecorded.
    pub const STOP_RECORDING: &str = "stopRecording";
    /// The status of an MCP task a `callTool` with `task` created (`tasks/get`).
    pub const GET_TASK: &str = "getTask";
    /// The result of an MCP task, once it is terminal (`tasks/result`).
    pub const GET_TASK_RESULT: &str = "getTaskResult";
    /// The MCP tasks the caller created that their servers still know (`tasks/list`).
    pub const LIST_TASKS: &str = "listTasks";
    /// Cancel an MCP task (`tasks/cancel`).
    pub const CANCEL_TASK: &str = "cancelTask";

    /// Every method the daemon serves, as listed in `getBridgeInfo.operations`.
    pub const ALL: &[&str] = &[
        GET_BRIDGE_INFO,
        LIST_SERVERS,
        LIST_TOOLS,
        DESCRIBE_TOOL,
        CALL_TOOL,
        LIST_RESOURCES,
        LIST_RESOURCE_TEMPLATES,
        READ_RESOURCE,
        HEALTH,
        MINT_TOKEN,
        REVOKE_TOKEN,
        LIST_TOKENS,
        OPEN_SESSION,
        SESSION_SUMMARY,
        LIST_SESSIONS,
        CLOSE_SESSION,
        CALL_CHAIN,
        CALL_MANY,
        SEARCH_TOOLS,
        RUN_AGENT,
        AGENT_EVENTS,
        CANCEL_AGENT,
        READ_SPILLED,
        RESTART_SERVER,
        TRACES_REPORT,
        AUTH_LOGIN,
        AUTH_COMPLETE,
        AUTH_STATUS,
        AUTH_LOGOUT,
        LIST_PROMPTS,
        GET_PROMPT,
        CALL_EVENTS,
        ANSWER_ELICITATION,
        ADD_SERVER,
        REMOVE_SERVER,
        RELOAD_CONFIG,
        RELOAD_PINS,
        PIN_LISTING,
        START_RECORDING,
        STOP_RECORDING,
        GET_TASK,
        GET_TASK_RESULT,
        LIST_TASKS,
        CANCEL_TASK,
    ];
}

/// Params of methods that name one server: `listTools`, `listResources`, `listResourceTemplates`,
/// `restartServer`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerParams {
    /// The server's name, as in the config.
    pub server: String,
}

/// Params of `describeTool`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DescribeToolParams {
    /// The server's name.
    pub server: String,
    /// The tool's name.
    pub tool: String,
}

/// Params of `callTool`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolParams {
    /// The server's name; omitted (or `"*"`), the daemon routes the call among the servers
    /// offering the tool and says why in `_meta["tool-cli/selection"]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// The tool's name.
    pub tool: String,
    /// The tool's arguments; omitted means `{}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Map<String, Value>>,
    /// Timeout for this call in milliseconds, overriding the server's `timeoutMs`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// The calling agent's session, for per-session state such as traces and cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Explicit confirmation for a destructive tool (`destructiveHint: true`, or marked
    /// destructive in the config); without it such a call is refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirm: Option<bool>,
    /// Explain the call without making it: resolution, routing, validation, policy, guards and
    /// admission run, no MCP server is contacted, and the result is a
    /// [`crate::orchestration::DryRunResult`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dry_run: Option<bool>,
    /// Free text for routing: names a server or tag, or describes the task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    /// A repeat with the same key (and the same arguments) within the idempotency TTL returns
    /// the first call's result instead of calling again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
    /// When the call fails in a way another tool might get around (the tool or server is
    /// unknown, the server is unavailable, its breaker is open, the call timed out, the server
    /// answered with an error, or the tool itself reported an error), add the tools this token
    /// can see that best match the failed tool's name and description: in the error's `data`
    /// as `alternatives`, or in a result's `_meta["tool-cli/alternatives"]`. Nothing else is
    /// called. See [`crate::search::ToolAlternative`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alternatives: Option<bool>,
    /// Relay the server's progress and log notifications for this call to `callEvents` under
    /// `progressId` (which must then be given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress: Option<bool>,
    /// The caller's name for this call's events (1-128 characters), chosen before the call so
    /// another connection can long-poll `callEvents` while it runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress_id: Option<String>,
    /// MCP's `resetTimeoutOnProgress`: the call's timeout (`timeoutMs`, else the server's)
    /// restarts at each progress notification the server sends for this call, so a call that
    /// keeps reporting progress may run past it, up to `maxTotalTimeoutMs`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reset_timeout_on_progress: Option<bool>,
    /// With `resetTimeoutOnProgress`, the most the call may take in all, progress or not
    /// (default and at most the protocol's maximum timeout, 300000 ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_total_timeout_ms: Option<u64>,
    /// Run the call as an MCP task (protocol 2025-11-25, experimental there) that the caller
    /// follows itself: sent to the server as the call's `task` (`{"ttl"?: ms}`); the result is
    /// the server's `CreateTaskResult` (`{task: {taskId, status, ...}}`) with a `taskId` the
    /// task methods (`getTask`, `getTaskResult`, `listTasks`, `cancelTask`) take. Without it, a
    /// tool that runs only as a task is run as one and its final result returned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<Map<String, Value>>,
}

/// Params of `getTask`, `getTaskResult` and `cancelTask`: a task the caller created.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskParams {
    /// The task's id, as the `callTool` that created it answered it (`server:id`).
    pub task_id: String,
    /// The session the task was created in, if it was created in one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
}

/// Params of `listTasks`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksParams {
    /// The session whose tasks to list; omitted, those created outside any session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
}

/// Params of `callEvents`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallEventsParams {
    /// The `progressId` the call was made with.
    pub progress_id: String,
    /// Events with a larger `seq` are returned (0 for all).
    #[serde(default)]
    pub after: u64,
    /// How long to wait for a new event when there is none yet, in milliseconds (default 20000,
    /// at most 60000; 0 answers at once).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_ms: Option<u64>,
}

/// Result of `callEvents`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallEventsResult {
    /// The events after `after`, oldest first: `{seq, type: "progress", progress, total?,
    /// message?}`, `{seq, type: "log", server, level, logger?, data}`, `{seq, type:
    /// "elicitation", elicitationId, server, message, requestedSchema}` (answer it with
    /// `answerElicitation`) or `{seq, type: "elicitationClosed", elicitationId, reason}`.
    pub events: Vec<Value>,
    /// Whether the call has ended (no events will follow those returned).
    pub done: bool,
    /// Events the call's buffer let go because it was full (oldest first), whether or not a
    /// poller had read them; a poller knows which it missed by the gaps in `seq`.
    pub dropped: u64,
}

/// Params of `mintToken`. Every member is optional; omitted means unrestricted on that axis, so
/// an unknown member (a misspelt `readonly`) is refused rather than ignored: ignoring it would
/// mint a token with more power than asked for.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MintTokenParams {
    /// Globs on server names the token may use (`*`, `?`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub servers: Option<Vec<String>>,
    /// Globs on `server/tool` the token may call, e.g. `fs/read_*`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// Globs on `server/uri` the token may list and read, e.g. `fs/file:///home/me/*`. Unlike
    /// the other members, omitted means *no* resources: a tool grant never exposes resources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<Vec<String>>,
    /// Globs on `server/prompt` the token may list and get, e.g. `everything/simple-*`. Like
    /// `resources`, omitted means *no* prompts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts: Option<Vec<String>>,
    /// Only tools annotated `readOnlyHint: true`.
    #[serde(default)]
    pub read_only: bool,
    /// Lifetime in seconds (at most 30 days); omitted means until the daemon stops.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_seconds: Option<u64>,
    /// A label for `listTokens`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// The MCP gateway's mode for this token's sessions when the host names none (`?mode=` or
    /// the `Tool-Cli-Gateway-Mode` header); omitted means pass-through.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateway_mode: Option<GatewayMode>,
}

/// How the MCP gateway (`/mcp`, `tool-cli mcp`) shows the pool to a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum GatewayMode {
    /// Every visible tool as `server__tool`.
    PassThrough,
    /// Six meta-tools to list servers, search, describe and call tools.
    Progressive,
}

/// Result of `mintToken`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MintTokenResult {
    /// The new token: hand it to the sub-agent as `TOOL_CLI_TOKEN`.
    pub token: String,
    /// Its public id, for `revokeToken` and the identity check.
    pub token_id: String,
    /// What it may do, in words.
    pub scope: String,
    /// When it expires, in seconds since the Unix epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
}

/// Where an answer too large to send whole was saved: the value of
/// `_meta["tool-cli/spilled"]` in the small result sent instead (see [`crate::meta::SPILLED`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SpilledAnswer {
    /// Names it in `readSpilled`.
    pub id: String,
    /// The file (mode 0600, in a 0700 directory of the daemon's runtime directory), holding
    /// the whole result as JSON. Readable only on the daemon's machine, by its user.
    pub path: String,
    /// Its size in bytes.
    pub bytes: u64,
    /// SHA-256 of its bytes, as 64 lowercase hex characters.
    pub sha256: String,
    /// When the daemon removes it, in seconds since the Unix epoch (it is also removed when
    /// the daemon stops).
    pub expires_at: u64,
}

/// Params of `readSpilled`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadSpilledParams {
    /// The `id` of the [`SpilledAnswer`].
    pub id: String,
    /// Byte offset to read from: 0, or a `nextOffset` from the previous page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<u64>,
    /// Most bytes to read (default and at most 1 MiB; the page may be shorter, ending on a
    /// whole UTF-8 character).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub length: Option<u64>,
}

/// Result of `readSpilled`: one page of the saved JSON text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadSpilledResult {
    /// The answer read.
    pub id: String,
    /// Where this page starts.
    pub offset: u64,
    /// The size of the whole saved answer.
    pub total_bytes: u64,
    /// The page: JSON text, to be concatenated with the other pages.
    pub text: String,
    /// Where the next page starts; `null` after the last page.
    pub next_offset: Option<u64>,
}

/// Params of `revokeToken`; unknown members are refused, as for `mintToken`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RevokeTokenParams {
    /// The `tokenId` returned by `mintToken`.
    pub token_id: String,
}

/// Result of `revokeToken`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RevokeTokenResult {
    /// Whether a token was revoked (false when the id was unknown).
    pub revoked: bool,
}

/// Result of `restartServer`: where the server stands once the new connection attempt settled
/// (or when the wait for it ran out).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RestartServerResult {
    /// The server's name, as in the config.
    pub server: String,
    /// Its connection state now: `ready` if the restart worked.
    pub state: ServerState,
    /// How many times it has been restarted, this time included.
    pub restarts: u32,
    /// Why it is not `ready`, when it is not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Result of `listTokens`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ListTokensResult {
    /// Every live minted token.
    pub tokens: Vec<TokenInfo>,
}

/// A minted token, without its secret.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenInfo {
    /// Its public id.
    pub token_id: String,
    /// What it may do, in words.
    pub scope: String,
    /// Its label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// When it expires, in seconds since the Unix epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
}

/// Params of `readResource`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReadResourceParams {
    /// The server's name.
    pub server: String,
    /// The resource's URI.
    pub uri: String,
}

/// Result of `getBridgeInfo`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BridgeInfo {
    /// Which protocol this is.
    pub bridge_protocol: BridgeProtocol,
    /// Which implementation serves it.
    pub server_implementation: Implementation,
    /// Every method served.
    pub operations: Vec<String>,
    /// What the bridge can do.
    pub capabilities: BridgeCapabilities,
    /// The MCP side: the protocol version we speak to servers and our client identity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream_mcp: Option<UpstreamMcp>,
}

/// `bridgeProtocol` of the handshake.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BridgeProtocol {
    /// Always [`crate::BRIDGE_PROTOCOL_NAME`].
    pub name: String,
    /// Clients refuse a major other than theirs.
    pub major: u32,
    /// `major.minor`.
    pub version: String,
}

/// A name and version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Implementation {
    /// Name of the implementation.
    pub name: String,
    /// Its version.
    pub version: String,
}

/// `capabilities` of the handshake.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BridgeCapabilities {
    /// How requests authenticate.
    pub authentication: AuthenticationCapability,
    /// Tool discovery and calls.
    pub tools: ToolsCapability,
    /// Resource discovery and reads.
    pub resources: ResourcesCapability,
    /// How calls are cancelled.
    pub cancellation: CancellationCapability,
}

/// `capabilities.authentication`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuthenticationCapability {
    /// Always true: every request needs the token.
    pub required: bool,
    /// Always `"bearer"`.
    pub scheme: String,
}

/// `capabilities.tools`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolsCapability {
    /// `listTools` and `describeTool` are served.
    pub discovery: bool,
    /// `callTool` is served.
    pub calls: bool,
    /// Arguments are validated against the tool's `inputSchema` before dispatch.
    pub input_schema_validation: bool,
    /// The dialect assumed when a schema names none.
    pub json_schema_dialect: String,
    /// Every dialect understood.
    pub supported_json_schema_dialects: Vec<String>,
}

/// `capabilities.resources`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResourcesCapability {
    /// `listResources` is served.
    pub list: bool,
    /// `listResourceTemplates` is served.
    pub templates: bool,
    /// `readResource` is served.
    pub read: bool,
}

/// `capabilities.cancellation`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CancellationCapability {
    /// The reference bridge's flag: an abandoned call is cancelled at its provider (here the
    /// MCP server, with `upstreamNotification`). Always true.
    #[serde(default)]
    pub provider_abort_signal: bool,
    /// `callTool` accepts `timeoutMs`.
    pub per_call_timeout: bool,
    /// The MCP notification sent to a server when a call is abandoned.
    pub upstream_notification: String,
}

/// `upstreamMcp` of the handshake.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpstreamMcp {
    /// The MCP protocol version requested from every server.
    pub protocol_version: String,
    /// Our identity as an MCP client.
    pub implementation: Implementation,
    /// Our capabilities as an MCP client.
    pub capabilities: Value,
}

/// Result of `listServers`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ListServersResult {
    /// Every configured server, in config order.
    pub servers: Vec<ServerSummary>,
}

/// One server in `listServers`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerSummary {
    /// The server's name, as in the config.
    pub name: String,
    /// How many tools it offers (0 unless `ready`).
    pub tool_count: usize,
    /// Up to three of its tool names.
    pub examples: Vec<String>,
    /// Its connection state. Absent from the reference bridge, whose listed servers are
    /// connected, so it defaults to `ready`.
    #[serde(default)]
    pub state: ServerState,
    /// How it is reached (`unknown` when a bridge does not say).
    #[serde(default)]
    pub transport: TransportKind,
    /// The description from the config, else the server's own `instructions` first line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Tags from the config.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// Why it is not `ready`, when it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Problems that do not stop it, e.g. a tool override the config has wrong.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// Connection state of a server.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum ServerState {
    /// Starting, or its MCP handshake or discovery is under way.
    Connecting,
    /// Connected and its catalog is known.
    #[default]
    Ready,
    /// It could not be started or its handshake failed.
    Failed,
    /// It was connected and has exited or closed its connection.
    Exited,
    /// It failed or exited and will be started again after a backoff delay.
    Restarting,
    /// It kept failing and is parked; it is not restarted again.
    Down,
    /// Connected, but calls have been failing recently (health only).
    Degraded,
    /// Connected, but its circuit breaker is open: calls are refused until the cooldown ends
    /// (health only).
    CircuitOpen,
    /// `enabled: false` in the config.
    Disabled,
    /// A state this version does not know (a newer bridge within major 1).
    #[serde(other)]
    Unknown,
}

impl ServerState {
    /// The state's wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            ServerState::Connecting => "connecting",
            ServerState::Ready => "ready",
            ServerState::Failed => "failed",
            ServerState::Exited => "exited",
            ServerState::Restarting => "restarting",
            ServerState::Down => "down",
            ServerState::Degraded => "degraded",
            ServerState::CircuitOpen => "circuitOpen",
            ServerState::Disabled => "disabled",
            ServerState::Unknown => "unknown",
        }
    }
}

/// How a server is reached.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum TransportKind {
    /// A child process speaking MCP over stdin/stdout.
    Stdio,
    /// A remote server speaking MCP Streamable HTTP.
    Http,
    /// Not said, or a transport this version does not know.
    #[default]
    #[serde(other)]
    Unknown,
}

/// Result of `health`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HealthResult {
    /// Every configured server, in config order.
    pub servers: Vec<ServerHealth>,
    /// The trace writer: only for the owner token, and only when traces are on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traces: Option<crate::trace::TracesHealth>,
    /// The tool-search model: only for the owner token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search: Option<crate::search::SearchHealth>,
    /// OpenTelemetry export: only for the owner token, and only when export is on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub telemetry: Option<crate::telemetry::TelemetryHealth>,
}

/// One server in `health`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerHealth {
    /// The server's name.
    pub name: String,
    /// Its state: the connection state, refined to `degraded` or `circuitOpen` when connected.
    pub state: ServerState,
    /// How it is reached.
    #[serde(default)]
    pub transport: TransportKind,
    /// The last error: why it failed, exited or why its last call failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// How many times it has been restarted.
    pub restarts: u32,
    /// Milliseconds since its current connection was established, when connected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uptime_ms: Option<u64>,
    /// Tool calls that reached the execution stage.
    pub calls: u64,
    /// Of those, how many failed (timeouts, exits, transport failures; not tool `isError`).
    pub errors: u64,
    /// Tool calls to it whose caller went away before the answer (Ctrl-C, a closed
    /// connection); each was cancelled at the server if it had been sent.
    #[serde(default)]
    pub cancelled: u64,
    /// Calls executing now.
    pub in_flight: usize,
    /// Calls waiting for a concurrency slot.
    pub queued: usize,
    /// Latency of recent calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ms: Option<LatencySummary>,
    /// The circuit breaker.
    pub breaker: BreakerHealth,
    /// Per-tool statistics, when asked for with `{"tools": true}`: every tool called since the
    /// daemon started (bounded), most used first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<ToolHealth>>,
    /// For a server with `allowSampling`: its `sampling/createMessage` requests and what the
    /// agent backend billed for them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling: Option<SamplingHealth>,
}

/// A server's sampling requests in `health`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SamplingHealth {
    /// Requests answered by the agent backend.
    pub answered: u64,
    /// Requests declined (no backend, over the per-server budget, unsupported content, or the
    /// backend failed).
    pub declined: u64,
    /// Input tokens billed (cached ones included).
    pub input_tokens: u64,
    /// Output tokens billed.
    pub output_tokens: u64,
    /// USD at the agent's prices; absent while the model has no price.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

/// Params of `health`; all optional.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HealthParams {
    /// Include per-tool statistics.
    #[serde(default)]
    pub tools: bool,
}

/// Live statistics of one tool, as its callers saw its calls (retries included).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolHealth {
    /// The tool.
    pub name: String,
    /// Calls that reached the server.
    pub calls: u64,
    /// Calls that returned a result that is not `isError`.
    pub successes: u64,
    /// Latency of recent calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ms: Option<LatencySummary>,
    /// When it was last called, in milliseconds since the Unix epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_used_ms: Option<u64>,
}

/// Latency percentiles of recent calls, in milliseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    /// Median.
    pub p50: f64,
    /// 95th percentile.
    pub p95: f64,
    /// How many recent calls these are computed over.
    pub samples: usize,
}

/// State of a server's circuit breaker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BreakerHealth {
    /// `closed`, `open` or `halfOpen`.
    pub state: String,
    /// While open: milliseconds until a probe call is allowed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_ms: Option<u64>,
}

/// Result of `listTools`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListToolsResult {
    /// The server asked for.
    pub server: String,
    /// Its tools, in the order the server listed them.
    pub tools: Vec<ToolSummary>,
    /// In a paged listing, where the next page starts (pass it back as `cursor`); absent on
    /// the last page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// In a paged listing of one server (`limit` or `cursor` given): how many tools the caller
    /// may see on it in all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_count: Option<usize>,
}

/// One tool in `listTools`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolSummary {
    /// Its server, in a listing across servers (`listTools` without `server`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// The tool's name.
    pub name: String,
    /// Its description (empty when the server gave none; a 1.x bridge may leave it out).
    #[serde(default)]
    pub description: String,
    /// Whether it declares an `outputSchema` (and so returns `structuredContent`).
    #[serde(default)]
    pub has_structured_output: bool,
    /// Whether the config overrides its description or arguments (`describeTool` shows what,
    /// in `_meta["tool-cli/overridden"]`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub overridden: bool,
    /// What the detectors flag in it (hidden instructions, another server's tools named), one
    /// line each, for a person to review (`docs/pinning.md`); absent when nothing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flags: Vec<String>,
}

/// Result of `listResources`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ListResourcesResult {
    /// The server asked for.
    pub server: String,
    /// Its resources, each as the server described it.
    pub resources: Vec<Value>,
}

/// Params of `listPrompts`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ListPromptsParams {
    /// One server's prompts; omitted, those of every server the token may see.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
}

/// Result of `listPrompts`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ListPromptsResult {
    /// Each prompt the token may see, with the server offering it.
    pub prompts: Vec<ServerPrompt>,
    /// Servers that could not be asked (not ready, failed), with why; omitted when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unavailable: Vec<UnavailableServer>,
}

/// One prompt in a `listPrompts` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerPrompt {
    /// The server offering it.
    pub server: String,
    /// The MCP `Prompt` exactly as the server described it (`name`, `description`,
    /// `arguments`, ...).
    pub prompt: Value,
}

/// A server a list across servers could not include.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UnavailableServer {
    /// Its name.
    pub server: String,
    /// Why it was left out.
    pub error: String,
}

/// Params of `getPrompt`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GetPromptParams {
    /// The server's name.
    pub server: String,
    /// The prompt's name.
    pub name: String,
    /// Its arguments (MCP prompt arguments are strings); omitted means none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<std::collections::BTreeMap<String, String>>,
}

/// Result of `listResourceTemplates`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ListResourceTemplatesResult {
    /// The server asked for.
    pub server: String,
    /// Its resource templates, each as the server described it.
    pub templates: Vec<Value>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_server_entries_without_our_fields_still_parse() {
        let entry: ServerSummary = serde_json::from_value(serde_json::json!({
            "name": "github", "toolCount": 40, "examples": ["search_code"]
        }))
        .unwrap();
        assert_eq!(entry.state, ServerState::Ready);
        assert_eq!(entry.transport, TransportKind::Unknown);

        let entry: ServerSummary = serde_json::from_value(serde_json::json!({
            "name": "x", "toolCount": 0, "examples": [], "state": "hibernating", "transport": "ws"
        }))
        .unwrap();
        assert_eq!(entry.state, ServerState::Unknown);
        assert_eq!(entry.transport, TransportKind::Unknown);
    }
}
