//! The plan-act loop: ask the model, make the calls it asks for, repeat until it answers or a
//! guard stops it.
//!
//! One run: discover the tools through the host and fix the set; then per step check the cost
//! ceiling against the worst case of the next LLM call, call the backend (bounded by the step
//! timeout, the run's deadline and cancellation), bill the usage, and either make the tool calls
//! (destructive ones only with confirmation, every one a dry-run in dry-run mode, repeats caught
//! by the loop guard) or check the final answer against the schema, with one corrective turn.
//! Every decision emits an event; the result says how the run ended and carries every call.

mod act;

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tool_cli_protocol::agent::{
    AgentEventKind, HaltDetail, HaltReason, RunAgentResult, RunStatus, ToolCallRecord, UsageTotals,
};

use crate::answer::{AnswerSchema, split_answer};
use crate::backend::{LlmBackend, LlmError, LlmRequest, LlmResponse, StopReason, Turn};
use crate::catalog::{Catalog, choose, passes_filters};
use crate::config::Timeouts;
use crate::cost::{CeilingDecision, ModelPrice, call_cost, check_ceiling};
use crate::events::{Emitter, EventSink};
use crate::guards::LoopGuard;
use crate::host::ToolHost;
use crate::summary::one_line;

/// Everything a run needs besides its host, backend, sink and cancellation; built from a request
/// and the config by [`crate::Agent::prepare`], or directly by tests.
#[derive(Debug)]
pub struct RunSettings {
    /// The run's id.
    pub run_id: String,
    /// The task.
    pub task: String,
    /// LLM calls allowed (a corrective turn comes on top).
    pub max_steps: u32,
    /// The ceiling in USD; `None` disables it.
    pub cost_ceiling_usd: Option<f64>,
    /// The model's price; required when the ceiling is on.
    pub price: Option<ModelPrice>,
    /// `max_tokens` wanted per call.
    pub max_output_tokens: u64,
    /// Tools shown when the catalog is larger.
    pub tool_limit: usize,
    /// Time limits.
    pub timeouts: Timeouts,
    /// Whether the run's limit is the request's `timeoutMs` (else `agent.timeouts.runMs`), so
    /// that a halted run names the setting that bounds it.
    pub run_limit_from_request: bool,
    /// Every call a dry-run.
    pub dry_run: bool,
    /// Destructive tools allowed.
    pub confirm_destructive: bool,
    /// The final answer's schema.
    pub answer_schema: AnswerSchema,
    /// Only these servers.
    pub servers: Option<Vec<String>>,
    /// Only these tools (names or `server/tool` globs).
    pub tools: Option<Vec<String>>,
}

/// The system prompt every backend gets.
pub fn system_prompt(schema: &Value, dry_run: bool) -> String {
    let mut prompt = format!(
        "You complete the user's task by calling the tools provided, then answer.\n\
         - Use tools to find facts; never guess what a tool can tell you.\n\
         - Discover before you query: read a schema or list a directory before relying on names.\n\
         - When you have what you need, reply without tool calls, with exactly one JSON object \
           matching this JSON Schema:\n{schema}\n\
         Normally that is {{\"answer\": \"<one or two sentences>\", \"keyFacts\": {{<the names \
         and figures the answer rests on>}}}}."
    );
    if dry_run {
        prompt.push_str(
            "\nThis is a dry run: no tool is executed; each call returns what would happen. \
             Plan the calls, then answer with the plan.",
        );
    }
    prompt
}

/// How a run ends, before the result is assembled.
enum Ending {
    Completed {
        answer: String,
        key_facts: Map<String, Value>,
    },
    Halted(HaltReason, HaltDetail),
    Failed(String),
}

/// The status a final answer declares: `keyFacts.cannot` or `keyFacts.refused` set to `true`
/// turn a final answer into a "cannot" or "refused" ending (any backend may say so).
fn declared_status(key_facts: &Map<String, Value>) -> RunStatus {
    if key_facts.get("refused") == Some(&Value::Bool(true)) {
        RunStatus::Refused
    } else if key_facts.get("cannot") == Some(&Value::Bool(true)) {
        RunStatus::Cannot
    } else {
        RunStatus::Completed
    }
}

fn detail(message: impl Into<String>, setting: Option<&str>) -> HaltDetail {
    HaltDetail {
        message: message.into(),
        setting: setting.map(str::to_owned),
    }
}

/// Runs one task to its end. Never panics on bad input and never returns early without a result:
/// every failure is a `failed` or `halted` result.
#[tracing::instrument(skip_all, fields(run_id = %settings.run_id))]
pub async fn run(
    settings: RunSettings,
    host: Arc<dyn ToolHost>,
    backend: Arc<dyn LlmBackend>,
    events: Arc<dyn EventSink>,
    cancel: CancellationToken,
) -> RunAgentResult {
    let mut emitter = Emitter::new(&settings.run_id, events.as_ref());
    let mut state = RunState {
        settings: &settings,
        host: host.as_ref(),
        backend: backend.as_ref(),
        cancel: &cancel,
        deadline: Instant::now() + settings.timeouts.run(),
        catalog: Catalog::default(),
        turns: vec![Turn::User(settings.task.clone())],
        usage: UsageTotals {
            cost_usd: Some(0.0),
            ..UsageTotals::default()
        },
        spent_usd: 0.0,
        records: Vec::new(),
        last_text: String::new(),
        guard: LoopGuard::default(),
        ranked_tools: Vec::new(),
        last_max_tokens: settings.max_output_tokens,
    };
    let ending = state.drive(&mut emitter).await;
    let (status, answer, key_facts, halt_reason, halt_detail, error) = match ending {
        Ending::Completed { answer, key_facts } => (
            declared_status(&key_facts),
            answer,
            key_facts,
            None,
            None,
            None,
        ),
        Ending::Halted(reason, detail) => {
            let answer = if state.last_text.trim().is_empty() {
                format!(
                    "no final answer: the run halted ({}: {}{}) after {} tool calls",
                    reason.as_str(),
                    detail.message,
                    detail
                        .setting
                        .as_deref()
                        .map(|s| format!("; {s} sets it"))
                        .unwrap_or_default(),
                    state.records.len()
                )
            } else {
                state.last_text.clone()
            };
            (
                RunStatus::Halted,
                answer,
                Map::new(),
                Some(reason),
                Some(detail),
                None,
            )
        }
        Ending::Failed(message) => {
            emitter.emit(AgentEventKind::Error {
                step: None,
                message: message.clone(),
            });
            (
                RunStatus::Failed,
                state.last_text.clone(),
                Map::new(),
                None,
                None,
                Some(message),
            )
        }
    };
    emitter.emit(AgentEventKind::Final {
        status,
        answer: answer.clone(),
        halt_reason,
        halt_detail: halt_detail.clone(),
        usage: state.usage,
    });
    tracing::debug!(?status, calls = state.records.len(), "run ended");
    RunAgentResult {
        run_id: settings.run_id.clone(),
        status,
        answer,
        key_facts,
        tool_calls: std::mem::take(&mut state.records),
        usage: state.usage,
        halt_reason,
        halt_detail,
        error,
        available_tools: state.catalog.labels(),
        backend: backend.name().to_owned(),
        model: backend.model().to_owned(),
        events_dropped: emitter.dropped(),
    }
}

struct RunState<'a> {
    settings: &'a RunSettings,
    host: &'a dyn ToolHost,
    backend: &'a dyn LlmBackend,
    cancel: &'a CancellationToken,
    deadline: Instant,
    catalog: Catalog,
    turns: Vec<Turn>,
    usage: UsageTotals,
    spent_usd: f64,
    records: Vec<ToolCallRecord>,
    last_text: String,
    guard: LoopGuard,
    /// Exposed names of the tools the host's search ranked for the task, best first.
    ranked_tools: Vec<String>,
    /// The `max_tokens` of the last LLM call.
    last_max_tokens: u64,
}

/// What bounded waiting produced.
enum Waited<T> {
    Done(T),
    Cancelled,
    StepTimeout,
    RunTimeout,
}

impl RunState<'_> {
    /// Waits for `future` within the step timeout, the run deadline and cancellation.
    async fn bounded<T>(&self, future: impl Future<Output = T>) -> Waited<T> {
        let step_end = Instant::now() + self.settings.timeouts.step();
        let end = step_end.min(self.deadline);
        tokio::select! {
            biased;
            _ = self.cancel.cancelled() => Waited::Cancelled,
            value = future => Waited::Done(value),
            _ = tokio::time::sleep_until(end) => {
                if end >= self.deadline { Waited::RunTimeout } else { Waited::StepTimeout }
            }
        }
    }

    async fn drive(&mut self, emitter: &mut Emitter<'_>) -> Ending {
        if let Err(ending) = self.discover().await {
            return ending;
        }
        emitter.emit(AgentEventKind::Started {
            task: self.settings.task.clone(),
            backend: self.backend.name().to_owned(),
            model: self.backend.model().to_owned(),
            available_tools: self.catalog.labels(),
        });
        let system = system_prompt(self.settings.answer_schema.schema(), self.settings.dry_run);
        let mut corrected = false;
        let mut step: u32 = 0;
        loop {
            let budget = self.settings.max_steps + u32::from(corrected);
            if step >= budget {
                return Ending::Halted(
                    HaltReason::MaxSteps,
                    detail(
                        format!(
                            "all {} steps (LLM calls) were used without a final answer",
                            self.settings.max_steps
                        ),
                        Some("maxSteps"),
                    ),
                );
            }
            step += 1;
            if self.cancel.is_cancelled() {
                return Ending::Halted(HaltReason::Cancelled, self.cancelled());
            }
            let response = match self.ask(&system, step, emitter).await {
                Ok(response) => response,
                Err(ending) => return ending,
            };
            if !response.text.trim().is_empty() {
                self.last_text = response.text.clone();
            }
            if !response.tool_calls.is_empty() {
                if let Err(ending) = self.act(step, response, emitter).await {
                    return ending;
                }
                continue;
            }
            match response.stop {
                StopReason::Pause => {
                    self.turns.push(Turn::Assistant {
                        text: response.text,
                        tool_calls: Vec::new(),
                    });
                    continue;
                }
                StopReason::Refusal => {
                    return Ending::Failed(format!(
                        "the model declined the task: {}",
                        one_line(&response.text)
                    ));
                }
                StopReason::EndTurn
                | StopReason::ToolUse
                | StopReason::MaxTokens
                | StopReason::Other(_) => {}
            }
            let checked = self.settings.answer_schema.check(&response.text);
            // An answer cut off at max_tokens is no broken JSON to correct: say so.
            if checked.is_err() && response.stop == StopReason::MaxTokens {
                return Ending::Failed(format!(
                    "the model's answer was cut off at max_tokens ({} output tokens; finish \
                     reason \"{}\"), so it is incomplete; raise agent.maxOutputTokens (or the \
                     cost ceiling, which can lower it)",
                    self.last_max_tokens, response.raw_stop
                ));
            }
            match checked {
                Ok(object) => {
                    let (answer, key_facts) = split_answer(&object);
                    return Ending::Completed { answer, key_facts };
                }
                Err(error) if !corrected => {
                    corrected = true;
                    emitter.emit(AgentEventKind::Error {
                        step: Some(step),
                        message: format!("{error}; asking the model once more"),
                    });
                    self.turns.push(Turn::Assistant {
                        text: response.text,
                        tool_calls: Vec::new(),
                    });
                    self.turns.push(Turn::User(format!(
                        "{error}. Reply with only that JSON object, matching this JSON Schema: {}",
                        self.settings.answer_schema.schema()
                    )));
                }
                Err(error) => return Ending::Failed(error.to_string()),
            }
        }
    }

    /// Lists the tools, filters them, keeps the best `tool_limit`, and names them.
    async fn discover(&mut self) -> Result<(), Ending> {
        let listed = match self.bounded(self.host.list_tools()).await {
            Waited::Done(Ok(tools)) => tools,
            Waited::Done(Err(error)) => {
                return Err(Ending::Failed(format!("cannot list the tools: {error}")));
            }
            other => return Err(self.interrupted(other)),
        };
        let servers = self.settings.servers.as_deref();
        // A server the request names that no visible tool comes from would silently narrow the
        // run to nothing of it: refused, with the servers there are.
        if let Some(named) = servers {
            let mut known: Vec<&str> = listed.iter().map(|t| t.server.as_str()).collect();
            known.sort_unstable();
            known.dedup();
            let unknown: Vec<&String> = named
                .iter()
                .filter(|s| !known.contains(&s.as_str()))
                .collect();
            if !unknown.is_empty() {
                return Err(Ending::Failed(format!(
                    "servers names {} that no tool this run can see comes from; the servers \
                     are {}",
                    unknown
                        .iter()
                        .map(|s| format!("{s:?}"))
                        .collect::<Vec<_>>()
                        .join(", "),
                    if known.is_empty() {
                        "none".to_owned()
                    } else {
                        known.join(", ")
                    }
                )));
            }
        }
        let tools = self.settings.tools.as_deref();
        let visible: Vec<_> = listed
            .into_iter()
            .filter(|tool| passes_filters(tool, servers, tools))
            .collect();
        let limit = self.settings.tool_limit;
        // Always ask: the ranking picks the shown subset of a large catalog, and tells the
        // offline planner which tools are nearest to a task it cannot do. Ask for more than
        // the limit: filters may remove some of the host's hits.
        let query = self.host.search_tools(&self.settings.task, limit * 2);
        let ranked = match self.bounded(query).await {
            Waited::Done(Ok(ranked)) => Some(ranked),
            Waited::Done(Err(error)) => {
                tracing::debug!(%error, "search failed; keeping the first tools listed");
                None
            }
            other => return Err(self.interrupted(other)),
        };
        self.catalog = Catalog::build(choose(visible, ranked.clone(), limit));
        self.ranked_tools = ranked
            .unwrap_or_default()
            .iter()
            .filter_map(|info| {
                self.catalog
                    .tools()
                    .iter()
                    .find(|tool| tool.tool == info.name && tool.servers.contains(&info.server))
                    .map(|tool| tool.name.clone())
            })
            .fold(Vec::new(), |mut names, name| {
                if !names.contains(&name) {
                    names.push(name);
                }
                names
            });
        Ok(())
    }

    fn interrupted<T>(&self, waited: Waited<T>) -> Ending {
        match waited {
            Waited::Cancelled => Ending::Halted(HaltReason::Cancelled, self.cancelled()),
            Waited::RunTimeout => {
                let setting = if self.settings.run_limit_from_request {
                    "timeoutMs"
                } else {
                    "agent.timeouts.runMs"
                };
                Ending::Halted(
                    HaltReason::Timeout,
                    detail(
                        format!(
                            "the run's time limit of {} ms passed",
                            self.settings.timeouts.run_ms
                        ),
                        Some(setting),
                    ),
                )
            }
            Waited::StepTimeout => Ending::Halted(
                HaltReason::Timeout,
                detail(
                    format!(
                        "a step outlived the step limit of {} ms",
                        self.settings.timeouts.step_ms
                    ),
                    Some("agent.timeouts.stepMs"),
                ),
            ),
            Waited::Done(_) => unreachable!("only interruptions are passed here"),
        }
    }

    fn cancelled(&self) -> HaltDetail {
        detail(
            "the run was cancelled (cancelAgent, or the caller went away)",
            None,
        )
    }

    /// One LLM call: the ceiling check, the call, the bill.
    async fn ask(
        &mut self,
        system: &str,
        step: u32,
        emitter: &mut Emitter<'_>,
    ) -> Result<LlmResponse, Ending> {
        let wanted = self.settings.max_output_tokens;
        let mut request = LlmRequest {
            system,
            tools: self.catalog.tools(),
            turns: &self.turns,
            max_output_tokens: wanted,
            temperature: None,
            stop_sequences: &[],
            ranked_tools: &self.ranked_tools,
            deadline: Some((Instant::now() + self.settings.timeouts.step()).min(self.deadline)),
        };
        if let Some(ceiling) = self.settings.cost_ceiling_usd {
            let Some(price) = &self.settings.price else {
                return Err(Ending::Failed(format!(
                    "the model {} has no price; add it to agent.prices or disable the ceiling",
                    self.backend.model()
                )));
            };
            let bound = self.backend.input_token_bound(&request);
            match check_ceiling(price, self.spent_usd, ceiling, bound, wanted) {
                CeilingDecision::Proceed { max_output_tokens } => {
                    request.max_output_tokens = max_output_tokens;
                }
                CeilingDecision::Halt { worst_case_usd } => {
                    let message = format!(
                        "the next LLM call could cost up to ${worst_case_usd:.4}; with ${:.4} \
                         spent that could pass the ceiling of ${ceiling:.4}",
                        self.spent_usd
                    );
                    emitter.emit(AgentEventKind::Error {
                        step: Some(step),
                        message: message.clone(),
                    });
                    return Err(Ending::Halted(
                        HaltReason::CostCeiling,
                        detail(message, Some("costCeilingUsd")),
                    ));
                }
            }
        }
        self.last_max_tokens = request.max_output_tokens;
        let started = Instant::now();
        let outcome = match self.bounded(self.backend.complete(request)).await {
            Waited::Done(outcome) => outcome,
            other => {
                if matches!(other, Waited::StepTimeout) {
                    emitter.emit(AgentEventKind::Error {
                        step: Some(step),
                        message: format!(
                            "the LLM call took longer than the step limit of {} ms \
                             (agent.timeouts.stepMs)",
                            self.settings.timeouts.step_ms
                        ),
                    });
                }
                return Err(self.interrupted(other));
            }
        };
        let latency_ms = millis(started.elapsed());
        match outcome {
            Ok(response) => {
                let cost = self.bill(&response.usage);
                emitter.emit(AgentEventKind::LlmCall {
                    step,
                    usage: response.usage.totals(cost),
                    stop_reason: response.raw_stop.clone(),
                    tool_calls: response.tool_calls.len(),
                    latency_ms,
                    error: None,
                    response_model: response.identity.model.clone(),
                    response_id: response.identity.id.clone(),
                });
                Ok(response)
            }
            Err(error) => {
                // A failed call that was billed (a cut stream, an error event after tokens)
                // is a call like any other: in the totals and in the events, so traces and the
                // session's summary carry it.
                let usage = error.usage();
                if usage != Default::default() {
                    let cost = self.bill(&usage);
                    emitter.emit(AgentEventKind::LlmCall {
                        step,
                        usage: usage.totals(cost),
                        stop_reason: "error".into(),
                        tool_calls: 0,
                        latency_ms,
                        error: Some(one_line(&error.to_string())),
                        response_model: None,
                        response_id: None,
                    });
                }
                Err(match error {
                    LlmError::NoPlan(reason) => Ending::Failed(reason),
                    other => Ending::Failed(other.to_string()),
                })
            }
        }
    }

    /// Adds a call's usage to the totals; returns its cost.
    fn bill(&mut self, usage: &crate::cost::Usage) -> Option<f64> {
        let cost = self
            .settings
            .price
            .as_ref()
            .map(|price| call_cost(price, usage));
        if let Some(cost) = cost {
            self.spent_usd += cost;
        }
        self.usage.add(&usage.totals(cost));
        cost
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}
