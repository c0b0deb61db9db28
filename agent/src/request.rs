//! What a caller asks of a run (`runAgent`'s params) and what it gets back (its result).
//!
//! Plain serde data in camelCase, the shapes of issue 12; the daemon can deserialize
//! [`AgentRequest`] from the JSON-RPC params and serialize [`AgentResult`] as the answer.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::cost::Usage;

/// The params of a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AgentRequest {
    /// What to do, in plain language.
    pub task: String,
    /// The session the run's calls are traced under (the daemon's business; carried through).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// `offline`, `anthropic` or `openai`; the config's when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend: Option<String>,
    /// The model; the config's (or the backend's default) when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// At most this many steps (1..=50; default from config, else 8).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_steps: Option<u32>,
    /// The run's cost ceiling in USD (default from config). A request can lower or raise it but
    /// not disable it; only the config can.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_ceiling_usd: Option<f64>,
    /// Plan without executing: every tool call is a dry-run.
    #[serde(default)]
    pub dry_run: bool,
    /// Allow destructive tools.
    #[serde(default)]
    pub confirm_destructive: bool,
    /// A JSON Schema the final `{answer, keyFacts}` must satisfy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer_schema: Option<Value>,
    /// Only tools of these servers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub servers: Option<Vec<String>>,
    /// Only these tools: names or `server/tool` patterns, `*` matching any run of characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// How many tools the model sees when the catalog is larger (default from config, else 32).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_limit: Option<usize>,
    /// The whole run's time limit in milliseconds (default from config).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    /// The model gave a final answer that passed the answer schema.
    Completed,
    /// The task could not be done with the tools at hand, or part of it could not be placed (a
    /// name the data does not have, a future period, an ambiguous superlative); `answer` says
    /// which part and what would work, `keyFacts.reason` the same. Nothing made up.
    Cannot,
    /// The task asks for something the agent will not do, such as changing data through tools
    /// that only read it; `answer` says so and nothing was run.
    Refused,
    /// A guard stopped the run; `haltReason` says which, `answer` holds what there was.
    Halted,
    /// The run could not produce a valid answer; `error` says why.
    Failed,
}

/// Why a guard stopped a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HaltReason {
    /// The next LLM call could have passed the cost ceiling.
    CostCeiling,
    /// The step budget ran out.
    MaxSteps,
    /// The whole-run time limit passed.
    Timeout,
    /// `cancelAgent`, or the caller went away.
    Cancelled,
    /// The model kept repeating a call that gave no new information.
    LoopDetected,
}

/// Which limit stopped a halted run, and the setting that controls it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HaltDetail {
    /// What happened, in words ("an LLM call outlived the step limit of 120000 ms").
    pub message: String,
    /// The setting that controls the limit: `agent.timeouts.stepMs`, `agent.timeouts.runMs`,
    /// `timeoutMs`, `maxSteps` or `costCeilingUsd`; absent for a cancellation or a loop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setting: Option<String>,
}

impl HaltReason {
    /// The wire name (`cost_ceiling`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::CostCeiling => "cost_ceiling",
            Self::MaxSteps => "max_steps",
            Self::Timeout => "timeout",
            Self::Cancelled => "cancelled",
            Self::LoopDetected => "loop_detected",
        }
    }
}

/// One tool call of a run, as the result and the events report it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallRecord {
    /// The step (1-based) whose LLM turn asked for it.
    pub step: u32,
    /// The server that ran it; empty when none did (refused before reaching one).
    pub server: String,
    /// The tool.
    pub tool: String,
    /// The arguments sent.
    pub arguments: Value,
    /// A short text of the result (or the error), at most a few hundred characters.
    pub result_summary: String,
    /// The full result, when it is small enough to keep.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// Whether the call failed (a tool error, or refused).
    pub is_error: bool,
    /// How long it took.
    pub latency_ms: u64,
    /// The routing rule that chose the server, when the host said.
    #[serde(default)]
    pub selection_rule: Option<String>,
}

/// Token and cost totals of a run (or of one LLM call).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageTotals {
    /// Every input token sent, cached or not.
    pub tokens_in: u64,
    /// Output tokens.
    pub tokens_out: u64,
    /// Of `tokensIn`, those read from the prompt cache.
    pub cache_read: u64,
    /// Of `tokensIn`, those written to the prompt cache.
    pub cache_write: u64,
    /// What it cost in USD; `null` when the model has no price (only with the ceiling off).
    pub cost_usd: Option<f64>,
    /// LLM calls made.
    pub llm_calls: u32,
}

impl UsageTotals {
    /// Adds one call's usage and cost.
    pub fn add_call(&mut self, usage: &Usage, cost_usd: Option<f64>) {
        self.tokens_in += usage.prompt_tokens();
        self.tokens_out += usage.output_tokens;
        self.cache_read += usage.cache_read_tokens;
        self.cache_write += usage.cache_write_tokens;
        self.cost_usd = match (self.cost_usd, cost_usd) {
            (Some(total), Some(cost)) => Some(total + cost),
            _ => None,
        };
        self.llm_calls += 1;
    }

    /// The totals of one call.
    pub fn of_call(usage: &Usage, cost_usd: Option<f64>) -> Self {
        let mut totals = Self {
            cost_usd: Some(0.0),
            ..Self::default()
        };
        totals.add_call(usage, cost_usd);
        totals
    }
}

/// The result of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentResult {
    /// The run's id (for `cancelAgent` and `agentEvents`).
    pub run_id: String,
    /// How it ended.
    pub status: RunStatus,
    /// The answer text; for a halted run, what the model had said so far.
    pub answer: String,
    /// Structured facts backing the answer.
    pub key_facts: Map<String, Value>,
    /// Every tool call, in order.
    pub tool_calls: Vec<ToolCallRecord>,
    /// Tokens and cost.
    pub usage: UsageTotals,
    /// Why a guard stopped it (`status: halted`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub halt_reason: Option<HaltReason>,
    /// Which limit fired and the setting that controls it (`status: halted`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub halt_detail: Option<HaltDetail>,
    /// Why it failed (`status: failed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The tools shown to the model, as `server/tool` (`*/tool` when routed by the daemon).
    pub available_tools: Vec<String>,
    /// The backend that ran it.
    pub backend: String,
    /// The model.
    pub model: String,
    /// Events the sink could not take (the consumer was too slow); 0 normally.
    pub events_dropped: u64,
}
