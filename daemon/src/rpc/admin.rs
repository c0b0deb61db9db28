//! The owner token's methods (a scoped token is refused before its params are read): server
//! management (`restartServer`, `addServer`, `removeServer`, `reloadConfig`), tokens
//! (`mintToken`, `revokeToken`, `listTokens`) and `tracesReport`.

use jsonrpsee::RpcModule;
use tool_cli_protocol::manage::{AddServerParams, RemoveServerParams};
use tool_cli_protocol::methods::{MintTokenParams, RevokeTokenParams, ServerParams, name};
use tool_cli_protocol::trace::TracesReportParams;

use super::{
    Answer, Context, SERVER_SHAPE, call_context, fit, grant, owner_only, parse, to_rpc_error,
};

/// Registers the owner-only methods.
pub(super) fn register(module: &mut RpcModule<Context>) {
    module
        .register_async_method(
            name::RESTART_SERVER,
            |params, context, extensions| async move {
                owner_only(grant(&extensions)?, name::RESTART_SERVER)?;
                let params: ServerParams = parse(name::RESTART_SERVER, &params, SERVER_SHAPE)?;
                let call = call_context(&extensions)?;
                let restarted = context
                    .until_grace_over(context.services.admin.restart_server(params, &call))
                    .await?;
                fit(
                    name::RESTART_SERVER,
                    &restarted,
                    context.budget(&extensions),
                )
                .map_err(to_rpc_error)
            },
        )
        .expect("method names are unique");
    module
        .register_async_method(
            name::ADD_SERVER,
            |params, context, extensions| async move {
                owner_only(grant(&extensions)?, name::ADD_SERVER)?;
                let params: AddServerParams = parse(
                    name::ADD_SERVER,
                    &params,
                    r#"{"name": string, "config": {"command": string, "args"?: [string], "env"?: object} | {"url": string, "headers"?: object}}"#,
                )?;
                let call = call_context(&extensions)?;
                let added = context
                    .until_grace_over(context.services.admin.add_server(params, &call))
                    .await?;
                fit(name::ADD_SERVER, &added, context.budget(&extensions)).map_err(to_rpc_error)
            },
        )
        .expect("method names are unique");
    module
        .register_async_method(
            name::REMOVE_SERVER,
            |params, context, extensions| async move {
                owner_only(grant(&extensions)?, name::REMOVE_SERVER)?;
                let params: RemoveServerParams =
                    parse(name::REMOVE_SERVER, &params, r#"{"name": string}"#)?;
                let call = call_context(&extensions)?;
                let removed = context
                    .until_grace_over(context.services.admin.remove_server(params, &call))
                    .await?;
                fit(name::REMOVE_SERVER, &removed, context.budget(&extensions))
                    .map_err(to_rpc_error)
            },
        )
        .expect("method names are unique");
    module
        .register_async_method(
            name::RELOAD_CONFIG,
            |params, context, extensions| async move {
                owner_only(grant(&extensions)?, name::RELOAD_CONFIG)?;
                // No params, or an empty object.
                if let Some(text) = params.as_str()
                    && !matches!(
                        serde_json::from_str::<serde_json::Value>(text),
                        Ok(serde_json::Value::Object(ref members)) if members.is_empty()
                    )
                    && !matches!(serde_json::from_str::<serde_json::Value>(text), Ok(serde_json::Value::Array(ref items)) if items.is_empty())
                {
                    return Err(to_rpc_error(crate::error::Error::invalid_params(
                        name::RELOAD_CONFIG,
                        "reloadConfig takes no params; it reads the config file the daemon \
                         was started with",
                    )));
                }
                let call = call_context(&extensions)?;
                let reloaded = context
                    .until_grace_over(context.services.admin.reload_config(&call))
                    .await?;
                fit(name::RELOAD_CONFIG, &reloaded, context.budget(&extensions))
                    .map_err(to_rpc_error)
            },
        )
        .expect("method names are unique");
    module
        .register_method(name::MINT_TOKEN, |params, context, extensions| -> Answer {
            owner_only(grant(extensions)?, name::MINT_TOKEN)?;
            let params: MintTokenParams = if params.as_str().is_none() {
                MintTokenParams::default()
            } else {
                parse(
                    name::MINT_TOKEN,
                    &params,
                    r#"{"servers"?: [glob], "tools"?: ["server/tool" glob], "resources"?: ["server/uri" glob], "prompts"?: ["server/prompt" glob], "readOnly"?: boolean, "ttlSeconds"?: integer, "label"?: string}"#,
                )?
            };
            let minted = context
                .services
                .admin
                .mint_token(params, &call_context(extensions)?)
                .map_err(to_rpc_error)?;
            fit(name::MINT_TOKEN, &minted, context.budget(extensions)).map_err(to_rpc_error)
        })
        .expect("method names are unique");
    module
        .register_method(
            name::REVOKE_TOKEN,
            |params, context, extensions| -> Answer {
                owner_only(grant(extensions)?, name::REVOKE_TOKEN)?;
                let params: RevokeTokenParams =
                    parse(name::REVOKE_TOKEN, &params, r#"{"tokenId": string}"#)?;
                let revoked = context
                    .services
                    .admin
                    .revoke_token(params, &call_context(extensions)?);
                fit(name::REVOKE_TOKEN, &revoked, context.budget(extensions)).map_err(to_rpc_error)
            },
        )
        .expect("method names are unique");
    module
        .register_method(name::LIST_TOKENS, |_, context, extensions| -> Answer {
            owner_only(grant(extensions)?, name::LIST_TOKENS)?;
            let tokens = context
                .services
                .admin
                .list_tokens(&call_context(extensions)?);
            fit(name::LIST_TOKENS, &tokens, context.budget(extensions)).map_err(to_rpc_error)
        })
        .expect("method names are unique");
    module
        .register_async_method(
            name::TRACES_REPORT,
            |params, context, extensions| async move {
                owner_only(grant(&extensions)?, name::TRACES_REPORT)?;
                let params: TracesReportParams = if params.as_str().is_none() {
                    TracesReportParams::default()
                } else {
                    parse(
                        name::TRACES_REPORT,
                        &params,
                        r#"{"since"?: "24h" | "2026-05-01", "by"?: "day" | "server" | "tool" | "session", "executedOnly"?: boolean}"#,
                    )?
                };
                let call = call_context(&extensions)?;
                let report = context
                    .until_grace_over(context.services.admin.traces_report(params, &call))
                    .await?;
                fit(name::TRACES_REPORT, &report, context.budget(&extensions))
                    .map_err(to_rpc_error)
            },
        )
        .expect("method names are unique");
}
