//! Tool calls: `callTool` (one call through the pipeline), `callChain` (steps that feed each
//! other) and `callMany` (a bounded fan-out).

use jsonrpsee::RpcModule;
use tool_cli_protocol::methods::{CallToolParams, name};
use tool_cli_protocol::orchestration::{CallChainParams, CallManyParams};

use super::{Context, call_context, fit_or_spill, parse, to_rpc_error};
use crate::answer::{EntryAnswers, Spillable};

/// Registers the call methods.
pub(super) fn register(module: &mut RpcModule<Context>) {
    module
        .register_async_method(name::CALL_TOOL, |params, context, extensions| async move {
            let parsed: Result<CallToolParams, _> = parse(
                name::CALL_TOOL,
                &params,
                r#"{"server"?: string, "tool": string, "arguments"?: object, "timeoutMs"?: integer, "confirm"?: boolean, "dryRun"?: boolean, "hint"?: string, "sessionId"?: string, "idempotencyKey"?: string, "alternatives"?: boolean, "progress"?: boolean, "progressId"?: string, "resetTimeoutOnProgress"?: boolean, "maxTotalTimeoutMs"?: integer}"#,
            );
            let call = call_context(&extensions)?;
            let params = match parsed {
                Ok(params) => params,
                Err(error) => {
                    return Err(non_object_arguments(&params, &call, &context)
                        .await
                        .unwrap_or(error));
                }
            };
            let result = context
                .until_grace_over(context.services.calls.call_tool(params, &call))
                .await?;
            // The tool has run: a result too large to send is saved, never dropped.
            fit_or_spill(
                crate::answer::call_result(result),
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
                .until_grace_over(context.services.calls.call_chain(params, &call, &mut answer))
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
                .until_grace_over(context.services.calls.call_many(params, &call, &mut answer))
                .await?;
            answer.finish_many().map_err(to_rpc_error)
        })
        .expect("method names are unique");
}

/// For `callTool` params that did not parse because `arguments` is not an object (nor null):
/// the error the reference bridge gives, `invalidArguments` with ajv's "must be object", once
/// the tool is known to exist (an unknown server or tool is still that). `None` when the params
/// failed for another reason.
async fn non_object_arguments(
    params: &jsonrpsee::types::Params<'_>,
    call: &crate::pipeline::CallContext,
    context: &Context,
) -> Option<jsonrpsee::types::ErrorObjectOwned> {
    #[derive(serde::Deserialize)]
    struct Probe {
        #[serde(default)]
        server: Option<String>,
        tool: String,
        arguments: serde_json::Value,
    }
    let probe: Probe = serde_json::from_str(params.as_str()?).ok()?;
    if probe.arguments.is_object() || probe.arguments.is_null() {
        return None;
    }
    let server = probe.server.filter(|server| server != "*");
    if let Some(server) = &server
        && let Err(error) = context
            .services
            .discovery
            .describe(server, &probe.tool, call)
            .await
    {
        return Some(to_rpc_error(error));
    }
    let violation = crate::error::ArgumentViolation {
        error: tool_cli_protocol::ArgumentError {
            path: String::new(),
            schema_path: "/type".to_owned(),
            message: format!(
                "the arguments are {}, not an object",
                tool_cli_protocol::json::kind(&probe.arguments)
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
    Some(to_rpc_error(crate::error::Error::invalid_arguments(
        server.as_deref().unwrap_or("*"),
        &probe.tool,
        vec![violation],
    )))
}
