//! Wire types of the orchestrator: routing explanations and dry-runs.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Which server took a call and why: `_meta["tool-cli/selection"]` of a result, and part of a
/// dry-run's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SelectionInfo {
    /// The rule that decided: `named` (the caller gave the server), `explicit-mention`,
    /// `argument-type`, `session-recency`, `similarity`, `priority` or `alternative`.
    pub rule: String,
    /// The chosen server.
    pub server: String,
    /// Every other server that offered the tool, and the rule that rejected it.
    pub alternatives: Vec<AlternativeInfo>,
}

/// A server that offered the tool and was not chosen.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AlternativeInfo {
    /// The server.
    pub server: String,
    /// The rule that rejected it.
    pub rejected_by: String,
}

/// The answer to `callTool` with `dryRun: true`: what the call would do, made without contacting
/// any MCP server. A result even when the real call would be refused: `wouldBlockBecause` then
/// says why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DryRunResult {
    /// Always `false`.
    pub executed: bool,
    /// The server the call would go to.
    pub server: String,
    /// The tool.
    pub tool: String,
    /// The arguments, as they would be sent.
    pub arguments: Map<String, Value>,
    /// How the server was chosen.
    pub selection: SelectionInfo,
    /// The timeout the call would have, in milliseconds.
    pub timeout_ms: u64,
    /// The tool's behaviour hints as the daemon reads them.
    pub hints: ToolHintsInfo,
    /// Why the real call would be refused, if it would be.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub would_block_because: Option<BlockedReason>,
}

/// A tool's behaviour hints, as the daemon reads them from its annotations.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolHintsInfo {
    /// `readOnlyHint: true`.
    pub read_only: bool,
    /// `destructiveHint: true`.
    pub destructive: bool,
    /// `idempotentHint: true`.
    pub idempotent: bool,
}

/// Why a call would be refused: the error the real call would get.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BlockedReason {
    /// The JSON-RPC code the real call would get.
    pub code: i32,
    /// Its message.
    pub message: String,
    /// Its structured data.
    pub data: crate::ErrorData,
}

/// Params of `openSession`; both optional.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OpenSessionParams {
    /// What the agent is doing, in words: routing's explicit-mention and similarity rules read
    /// it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    /// Free labels, shown by `listSessions`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<String>,
    /// An id of the caller's choosing (1–128 of letters, digits, `-`, `_`, `.`, `:`); omitted,
    /// the daemon makes one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The session watchdog: refuse its calls (`budgetExceeded`, `budget: "calls"`) once this
    /// many were made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_calls: Option<u64>,
    /// The session watchdog: refuse its calls (`budgetExceeded`, `budget: "wallTimeMs"`) once
    /// it is this many milliseconds old.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_wall_time_ms: Option<u64>,
}

/// Result of `openSession`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OpenSessionResult {
    /// The session's id: pass it as `sessionId`.
    pub session_id: String,
}

/// Params of `sessionSummary` and `closeSession`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionParams {
    /// The session.
    pub session_id: String,
}

/// Result of `closeSession`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CloseSessionResult {
    /// Always `true`: an unknown session is an error, not `false`.
    pub closed: bool,
}

/// What a session did: `sessionSummary`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionSummary {
    /// The session.
    pub session_id: String,
    /// Its task, if one was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    /// Its labels.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<String>,
    /// When it was created, in milliseconds since the Unix epoch.
    pub created_at_ms: u64,
    /// When it was last used, in milliseconds since the Unix epoch.
    pub last_used_at_ms: u64,
    /// Calls made in it (dry-runs and refusals included).
    pub calls: u64,
    /// Calls that reached a server.
    pub executed: u64,
    /// Calls that did not succeed (errors and `isError` results).
    pub errors: u64,
    /// `(calls − errors) / calls`, 0 when there were no calls.
    pub success_rate: f64,
    /// Latency of its recent calls, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ms: Option<crate::methods::LatencySummary>,
    /// LLM input tokens attributed to its calls.
    pub tokens_in: u64,
    /// LLM output tokens attributed to its calls.
    pub tokens_out: u64,
    /// Cost attributed to its calls, in US dollars.
    pub cost_usd: f64,
    /// Each tool used, with its call count, most used first.
    pub tools_used: Vec<ToolUse>,
    /// How often each routing rule chose the server.
    pub rules_fired: std::collections::BTreeMap<String, u64>,
}

/// One tool's use within a session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolUse {
    /// The server.
    pub server: String,
    /// The tool.
    pub tool: String,
    /// Calls.
    pub calls: u64,
    /// Of which failed.
    pub errors: u64,
}

/// Result of `listSessions`: the caller's own sessions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListSessionsResult {
    /// Most recently used first.
    pub sessions: Vec<SessionInfo>,
}

/// One session in `listSessions`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionInfo {
    /// The session.
    pub session_id: String,
    /// Its task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    /// Its labels.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<String>,
    /// Calls made in it.
    pub calls: u64,
    /// When it was last used, in milliseconds since the Unix epoch.
    pub last_used_at_ms: u64,
}

/// Params of `callChain`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallChainParams {
    /// The steps, run in order; the chain stops at the first that fails.
    pub steps: Vec<ChainStep>,
    /// The session the steps belong to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Timeout of the whole chain in milliseconds (each step is also bounded by its server's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// Confirms destructive tools in every step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirm: Option<bool>,
    /// Dry-run every step (bindings to earlier results then cannot be resolved and are reported).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dry_run: Option<bool>,
}

/// One step of a chain: a `callTool` whose arguments may take values from earlier results.
///
/// Anywhere in `arguments`, an object `{"$from": "<step index>", "pointer": "<JSON Pointer>"}`
/// is replaced by the value at that pointer in that earlier step's result. `bind` does the same
/// by argument location: `{"/argument/path": {"$from": "0", "pointer": "/structuredContent/id"}}`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChainStep {
    /// The server; omitted, the call is routed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// The tool.
    pub tool: String,
    /// Its arguments.
    #[serde(default)]
    pub arguments: Map<String, Value>,
    /// Bindings by argument location (JSON Pointers into `arguments`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bind: Option<Map<String, Value>>,
    /// Routing hint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

/// Result of `callChain`: one entry per step run, in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallChainResult {
    /// Each step that ran; the last one failed when `completed` is false.
    pub steps: Vec<StepResult>,
    /// Whether every step ran and succeeded.
    pub completed: bool,
}

/// The outcome of one step of a chain or one call of a fan-out: a result or an error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StepResult {
    /// Its index.
    pub index: usize,
    /// The tool.
    pub tool: String,
    /// The server it went to, when one was chosen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// The complete result (a `CallToolResult`, or a dry-run's answer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// The error, as a JSON-RPC error object would carry it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<crate::ErrorObject>,
}

/// Params of `callMany`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallManyParams {
    /// The calls, each as `callTool`'s params (a `sessionId` of their own is ignored: the
    /// fan-out's applies).
    pub calls: Vec<crate::methods::CallToolParams>,
    /// Most calls running at once (default 8, at most 64).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_concurrent: Option<usize>,
    /// The session the calls belong to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
}

/// Result of `callMany`: one entry per call, in request order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallManyResult {
    /// Each call's outcome.
    pub results: Vec<StepResult>,
}
