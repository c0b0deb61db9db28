//! `callEvents`: the events of a call made with `progress: true` ([`crate::services::events`]).

use jsonrpsee::RpcModule;
use tool_cli_protocol::methods::{CallEventsParams, name};

use crate::answer::fit;
use crate::rpc::{Context, call_context, parse, to_rpc_error};

/// Registers `callEvents`.
pub(crate) fn register(module: &mut RpcModule<Context>) {
    module
        .register_async_method(
            name::CALL_EVENTS,
            |params, context, extensions| async move {
                let params: CallEventsParams = parse(
                    name::CALL_EVENTS,
                    &params,
                    r#"{"progressId": string, "after"?: integer, "waitMs"?: integer}"#,
                )?;
                let call = call_context(&extensions)?;
                let events = context
                    .until_grace_over(context.services.events.call_events(params, &call))
                    .await?;
                fit(name::CALL_EVENTS, &events, context.budget(&extensions)).map_err(to_rpc_error)
            },
        )
        .expect("method names are unique");
}
