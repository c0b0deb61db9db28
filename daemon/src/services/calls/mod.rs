//! The calls service: `callTool`, `callChain` and `callMany`, and the one door every other
//! caller (the agent's runs) uses to make a call.
//!
//! [`Calls::call`] consults the caller's session (routing facts, loop and budget guards) and
//! hands the call to the [`Pipeline`]; chains and fan-outs (`chain.rs`) make each of their calls
//! through it, and `callTool {alternatives: true}` adds a stand-in call and named alternatives
//! after it (`alternatives.rs`). New capabilities that call tools are callers of
//! [`Calls::call`], never side doors around it.

mod alternatives;
mod chain;
mod tasks;

pub(crate) use chain::{Room, Step, StepSink};

use std::sync::Arc;

use tool_cli_protocol::methods::CallToolParams;

use super::discovery::Discovery;
use super::events::Events;
use super::sessions::Sessions;
use crate::error::Error;
use crate::pipeline::{
    CallAnswer, CallContext, CallExtras, CallRequest, Pipeline, RoutingFacts, arguments_hash,
    caller_timeout,
};
use crate::provider::EventRelay;

/// Tool calls over the pipeline, with the caller's session.
pub struct Calls {
    pipeline: Arc<Pipeline>,
    sessions: Arc<Sessions>,
    /// For the alternatives of a failed call (a search under the caller's grant).
    discovery: Arc<Discovery>,
    /// The event buffers of calls made with `progress: true`.
    events: Arc<Events>,
}

impl Calls {
    pub(crate) fn new(
        pipeline: Arc<Pipeline>,
        sessions: Arc<Sessions>,
        discovery: Arc<Discovery>,
        events: Arc<Events>,
    ) -> Calls {
        Calls {
            pipeline,
            sessions,
            discovery,
            events,
        }
    }

    /// `callTool`: the server's complete `CallToolResult` with the facts of the call (and the
    /// alternatives to a tool that failed, when asked), or a dry run's verdict.
    pub async fn call_tool(
        &self,
        params: CallToolParams,
        context: &CallContext,
    ) -> Result<CallAnswer, Error> {
        let mut context = context.clone();
        // A call that asked for progress (or whose timeout restarts on it) relays its events
        // to its buffer, which is marked done however the call ends.
        let events = self.events.progress_log(&params, &context)?;
        let _finish = events.as_ref().map(|log| log.finish_on_drop());
        // Otherwise the relay the caller brought stays (the MCP gateway's SSE stream).
        if let Some(log) = events {
            context.relay = Some(log as Arc<dyn EventRelay>);
        }
        context.session_id = params.session_id.clone();
        // A dry run makes no call, so it has no failure to find alternatives for.
        let alternatives = params.alternatives == Some(true) && params.dry_run != Some(true);
        let server = params.server.clone();
        let tool = params.tool.clone();
        let request = call_request(params)?;
        if !alternatives {
            return self.call(&context, request).await;
        }
        let retry = request.clone();
        let outcome = self.call(&context, request).await;
        // A read-only tool whose server is down (or whose breaker is open) is tried once on
        // the best other server offering it, within what is left of the caller's time; failing
        // that, the answer names alternatives.
        let stand_in =
            self.stand_in_for(&outcome, &tool, &context)
                .and_then(|(failed, failed_timeout)| {
                    let child = context.child(0);
                    let retry = alternatives::stand_in_request(
                        retry,
                        context.arrived,
                        failed_timeout,
                        child.arrived,
                    )?;
                    Some((failed, child, retry))
                });
        let outcome = match stand_in {
            Some((failed, child, retry)) => {
                let stand_in = self.call_routed(&child, retry, Some(failed)).await;
                if stand_in.is_ok() { stand_in } else { outcome }
            }
            None => outcome,
        };
        self.with_alternatives(outcome, server.as_deref(), &tool, &context)
    }

    /// The error of a `callTool` whose `arguments` are not an object (nor null): the one the
    /// reference bridge gives, `invalidArguments` with ajv's "must be object", once the tool is
    /// known to exist (an unknown server or tool is still that).
    pub(crate) async fn refuse_non_object_arguments(
        &self,
        server: Option<String>,
        tool: &str,
        arguments: &serde_json::Value,
        context: &CallContext,
    ) -> Error {
        if let Some(server) = &server
            && let Err(error) = self.discovery.describe(server, tool, context).await
        {
            return error;
        }
        let violation = crate::error::ArgumentViolation {
            error: tool_cli_protocol::ArgumentError {
                path: String::new(),
                schema_path: "/type".to_owned(),
                message: format!(
                    "the arguments are {}, not an object",
                    tool_cli_protocol::json::kind(arguments)
                ),
            },
            reference: vec![tool_cli_protocol::ValidationError {
                instance_path: String::new(),
                schema_path: "#/type".to_owned(),
                keyword: "type".to_owned(),
                params: serde_json::json!({"type": "object"}),
                message: "must be object".to_owned(),
            }],
        };
        Error::invalid_arguments(server.as_deref().unwrap_or("*"), tool, vec![violation])
    }

    /// Makes one call through the pipeline, with what the caller's session says about it.
    pub(crate) async fn call(
        &self,
        context: &CallContext,
        request: CallRequest,
    ) -> Result<CallAnswer, Error> {
        self.call_routed(context, request, None).await
    }

    /// [`Calls::call`], routed away from `instead_of` when given (rule `alternative`).
    async fn call_routed(
        &self,
        context: &CallContext,
        request: CallRequest,
        instead_of: Option<String>,
    ) -> Result<CallAnswer, Error> {
        let mut extras = match &context.session_id {
            None => CallExtras::default(),
            Some(id) => {
                let store = self.sessions.store();
                let session = store.touch(
                    tool_cli_protocol::methods::name::CALL_TOOL,
                    &context.grant.token_id,
                    id,
                )?;
                let hash = arguments_hash(&request.arguments);
                let advice = store.advise(
                    &session,
                    request.server.as_deref().filter(|name| *name != "*"),
                    &request.tool,
                    &hash,
                );
                CallExtras {
                    routing: RoutingFacts {
                        mention_text: advice.task,
                        most_recent: advice.most_recent,
                        instead_of: None,
                    },
                    guard: advice.refusal,
                    arguments_hash: Some(hash),
                    corrective_retry: advice.corrective_retry,
                }
            }
        };
        extras.routing.instead_of = instead_of;
        self.pipeline.call_with(context, request, extras).await
    }
}

/// A pipeline request from `callTool`'s params.
pub(crate) fn call_request(params: CallToolParams) -> Result<CallRequest, Error> {
    Ok(CallRequest {
        server: params.server,
        tool: params.tool,
        arguments: params.arguments.unwrap_or_default(),
        timeout: caller_timeout("callTool", params.timeout_ms)?,
        confirm: params.confirm == Some(true),
        dry_run: params.dry_run == Some(true),
        hint: params.hint,
        idempotency_key: params.idempotency_key,
        progress_resets_timeout: crate::pipeline::progress_timeout::max_total(
            params.reset_timeout_on_progress,
            params.max_total_timeout_ms,
        )?,
        task: params.task.map(serde_json::Value::Object),
    })
}
