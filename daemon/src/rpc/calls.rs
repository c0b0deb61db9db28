//! Tool calls: `callTool` (one call through the pipeline), `callChain` (steps that feed each
//! other) and `callMany` (a bounded fan-out).

use jsonrpsee::RpcModule;
use tool_cli_protocol::methods::{CallToolParams, name};
use tool_cli_protocol::orchestration::{CallChainParams, CallManyParams};

use super::{Context, call_context, events, fit_or_spill, parse, to_rpc_error};
use crate::answer::{EntryAnswers, Spillable};

/// Registers the call methods.
pub(super) fn register(module: &mut RpcModule<Context>) {
    module
        .register_async_method(name::CALL_TOOL, |params, context, extensions| async move {
            let params: CallToolParams = parse(
                name::CALL_TOOL,
                &params,
                r#"{"server"?: string, "tool": string, "arguments"?: object, "timeoutMs"?: integer, "confirm"?: boolean, "dryRun"?: boolean, "hint"?: string, "sessionId"?: string, "idempotencyKey"?: string, "alternatives"?: boolean, "progress"?: boolean, "progressId"?: string, "resetTimeoutOnProgress"?: boolean, "maxTotalTimeoutMs"?: integer}"#,
            )?;
            let call = call_context(&extensions)?;
            let progress = events::progress_log(&params, &call.grant, &context.orchestrator)?;
            let work = context.orchestrator.call_tool(params, &call);
            let result = match progress {
                None => context.until_grace_over(work).await?,
                Some(log) => {
                    context
                        .until_grace_over(crate::call_events::with_log(log, work))
                        .await?
                }
            };
            // The tool has run: a result too large to send is saved, never dropped.
            fit_or_spill(
                result,
                Spillable::Call,
                context.budget(&extensions),
                &context.answers.spill,
                &call.grant.token_id,
            )
            .await
            .map_err(to_rpc_error)
        })
        .expect("method names are unique");
    module
        .register_async_method(name::CALL_CHAIN, |params, context, extensions| async move {
            let params: CallChainParams = parse(
                name::CALL_CHAIN,
                &params,
                r#"{"steps": [{"server"?: string, "tool": string, "arguments"?: object, "bind"?: object, "hint"?: string}], "sessionId"?: string, "timeoutMs"?: integer, "confirm"?: boolean, "dryRun"?: boolean}"#,
            )?;
            let call = call_context(&extensions)?;
            // Built as the steps end, within the budget: a result that does not fit is
            // spilled, never refused after its step ran.
            let mut answer = EntryAnswers::new(
                name::CALL_CHAIN,
                context.budget(&extensions),
                params.steps.len(),
                &context.answers.spill,
                &call.grant.token_id,
            );
            let completed = context
                .until_grace_over(context.orchestrator.call_chain(params, &call, &mut answer))
                .await?;
            answer.finish_chain(completed).map_err(to_rpc_error)
        })
        .expect("method names are unique");
    module
        .register_async_method(name::CALL_MANY, |params, context, extensions| async move {
            let params: CallManyParams = parse(
                name::CALL_MANY,
                &params,
                r#"{"calls": [callTool params], "maxConcurrent"?: integer, "sessionId"?: string}"#,
            )?;
            let call = call_context(&extensions)?;
            // Built as the calls end, within the budget; once full, no more calls start.
            let mut answer = EntryAnswers::new(
                name::CALL_MANY,
                context.budget(&extensions),
                params.calls.len(),
                &context.answers.spill,
                &call.grant.token_id,
            );
            context
                .until_grace_over(context.orchestrator.call_many(params, &call, &mut answer))
                .await?;
            answer.finish_many().map_err(to_rpc_error)
        })
        .expect("method names are unique");
}
