//! The seam toward the daemon: what the agent may ask of the tools it runs on.
//!
//! The daemon implements [`ToolHost`] over its one call pipeline, with the caller's token,
//! session and trace, so every call the agent makes is validated, policed, retried and traced
//! exactly like a `callTool` from a script. The agent never talks to an MCP server itself. Tests
//! implement it over a real daemon's JSON-RPC endpoint or over an in-memory table.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A boxed, sendable future: what the object-safe traits of this crate return.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// One tool the caller can see, as the host describes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolInfo {
    /// The server offering it.
    pub server: String,
    /// The tool's name on that server.
    pub name: String,
    /// Its description (with any configured argument overrides already merged in).
    #[serde(default)]
    pub description: String,
    /// Its JSON Schema for arguments.
    #[serde(default = "empty_object_schema")]
    pub input_schema: Value,
    /// `readOnlyHint: true`.
    #[serde(default)]
    pub read_only: bool,
    /// `destructiveHint: true`, or named destructive in the daemon's config.
    #[serde(default)]
    pub destructive: bool,
}

fn empty_object_schema() -> Value {
    serde_json::json!({"type": "object"})
}

/// One call the agent wants made.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    /// The server, or `None` to let the daemon's routing choose among the servers that offer
    /// the tool (the outcome then says which rule decided).
    pub server: Option<String>,
    /// The tool's name.
    pub tool: String,
    /// The arguments, always a JSON object.
    pub arguments: Value,
    /// Free text for the daemon's routing when `server` is `None` (`callTool`'s `hint`): the
    /// run's task, so a task that names a server routes there (rule `explicit-mention`).
    pub hint: Option<String>,
    /// Explain the call instead of making it.
    pub dry_run: bool,
    /// The run's `confirmDestructive`; the loop never sends a destructive tool without it.
    pub confirm_destructive: bool,
    /// The run's step that made the call, for the trace.
    pub step: u32,
    /// The model's id of the call (`gen_ai.tool.call.id`), for the trace.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
}

/// What a call returned.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCallOutcome {
    /// The server that ran (or would run) it.
    pub server: String,
    /// The tool.
    pub tool: String,
    /// The MCP `CallToolResult` as the server sent it, or the dry-run answer.
    pub result: Value,
    /// The result's `isError`.
    pub is_error: bool,
    /// How long the call took as the host measured it.
    pub latency: Duration,
    /// The routing rule that chose the server (`named` when the call named it), when known.
    pub selection_rule: Option<String>,
}

/// Why the host did not run a call. Shown to the model as a tool error, so every message says
/// what was wrong and what would be right.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// Policy or confirmation refused it (for example a destructive tool without confirmation).
    #[error("refused: {0}")]
    Refused(String),
    /// The caller's token or the config does not allow this server or tool.
    #[error("not permitted: {0}")]
    NotPermitted(String),
    /// The arguments do not match the tool's input schema.
    #[error("invalid arguments: {0}")]
    InvalidArguments(String),
    /// No visible server offers the tool.
    #[error("unknown tool: {0}")]
    UnknownTool(String),
    /// No answer in time.
    #[error("timed out: {0}")]
    Timeout(String),
    /// The server is unavailable, busy or its circuit is open.
    #[error("unavailable: {0}")]
    Unavailable(String),
    /// Anything else the host could not do.
    #[error("{0}")]
    Other(String),
}

/// The tools the agent runs on. Object-safe: the loop holds an `Arc<dyn ToolHost>`.
pub trait ToolHost: Send + Sync {
    /// Every tool the caller can see.
    fn list_tools(&self) -> BoxFuture<'_, Result<Vec<ToolInfo>, ToolError>>;

    /// The tools best matching `query`, best first, at most `limit`. A host without search may
    /// answer with every tool; the agent then keeps the first `limit`.
    fn search_tools<'a>(
        &'a self,
        query: &'a str,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<ToolInfo>, ToolError>>;

    /// Makes (or, with `dry_run`, explains) one call through the daemon's pipeline.
    fn call_tool(&self, call: ToolCall) -> BoxFuture<'_, Result<ToolCallOutcome, ToolError>>;
}

impl fmt::Display for ToolCall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.server {
            Some(server) => write!(f, "{server}/{}", self.tool),
            None => write!(f, "*/{}", self.tool),
        }
    }
}
