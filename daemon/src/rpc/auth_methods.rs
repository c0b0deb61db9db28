//! The `auth*` methods (owner token only): signing in to remote servers over OAuth 2.1 and
//! reading or deleting their tokens. The work is `oauth/`'s; this registers and translates.

use std::sync::Arc;

use jsonrpsee::RpcModule;
use tool_cli_protocol::methods::ServerParams;
use tool_cli_protocol::methods::name;
use tool_cli_protocol::remote_auth::{
    AuthCompleteParams, AuthLoginParams, AuthLogoutResult, AuthStatusResult,
};

use super::{Answer, Context, call_context, fit, grant, owner_only, parse, to_rpc_error};
use crate::error::Error;
use crate::oauth::RemoteAuth;

fn remote_auth(context: &Context) -> Result<Arc<RemoteAuth>, Error> {
    context
        .orchestrator
        .remote_auth
        .clone()
        .ok_or_else(|| Error::internal("no remote server OAuth state in this daemon"))
}

pub(super) fn register(module: &mut RpcModule<Context>) {
    module
        .register_async_method(name::AUTH_LOGIN, |params, context, extensions| async move {
            owner_only(grant(&extensions)?, name::AUTH_LOGIN)?;
            let params: AuthLoginParams = parse(
                name::AUTH_LOGIN,
                &params,
                r#"{"server": string, "redirectUri": "http://127.0.0.1:PORT/PATH"}"#,
            )?;
            let remote_auth = remote_auth(&context).map_err(to_rpc_error)?;
            let random: [u8; 48] = rand::random();
            let started = context
                .until_grace_over(remote_auth.begin(&params.server, &params.redirect_uri, random))
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
                let remote_auth = remote_auth(&context).map_err(to_rpc_error)?;
                let status = context
                    .until_grace_over(remote_auth.complete(&params.server, &params.redirect_url))
                    .await?;
                // Reconnect now with the new token; its outcome shows in `listServers`.
                let call = call_context(&extensions)?;
                if let Err(err) = context
                    .orchestrator
                    .restart_server(&params.server, &call)
                    .await
                {
                    tracing::warn!(server = %params.server, error = %err.wire_message(), "reconnecting after sign-in failed");
                }
                fit(name::AUTH_COMPLETE, &status, context.budget(&extensions))
                    .map_err(to_rpc_error)
            },
        )
        .expect("method names are unique");
    module
        .register_async_method(
            name::AUTH_STATUS,
            |_params, context, extensions| async move {
                owner_only(grant(&extensions)?, name::AUTH_STATUS)?;
                let remote_auth = remote_auth(&context).map_err(to_rpc_error)?;
                let status = AuthStatusResult {
                    servers: remote_auth.status().await,
                };
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
                let remote_auth = remote_auth(&context).map_err(to_rpc_error)?;
                let removed = remote_auth
                    .logout(&params.server)
                    .await
                    .map_err(to_rpc_error)?;
                let result = AuthLogoutResult {
                    server: params.server,
                    removed,
                };
                let answer: Answer = fit(name::AUTH_LOGOUT, &result, context.budget(&extensions))
                    .map_err(to_rpc_error);
                answer
            },
        )
        .expect("method names are unique");
}
