//! Wire types of the agent methods: `runAgent`'s params and result, the events of a run that
//! `agentEvents` returns, and `cancelAgent`.
//!
//! `runAgent`'s params are what a caller asks of the agent (`tool-cli-agent` reads them) plus one
//! member that is the daemon's business: `runId`. The result and the events are what the agent
//! fills in; the daemon passes them on unchanged and a client reads them typed. See
//! `docs/protocol.md` and `docs/agent.md`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Params of `runAgent`: what a caller asks of a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RunAgentParams {
    /// What to do, in plain language.
    pub task: String,
    /// The run's name, chosen by the caller so it can follow or cancel the run from another
    /// connection; the daemon names the run when it is left out. The daemon's business: the
    /// agent is handed the run id the daemon settled on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
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

impl RunStatus {
    /// The wire name (`completed`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Completed => "completed",
            Self::Cannot => "cannot",
            Self::Refused => "refused",
            Self::Halted => "halted",
            Self::Failed => "failed",
        }
    }
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

/// One tool call of a run, as the result reports it.
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
    /// Adds `other`'s tokens, calls and cost; the cost becomes unknown (`None`) once either is.
    pub fn add(&mut self, other: &UsageTotals) {
        self.tokens_in += other.tokens_in;
        self.tokens_out += other.tokens_out;
        self.cache_read += other.cache_read;
        self.cache_write += other.cache_write;
        self.cost_usd = match (self.cost_usd, other.cost_usd) {
            (Some(total), Some(cost)) => Some(total + cost),
            _ => None,
        };
        self.llm_calls += other.llm_calls;
    }
}

/// Result of `runAgent`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunAgentResult {
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

/// What happened in one event of a run, tagged by `type` on the wire.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AgentEventKind {
    /// The run began; these are the tools the model sees.
    #[serde(rename_all = "camelCase")]
    Started {
        /// The task.
        task: String,
        /// The backend.
        backend: String,
        /// The model.
        model: String,
        /// `server/tool` of every exposed tool.
        available_tools: Vec<String>,
    },
    /// One LLM call finished.
    #[serde(rename_all = "camelCase")]
    LlmCall {
        /// The step.
        step: u32,
        /// Its usage and cost.
        usage: UsageTotals,
        /// Why the model stopped (`tool_use`, `end_turn`, …, as the provider said).
        stop_reason: String,
        /// Tool calls it asked for.
        tool_calls: usize,
        /// How long it took, in milliseconds.
        latency_ms: u64,
        /// Why the call failed, when it did (its tokens were billed all the same).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        /// The model that answered, as the provider named it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        response_model: Option<String>,
        /// The provider's id of the answer.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        response_id: Option<String>,
    },
    /// A tool call is about to be made.
    #[serde(rename_all = "camelCase")]
    ToolCall {
        /// The step.
        step: u32,
        /// The server, or `null` when the daemon routes it.
        server: Option<String>,
        /// The tool.
        tool: String,
        /// The arguments.
        arguments: Value,
        /// Whether it is a dry-run.
        dry_run: bool,
    },
    /// A tool call returned (or was refused).
    #[serde(rename_all = "camelCase")]
    ToolResult {
        /// The step.
        step: u32,
        /// The server that ran it.
        server: String,
        /// The tool.
        tool: String,
        /// Whether it failed.
        is_error: bool,
        /// A short text of the result.
        result_summary: String,
        /// How long it took, in milliseconds.
        latency_ms: u64,
        /// The routing rule, when known.
        selection_rule: Option<String>,
    },
    /// The run ended.
    #[serde(rename_all = "camelCase")]
    Final {
        /// How.
        status: RunStatus,
        /// The answer.
        answer: String,
        /// Why a guard stopped it.
        halt_reason: Option<HaltReason>,
        /// Which limit fired and the setting that controls it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        halt_detail: Option<HaltDetail>,
        /// Totals.
        usage: UsageTotals,
    },
    /// Something went wrong (the run may go on: a corrective turn, a refused call).
    #[serde(rename_all = "camelCase")]
    Error {
        /// The step, when inside one.
        step: Option<u32>,
        /// What happened; never contains a key.
        message: String,
    },
    /// An event of a type this version does not know (from a newer daemon), read so that a
    /// client follows the rest of the run; never sent.
    #[serde(other)]
    Unknown,
}

impl AgentEventKind {
    /// The step the event belongs to, when it belongs to one.
    pub fn step(&self) -> Option<u32> {
        match self {
            Self::LlmCall { step, .. }
            | Self::ToolCall { step, .. }
            | Self::ToolResult { step, .. } => Some(*step),
            Self::Error { step, .. } => *step,
            Self::Started { .. } | Self::Final { .. } | Self::Unknown => None,
        }
    }
}

/// An event with its place in the run: `{runId, seq, type, …}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentEvent {
    /// The run.
    pub run_id: String,
    /// 1, 2, 3, … in emission order, for `agentEvents {after}`.
    pub seq: u64,
    /// What happened.
    #[serde(flatten)]
    pub kind: AgentEventKind,
}

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
    /// The events after `after`, oldest first.
    pub events: Vec<AgentEvent>,
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

#[cfg(test)]
mod tests {
    use serde::Serialize;
    use serde::de::DeserializeOwned;
    use serde_json::json;

    use super::*;

    /// `wire` read into `T` and written back: the same JSON, member for member.
    fn round_trip<T: Serialize + DeserializeOwned>(wire: &Value) -> T {
        let typed: T = serde_json::from_value(wire.clone())
            .unwrap_or_else(|error| panic!("{error}: {wire:#}"));
        assert_eq!(serde_json::to_value(&typed).expect("serialize"), *wire);
        typed
    }

    const TOOLS: [&str; 3] = ["demo/describe_schema", "demo/sql_query", "demo/run_python"];
    const SUMMARY: &str = "{\"tables\":[{\"name\":\"customers\",\"kind\":\"table\",\"row_count\":50}]}… [2395 more characters]";

    /// An offline run out of steps, as the daemon answered it (tool list and summary cut).
    #[test]
    fn a_run_result_reads_back_unchanged() {
        let wire = json!({"runId": "fixture-halted", "status": "halted",
            "answer": "no final answer: the run halted (max_steps) after 1 tool calls",
            "keyFacts": {}, "toolCalls": [{"step": 1, "server": "demo", "tool": "describe_schema",
                "arguments": {}, "resultSummary": SUMMARY, "isError": false, "latencyMs": 2,
                "selectionRule": "named"}],
            "usage": {"tokensIn": 0, "tokensOut": 0, "cacheRead": 0, "cacheWrite": 0,
                      "costUsd": 0.0, "llmCalls": 1},
            "haltReason": "max_steps",
            "haltDetail": {"message": "the step budget of 1 ran out", "setting": "maxSteps"},
            "availableTools": TOOLS, "backend": "offline", "model": "offline-planner",
            "eventsDropped": 0});
        let result: RunAgentResult = round_trip(&wire);
        assert_eq!(result.status, RunStatus::Halted);
        assert_eq!(result.halt_reason, Some(HaltReason::MaxSteps));
        assert_eq!(
            result.tool_calls[0].selection_rule.as_deref(),
            Some("named")
        );
        // A completed run with facts, a kept result and an unpriced model.
        let wire = json!({"runId": "r", "status": "completed", "answer": "Ada Okafor",
            "keyFacts": {"customer_name": "Ada Okafor", "order_total": 5579.4},
            "toolCalls": [{"step": 1, "server": "demo", "tool": "sql_query",
                "arguments": {"sql": "SELECT 1"}, "resultSummary": "1",
                "result": {"content": [{"type": "text", "text": "1"}], "isError": false},
                "isError": false, "latencyMs": 3, "selectionRule": null}],
            "usage": {"tokensIn": 900, "tokensOut": 40, "cacheRead": 100, "cacheWrite": 0,
                      "costUsd": null, "llmCalls": 2},
            "availableTools": TOOLS, "backend": "openai", "model": "gpt-x",
            "eventsDropped": 3});
        let result: RunAgentResult = round_trip(&wire);
        assert_eq!(result.usage.cost_usd, None);
        assert!(result.tool_calls[0].result.is_some());
    }

    /// Every event type, as `agentEvents` answers them: an offline run out of steps and the
    /// events of a priced run halted by its cost ceiling.
    #[test]
    fn an_events_page_of_every_type_reads_back_unchanged() {
        let usage = json!({"tokensIn": 8500, "tokensOut": 100, "cacheRead": 0,
                           "cacheWrite": 0, "costUsd": 0.086, "llmCalls": 1});
        let wire = json!({"events": [
            {"runId": "r", "seq": 1, "type": "started",
             "task": "Which customer has the most completed orders?", "backend": "offline",
             "model": "offline-planner", "availableTools": TOOLS},
            {"runId": "r", "seq": 2, "type": "llm_call", "step": 1, "usage": usage,
             "stopReason": "tool_use", "toolCalls": 1, "latencyMs": 0,
             "responseModel": "claude-sonnet-4-5-20250929", "responseId": "msg_01"},
            {"runId": "r", "seq": 3, "type": "tool_call", "step": 1, "server": null,
             "tool": "describe_schema", "arguments": {}, "dryRun": true},
            {"runId": "r", "seq": 4, "type": "tool_result", "step": 1, "server": "demo",
             "tool": "describe_schema", "isError": false, "resultSummary": SUMMARY,
             "latencyMs": 2, "selectionRule": "named"},
            {"runId": "r", "seq": 5, "type": "llm_call", "step": 2, "usage": usage,
             "stopReason": "error", "toolCalls": 0, "latencyMs": 7,
             "error": "the provider's stream ended early"},
            {"runId": "r", "seq": 6, "type": "error", "step": 2,
             "message": "the next LLM call could cost up to $0.0900"},
            {"runId": "r", "seq": 7, "type": "error", "step": null, "message": "failed"},
            {"runId": "r", "seq": 8, "type": "final", "status": "halted",
             "answer": "", "haltReason": "cost_ceiling",
             "haltDetail": {"message": "the ceiling", "setting": "costCeilingUsd"},
             "usage": usage},
            {"runId": "r", "seq": 9, "type": "final", "status": "completed", "answer": "done",
             "haltReason": null, "usage": usage}],
            "done": true, "dropped": 0, "lastSeq": 9});
        let page: AgentEventsResult = round_trip(&wire);
        let steps: Vec<Option<u32>> = page.events.iter().map(|e| e.kind.step()).collect();
        assert_eq!(
            steps,
            [
                None,
                Some(1),
                Some(1),
                Some(1),
                Some(2),
                Some(2),
                None,
                None,
                None
            ]
        );
        assert!(matches!(
            &page.events[7].kind,
            AgentEventKind::Final {
                status: RunStatus::Halted,
                halt_reason: Some(HaltReason::CostCeiling),
                ..
            }
        ));
    }

    #[test]
    fn an_event_type_of_a_newer_daemon_is_read_as_unknown() {
        let event: AgentEvent =
            serde_json::from_value(json!({"runId": "r", "seq": 4, "type": "thinking", "x": 1}))
                .expect("read");
        assert_eq!(event.seq, 4);
        assert_eq!(event.kind, AgentEventKind::Unknown);
    }

    #[test]
    fn run_params_take_the_run_id_and_refuse_unknown_members() {
        let params: RunAgentParams = round_trip(
            &json!({"task": "t", "runId": "mine", "maxSteps": 3, "dryRun": true,
                               "confirmDestructive": false}),
        );
        assert_eq!(params.run_id.as_deref(), Some("mine"));
        let error = serde_json::from_value::<RunAgentParams>(json!({"task": "t", "maxStep": 3}))
            .unwrap_err();
        assert!(
            error.to_string().contains("unknown field `maxStep`"),
            "{error}"
        );
        // Positional params follow the documented member order (docs/protocol.md's heading of
        // `runAgent`: task, runId, sessionId, …).
        let positional: RunAgentParams =
            serde_json::from_value(json!(["t", "mine", "the-session"])).expect("positional");
        assert_eq!(
            (
                positional.run_id.as_deref(),
                positional.session_id.as_deref()
            ),
            (Some("mine"), Some("the-session"))
        );
    }

    #[test]
    fn the_usage_of_an_unpriced_call_makes_the_total_unknown() {
        let mut total = UsageTotals {
            cost_usd: Some(0.0),
            ..UsageTotals::default()
        };
        let call = |cost_usd| UsageTotals {
            tokens_in: 10,
            tokens_out: 2,
            cost_usd,
            llm_calls: 1,
            ..UsageTotals::default()
        };
        total.add(&call(Some(0.5)));
        total.add(&call(Some(0.25)));
        assert_eq!(
            (total.tokens_in, total.llm_calls, total.cost_usd),
            (20, 2, Some(0.75))
        );
        total.add(&call(None));
        assert_eq!(total.cost_usd, None);
        assert_eq!(RunStatus::Cannot.as_str(), "cannot");
        assert_eq!(
            serde_json::to_value(RunStatus::Cannot).unwrap(),
            json!(RunStatus::Cannot.as_str())
        );
    }
}
