//! Agent runs: `runAgent`, `agentEvents` (a run's progress, long-polled) and `cancelAgent`.

use jsonrpsee::RpcModule;
use tool_cli_protocol::agent::{AgentEventsParams, CancelAgentParams};
use tool_cli_protocol::methods::name;

use super::{Answer, Context, call_context, fit, parse, to_rpc_error};

/// Registers the agent methods.
pub(super) fn register(module: &mut RpcModule<Context>) {
    module
        .register_async_method(name::RUN_AGENT, |params, context, extensions| async move {
            let params: serde_json::Value = parse(
                name::RUN_AGENT,
                &params,
                r#"{"task": string, "runId"?: string, "sessionId"?: string, "backend"?: string, "model"?: string, "maxSteps"?: integer, "costCeilingUsd"?: number, "dryRun"?: boolean, "confirmDestructive"?: boolean, "answerSchema"?: object, "servers"?: [string], "tools"?: [string], "toolLimit"?: integer, "timeoutMs"?: integer}"#,
            )?;
            let call = call_context(&extensions)?;
            let result = context
                .until_grace_over(context.services.agents.run_agent(params, &call))
                .await?;
            fit(name::RUN_AGENT, &result, context.budget(&extensions)).map_err(to_rpc_error)
        })
        .expect("method names are unique");
    module
        .register_async_method(
            name::AGENT_EVENTS,
            |params, context, extensions| async move {
                let params: AgentEventsParams = parse(
                    name::AGENT_EVENTS,
                    &params,
                    r#"{"runId": string, "after"?: integer, "waitMs"?: integer}"#,
                )?;
                let call = call_context(&extensions)?;
                let events = context
                    .until_grace_over(context.services.agents.agent_events(params, &call))
                    .await?;
                fit(name::AGENT_EVENTS, &events, context.budget(&extensions)).map_err(to_rpc_error)
            },
        )
        .expect("method names are unique");
    module
        .register_method(
            name::CANCEL_AGENT,
            |params, context, extensions| -> Answer {
                let params: CancelAgentParams =
                    parse(name::CANCEL_AGENT, &params, r#"{"runId": string}"#)?;
                let cancelled = context
                    .services
                    .agents
                    .cancel_agent(params, &call_context(extensions)?)
                    .map_err(to_rpc_error)?;
                fit(name::CANCEL_AGENT, &cancelled, context.budget(extensions))
                    .map_err(to_rpc_error)
            },
        )
        .expect("method names are unique");
}
