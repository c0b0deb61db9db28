//! MCP tasks (2025-11-25, experimental there) through the gateway. A host's `tools/call` with
//! `task` goes to the server through the calls service like any call (`pass_through.rs`), and
//! the task id the host gets back is the daemon's (`server:upstream-id`), owned by the host's
//! session: its `tasks/get`, `tasks/result`, `tasks/list` and `tasks/cancel` reach the right
//! server (`pipeline/tasks/`), and another session's or token's task id is not found.
//!
//! `tasks/list` is paged here, [`LIST_PAGE`] tasks at a time (`nextCursor` is the last task's
//! id), whatever the servers' own pages were.
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

/// Most tasks in one page of the gateway's `tasks/list`.
pub(super) const LIST_PAGE: usize = 50;

/// One page of a `tasks/list` (the owner's tasks, oldest first): the tasks after the one
/// `cursor` names (a previous page's `nextCursor` is the id of its last task, so a task that
/// ends between two pages does not shift the next), at most `size`, and `nextCursor` when more
/// follow. A cursor naming no task listed is refused: list from the start.
pub(super) fn page(tasks: Vec<Value>, cursor: Option<&str>, size: usize) -> Result<Value, String> {
    let id = |task: &Value| {
        task.get("taskId")
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    let start = match cursor {
        None => 0,
        Some(cursor) => {
            let at = tasks
                .iter()
                .position(|task| id(task).as_deref() == Some(cursor))
                .ok_or_else(|| {
                    format!(
                        "tasks/list's cursor {:?} names no task of this caller any more (it \
                         ended or was forgotten); list again without a cursor",
                        excerpt(cursor)
                    )
                })?;
            at + 1
        }
    };
    let rest = tasks.len().saturating_sub(start);
    let listed: Vec<Value> = tasks.into_iter().skip(start).take(size).collect();
    let mut answer = json!({});
    if rest > size {
        answer["nextCursor"] = listed
            .last()
            .and_then(id)
            .map_or(Value::Null, Value::String);
    }
    answer["tasks"] = Value::Array(listed);
    Ok(answer)
}

/// Whether `method` is one of the task methods answered here.
pub(super) fn is_task_method(method: &str) -> bool {
    matches!(
        method,
        "tasks/get" | "tasks/result" | "tasks/list" | "tasks/cancel"
    )
}

/// The `tasks` server capability, when a tool `context`'s grant may see takes tasks: one a
/// 2025-era server declares task support for, or any of a 2026-07-28 server's (the gateway
/// runs those as tasks itself, `session_runs.rs` and `stateless_tasks.rs`).
pub(super) fn capability(services: &Services, context: &CallContext) -> Option<Value> {
    let tools = services.discovery.visible_tools(context);
    let any = tools
        .iter()
        .any(|visible| visible.tool.task_support.takes_tasks())
        || tools
            .iter()
            .map(|visible| visible.server.as_str())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .any(|server| services.discovery.speaks_stateless(server));
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

/// The `cursor` of a `tasks/list`: none, or the string a previous page's `nextCursor` gave.
pub(super) fn cursor(params: &Value) -> Result<Option<&str>, RpcError> {
    match params.get("cursor") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(cursor)) => Ok(Some(cursor.as_str())),
        Some(other) => Err(RpcError::invalid_params(format!(
            "tasks/list's \"cursor\" is {}, not the string a previous page's \"nextCursor\" \
             gave",
            tool_cli_protocol::json::kind(other)
        ))),
    }
}

/// Every task `context`'s caller created that its server still knows, oldest first.
pub(super) async fn owned_tasks(
    services: &Services,
    context: &CallContext,
) -> Result<Vec<Value>, RpcError> {
    let listed = services
        .calls
        .list_tasks(ListTasksParams::default(), context)
        .await
        .map_err(|error| super::resources::daemon_error(services, error))?;
    Ok(match listed.get("tasks") {
        Some(Value::Array(tasks)) => tasks.clone(),
        _ => Vec::new(),
    })
}

/// Answers one task method for the host's session (`context.mcp_session`).
pub(super) async fn answer(
    services: &Services,
    method: &str,
    params: &Value,
    context: &CallContext,
) -> Result<Value, RpcError> {
    if method == "tasks/list" {
        let tasks = owned_tasks(services, context).await?;
        return page(tasks, cursor(params)?, LIST_PAGE).map_err(RpcError::invalid_params);
    }
    let task_id = params
        .get("taskId")
        .and_then(Value::as_str)
        .ok_or_else(|| RpcError::invalid_params(format!("{method} needs \"taskId\", a string")))?;
    let follow_up = match method {
        "tasks/get" => TaskFollowUp::Get { task_id },
        "tasks/result" => TaskFollowUp::Result { task_id },
        _ => TaskFollowUp::Cancel { task_id },
    };
    services
        .calls
        .task_follow_up(method, follow_up, context)
        .await
        .map_err(|error| super::resources::daemon_error(services, error))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tasks(count: usize) -> Vec<Value> {
        (0..count)
            .map(|n| json!({"taskId": format!("s:{n}"), "status": "working"}))
            .collect()
    }

    fn ids(page: &Value) -> Vec<&str> {
        page["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|task| task["taskId"].as_str())
            .collect()
    }

    #[test]
    fn a_listing_is_paged_by_the_last_tasks_id_to_the_end() {
        let first = page(tasks(5), None, 2).unwrap();
        assert_eq!(ids(&first), ["s:0", "s:1"]);
        assert_eq!(first["nextCursor"], "s:1");
        let second = page(tasks(5), Some("s:1"), 2).unwrap();
        assert_eq!(ids(&second), ["s:2", "s:3"]);
        let last = page(tasks(5), Some("s:3"), 2).unwrap();
        assert_eq!(ids(&last), ["s:4"]);
        assert!(last.get("nextCursor").is_none(), "{last}");
        // Exactly a page: no cursor to an empty page.
        assert!(page(tasks(2), None, 2).unwrap().get("nextCursor").is_none());
        assert_eq!(page(Vec::new(), None, 2).unwrap(), json!({"tasks": []}));
    }

    #[test]
    fn a_task_ending_between_pages_does_not_shift_the_next_and_a_stale_cursor_says_so() {
        let mut listed = tasks(5);
        listed.remove(0);
        let second = page(listed, Some("s:1"), 2).unwrap();
        assert_eq!(ids(&second), ["s:2", "s:3"]);
        let stale = page(tasks(3), Some("s:9"), 2).unwrap_err();
        assert!(stale.contains("without a cursor"), "{stale}");
    }
}
