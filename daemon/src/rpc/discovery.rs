//! What the daemon offers and what it holds: `getBridgeInfo`, `health`, `listServers`,
//! `listTools`, `describeTool` and `searchTools`.

use jsonrpsee::RpcModule;
use tool_cli_protocol::methods::{
    AuthenticationCapability, BridgeCapabilities, BridgeInfo, BridgeProtocol,
    CancellationCapability, DescribeToolParams, HealthParams, Implementation, ResourcesCapability,
    ToolsCapability, UpstreamMcp, name,
};
use tool_cli_protocol::search::{ListToolsParams, SearchToolsParams};

use super::{Answer, Context, call_context, fit, grant, parse, to_rpc_error};

/// Registers the discovery methods.
pub(super) fn register(module: &mut RpcModule<Context>) {
    module
        .register_method(name::GET_BRIDGE_INFO, |_, context, extensions| -> Answer {
            fit(
                name::GET_BRIDGE_INFO,
                &bridge_info(),
                context.budget(extensions),
            )
            .map_err(to_rpc_error)
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
                .orchestrator
                .health(grant(extensions)?, params.tools);
            fit(name::HEALTH, &health, context.budget(extensions)).map_err(to_rpc_error)
        })
        .expect("method names are unique");
    module
        .register_method(name::LIST_SERVERS, |_, context, extensions| -> Answer {
            let servers = context.orchestrator.list_servers(grant(extensions)?);
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
            let grant = grant(&extensions)?;
            // `"*"` is every server, as without `server` (docs/protocol.md).
            let tools = match params.server.as_deref().filter(|server| *server != "*") {
                Some(server) => {
                    context
                        .until_grace_over(context.orchestrator.list_tools(server, &params, grant))
                        .await?
                }
                None => context
                    .orchestrator
                    .list_all_tools(&params, grant)
                    .map_err(to_rpc_error)?,
            };
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
                let grant = grant(&extensions)?;
                let tool = context
                    .until_grace_over(context.orchestrator.describe_tool(
                        &params.server,
                        &params.tool,
                        grant,
                    ))
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
                .orchestrator
                .search_tools(params, &call_context(extensions)?)
                .map_err(to_rpc_error)?;
            fit(name::SEARCH_TOOLS, &found, context.budget(extensions)).map_err(to_rpc_error)
        })
        .expect("method names are unique");
}

/// The `getBridgeInfo` result.
fn bridge_info() -> BridgeInfo {
    BridgeInfo {
        bridge_protocol: BridgeProtocol {
            name: tool_cli_protocol::BRIDGE_PROTOCOL_NAME.to_owned(),
            major: tool_cli_protocol::BRIDGE_PROTOCOL_MAJOR,
            version: tool_cli_protocol::BRIDGE_PROTOCOL_VERSION.to_owned(),
        },
        server_implementation: Implementation {
            name: tool_cli_protocol::IMPLEMENTATION_NAME.to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
        },
        operations: name::ALL.iter().map(|&m| m.to_owned()).collect(),
        capabilities: BridgeCapabilities {
            authentication: AuthenticationCapability {
                required: true,
                scheme: "bearer".to_owned(),
            },
            tools: ToolsCapability {
                discovery: true,
                calls: true,
                input_schema_validation: true,
                json_schema_dialect: tool_cli_protocol::DEFAULT_JSON_SCHEMA_DIALECT.to_owned(),
                supported_json_schema_dialects: tool_cli_protocol::SUPPORTED_JSON_SCHEMA_DIALECTS
                    .iter()
                    .map(|&d| d.to_owned())
                    .collect(),
            },
            resources: ResourcesCapability {
                list: true,
                templates: true,
                read: true,
            },
            cancellation: CancellationCapability {
                provider_abort_signal: true,
                per_call_timeout: true,
                upstream_notification: "notifications/cancelled".to_owned(),
            },
        },
        upstream_mcp: Some(UpstreamMcp {
            protocol_version: crate::pool::MCP_PROTOCOL_VERSION.to_string(),
            implementation: Implementation {
                name: tool_cli_protocol::IMPLEMENTATION_NAME.to_owned(),
                version: env!("CARGO_PKG_VERSION").to_owned(),
            },
            capabilities: crate::pool::client_capabilities_json(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bridge_info_announces_protocol_one_and_every_operation() {
        let info = serde_json::to_value(bridge_info()).unwrap();
        assert_eq!(info["bridgeProtocol"]["name"], "tool-cli-bridge");
        assert_eq!(info["bridgeProtocol"]["major"], 1);
        assert_eq!(
            info["operations"].as_array().unwrap().len(),
            name::ALL.len()
        );
        assert_eq!(info["upstreamMcp"]["protocolVersion"], "2025-11-25");
        assert_eq!(
            info["capabilities"]["cancellation"]["providerAbortSignal"],
            true
        );
    }
}
