//! The JSON-RPC methods: params in, results or errors out.
//!
//! This is the only place a daemon [`Error`] becomes a JSON-RPC error object; handlers stay thin
//! and delegate to the [`Orchestrator`].

use std::sync::Arc;

use std::time::SystemTime;

use jsonrpsee::types::{ErrorObjectOwned, Params};
use jsonrpsee::{Extensions, RpcModule};
use serde::de::DeserializeOwned;
use tool_cli_protocol::methods::{
    AuthenticationCapability, BridgeCapabilities, BridgeInfo, BridgeProtocol, CallToolParams,
    CancellationCapability, DescribeToolParams, HealthParams, Implementation, ListTokensResult,
    MintTokenParams, ReadResourceParams, ResourcesCapability, RevokeTokenParams, RevokeTokenResult,
    ServerParams, ToolsCapability, UpstreamMcp, name,
};
use tool_cli_protocol::trace::TracesReportParams;

use crate::auth::{Grant, TokenStore};
use crate::error::Error;
use crate::orchestrator::Orchestrator;
use crate::pipeline::CallContext;

/// What every handler can reach.
pub(crate) struct Context {
    orchestrator: Arc<Orchestrator>,
    tokens: Arc<TokenStore>,
}

/// The grant the gate attached to the request. Every request that reaches a handler has one;
/// a missing grant (a bug) is refused rather than treated as the owner.
fn grant(extensions: &Extensions) -> Result<&Grant, ErrorObjectOwned> {
    extensions
        .get::<Grant>()
        .ok_or_else(|| to_rpc_error(Error::internal("request without a grant")))
}

/// The context of a call that arrives now, for the request's grant.
fn call_context(extensions: &Extensions) -> Result<CallContext, ErrorObjectOwned> {
    Ok(CallContext::new(grant(extensions)?.clone()))
}

/// Refuses token management and the trace report to anything but the owner token.
fn owner_only(grant: &Grant, method: &str) -> Result<(), ErrorObjectOwned> {
    if grant.is_owner {
        return Ok(());
    }
    Err(to_rpc_error(
        tool_cli_protocol::ErrorData::NotPermitted {
            server: String::new(),
            tool: None,
            reason: format!(
                "{method} needs the daemon's owner token; a scoped token cannot mint, revoke or \
                 list tokens, nor read the daemon's traces"
            ),
        }
        .into(),
    ))
}

/// Builds the module serving every method of the protocol.
pub(crate) fn module(
    orchestrator: Arc<Orchestrator>,
    tokens: Arc<TokenStore>,
) -> RpcModule<Context> {
    let mut module = RpcModule::new(Context {
        orchestrator,
        tokens,
    });
    module
        .register_method(name::GET_BRIDGE_INFO, |_, _, _| {
            Ok::<_, ErrorObjectOwned>(bridge_info())
        })
        .expect("method names are unique");
    module
        .register_method(name::HEALTH, |params, context, extensions| {
            let params: HealthParams = if params.as_str().is_none() {
                HealthParams::default()
            } else {
                parse(name::HEALTH, &params, r#"{"tools"?: boolean}"#)?
            };
            Ok::<_, ErrorObjectOwned>(
                context
                    .orchestrator
                    .health(grant(extensions)?, params.tools),
            )
        })
        .expect("method names are unique");
    module
        .register_method(name::LIST_SERVERS, |_, context, extensions| {
            Ok::<_, ErrorObjectOwned>(context.orchestrator.list_servers(grant(extensions)?))
        })
        .expect("method names are unique");
    module
        .register_async_method(name::LIST_TOOLS, |params, context, extensions| async move {
            let params: ServerParams = parse(name::LIST_TOOLS, &params, SERVER_SHAPE)?;
            context
                .orchestrator
                .list_tools(&params.server, grant(&extensions)?)
                .await
                .map_err(to_rpc_error)
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
                context
                    .orchestrator
                    .describe_tool(&params.server, &params.tool, grant(&extensions)?)
                    .await
                    .map_err(to_rpc_error)
            },
        )
        .expect("method names are unique");
    module
        .register_async_method(name::CALL_TOOL, |params, context, extensions| async move {
            let params: CallToolParams = parse(
                name::CALL_TOOL,
                &params,
                r#"{"server"?: string, "tool": string, "arguments"?: object, "timeoutMs"?: integer, "confirm"?: boolean, "dryRun"?: boolean, "hint"?: string, "sessionId"?: string, "idempotencyKey"?: string}"#,
            )?;
            let call = call_context(&extensions)?;
            context
                .orchestrator
                .call_tool(params, &call)
                .await
                .map_err(to_rpc_error)
        })
        .expect("method names are unique");
    module
        .register_async_method(
            name::LIST_RESOURCES,
            |params, context, extensions| async move {
                let params: ServerParams = parse(name::LIST_RESOURCES, &params, SERVER_SHAPE)?;
                context
                    .orchestrator
                    .list_resources(&params.server, &call_context(&extensions)?)
                    .await
                    .map_err(to_rpc_error)
            },
        )
        .expect("method names are unique");
    module
        .register_async_method(
            name::LIST_RESOURCE_TEMPLATES,
            |params, context, extensions| async move {
                let params: ServerParams =
                    parse(name::LIST_RESOURCE_TEMPLATES, &params, SERVER_SHAPE)?;
                context
                    .orchestrator
                    .list_resource_templates(&params.server, &call_context(&extensions)?)
                    .await
                    .map_err(to_rpc_error)
            },
        )
        .expect("method names are unique");
    module
        .register_async_method(
            name::READ_RESOURCE,
            |params, context, extensions| async move {
                let params: ReadResourceParams = parse(
                    name::READ_RESOURCE,
                    &params,
                    r#"{"server": string, "uri": string}"#,
                )?;
                context
                    .orchestrator
                    .read_resource(&params.server, &params.uri, &call_context(&extensions)?)
                    .await
                    .map_err(to_rpc_error)
            },
        )
        .expect("method names are unique");
    module
        .register_method(name::MINT_TOKEN, |params, context, extensions| {
            owner_only(grant(extensions)?, name::MINT_TOKEN)?;
            let params: MintTokenParams = if params.as_str().is_none() {
                MintTokenParams::default()
            } else {
                parse(
                    name::MINT_TOKEN,
                    &params,
                    r#"{"servers"?: [glob], "tools"?: ["server/tool" glob], "resources"?: ["server/uri" glob], "readOnly"?: boolean, "ttlSeconds"?: integer, "label"?: string}"#,
                )?
            };
            context
                .tokens
                .mint(params, SystemTime::now())
                .map_err(|error| to_rpc_error(Error::invalid_params(name::MINT_TOKEN, error.to_string())))
        })
        .expect("method names are unique");
    module
        .register_method(name::REVOKE_TOKEN, |params, context, extensions| {
            owner_only(grant(extensions)?, name::REVOKE_TOKEN)?;
            let params: RevokeTokenParams =
                parse(name::REVOKE_TOKEN, &params, r#"{"tokenId": string}"#)?;
            Ok::<_, ErrorObjectOwned>(RevokeTokenResult {
                revoked: context.tokens.revoke(&params.token_id),
            })
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
                context
                    .orchestrator
                    .traces_report(params)
                    .await
                    .map_err(to_rpc_error)
            },
        )
        .expect("method names are unique");
    module
        .register_method(name::LIST_TOKENS, |_, context, extensions| {
            owner_only(grant(extensions)?, name::LIST_TOKENS)?;
            Ok::<_, ErrorObjectOwned>(ListTokensResult {
                tokens: context.tokens.list(SystemTime::now()),
            })
        })
        .expect("method names are unique");
    module
}

const SERVER_SHAPE: &str = r#"{"server": string}"#;

/// Parses params into `T`, with an error that names the member and the expected shape.
fn parse<T: DeserializeOwned>(
    method: &str,
    params: &Params<'_>,
    expected: &str,
) -> Result<T, ErrorObjectOwned> {
    let invalid = |message: String| to_rpc_error(Error::invalid_params(method, message));
    let Some(text) = params.as_str() else {
        return Err(invalid(format!("missing params; expected {expected}")));
    };
    serde_json::from_str(text).map_err(|err| {
        let message = err.to_string();
        // serde_json appends a position inside the params text, which helps nobody here.
        let message = message
            .split(" at line ")
            .next()
            .unwrap_or(&message)
            .to_owned();
        invalid(format!("{message}; expected {expected}"))
    })
}

/// The one conversion of daemon errors into JSON-RPC errors.
pub(crate) fn to_rpc_error(error: Error) -> ErrorObjectOwned {
    if let Error::Internal(detail) = &error {
        // The detail stays here; the caller is told only that something failed inside.
        tracing::error!(%detail, "internal error");
    }
    ErrorObjectOwned::owned(error.code(), error.wire_message(), Some(error.to_data()))
}

/// The `getBridgeInfo` result.
pub(crate) fn bridge_info() -> BridgeInfo {
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
    use serde_json::Value;

    #[test]
    fn params_errors_name_the_member_and_the_shape() {
        let params = Params::new(Some(r#"{"server": 5}"#));
        let err = parse::<ServerParams>("listTools", &params, SERVER_SHAPE).unwrap_err();
        assert_eq!(err.code(), tool_cli_protocol::code::INVALID_PARAMS);
        let data: Value = serde_json::from_str(err.data().unwrap().get()).unwrap();
        assert_eq!(data["kind"], "invalidParams");
        let message = data["message"].as_str().unwrap();
        assert!(message.contains("invalid type: integer `5`"), "{message}");
        assert!(
            message.contains(r#"expected {"server": string}"#),
            "{message}"
        );

        let err = parse::<ServerParams>("listTools", &Params::new(None), SERVER_SHAPE).unwrap_err();
        assert!(
            err.message().contains("missing params"),
            "{}",
            err.message()
        );

        let params = Params::new(Some("{}"));
        let err = parse::<ServerParams>("listTools", &params, SERVER_SHAPE).unwrap_err();
        assert!(
            err.message().contains("missing field `server`"),
            "{}",
            err.message()
        );
    }

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
    }
}
