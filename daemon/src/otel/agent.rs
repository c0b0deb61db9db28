//! An agent run's spans (`invoke_agent`, one `chat` per model call) from the facts the daemon
//! already has: the run's start and result, and the loop's `started` and `llmCall` events. The
//! run's tool calls are ordinary pipeline calls made under the `invoke_agent` span and marked as
//! an agent's ([`super::AgentToolCall`]), so their records become `execute_tool` spans (with the
//! upstream request's MCP attributes: no second MCP span). Nothing here touches the agent crate.

use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use tokio::time::Instant;
use tool_cli_agent::request::{AgentResult, RunStatus, UsageTotals};
use tool_cli_telemetry::Telemetry;
use tool_cli_telemetry::context::SpanIds;
use tool_cli_telemetry::span::Timing;
use tool_cli_telemetry::spans::{AgentRun, ChatCall, Outcome, TokenUsage};

/// The `gen_ai.provider.name` of the in-process offline planner (no model provider).
const PLANNER_PROVIDER: &str = "tool_cli.planner";

/// The spans of one run.
pub(crate) struct AgentSpans {
    telemetry: Telemetry,
    ids: SpanIds,
    started: SystemTime,
    arrived: Instant,
    run_id: String,
    conversation_id: String,
    /// The backend and model, from the `started` event.
    model: Mutex<(String, String)>,
}

/// One model call as the `llmCall` event tells it.
pub(crate) struct ChatFacts<'a> {
    pub(crate) usage: &'a UsageTotals,
    pub(crate) stop_reason: &'a str,
    pub(crate) latency: Duration,
    /// The model that answered and the provider's id of the answer, when it said.
    pub(crate) response_model: Option<&'a str>,
    pub(crate) response_id: Option<&'a str>,
    /// Why the call failed, when it did.
    pub(crate) error: Option<&'a str>,
}

fn provider_of(backend: &str) -> &str {
    match backend {
        "offline" => PLANNER_PROVIDER,
        other => other,
    }
}

fn token_usage(usage: &UsageTotals) -> TokenUsage {
    TokenUsage {
        input: Some(usage.tokens_in),
        output: Some(usage.tokens_out),
        cache_read: (usage.cache_read > 0).then_some(usage.cache_read),
        cache_creation: (usage.cache_write > 0).then_some(usage.cache_write),
    }
}

impl AgentSpans {
    /// Begins a run's `invoke_agent` span under `parent` (the `runAgent` request's span).
    pub(crate) fn begin(
        telemetry: &Telemetry,
        parent: &SpanIds,
        run_id: &str,
        conversation_id: &str,
    ) -> AgentSpans {
        AgentSpans {
            telemetry: telemetry.clone(),
            ids: parent.child(),
            started: SystemTime::now(),
            arrived: Instant::now(),
            run_id: run_id.to_owned(),
            conversation_id: conversation_id.to_owned(),
            model: Mutex::new((String::new(), String::new())),
        }
    }

    /// The `invoke_agent` span's identity: the parent of the run's model and tool calls.
    pub(crate) fn ids(&self) -> &SpanIds {
        &self.ids
    }

    /// The loop said which backend and model it runs.
    pub(crate) fn started(&self, backend: &str, model: &str) {
        *self.model.lock().unwrap() = (backend.to_owned(), model.to_owned());
    }

    /// A model call ended: its `chat` span (and the GenAI duration and token metrics).
    pub(crate) fn chat(&self, facts: ChatFacts<'_>) {
        if !self.telemetry.is_enabled() {
            return;
        }
        let (backend, model) = self.model.lock().unwrap().clone();
        let finish_reasons = [facts.stop_reason];
        self.telemetry.chat(
            &self.ids.child(),
            &ChatCall {
                provider: provider_of(&backend),
                request_model: &model,
                response_model: facts.response_model,
                response_id: facts.response_id,
                finish_reasons: if facts.stop_reason.is_empty() {
                    &[]
                } else {
                    &finish_reasons
                },
                usage: token_usage(facts.usage),
                in_process: backend == "offline",
                streaming: backend != "offline",
                max_tokens: None,
                server_address: None,
                server_port: None,
                conversation_id: Some(&self.conversation_id),
                cost_usd: facts.usage.cost_usd,
                outcome: match facts.error {
                    // The agent's message says what failed; no finer type is known here.
                    Some(message) => Outcome::Failed {
                        error_type: tool_cli_telemetry::semconv::values::OTHER_ERROR,
                        message,
                    },
                    None => Outcome::Ok,
                },
                timing: Timing::ending_at(SystemTime::now(), facts.latency),
            },
        );
    }

    /// The run ended with `result`: its `invoke_agent` span.
    pub(crate) fn end(&self, result: &AgentResult) {
        if !self.telemetry.is_enabled() {
            return;
        }
        let error_type;
        let outcome = match (&result.status, &result.error) {
            (RunStatus::Failed, error) => Outcome::Failed {
                error_type: "agent_failed",
                message: error.as_deref().unwrap_or("the run failed"),
            },
            (RunStatus::Halted, _) => {
                error_type = result
                    .halt_reason
                    .and_then(|reason| serde_json::to_value(reason).ok())
                    .and_then(|value| value.as_str().map(str::to_owned))
                    .unwrap_or_else(|| "halted".to_owned());
                Outcome::Failed {
                    error_type: &error_type,
                    message: "a guard stopped the run",
                }
            }
            // It did not do the task, saying why: not a fault, but not a success a collector
            // should sample away either.
            (RunStatus::Cannot, error) => Outcome::Failed {
                error_type: "agent_cannot",
                message: error
                    .as_deref()
                    .unwrap_or("the agent could not do the task"),
            },
            (RunStatus::Refused, error) => Outcome::Failed {
                error_type: "agent_refused",
                message: error.as_deref().unwrap_or("the agent refused the task"),
            },
            (RunStatus::Completed, _) => Outcome::Ok,
        };
        self.telemetry.agent_run(
            &self.ids,
            &AgentRun {
                agent_name: None,
                provider: provider_of(&result.backend),
                request_model: Some(&result.model),
                conversation_id: Some(&self.conversation_id),
                run_id: Some(&self.run_id),
                usage: token_usage(&result.usage),
                tool_calls: Some(result.tool_calls.len() as u32),
                cost_usd: result.usage.cost_usd,
                outcome,
                timing: Timing {
                    start: self.started,
                    duration: self.arrived.elapsed(),
                },
            },
        );
    }
}
