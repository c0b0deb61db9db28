//! `callEvents`, and attaching a `callTool` that asked for progress to its events buffer
//! ([`crate::call_events`]).

use std::sync::Arc;
use std::time::Duration;

use jsonrpsee::RpcModule;
use jsonrpsee::types::ErrorObjectOwned;
use tool_cli_protocol::methods::{CallEventsParams, CallToolParams, name};

use crate::answer::fit;
use crate::auth::Grant;
use crate::call_events::CallEventLog;
use crate::error::Error;
use crate::orchestrator::Orchestrator;
use crate::rpc::{Context, call_context, parse, to_rpc_error};

/// The events buffer of a `callTool` that asked for progress (`progress: true` with a
/// `progressId`, or a `progressId` alone), an unlisted one for a call with
/// `resetTimeoutOnProgress` that did not, or `None` for a plain call.
pub(crate) fn progress_log(
    params: &CallToolParams,
    grant: &Grant,
    orchestrator: &Orchestrator,
) -> Result<Option<Arc<CallEventLog>>, ErrorObjectOwned> {
    // A timeout that restarts on progress needs the progress counted, events asked for or not.
    let counted = params.reset_timeout_on_progress == Some(true);
    match (params.progress, params.progress_id.as_deref()) {
        (Some(false), _) | (None, None) if counted => Ok(Some(CallEventLog::unlisted())),
        (Some(false), _) | (None, None) => Ok(None),
        (Some(true), None) => Err(to_rpc_error(Error::invalid_params(
            name::CALL_TOOL,
            "progress: true needs a progressId, the name you will poll callEvents with (e.g. \
             \"progressId\": \"call-1\")",
        ))),
        (_, Some(id)) => orchestrator
            .call_events
            .attach(&grant.token_id, id)
            .map(Some)
            .map_err(to_rpc_error),
    }
}

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
                    .until_grace_over(context.orchestrator.call_events.events(
                        &call.grant.token_id,
                        &params.progress_id,
                        params.after,
                        params.wait_ms.map(Duration::from_millis),
                    ))
                    .await?;
                fit(name::CALL_EVENTS, &events, context.budget(&extensions)).map_err(to_rpc_error)
            },
        )
        .expect("method names are unique");
}
