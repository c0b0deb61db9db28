//! The agent's `ToolHost` over the calls and discovery services: every tool call an agent makes is an ordinary
//! call through the pipeline, with the caller's token, the run's session, and the run as its
//! parent — validated, policed, guarded, retried and traced like a `callTool` from a script.

use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;
use tool_cli_agent::host::{BoxFuture, ToolCall, ToolCallOutcome, ToolError, ToolHost, ToolInfo};
use tool_cli_protocol::ErrorData;

use crate::error::Error;
use crate::pipeline::{CallAnswer, CallContext, CallRequest};
use crate::services::calls::Calls;
use crate::services::discovery::Discovery;

/// The tools and calls of one run.
pub(crate) struct PipelineHost {
    pub(crate) calls: Arc<Calls>,
    pub(crate) discovery: Arc<Discovery>,
    /// The run's context: the caller's grant and session, the run's call id as parent.
    pub(crate) context: CallContext,
}

impl ToolHost for PipelineHost {
    fn list_tools(&self) -> BoxFuture<'_, Result<Vec<ToolInfo>, ToolError>> {
        Box::pin(async move { Ok(self.discovery.agent_tools(&self.context)) })
    }

    fn search_tools<'a>(
        &'a self,
        query: &'a str,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<ToolInfo>, ToolError>> {
        Box::pin(async move {
            let ranked = self
                .discovery
                .search_for_agent(&self.context, query, limit)
                .map_err(|error| ToolError::Other(error.wire_message()))?;
            let all = self.discovery.agent_tools(&self.context);
            Ok(ranked
                .into_iter()
                .filter_map(|(server, tool)| {
                    all.iter()
                        .find(|info| info.server == server && info.name == tool)
                        .cloned()
                })
                .collect())
        })
    }

    fn call_tool(&self, call: ToolCall) -> BoxFuture<'_, Result<ToolCallOutcome, ToolError>> {
        Box::pin(async move {
            let mut context = self.context.child(call.step);
            // An agent's tool call: its record becomes an `execute_tool` span (otel/).
            context.trace.tool_call = Some(crate::otel::AgentToolCall {
                id: call.call_id.clone(),
            });
            let arguments = match call.arguments {
                Value::Object(map) => map,
                Value::Null => serde_json::Map::new(),
                other => {
                    return Err(ToolError::InvalidArguments(format!(
                        "arguments must be a JSON object, not {other}"
                    )));
                }
            };
            let request = CallRequest {
                server: call.server.clone(),
                tool: call.tool.clone(),
                arguments,
                timeout: None,
                confirm: call.confirm_destructive,
                dry_run: call.dry_run,
                hint: call.hint,
                idempotency_key: None,
                progress_resets_timeout: None,
                task: None,
            };
            let started = Instant::now();
            let answer = self.calls.call(&context, request).await;
            let latency = started.elapsed();
            let answer = answer.map_err(tool_error)?;
            let server = answer.server().to_owned();
            let rule = answer.selection_rule().to_owned();
            let is_error = !answer.succeeded();
            let result = match answer {
                CallAnswer::Ran(ran) => ran.result,
                CallAnswer::DryRun(verdict) => serde_json::to_value(verdict).unwrap_or_default(),
            };
            Ok(ToolCallOutcome {
                server,
                tool: call.tool,
                result,
                is_error,
                latency,
                selection_rule: Some(rule),
            })
        })
    }
}

/// How a refused or failed call looks to the agent (and so to the model).
fn tool_error(error: Error) -> ToolError {
    let message = error.wire_message();
    match error.data() {
        Some(ErrorData::NotPermitted { .. }) => ToolError::NotPermitted(message),
        Some(
            ErrorData::ConfirmationRequired { .. }
            | ErrorData::LoopDetected { .. }
            | ErrorData::BudgetExceeded { .. },
        ) => ToolError::Refused(message),
        Some(ErrorData::InvalidArguments { .. } | ErrorData::InvalidParams { .. }) => {
            ToolError::InvalidArguments(message)
        }
        Some(ErrorData::UnknownTool { .. } | ErrorData::UnknownServer { .. }) => {
            ToolError::UnknownTool(message)
        }
        Some(ErrorData::Timeout { .. }) => ToolError::Timeout(message),
        Some(
            ErrorData::ServerUnavailable { .. }
            | ErrorData::ServerExited { .. }
            | ErrorData::Busy { .. }
            | ErrorData::CircuitOpen { .. },
        ) => ToolError::Unavailable(message),
        _ => ToolError::Other(message),
    }
}
