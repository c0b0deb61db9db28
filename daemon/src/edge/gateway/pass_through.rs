//! Pass-through mode: every tool the token may see, listed as `server__tool`
//! (`tool_cli_gateway_core::names`) with its JSON otherwise exactly as its server listed it
//! (`title`, `inputSchema`, `outputSchema`, `annotations`, `icons`, `_meta`), in name order, so
//! `tools/list` is the same bytes on every call while the catalogs do not change. A call is
//! resolved back to its server and tool and made through the calls service; its
//! `CallToolResult` is passed back unchanged.
//!
//! One addition, for a 2025-11-25 session only: a 2026-07-28 server's tools declare no task
//! support (that revision's server decides per call), and the gateway runs any of them as a
//! task for such a host (`session_runs.rs`), so they are listed with
//! `execution.taskSupport: "optional"`. A stateless host reads tasks from the extension
//! instead and gets them as their server listed them.

use serde_json::{Map, Value, json};
use tool_cli_gateway_core::names::GatewayNames;
use tool_cli_protocol::methods::CallToolParams;

use super::messages::{RpcError, excerpt};
use crate::error::Error;
use crate::pipeline::{CallAnswer, CallContext};
use crate::services::Services;
use crate::services::discovery::{CatalogVersion, VisibleTool};
use std::sync::Arc;

/// Most tokens whose last `tools/list` is kept encoded.
const CACHED_LISTS: usize = 32;

/// The last encoded `tools/list` answer of each recent token, with the catalogs it was made
/// from: while they are the same, the same bytes are sent again without rebuilding them (2,000
/// tools are half a megabyte of JSON).
#[derive(Default)]
pub(super) struct ListCache {
    entries: std::sync::Mutex<Vec<(String, CatalogVersion, Arc<str>)>>,
}

/// `tools/list`, encoded: from the cache while the catalogs are unchanged.
pub(super) fn list_encoded(
    services: &Services,
    cache: &ListCache,
    context: &CallContext,
) -> Arc<str> {
    // The version is read before the tools: a listing is never labelled newer than it is.
    let version = services.discovery.catalog_version();
    // A session's listing and a stateless host's differ (`execution` above): kept apart.
    let era = if context.mcp_session.is_some() {
        "session"
    } else {
        "stateless"
    };
    let token = &format!("{}\n{era}", context.grant.token_id);
    {
        let entries = cache.entries.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, _, encoded)) = entries
            .iter()
            .find(|(owner, seen, _)| owner == token && *seen == version)
        {
            return Arc::clone(encoded);
        }
    }
    let encoded: Arc<str> = Arc::from(list(services, context).to_string());
    let mut entries = cache.entries.lock().unwrap_or_else(|e| e.into_inner());
    entries.retain(|(owner, _, _)| owner != token);
    if entries.len() >= CACHED_LISTS {
        entries.remove(0);
    }
    entries.push((token.clone(), version, Arc::clone(&encoded)));
    encoded
}

/// `tools/list`.
pub(super) fn list(services: &Services, context: &CallContext) -> Value {
    let tools = services.discovery.visible_tools(context);
    let names = names_of(&tools);
    let by_address: std::collections::HashMap<(&str, &str), &VisibleTool> = tools
        .iter()
        .map(|visible| ((visible.server.as_str(), visible.tool.name()), visible))
        .collect();
    let runs_as_tasks =
        |server: &str| context.mcp_session.is_some() && services.discovery.speaks_stateless(server);
    let listed: Vec<Value> = names
        .iter()
        .filter_map(|(name, address)| {
            let visible = by_address.get(&(address.server.as_str(), address.tool.as_str()))?;
            let mut tool: Map<String, Value> =
                serde_json::from_str(visible.tool.raw_json().get()).ok()?;
            if !visible.tool.task_support.takes_tasks() && runs_as_tasks(&address.server) {
                offer_task(&mut tool);
            }
            tool.insert("name".to_owned(), Value::String(name.to_owned()));
            Some(Value::Object(tool))
        })
        .collect();
    json!({"tools": listed})
}

/// Marks a listed tool as one that may run as a task (`execution.taskSupport: "optional"`),
/// keeping anything else its `execution` says.
pub(super) fn offer_task(tool: &mut Map<String, Value>) {
    let execution = tool.entry("execution").or_insert_with(|| json!({}));
    if !execution.is_object() {
        *execution = json!({});
    }
    execution["taskSupport"] = json!("optional");
}

/// The gateway names of `tools`, with any collision logged (both tools are withheld).
pub(super) fn names_of(tools: &[VisibleTool]) -> GatewayNames {
    let names = GatewayNames::build(
        tools
            .iter()
            .map(|visible| (visible.server.clone(), visible.tool.name().to_owned())),
    );
    for collision in names.collisions() {
        let tools: Vec<String> = collision.tools.iter().map(ToString::to_string).collect();
        tracing::warn!(
            gateway_name = %collision.gateway_name,
            tools = %tools.join(", "),
            "tools share one gateway name; both are withheld from the MCP gateway"
        );
    }
    names
}

/// `tools/call`: `{name, arguments}` resolved to its tool, called through the pipeline.
pub(super) async fn call(
    services: &Services,
    params: &Value,
    context: &CallContext,
) -> Result<Value, RpcError> {
    let name = params.get("name").and_then(Value::as_str).ok_or_else(|| {
        RpcError::invalid_params("tools/call needs \"name\", a string".to_owned())
    })?;
    let arguments = match params.get("arguments") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(arguments)) => arguments.clone(),
        Some(other) => {
            return Err(RpcError::invalid_params(format!(
                "the arguments of {:?} are {}, not an object",
                excerpt(name),
                tool_cli_protocol::json::kind(other)
            )));
        }
    };
    let tools = services.discovery.visible_tools(context);
    let names = names_of(&tools);
    let address = names
        .resolve(name)
        .map_err(|error| RpcError::invalid_params(error.to_string()))?;
    if let Some(task) = super::tasks::requested(params)? {
        return super::tasks::create(
            services,
            &address.server,
            &address.tool,
            arguments,
            task,
            context,
        )
        .await;
    }
    let outcome = run(services, &address.server, &address.tool, arguments, context).await;
    Ok(outcome.unwrap_or_else(|error| error_result(services, error)))
}

/// One call through the calls service: the tool's own `CallToolResult`, unchanged, or the
/// daemon's error (invalid arguments, policy, a server down, a timeout), which callers turn
/// into a result with `isError: true` ([`error_result`]) so the model reading it can correct
/// itself.
pub(super) async fn run(
    services: &Services,
    server: &str,
    tool: &str,
    arguments: Map<String, Value>,
    context: &CallContext,
) -> Result<Value, Error> {
    let params = CallToolParams {
        server: Some(server.to_owned()),
        tool: tool.to_owned(),
        arguments: Some(arguments),
        // The host asked its user (it sees the tool's annotations, and in progressive mode
        // the call tool's); the daemon's own confirmation would refuse every destructive call.
        confirm: Some(true),
        ..CallToolParams::default()
    };
    match services.calls.call_tool(params, context).await? {
        CallAnswer::Ran(ran) => Ok(ran.result),
        CallAnswer::DryRun(_) => Err(Error::internal("a gateway call came back as a dry run")),
    }
}

/// A daemon error as a tool result with `isError: true` and the daemon's error object in
/// `_meta["tool-cli/error"]`, cleaned of the configured secrets.
pub(super) fn error_result(services: &Services, error: Error) -> Value {
    if let Error::Internal(detail) = &error {
        tracing::error!(%detail, "internal error in a gateway call");
    }
    let error = match services.secrets().current() {
        Some(secrets) => secrets.clean_error(error),
        None => error,
    };
    json!({
        "content": [{"type": "text", "text": error.wire_message()}],
        "isError": true,
        "_meta": {"tool-cli/error": error.to_data()},
    })
}

/// Whether `error` is a refusal of the arguments (they did not match the tool's schema).
pub(super) fn is_invalid_arguments(error: &Error) -> bool {
    matches!(
        error.data(),
        Some(tool_cli_protocol::ErrorData::InvalidArguments { .. })
    )
}
