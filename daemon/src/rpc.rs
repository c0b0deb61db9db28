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

use tool_cli_protocol::agent::{AgentEventsParams, CancelAgentParams};
use tool_cli_protocol::search::{ListToolsParams, SearchToolsParams};
use tool_cli_protocol::orchestration::{
    CallChainParams, CallManyParams, CloseSessionResult, OpenSessionParams, SessionParams,
};

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

/// Refuses token management to anything but the owner token.
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
                 list tokens"
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
            match &params.server {
                Some(server) => context.orchestrator.list_tools(server, grant).await,
                None => context.orchestrator.list_all_tools(&params, grant),
            }
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
    register_orchestration(&mut module);
    module
        .register_method(name::SEARCH_TOOLS, |params, context, extensions| {
            let params: SearchToolsParams = parse(
                name::SEARCH_TOOLS,
                &params,
                r#"{"query": string, "limit"?: integer, "servers"?: [string], "tags"?: [string], "sessionId"?: string, "includeSchema"?: boolean}"#,
            )?;
            context
                .orchestrator
                .search_tools(params, &call_context(extensions)?)
                .map_err(to_rpc_error)
        })
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

const SESSION_SHAPE: &str = r#"{"sessionId": string}"#;

/// Sessions, chains, fan-outs and agent runs.
fn register_orchestration(module: &mut RpcModule<Context>) {
    module
        .register_async_method(name::RUN_AGENT, |params, context, extensions| async move {
            let params: serde_json::Value = parse(
                name::RUN_AGENT,
                &params,
                r#"{"task": string, "runId"?: string, "sessionId"?: string, "backend"?: string, "model"?: string, "maxSteps"?: integer, "costCeilingUsd"?: number, "dryRun"?: boolean, "confirmDestructive"?: boolean, "answerSchema"?: object, "servers"?: [string], "tools"?: [string], "toolLimit"?: integer, "timeoutMs"?: integer}"#,
            )?;
            let orchestrator = Arc::clone(&context.orchestrator);
            orchestrator
                .run_agent(params, &call_context(&extensions)?)
                .await
                .map_err(to_rpc_error)
        })
        .expect("method names are unique");
    module
        .register_async_method(name::AGENT_EVENTS, |params, context, extensions| async move {
            let params: AgentEventsParams = parse(
                name::AGENT_EVENTS,
                &params,
                r#"{"runId": string, "after"?: integer, "waitMs"?: integer}"#,
            )?;
            context
                .orchestrator
                .agent_events(
                    &params.run_id,
                    params.after,
                    params.wait_ms.map(std::time::Duration::from_millis),
                    &call_context(&extensions)?,
                )
                .await
                .map_err(to_rpc_error)
        })
        .expect("method names are unique");
    module
        .register_method(name::CANCEL_AGENT, |params, context, extensions| {
            let params: CancelAgentParams =
                parse(name::CANCEL_AGENT, &params, r#"{"runId": string}"#)?;
            context
                .orchestrator
                .cancel_agent(&params.run_id, &call_context(extensions)?)
                .map_err(to_rpc_error)
        })
        .expect("method names are unique");
    module
        .register_method(name::OPEN_SESSION, |params, context, extensions| {
            let params: OpenSessionParams = if params.as_str().is_none() {
                OpenSessionParams::default()
            } else {
                parse(
                    name::OPEN_SESSION,
                    &params,
                    r#"{"task"?: string, "labels"?: [string], "sessionId"?: string}"#,
                )?
            };
            context
                .orchestrator
                .open_session(params, &call_context(extensions)?)
                .map_err(to_rpc_error)
        })
        .expect("method names are unique");
    module
        .register_method(name::SESSION_SUMMARY, |params, context, extensions| {
            let params: SessionParams = parse(name::SESSION_SUMMARY, &params, SESSION_SHAPE)?;
            context
                .orchestrator
                .session_summary(&params.session_id, &call_context(extensions)?)
                .map_err(to_rpc_error)
        })
        .expect("method names are unique");
    module
        .register_method(name::LIST_SESSIONS, |_, context, extensions| {
            Ok::<_, ErrorObjectOwned>(
                context
                    .orchestrator
                    .list_sessions(&call_context(extensions)?),
            )
        })
        .expect("method names are unique");
    module
        .register_method(name::CLOSE_SESSION, |params, context, extensions| {
            let params: SessionParams = parse(name::CLOSE_SESSION, &params, SESSION_SHAPE)?;
            context
                .orchestrator
                .close_session(&params.session_id, &call_context(extensions)?)
                .map(|()| CloseSessionResult { closed: true })
                .map_err(to_rpc_error)
        })
        .expect("method names are unique");
    module
        .register_async_method(name::CALL_CHAIN, |params, context, extensions| async move {
            let params: CallChainParams = parse(
                name::CALL_CHAIN,
                &params,
                r#"{"steps": [{"server"?: string, "tool": string, "arguments"?: object, "bind"?: object, "hint"?: string}], "sessionId"?: string, "timeoutMs"?: integer, "confirm"?: boolean, "dryRun"?: boolean}"#,
            )?;
            context
                .orchestrator
                .call_chain(params, &call_context(&extensions)?)
                .await
                .map_err(to_rpc_error)
        })
        .expect("method names are unique");
    module
        .register_async_method(name::CALL_MANY, |params, context, extensions| async move {
            let params: CallManyParams = parse(
                name::CALL_MANY,
                &params,
                r#"{"calls": [callTool params], "maxConcurrent"?: integer, "sessionId"?: string}"#,
            )?;
            context
                .orchestrator
                .call_many(params, &call_context(&extensions)?)
                .await
                .map_err(to_rpc_error)
        })
        .expect("method names are unique");
}

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
