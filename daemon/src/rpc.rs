//! The JSON-RPC methods: params in, results or errors out.
//!
//! This is the only place a daemon [`Error`] becomes a JSON-RPC error object; handlers stay thin
//! and delegate to the [`Orchestrator`]. Every result leaves through [`crate::answer`], which
//! holds it to the response size limit (spilling a large `callTool`/`readResource` result to a
//! file), and every handler that waits is raced against the end of the shutdown grace period,
//! so a request still running then gets a shutdown error instead of a closed connection.

mod manage;

use std::future::Future;
use std::sync::Arc;
use std::time::SystemTime;

use jsonrpsee::types::{ErrorObjectOwned, Params};
use jsonrpsee::{Extensions, RpcModule};
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use tokio::sync::watch;
use tool_cli_protocol::agent::{AgentEventsParams, CancelAgentParams};
use tool_cli_protocol::methods::{
    AuthenticationCapability, BridgeCapabilities, BridgeInfo, BridgeProtocol, CallToolParams,
    CancellationCapability, DescribeToolParams, HealthParams, Implementation, ListTokensResult,
    MintTokenParams, ReadResourceParams, ReadSpilledParams, ResourcesCapability, RevokeTokenParams,
    RevokeTokenResult, ServerParams, ToolsCapability, UpstreamMcp, name,
};
use tool_cli_protocol::orchestration::{
    CallChainParams, CallManyParams, CloseSessionResult, OpenSessionParams, SessionParams,
};
use tool_cli_protocol::search::{ListToolsParams, SearchToolsParams};
use tool_cli_protocol::trace::TracesReportParams;

mod auth_methods;
mod events;
mod prompts;

use crate::answer::{Budget, Spillable, fit, fit_or_spill};
use crate::auth::{Grant, TokenStore};
use crate::error::Error;
use crate::orchestrator::Orchestrator;
use crate::pipeline::CallContext;
use crate::shape::BatchLen;
use crate::spill::{MAX_PAGE_BYTES, SpillError, SpillStore};

/// How answers leave: their size limit, where large ones are saved, and when the daemon stops
/// waiting for them.
pub(crate) struct Answers {
    /// `--max-response-bytes`.
    pub(crate) max_response_bytes: usize,
    /// Where results over the limit are saved.
    pub(crate) spill: Arc<SpillStore>,
    /// Turns `true` when the shutdown grace period is over.
    pub(crate) grace_over: watch::Receiver<bool>,
    /// The grace period, for the error message.
    pub(crate) grace_ms: u64,
}

/// What every handler can reach.
pub(crate) struct Context {
    pub(crate) orchestrator: Arc<Orchestrator>,
    tokens: Arc<TokenStore>,
    answers: Answers,
}

impl Context {
    /// This request's share of the response size limit.
    pub(crate) fn budget(&self, extensions: &Extensions) -> Budget {
        Budget::new(
            self.answers.max_response_bytes,
            extensions.get::<BatchLen>().copied(),
        )
    }

    /// Runs `work` until it ends or the shutdown grace period does, whichever comes first. In
    /// the second case the work is dropped (a call in flight is cancelled upstream) and the
    /// request is answered with a shutdown error, so it gets exactly one answer before its
    /// connection closes.
    pub(crate) async fn until_grace_over<T>(
        &self,
        work: impl Future<Output = Result<T, Error>>,
    ) -> Result<T, ErrorObjectOwned> {
        let mut grace_over = self.answers.grace_over.clone();
        tokio::select! {
            result = work => result.map_err(to_rpc_error),
            // A dropped sender (no shutdown will come) disables this branch.
            Ok(_) = grace_over.wait_for(|over| *over) => Err(to_rpc_error(
                tool_cli_protocol::ErrorData::ShuttingDown {
                    grace_ms: self.answers.grace_ms,
                }
                .into(),
            )),
        }
    }
}

pub(crate) type Answer = Result<Box<RawValue>, ErrorObjectOwned>;

/// The grant the gate attached to the request. Every request that reaches a handler has one;
/// a missing grant (a bug) is refused rather than treated as the owner.
fn grant(extensions: &Extensions) -> Result<&Grant, ErrorObjectOwned> {
    extensions
        .get::<Grant>()
        .ok_or_else(|| to_rpc_error(Error::internal("request without a grant")))
}

/// The context of a call that arrives now, for the request's grant.
pub(crate) fn call_context(extensions: &Extensions) -> Result<CallContext, ErrorObjectOwned> {
    Ok(CallContext::new(grant(extensions)?.clone()))
}

/// Refuses token management, server restarts and the trace report to anything but the owner
/// token.
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
                 list tokens, restart, add, remove or reload servers, or read the daemon's traces"
            ),
        }
        .into(),
    ))
}

/// Builds the module serving every method of the protocol.
pub(crate) fn module(
    orchestrator: Arc<Orchestrator>,
    tokens: Arc<TokenStore>,
    answers: Answers,
) -> RpcModule<Context> {
    let mut module = RpcModule::new(Context {
        orchestrator,
        tokens,
        answers,
    });
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
            let tools = match &params.server {
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
        .register_async_method(name::CALL_TOOL, |params, context, extensions| async move {
            let params: CallToolParams = parse(
                name::CALL_TOOL,
                &params,
                r#"{"server"?: string, "tool": string, "arguments"?: object, "timeoutMs"?: integer, "confirm"?: boolean, "dryRun"?: boolean, "hint"?: string, "sessionId"?: string, "idempotencyKey"?: string, "alternatives"?: boolean, "progress"?: boolean, "progressId"?: string, "resetTimeoutOnProgress"?: boolean, "maxTotalTimeoutMs"?: integer}"#,
            )?;
            let call = call_context(&extensions)?;
            let progress = events::progress_log(&params, &call.grant, &context.orchestrator)?;
            let work = context.orchestrator.call_tool(params, &call);
            let result = match progress {
                None => context.until_grace_over(work).await?,
                Some(log) => {
                    context
                        .until_grace_over(crate::call_events::with_log(log, work))
                        .await?
                }
            };
            // The tool has run: a result too large to send is saved, never dropped.
            fit_or_spill(
                result,
                Spillable::Call,
                context.budget(&extensions),
                &context.answers.spill,
                &call.grant.token_id,
            )
            .await
            .map_err(to_rpc_error)
        })
        .expect("method names are unique");
    module
        .register_async_method(
            name::LIST_RESOURCES,
            |params, context, extensions| async move {
                let params: ServerParams = parse(name::LIST_RESOURCES, &params, SERVER_SHAPE)?;
                let call = call_context(&extensions)?;
                let resources = context
                    .until_grace_over(context.orchestrator.list_resources(&params.server, &call))
                    .await?;
                fit(
                    name::LIST_RESOURCES,
                    &resources,
                    context.budget(&extensions),
                )
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
                let call = call_context(&extensions)?;
                let templates = context
                    .until_grace_over(
                        context
                            .orchestrator
                            .list_resource_templates(&params.server, &call),
                    )
                    .await?;
                fit(
                    name::LIST_RESOURCE_TEMPLATES,
                    &templates,
                    context.budget(&extensions),
                )
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
                let call = call_context(&extensions)?;
                let contents = context
                    .until_grace_over(context.orchestrator.read_resource(
                        &params.server,
                        &params.uri,
                        &call,
                    ))
                    .await?;
                fit_or_spill(
                    contents,
                    Spillable::Resource { uri: &params.uri },
                    context.budget(&extensions),
                    &context.answers.spill,
                    &call.grant.token_id,
                )
                .await
                .map_err(to_rpc_error)
            },
        )
        .expect("method names are unique");
    module
        .register_async_method(
            name::READ_SPILLED,
            |params, context, extensions| async move {
                let params: ReadSpilledParams = parse(
                    name::READ_SPILLED,
                    &params,
                    r#"{"id": string, "offset"?: integer, "length"?: integer}"#,
                )?;
                let grant = grant(&extensions)?;
                let budget = context.budget(&extensions);
                read_spilled(&context.answers.spill, params, &grant.token_id, budget)
                    .await
                    .map_err(to_rpc_error)
            },
        )
        .expect("method names are unique");
    register_orchestration(&mut module);
    auth_methods::register(&mut module);
    prompts::register(&mut module);
    events::register(&mut module);
    manage::register(&mut module);
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
    module
        .register_async_method(
            name::RESTART_SERVER,
            |params, context, extensions| async move {
                owner_only(grant(&extensions)?, name::RESTART_SERVER)?;
                let params: ServerParams = parse(name::RESTART_SERVER, &params, SERVER_SHAPE)?;
                let call = call_context(&extensions)?;
                let restarted = context
                    .until_grace_over(context.orchestrator.restart_server(&params.server, &call))
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
                .tokens
                .mint(params, SystemTime::now())
                .map_err(|error| {
                    to_rpc_error(Error::invalid_params(name::MINT_TOKEN, error.to_string()))
                })?;
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
                let revoked = RevokeTokenResult {
                    revoked: context.tokens.revoke(&params.token_id),
                };
                fit(name::REVOKE_TOKEN, &revoked, context.budget(extensions)).map_err(to_rpc_error)
            },
        )
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
                let report = context
                    .until_grace_over(context.orchestrator.traces_report(params))
                    .await?;
                fit(name::TRACES_REPORT, &report, context.budget(&extensions))
                    .map_err(to_rpc_error)
            },
        )
        .expect("method names are unique");
    module
        .register_method(name::LIST_TOKENS, |_, context, extensions| -> Answer {
            owner_only(grant(extensions)?, name::LIST_TOKENS)?;
            let tokens = ListTokensResult {
                tokens: context.tokens.list(SystemTime::now()),
            };
            fit(name::LIST_TOKENS, &tokens, context.budget(extensions)).map_err(to_rpc_error)
        })
        .expect("method names are unique");
    module
}

/// `readSpilled`: one page of a spilled answer, sized so that its text, escaped into a JSON
/// string (at most twice as long), fits this request's budget.
async fn read_spilled(
    store: &Arc<SpillStore>,
    params: ReadSpilledParams,
    token_id: &str,
    budget: Budget,
) -> Result<Box<RawValue>, Error> {
    const ENVELOPE: usize = 1024;
    let fits = (budget.bytes.saturating_sub(ENVELOPE) / 2) as u64;
    let length = params.length.unwrap_or(MAX_PAGE_BYTES).min(fits);
    let offset = params.offset.unwrap_or(0);
    let reading = {
        let store = Arc::clone(store);
        let token_id = token_id.to_owned();
        tokio::task::spawn_blocking(move || {
            store.read(&params.id, &token_id, offset, length, SystemTime::now())
        })
    };
    let page = reading
        .await
        .map_err(|error| Error::internal(format!("reading a spilled answer failed: {error}")))?
        .map_err(|error| match error {
            SpillError::UnknownId(_)
            | SpillError::OffsetPastEnd { .. }
            | SpillError::InsideCharacter(_) => {
                Error::invalid_params(name::READ_SPILLED, error.to_string())
            }
            other => Error::internal(other.to_string()),
        })?;
    fit(name::READ_SPILLED, &page, budget)
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
            let call = call_context(&extensions)?;
            let result = context
                .until_grace_over(orchestrator.run_agent(params, &call))
                .await?;
            fit(name::RUN_AGENT, &result, context.budget(&extensions)).map_err(to_rpc_error)
        })
        .expect("method names are unique");
    module
        .register_async_method(
            name::AGENT_EVENTS,
            |params, context, extensions| async move {
                let params: AgentEventsParams = parse(
                    name::AGENT_EVENTS,
                    &params,
                    r#"{"runId": string, "after"?: integer, "waitMs"?: integer}"#,
                )?;
                let call = call_context(&extensions)?;
                let events = context
                    .until_grace_over(context.orchestrator.agent_events(
                        &params.run_id,
                        params.after,
                        params.wait_ms.map(std::time::Duration::from_millis),
                        &call,
                    ))
                    .await?;
                fit(name::AGENT_EVENTS, &events, context.budget(&extensions)).map_err(to_rpc_error)
            },
        )
        .expect("method names are unique");
    module
        .register_method(
            name::CANCEL_AGENT,
            |params, context, extensions| -> Answer {
                let params: CancelAgentParams =
                    parse(name::CANCEL_AGENT, &params, r#"{"runId": string}"#)?;
                let cancelled = context
                    .orchestrator
                    .cancel_agent(&params.run_id, &call_context(extensions)?)
                    .map_err(to_rpc_error)?;
                fit(name::CANCEL_AGENT, &cancelled, context.budget(extensions))
                    .map_err(to_rpc_error)
            },
        )
        .expect("method names are unique");
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
                    .orchestrator
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
                    .orchestrator
                    .session_summary(&params.session_id, &call_context(extensions)?)
                    .map_err(to_rpc_error)?;
                fit(name::SESSION_SUMMARY, &summary, context.budget(extensions))
                    .map_err(to_rpc_error)
            },
        )
        .expect("method names are unique");
    module
        .register_method(name::LIST_SESSIONS, |_, context, extensions| -> Answer {
            let sessions = context
                .orchestrator
                .list_sessions(&call_context(extensions)?);
            fit(name::LIST_SESSIONS, &sessions, context.budget(extensions)).map_err(to_rpc_error)
        })
        .expect("method names are unique");
    module
        .register_method(
            name::CLOSE_SESSION,
            |params, context, extensions| -> Answer {
                let params: SessionParams = parse(name::CLOSE_SESSION, &params, SESSION_SHAPE)?;
                context
                    .orchestrator
                    .close_session(&params.session_id, &call_context(extensions)?)
                    .map_err(to_rpc_error)?;
                let closed = CloseSessionResult { closed: true };
                fit(name::CLOSE_SESSION, &closed, context.budget(extensions)).map_err(to_rpc_error)
            },
        )
        .expect("method names are unique");
    module
        .register_async_method(name::CALL_CHAIN, |params, context, extensions| async move {
            let params: CallChainParams = parse(
                name::CALL_CHAIN,
                &params,
                r#"{"steps": [{"server"?: string, "tool": string, "arguments"?: object, "bind"?: object, "hint"?: string}], "sessionId"?: string, "timeoutMs"?: integer, "confirm"?: boolean, "dryRun"?: boolean}"#,
            )?;
            let call = call_context(&extensions)?;
            let chain = context
                .until_grace_over(context.orchestrator.call_chain(params, &call))
                .await?;
            fit(name::CALL_CHAIN, &chain, context.budget(&extensions)).map_err(to_rpc_error)
        })
        .expect("method names are unique");
    module
        .register_async_method(name::CALL_MANY, |params, context, extensions| async move {
            let params: CallManyParams = parse(
                name::CALL_MANY,
                &params,
                r#"{"calls": [callTool params], "maxConcurrent"?: integer, "sessionId"?: string}"#,
            )?;
            let call = call_context(&extensions)?;
            let many = context
                .until_grace_over(context.orchestrator.call_many(params, &call))
                .await?;
            fit(name::CALL_MANY, &many, context.budget(&extensions)).map_err(to_rpc_error)
        })
        .expect("method names are unique");
}

/// The deepest nesting serde_json parses (its recursion limit), counted from the params object.
const MAX_PARAMS_DEPTH: usize = 128;

/// Parses params into `T`, with an error that names the member and the expected shape.
pub(crate) fn parse<T: DeserializeOwned>(
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
        // serde_json stops at 128 levels of arrays and objects (a guard against stack
        // exhaustion); the shape is not what is wrong, so do not say what shape was expected.
        if message.starts_with("recursion limit exceeded") {
            return invalid(format!(
                "the params nest arrays and objects more than {MAX_PARAMS_DEPTH} levels deep \
                 (the arguments about {} levels below them), deeper than the daemon parses; \
                 send flatter arguments",
                MAX_PARAMS_DEPTH - 2
            ));
        }
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
    // No configured secret leaves in an error, wherever the error was made.
    let error = match crate::redact::installed() {
        Some(secrets) => secrets.clean_error(error),
        None => error,
    };
    let data = error.to_data();
    match error.alternatives() {
        None => ErrorObjectOwned::owned(error.code(), error.wire_message(), Some(data)),
        Some(alternatives) => {
            // The data stays the failure's own, tagged by `kind`, with one member added.
            let mut data = serde_json::to_value(&data).unwrap_or_default();
            if let Some(members) = data.as_object_mut() {
                members.insert(
                    "alternatives".to_owned(),
                    serde_json::to_value(alternatives).unwrap_or_default(),
                );
            }
            ErrorObjectOwned::owned(error.code(), error.wire_message(), Some(data))
        }
    }
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
    fn params_nested_too_deep_say_so_instead_of_naming_a_shape() {
        let depth = 130;
        let text = format!(
            r#"{{"server":"s","tool":"t","arguments":{{"a":{}1{}}}}}"#,
            "[".repeat(depth),
            "]".repeat(depth)
        );
        let params = Params::new(Some(&text));
        let err = parse::<CallToolParams>("callTool", &params, "{...}").unwrap_err();
        assert_eq!(err.code(), tool_cli_protocol::code::INVALID_PARAMS);
        assert!(
            err.message().contains("more than 128 levels deep"),
            "{}",
            err.message()
        );
        assert!(!err.message().contains("expected {"), "{}", err.message());
        // Just under the limit parses.
        let text = format!(
            r#"{{"server":"s","tool":"t","arguments":{{"a":{}1{}}}}}"#,
            "[".repeat(100),
            "]".repeat(100)
        );
        assert!(parse::<CallToolParams>("callTool", &Params::new(Some(&text)), "").is_ok());
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
        assert_eq!(
            info["capabilities"]["cancellation"]["providerAbortSignal"],
            true
        );
    }
}
