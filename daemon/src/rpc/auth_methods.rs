//! The `auth*` methods (owner token only): signing in to remote servers over OAuth 2.1 and
//! reading or deleting their tokens. The admin service does the work; this registers it.

use jsonrpsee::RpcModule;
use tool_cli_protocol::methods::ServerParams;
use tool_cli_protocol::methods::name;
use tool_cli_protocol::remote_auth::{AuthCompleteParams, AuthLoginParams};

use super::{Answer, Context, call_context, fit, grant, owner_only, parse, to_rpc_error};

pub(super) fn register(module: &mut RpcModule<Context>) {
    module
        .register_async_method(name::AUTH_LOGIN, |params, context, extensions| async move {
            owner_only(grant(&extensions)?, name::AUTH_LOGIN)?;
            let params: AuthLoginParams = parse(
                name::AUTH_LOGIN,
                &params,
                r#"{"server": string, "redirectUri": "http://127.0.0.1:PORT/PATH"}"#,
            )?;
            let call = call_context(&extensions)?;
            let started = context
                .until_grace_over(context.services.admin.auth_login(params, &call))
                .await?;
            fit(name::AUTH_LOGIN, &started, context.budget(&extensions)).map_err(to_rpc_error)
        })
        .expect("method names are unique");
    module
        .register_async_method(
            name::AUTH_COMPLETE,
            |params, context, extensions| async move {
                owner_only(grant(&extensions)?, name::AUTH_COMPLETE)?;
                let params: AuthCompleteParams = parse(
                    name::AUTH_COMPLETE,
                    &params,
                    r#"{"server": string, "redirectUrl": string}"#,
                )?;
                let call = call_context(&extensions)?;
                let status = context
                    .until_grace_over(context.services.admin.auth_complete(params, &call))
                    .await?;
                fit(name::AUTH_COMPLETE, &status, context.budget(&extensions)).map_err(to_rpc_error)
            },
        )
        .expect("method names are unique");
    module
        .register_async_method(
            name::AUTH_STATUS,
            |_params, context, extensions| async move {
                owner_only(grant(&extensions)?, name::AUTH_STATUS)?;
                let call = call_context(&extensions)?;
                let status = context
                    .until_grace_over(context.services.admin.auth_status(&call))
                    .await?;
                fit(name::AUTH_STATUS, &status, context.budget(&extensions)).map_err(to_rpc_error)
            },
        )
        .expect("method names are unique");
    module
        .register_async_method(
            name::AUTH_LOGOUT,
            |params, context, extensions| async move {
                owner_only(grant(&extensions)?, name::AUTH_LOGOUT)?;
                let params: ServerParams =
                    parse(name::AUTH_LOGOUT, &params, r#"{"server": string}"#)?;
                let call = call_context(&extensions)?;
                let result = context
                    .until_grace_over(context.services.admin.auth_logout(params, &call))
                    .await?;
                let answer: Answer = fit(name::AUTH_LOGOUT, &result, context.budget(&extensions))
                    .map_err(to_rpc_error);
                answer
            },
        )
        .expect("method names are unique");
}
