//! The acting half of a step: the tool calls of one model turn, each judged (known tool,
//! destructive without confirmation, a repeat without new information) before it reaches the
//! host, made within the step timeout, recorded, and answered back to the model.

use tokio::time::Instant;
use tool_cli_protocol::agent::{AgentEventKind, HaltDetail, HaltReason, ToolCallRecord};

use super::{Ending, RunState, Waited, millis};
use crate::backend::{LlmResponse, LlmToolCall, ToolResultTurn, Turn};
use crate::events::Emitter;
use crate::guards::Verdict;
use crate::host::ToolCall;
use crate::summary::{KEEP_RESULT_BYTES, MODEL_RESULT_CHARS, one_line, result_text};

impl RunState<'_> {
    /// Makes the tool calls of one model turn and appends the turn and the results.
    pub(super) async fn act(
        &mut self,
        step: u32,
        response: LlmResponse,
        emitter: &mut Emitter<'_>,
    ) -> Result<(), Ending> {
        let mut results = Vec::with_capacity(response.tool_calls.len());
        let mut halt = None;
        for call in &response.tool_calls {
            if halt.is_some() {
                // The turn's remaining calls still need an answer for the transcript to be valid.
                results.push(error_result(call, "not run: the run is halting".into()));
                continue;
            }
            match self.one_call(step, call, emitter).await {
                Ok(result) => results.push(result),
                Err(ending) => {
                    results.push(error_result(call, "not run: the run is halting".into()));
                    halt = Some(ending);
                }
            }
        }
        self.turns.push(Turn::Assistant {
            text: response.text,
            tool_calls: response.tool_calls,
        });
        self.turns.push(Turn::ToolResults(results));
        match halt {
            Some(ending) => Err(ending),
            None => Ok(()),
        }
    }

    async fn one_call(
        &mut self,
        step: u32,
        call: &LlmToolCall,
        emitter: &mut Emitter<'_>,
    ) -> Result<ToolResultTurn, Ending> {
        let Some(tool) = self.catalog.resolve(&call.name).cloned() else {
            let known: Vec<&str> = self
                .catalog
                .tools()
                .iter()
                .map(|t| t.name.as_str())
                .collect();
            let message = format!(
                "unknown tool {:?}; the tools are: {}",
                call.name,
                known.join(", ")
            );
            return Ok(self.refuse(step, None, &call.name, call, message, emitter));
        };
        if let Err(problem) = crate::backend::arguments_object(&call.arguments) {
            let message = format!(
                "refused: {problem}; call {} again with a JSON object matching its input schema",
                tool.name
            );
            return Ok(self.refuse(
                step,
                tool.server.clone(),
                &tool.tool,
                call,
                message,
                emitter,
            ));
        }
        if tool.destructive && !self.settings.confirm_destructive && !self.settings.dry_run {
            let message = format!(
                "refused: {} is destructive and this run was not started with \
                 confirmDestructive: true; choose another tool or finish without it",
                tool.tool
            );
            return Ok(self.refuse(
                step,
                tool.server.clone(),
                &tool.tool,
                call,
                message,
                emitter,
            ));
        }
        match self
            .guard
            .check(tool.server.as_deref(), &tool.tool, &call.arguments)
        {
            Verdict::Proceed => {}
            Verdict::Repeat => {
                let message = "refused: you made this exact call just before and its result is \
                               above; use it, or change the arguments"
                    .to_owned();
                return Ok(self.refuse(
                    step,
                    tool.server.clone(),
                    &tool.tool,
                    call,
                    message,
                    emitter,
                ));
            }
            Verdict::Loop => {
                emitter.emit(AgentEventKind::Error {
                    step: Some(step),
                    message: format!(
                        "loop detected: {} was asked for again with the same arguments",
                        tool.tool
                    ),
                });
                return Err(Ending::Halted(
                    HaltReason::LoopDetected,
                    HaltDetail {
                        message: format!(
                            "{} was asked for a third time with the same arguments",
                            tool.tool
                        ),
                        setting: None,
                    },
                ));
            }
        }
        emitter.emit(AgentEventKind::ToolCall {
            step,
            server: tool.server.clone(),
            tool: tool.tool.clone(),
            arguments: call.arguments.clone(),
            dry_run: self.settings.dry_run,
        });
        let request = ToolCall {
            server: tool.server.clone(),
            tool: tool.tool.clone(),
            arguments: call.arguments.clone(),
            hint: tool.server.is_none().then(|| self.settings.task.clone()),
            dry_run: self.settings.dry_run,
            confirm_destructive: self.settings.confirm_destructive,
            step,
            call_id: Some(call.id.clone()),
        };
        let started = Instant::now();
        let outcome = match self.bounded(self.host.call_tool(request)).await {
            Waited::Done(outcome) => outcome,
            Waited::StepTimeout => Err(crate::host::ToolError::Timeout(format!(
                "no answer within the step timeout of {} ms",
                self.settings.timeouts.step_ms
            ))),
            other => return Err(self.interrupted(other)),
        };
        let (record, result) = match outcome {
            Ok(outcome) => {
                let text = result_text(&outcome.result, MODEL_RESULT_CHARS);
                let kept = (outcome.result.to_string().len() <= KEEP_RESULT_BYTES)
                    .then(|| outcome.result.clone());
                (
                    ToolCallRecord {
                        step,
                        server: outcome.server.clone(),
                        tool: outcome.tool.clone(),
                        arguments: call.arguments.clone(),
                        result_summary: one_line(&text),
                        result: kept,
                        is_error: outcome.is_error,
                        latency_ms: millis(outcome.latency),
                        selection_rule: outcome.selection_rule.clone(),
                    },
                    ToolResultTurn {
                        call_id: call.id.clone(),
                        name: call.name.clone(),
                        content: text,
                        result: Some(outcome.result),
                        is_error: outcome.is_error,
                    },
                )
            }
            Err(error) => {
                let message = error.to_string();
                (
                    ToolCallRecord {
                        step,
                        server: tool.server.clone().unwrap_or_default(),
                        tool: tool.tool.clone(),
                        arguments: call.arguments.clone(),
                        result_summary: one_line(&message),
                        result: None,
                        is_error: true,
                        latency_ms: millis(started.elapsed()),
                        selection_rule: None,
                    },
                    error_result(call, message),
                )
            }
        };
        emitter.emit(AgentEventKind::ToolResult {
            step,
            server: record.server.clone(),
            tool: record.tool.clone(),
            is_error: record.is_error,
            result_summary: record.result_summary.clone(),
            latency_ms: record.latency_ms,
            selection_rule: record.selection_rule.clone(),
        });
        self.records.push(record);
        Ok(result)
    }

    /// Records a call the loop refused before it reached the host, and gives the model's answer
    /// to it: a tool error carrying `message`.
    fn refuse(
        &mut self,
        step: u32,
        server: Option<String>,
        tool: &str,
        call: &LlmToolCall,
        message: String,
        emitter: &mut Emitter<'_>,
    ) -> ToolResultTurn {
        let record = ToolCallRecord {
            step,
            server: server.unwrap_or_default(),
            tool: tool.to_owned(),
            arguments: call.arguments.clone(),
            result_summary: one_line(&message),
            result: None,
            is_error: true,
            latency_ms: 0,
            selection_rule: None,
        };
        emitter.emit(AgentEventKind::ToolResult {
            step,
            server: record.server.clone(),
            tool: record.tool.clone(),
            is_error: true,
            result_summary: record.result_summary.clone(),
            latency_ms: 0,
            selection_rule: None,
        });
        self.records.push(record);
        error_result(call, message)
    }
}

fn error_result(call: &LlmToolCall, message: String) -> ToolResultTurn {
    ToolResultTurn {
        call_id: call.id.clone(),
        name: call.name.clone(),
        content: message,
        result: None,
        is_error: true,
    }
}
