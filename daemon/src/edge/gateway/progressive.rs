//! Progressive mode: the host holds six meta-tools (`tool_cli_gateway_core::meta_tools`)
//! whatever the pool holds, and finds, describes and calls tools through them. A call of a tool
//! the session has not described, or with arguments its schema refuses, answers the schema
//! (`validation_refusal`) so the model can correct itself; the access of the call tool used
//! must admit the tool's (`check_access`). Calls go through the calls service like any other.

use serde_json::{Value, json};
use tool_cli_gateway_core::meta_tools::render::{
    Doubt, SEARCH_TOKEN_BUDGET, SearchEntry, ServerSummary, description, search_results,
    server_list, validation_refusal,
};
use tool_cli_gateway_core::meta_tools::{
    Access, MetaToolCall, MetaToolError, SEARCH_RESULTS, check_access,
};
use tool_cli_gateway_core::tokens::Estimate;
use tool_cli_protocol::search::{SearchConfidence, SearchToolsParams};

use super::messages::RpcError;
use super::pass_through::{error_result, is_invalid_arguments, names_of, run};
use super::sessions::Session;
use crate::pipeline::CallContext;
use crate::services::Services;
use crate::services::discovery::VisibleTool;

/// `tools/call` of a meta-tool.
pub(super) async fn call(
    services: &Services,
    session: &Session,
    params: &Value,
    context: &CallContext,
) -> Result<Value, RpcError> {
    let name = params.get("name").and_then(Value::as_str).ok_or_else(|| {
        RpcError::invalid_params("tools/call needs \"name\", a string".to_owned())
    })?;
    let parameters = params.get("arguments").cloned().unwrap_or(Value::Null);
    let call = match MetaToolCall::parse(name, &parameters) {
        Ok(call) => call,
        // Not one of ours: a protocol error, as for any unknown tool.
        Err(error @ MetaToolError::UnknownMetaTool { .. }) => {
            return Err(RpcError::invalid_params(error.to_string()));
        }
        Err(error) => return Ok(text_result(&error.to_string(), true)),
    };
    match call {
        MetaToolCall::ListServers => {
            let servers = services.discovery.visible_servers(context);
            let summaries: Vec<ServerSummary<'_>> = servers
                .iter()
                .map(|server| ServerSummary {
                    name: &server.name,
                    description: &server.description,
                    tool_count: server.tool_count,
                    unavailable: server.unavailable.as_deref(),
                })
                .collect();
            Ok(text_result(&server_list(&summaries), false))
        }
        MetaToolCall::SearchTools { query, server } => {
            Ok(search(services, &query, server, context))
        }
        MetaToolCall::DescribeTool { tool } => {
            let tools = services.discovery.visible_tools(context);
            let Some((name, visible)) = find(&tools, &tool) else {
                return Ok(unknown_tool(&tools, &tool));
            };
            session.note_described(&name);
            Ok(text_result(
                &description(&name, &visible.tool.json()),
                false,
            ))
        }
        MetaToolCall::CallTool {
            access,
            tool,
            arguments,
        } => {
            let tools = services.discovery.visible_tools(context);
            let Some((name, visible)) = find(&tools, &tool) else {
                return Ok(unknown_tool(&tools, &tool));
            };
            let json = visible.tool.json();
            let needs = Access::of(json.get("annotations").unwrap_or(&Value::Null));
            if let Err(error) = check_access(&name, needs, access) {
                return Ok(text_result(&error.to_string(), true));
            }
            if !session.was_described(&name) {
                let problems = [format!(
                    "describe_tool was not called for {name} in this session; its schema is below"
                )];
                return Ok(text_result(
                    &validation_refusal(&name, &json, &problems),
                    true,
                ));
            }
            let server = visible.server.clone();
            let tool_name = visible.tool.name().to_owned();
            match run(services, &server, &tool_name, arguments, context).await {
                Ok(result) => Ok(result),
                Err(error) if is_invalid_arguments(&error) => {
                    let problems = [error.wire_message()];
                    Ok(text_result(
                        &validation_refusal(&name, &json, &problems),
                        true,
                    ))
                }
                Err(error) => Ok(error_result(services, error)),
            }
        }
    }
}

/// `search_tools`: the index's best [`SEARCH_RESULTS`], one line each within the token budget.
fn search(
    services: &Services,
    query: &str,
    server: Option<String>,
    context: &CallContext,
) -> Value {
    let params = SearchToolsParams {
        query: query.to_owned(),
        limit: Some(SEARCH_RESULTS as i64),
        servers: server.map(|server| vec![server]),
        tags: None,
        session_id: None,
        include_schema: false,
    };
    let found = match services.discovery.search_tools(params, context) {
        Ok(found) => found,
        Err(error) => return error_result(services, error),
    };
    let tools = services.discovery.visible_tools(context);
    let names = names_of(&tools);
    let annotations = |server: &str, tool: &str| {
        tools
            .iter()
            .find(|visible| visible.server == server && visible.tool.name() == tool)
            .map(|visible| {
                Access::of(
                    visible
                        .tool
                        .json()
                        .get("annotations")
                        .unwrap_or(&Value::Null),
                )
            })
    };
    let hits: Vec<(String, Access, String)> = found
        .results
        .iter()
        .filter_map(|hit| {
            let name = names.name_of(&hit.server, &hit.tool)?;
            let access = annotations(&hit.server, &hit.tool)?;
            Some((name, access, hit.description.clone()))
        })
        .collect();
    let entries: Vec<SearchEntry<'_>> = hits
        .iter()
        .map(|(name, access, description)| SearchEntry {
            gateway_name: name,
            access: *access,
            description,
        })
        .collect();
    let doubt = match found.confidence {
        Some(SearchConfidence::Ambiguous) => Some(Doubt::Ambiguous),
        Some(SearchConfidence::Weak) => Some(Doubt::Weak),
        Some(SearchConfidence::Confident | SearchConfidence::NoMatch) | None => None,
    };
    let answer = search_results(
        query,
        &entries,
        found.catalog_size,
        doubt,
        SEARCH_TOKEN_BUDGET,
        &Estimate,
    );
    text_result(&answer.text, false)
}

/// The visible tool a gateway name names, with the name.
fn find<'a>(tools: &'a [VisibleTool], name: &str) -> Option<(String, &'a VisibleTool)> {
    let names = names_of(tools);
    let address = names.resolve(name).ok()?;
    let visible = tools
        .iter()
        .find(|visible| visible.server == address.server && visible.tool.name() == address.tool)?;
    Some((name.to_owned(), visible))
}

/// The answer to a gateway name that leads to no tool: why, as a tool error the model reads.
fn unknown_tool(tools: &[VisibleTool], name: &str) -> Value {
    let names = names_of(tools);
    let message = match names.resolve(name) {
        Err(error) => format!("{error}; search_tools finds tools by what they do"),
        Ok(_) => "the tool is no longer listed; search_tools finds the current tools".to_owned(),
    };
    text_result(&message, true)
}

/// A result of one text block.
fn text_result(text: &str, is_error: bool) -> Value {
    let mut result = json!({"content": [{"type": "text", "text": text}]});
    if is_error {
        result["isError"] = json!(true);
    }
    result
}
