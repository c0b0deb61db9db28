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
