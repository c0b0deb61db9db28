//! Sessions: `openSession`, `sessionSummary`, `listSessions` and `closeSession`.

use jsonrpsee::RpcModule;
use tool_cli_protocol::methods::name;
use tool_cli_protocol::orchestration::{OpenSessionParams, SessionParams};

use super::{Answer, Context, call_context, fit, parse, to_rpc_error};

const SESSION_SHAPE: &str = r#"{"sessionId": string}"#;

/// Registers the session methods.
pub(super) fn register(module: &mut RpcModule<Context>) {
    module
        .register_method(
            name::OPEN_SESSION,
            |params, context, extensions| -> Answer {
                let params: OpenSessionParams = if params.as_str().is_none() {
                    OpenSessionParams::default()
                } else {
                    parse(
                        name::OPEN_SESSION,
                        &params,
                        r#"{"task"?: string, "labels"?: [string], "sessionId"?: string}"#,
                    )?
                };
                let opened = context
                    .services
                    .sessions
                    .open_session(params, &call_context(extensions)?)
                    .map_err(to_rpc_error)?;
                fit(name::OPEN_SESSION, &opened, context.budget(extensions)).map_err(to_rpc_error)
            },
        )
        .expect("method names are unique");
    module
        .register_method(
            name::SESSION_SUMMARY,
            |params, context, extensions| -> Answer {
                let params: SessionParams = parse(name::SESSION_SUMMARY, &params, SESSION_SHAPE)?;
                let summary = context
                    .services
                    .sessions
                    .session_summary(params, &call_context(extensions)?)
                    .map_err(to_rpc_error)?;
                fit(name::SESSION_SUMMARY, &summary, context.budget(extensions))
                    .map_err(to_rpc_error)
            },
        )
        .expect("method names are unique");
    module
        .register_method(name::LIST_SESSIONS, |_, context, extensions| -> Answer {
            let sessions = context
                .services
                .sessions
                .list_sessions(&call_context(extensions)?);
            fit(name::LIST_SESSIONS, &sessions, context.budget(extensions)).map_err(to_rpc_error)
        })
        .expect("method names are unique");
    module
        .register_method(
            name::CLOSE_SESSION,
            |params, context, extensions| -> Answer {
                let params: SessionParams = parse(name::CLOSE_SESSION, &params, SESSION_SHAPE)?;
                let closed = context
                    .services
                    .sessions
                    .close_session(params, &call_context(extensions)?)
                    .map_err(to_rpc_error)?;
                fit(name::CLOSE_SESSION, &closed, context.budget(extensions)).map_err(to_rpc_error)
            },
        )
        .expect("method names are unique");
}
