//! MCP tasks (2025-11-25, experimental there) through the gateway. A host's `tools/call` with
//! `task` goes to the server through the calls service like any call (`pass_through.rs`), and
//! the task id the host gets back is the daemon's (`server:upstream-id`), owned by the host's
//! session: its `tasks/get`, `tasks/result`, `tasks/list` and `tasks/cancel` reach the right
//! server (`pipeline/tasks/`), and another session's or token's task id is not found.
//!
//! The capability is advertised when a tool the token may see takes tasks. A server's
//! `notifications/tasks/status` for a task goes to the standalone stream of the session that
//! created it (`notices.rs`), with the session's task id.

use serde_json::{Value, json};
use tool_cli_protocol::methods::{CallToolParams, ListTasksParams};

use super::messages::{RpcError, excerpt};
use crate::pipeline::tasks::TaskFollowUp;
use crate::pipeline::{CallAnswer, CallContext};
use crate::services::Services;

/// Whether `method` is one of the task methods answered here.
pub(super) fn is_task_method(method: &str) -> bool {
    matches!(
        method,
        "tasks/get" | "tasks/result" | "tasks/list" | "tasks/cancel"
    )
}

/// The `tasks` server capability, when a tool `context`'s grant may see takes tasks.
pub(super) fn capability(services: &Services, context: &CallContext) -> Option<Value> {
    let any = services
        .discovery
        .visible_tools(context)
        .iter()
        .any(|visible| visible.tool.task_support.takes_tasks());
    any.then(|| json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}))
}

/// The `task` member of a host's `tools/call`, when it has one: an object, or a clear error.
pub(super) fn requested(
    params: &Value,
) -> Result<Option<serde_json::Map<String, Value>>, RpcError> {
    match params.get("task") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(task)) => Ok(Some(task.clone())),
        Some(other) => Err(RpcError::invalid_params(format!(
            "\"task\" is {}, not an object such as {{\"ttl\": 60000}}",
            tool_cli_protocol::json::kind(other)
        ))),
    }
}

/// A host's `tools/call` with `task`: the server's `CreateTaskResult` with the daemon's task
/// id, or a JSON-RPC error (a host that asked for a task reads a task or an error, never a
/// tool result).
pub(super) async fn create(
    services: &Services,
    server: &str,
    tool: &str,
    arguments: serde_json::Map<String, Value>,
    task: serde_json::Map<String, Value>,
    context: &CallContext,
) -> Result<Value, RpcError> {
    let params = CallToolParams {
        server: Some(server.to_owned()),
        tool: tool.to_owned(),
        arguments: Some(arguments),
        // As for any gateway call: the host asked its user.
        confirm: Some(true),
        task: Some(task),
        ..CallToolParams::default()
    };
    match services.calls.call_tool(params, context).await {
        Ok(CallAnswer::Ran(ran)) => Ok(ran.result),
        Ok(CallAnswer::DryRun(_)) => Err(super::resources::daemon_error(
            services,
            crate::error::Error::internal("a gateway task call came back as a dry run"),
        )),
        Err(error) => Err(super::resources::daemon_error(services, error)),
    }
}

/// The `notifications/tasks/status` a server's status of `task` becomes for the session of
/// `context`, if the session created that task.
pub(super) fn status_notice(
    services: &Services,
    server: &str,
    task: &Value,
    context: &CallContext,
) -> Option<Value> {
    let upstream_id = task.get("taskId").and_then(Value::as_str)?;
    let public = services.calls.own_task_id(context, server, upstream_id)?;
    let mut params = task.clone();
    params["taskId"] = Value::String(public);
    Some(json!({"jsonrpc": "2.0", "method": "notifications/tasks/status", "params": params}))
}

/// Answers one task method for the host's session (`context.mcp_session`).
pub(super) async fn answer(
    services: &Services,
    method: &str,
    params: &Value,
    context: &CallContext,
) -> Result<Value, RpcError> {
    let calls = &services.calls;
    let answered = if method == "tasks/list" {
        if let Some(cursor) = params.get("cursor").filter(|cursor| !cursor.is_null()) {
            return Err(RpcError::invalid_params(format!(
                "tasks/list takes no cursor here (every task of the session comes in one page); \
                 got {}",
                excerpt(&cursor.to_string())
            )));
        }
        calls.list_tasks(ListTasksParams::default(), context).await
    } else {
        let task_id = params
            .get("taskId")
            .and_then(Value::as_str)
            .ok_or_else(|| {
                RpcError::invalid_params(format!("{method} needs \"taskId\", a string"))
            })?;
        let follow_up = match method {
            "tasks/get" => TaskFollowUp::Get { task_id },
            "tasks/result" => TaskFollowUp::Result { task_id },
            _ => TaskFollowUp::Cancel { task_id },
        };
        calls.task_follow_up(method, follow_up, context).await
    };
    answered.map_err(|error| super::resources::daemon_error(services, error))
}
