//! Wire types of the agent methods that are the daemon's own: following a run's events and
//! cancelling it. `runAgent`'s params and result are the agent's request and result (see
//! `docs/agent.md`), with one member of the daemon's: `runId`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Params of `agentEvents`: a long-poll for a run's events after a sequence number.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentEventsParams {
    /// The run.
    pub run_id: String,
    /// Events with a larger `seq` are returned (0 for all).
    #[serde(default)]
    pub after: u64,
    /// How long to wait for a new event when there is none yet, in milliseconds (default 20000,
    /// at most 60000; 0 answers at once).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_ms: Option<u64>,
}

/// Result of `agentEvents`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentEventsResult {
    /// The events after `after`, oldest first (each `{runId, seq, type, …}`).
    pub events: Vec<Value>,
    /// Whether the run has ended (no events will follow those returned).
    pub done: bool,
    /// Events that were dropped because the run's buffer was full (their `seq`s are missing).
    pub dropped: u64,
    /// The largest `seq` so far: pass it as `after` next time.
    pub last_seq: u64,
}

/// Params of `cancelAgent`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CancelAgentParams {
    /// The run.
    pub run_id: String,
}

/// Result of `cancelAgent`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CancelAgentResult {
    /// `true` when the run was still going and is now being cancelled; `false` when it had
    /// ended already.
    pub cancelled: bool,
}
