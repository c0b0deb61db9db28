//! What the daemon offers and what it holds: `getBridgeInfo`, `health`, `listServers`,
//! `listTools`, `describeTool` and `searchTools`.

use jsonrpsee::RpcModule;
use tool_cli_protocol::methods::{DescribeToolParams, HealthParams, name};
use tool_cli_protocol::search::{ListToolsParams, SearchToolsParams};

use super::{Answer, Context, call_context, fit, parse, to_rpc_error};

/// Registers the discovery methods.
pub(super) fn register(module: &mut RpcModule<Context>) {
    module
        .register_method(name::GET_BRIDGE_INFO, |_, context, extensions| -> Answer {
            let info = context
                .services
                .discovery
                .bridge_info(&call_context(extensions)?);
            fit(name::GET_BRIDGE_INFO, &info, context.budget(extensions)).map_err(to_rpc_error)
        })
        .expect("method names are unique");
    module
        .register_method(name::HEALTH, |params, context, extensions| -> Answer {
            let params: HealthParams = if params.as_str().is_none() {
                HealthParams::default()
            } else {
                parse(name::HEALTH, &params, r#"{"tools"?: boolean}"#)?
            };
            let health = context
                .services
                .discovery
                .health(params, &call_context(extensions)?);
            fit(name::HEALTH, &health, context.budget(extensions)).map_err(to_rpc_error)
        })
        .expect("method names are unique");
    module
        .register_method(name::LIST_SERVERS, |_, context, extensions| -> Answer {
            let servers = context
                .services
                .discovery
                .list_servers(&call_context(extensions)?);
            fit(name::LIST_SERVERS, &servers, context.budget(extensions)).map_err(to_rpc_error)
        })
        .expect("method names are unique");
    module
        .register_async_method(name::LIST_TOOLS, |params, context, extensions| async move {
            let params: ListToolsParams = if params.as_str().is_none() {
                ListToolsParams::default()
            } else {
                parse(
                    name::LIST_TOOLS,
                    &params,
                    r#"{"server"?: string, "cursor"?: string, "limit"?: integer}"#,
                )?
            };
            let call = call_context(&extensions)?;
            let tools = context
                .until_grace_over(context.services.discovery.list_tools(params, &call))
                .await?;
            fit(name::LIST_TOOLS, &tools, context.budget(&extensions)).map_err(to_rpc_error)
        })
        .expect("method names are unique");
    module
        .register_async_method(
            name::DESCRIBE_TOOL,
            |params, context, extensions| async move {
                let params: DescribeToolParams = parse(
                    name::DESCRIBE_TOOL,
                    &params,
                    r#"{"server": string, "tool": string}"#,
                )?;
                let call = call_context(&extensions)?;
                let tool = context
                    .until_grace_over(context.services.discovery.describe_tool(params, &call))
                    .await?;
                fit(name::DESCRIBE_TOOL, &tool, context.budget(&extensions)).map_err(to_rpc_error)
            },
        )
        .expect("method names are unique");
    module
        .register_method(name::SEARCH_TOOLS, |params, context, extensions| -> Answer {
            let params: SearchToolsParams = parse(
                name::SEARCH_TOOLS,
                &params,
                r#"{"query": string, "limit"?: integer, "servers"?: [string], "tags"?: [string], "sessionId"?: string, "includeSchema"?: boolean}"#,
            )?;
            let found = context
                .services
                .discovery
                .search_tools(params, &call_context(extensions)?)
                .map_err(to_rpc_error)?;
            fit(name::SEARCH_TOOLS, &found, context.budget(extensions)).map_err(to_rpc_error)
        })
        .expect("method names are unique");
}
