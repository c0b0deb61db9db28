//! The handlers of runtime server management: `addServer`, `removeServer`, `reloadConfig`, all
//! for the owner token only (a scoped token is refused before its params are read).

use jsonrpsee::RpcModule;
use tool_cli_protocol::manage::{AddServerParams, RemoveServerParams};
use tool_cli_protocol::methods::name;

use super::{Context, fit, grant, owner_only, parse, to_rpc_error};

pub(super) fn register(module: &mut RpcModule<Context>) {
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
                let added = context
                    .until_grace_over(
                        context
                            .orchestrator
                            .add_server(&params.name, params.config),
                    )
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
                let removed = context
                    .until_grace_over(context.orchestrator.remove_server(&params.name))
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
                let reloaded = context
                    .until_grace_over(context.orchestrator.reload_config())
                    .await?;
                fit(name::RELOAD_CONFIG, &reloaded, context.budget(&extensions))
                    .map_err(to_rpc_error)
            },
        )
        .expect("method names are unique");
}
