//! MCP tasks (2025-11-25) for a session's host on the tools of a 2026-07-28 server. Such a
//! server's tools declare no task support (that revision's server decides per call, and the
//! pool follows a task it starts to the end), so without this a session's `tools/call` with
//! `task` would be refused, and a plain call would block for the whole task. Instead the
//! gateway runs the call in the background (`task_runs.rs`: one call through the pipeline, as
//! for a stateless host) and words the run as a 2025-11-25 task:
//!
//! - `tools/call` with `task` answers `CreateTaskResult` (`{"task": {…}}`) at once;
//! - `tasks/get` is the run's `Task`; `tasks/result` waits for the run to end (for as long as
//!   the host's request lasts) and answers the tool's result with its related-task `_meta`,
//!   or the call's JSON-RPC error; `tasks/cancel` stops the call (which cancels the server's
//!   own task) and answers the cancelled `Task`;
//! - `tasks/list` lists them after the session's tasks of 2025 servers, paged as those
//!   (`tasks.rs`).
//!
//! The runs are the session's: another session's (or a stateless host's) asking for one is
//! answered by the daemon's registry as for an id never issued. The tools are listed with
//! `execution.taskSupport: "optional"` for sessions (`pass_through.rs`).

use serde_json::{Map, Value, json};

use super::messages::{Mode, RpcError, excerpt};
use super::task_runs::{RunState, RunView};
use crate::pipeline::CallContext;

/// `_meta` key tying a result to its task (2025-11-25).
const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

/// A run's 2025-11-25 `Task`, from its view (pure): no result or error in it (those are
/// `tasks/result`'s), `ttl` `null` (a run is kept until room is needed for a new one, not for
/// a set time), `pollInterval` while it works.
pub(super) fn task(task_id: &str, view: &RunView) -> Value {
    let detailed =
        super::task_runs::detailed(task_id, &view.created_at, &view.state, &view.updated_at);
    let mut task = Map::new();
    for (key, value) in detailed.as_object().into_iter().flatten() {
        let key = match key.as_str() {
            "resultType" | "result" | "error" => continue,
            "ttlMs" => "ttl",
            "pollIntervalMs" => "pollInterval",
            other => other,
        };
        task.insert(key.to_owned(), value.clone());
    }
    if let RunState::Failed(error) = &view.state
        && let Some(message) = error.get("message").and_then(Value::as_str)
    {
        task.insert("statusMessage".to_owned(), json!(message));
    }
    Value::Object(task)
}

/// `tasks/result` of a run that ended (pure): the tool's result with its related task in
/// `_meta`, or the call's error; a cancelled run has none.
pub(super) fn outcome(task_id: &str, state: RunState) -> Result<Value, RpcError> {
    match state {
        RunState::Completed(mut result) => {
            if let Some(members) = result.as_object_mut() {
                let meta = members.entry("_meta").or_insert_with(|| json!({}));
                if let Some(meta) = meta.as_object_mut() {
                    meta.insert(RELATED_TASK.to_owned(), json!({"taskId": task_id}));
                }
            }
            Ok(result)
        }
        RunState::Failed(error) => Err(RpcError {
            code: error.get("code").and_then(Value::as_i64).unwrap_or(-32603),
            message: error
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("the task failed")
                .to_owned(),
            data: error.get("data").cloned(),
        }),
        RunState::Cancelled => Err(RpcError::invalid_params(format!(
            "task {:?} was cancelled, so it has no result",
            excerpt(task_id)
        ))),
        RunState::Working => Err(RpcError::invalid_params(format!(
            "task {:?} is still working",
            excerpt(task_id)
        ))),
    }
}

impl super::Endpoint {
    /// The answer of a session's request that concerns the runs: a pass-through `tools/call`
    /// with `task` of a 2026-07-28 server's tool, a task method naming one of the session's
    /// runs, and `tasks/list`; `None` for anything else (and for every stateless request,
    /// `stateless_tasks.rs`'s).
    pub(super) async fn answer_session_runs(
        &self,
        mode: Mode,
        method: &str,
        params: &Value,
        context: &CallContext,
    ) -> Option<Result<Value, RpcError>> {
        context.mcp_session.as_ref()?;
        let runs = &self.stateless.runs;
        match method {
            "tools/call" if mode == Mode::PassThrough => self.start_session_run(params, context),
            "tasks/list" => Some(self.list_with_runs(params, context).await),
            "tasks/get" | "tasks/result" | "tasks/cancel" => {
                let task_id = params.get("taskId").and_then(Value::as_str)?;
                if !runs.owns(task_id, context) {
                    // The daemon's registry answers: a 2025 server's task, or not found.
                    return None;
                }
                let unknown =
                    || RpcError::invalid_params(format!("no task {:?}", excerpt(task_id)));
                Some(match method {
                    "tasks/get" => runs
                        .view(task_id)
                        .map(|view| task(task_id, &view))
                        .ok_or_else(unknown),
                    "tasks/result" => match runs.ended(task_id).await {
                        Some(view) => outcome(task_id, view.state),
                        None => Err(unknown()),
                    },
                    _ => runs.cancel(task_id).and_then(|_| {
                        runs.view(task_id)
                            .map(|view| task(task_id, &view))
                            .ok_or_else(unknown)
                    }),
                })
            }
            _ => None,
        }
    }

    /// A session's `tools/call` with `task` of a tool of a 2026-07-28 server: the run started
    /// and its `CreateTaskResult`, or a refusal for want of room; `None` for any other call.
    fn start_session_run(
        &self,
        params: &Value,
        context: &CallContext,
    ) -> Option<Result<Value, RpcError>> {
        // A `task` that is not an object is refused by the plain path's reading of it.
        super::tasks::requested(params).ok()??;
        let name = params.get("name").and_then(Value::as_str)?;
        let arguments = match params.get("arguments") {
            Some(Value::Object(arguments)) => arguments.clone(),
            None | Some(Value::Null) => Map::new(),
            Some(_) => return None,
        };
        let services = &self.services;
        let tools = services.discovery.visible_tools(context);
        let names = super::pass_through::names_of(&tools);
        let address = names.resolve(name).ok()?;
        let visible = tools.iter().find(|visible| {
            visible.server == address.server && visible.tool.name() == address.tool
        })?;
        // A tool that declares task support is its server's task (`tasks.rs`).
        if visible.tool.task_support.takes_tasks()
            || !services.discovery.speaks_stateless(&address.server)
        {
            return None;
        }
        let runs = &self.stateless.runs;
        Some(
            runs.start(services, &address.server, &address.tool, arguments, context)
                .and_then(|handle| {
                    let task_id = handle
                        .get("taskId")
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    let view = runs.view(task_id).ok_or_else(|| {
                        RpcError::invalid_params(format!("no task {:?}", excerpt(task_id)))
                    })?;
                    Ok(json!({"task": task(task_id, &view)}))
                }),
        )
    }

    /// `tasks/list` of a session: its tasks of 2025 servers, then its runs, paged.
    async fn list_with_runs(
        &self,
        params: &Value,
        context: &CallContext,
    ) -> Result<Value, RpcError> {
        let cursor = super::tasks::cursor(params)?;
        let mut tasks = super::tasks::owned_tasks(&self.services, context).await?;
        let runs = &self.stateless.runs;
        tasks.extend(runs.list(context).iter().filter_map(|listed| {
            let task_id = listed.get("taskId").and_then(Value::as_str)?;
            Some(task(task_id, &runs.view(task_id)?))
        }));
        super::tasks::page(tasks, cursor, super::tasks::LIST_PAGE).map_err(RpcError::invalid_params)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const AT: &str = "2026-11-28T19:00:00.000Z";

    fn view(state: RunState) -> RunView {
        RunView {
            state,
            created_at: AT.to_owned(),
            updated_at: AT.to_owned(),
        }
    }

    #[test]
    fn a_run_reads_as_a_2025_task_without_its_result() {
        let working = task("modern:run-1", &view(RunState::Working));
        assert_eq!(
            working,
            json!({"taskId": "modern:run-1", "status": "working", "createdAt": AT,
                "lastUpdatedAt": AT, "ttl": null, "pollInterval": 250})
        );
        let result = json!({"content": [{"type": "text", "text": "3"}]});
        let done = task("modern:run-1", &view(RunState::Completed(result)));
        assert_eq!(done["status"], "completed");
        assert!(
            done.get("result").is_none() && done.get("pollInterval").is_none(),
            "{done}"
        );
        let error = json!({"code": -32001, "message": "timed out"});
        let failed = task("modern:run-1", &view(RunState::Failed(error)));
        assert_eq!(failed["status"], "failed");
        assert_eq!(failed["statusMessage"], "timed out");
        assert!(failed.get("error").is_none(), "{failed}");
        let cancelled = task("modern:run-1", &view(RunState::Cancelled));
        assert_eq!(cancelled["status"], "cancelled");
    }

    #[test]
    fn a_runs_result_carries_its_task_and_a_failure_is_its_error() {
        let result = json!({"content": [], "_meta": {"kept": 1}});
        let answered = outcome("modern:run-2", RunState::Completed(result)).unwrap();
        assert_eq!(answered["_meta"]["kept"], 1);
        assert_eq!(answered["_meta"][RELATED_TASK]["taskId"], "modern:run-2");
        let error = json!({"code": -32001, "message": "timed out", "data": {"ms": 5}});
        let failed = outcome("modern:run-2", RunState::Failed(error.clone())).unwrap_err();
        assert_eq!(failed.to_json(), error);
        let cancelled = outcome("modern:run-2", RunState::Cancelled).unwrap_err();
        assert!(cancelled.message.contains("cancelled"), "{cancelled:?}");
    }
}
