//! MCP tasks for hosts of the stateless revision 2026-07-28: the `io.modelcontextprotocol/tasks`
//! extension (SEP-2663) on the gateway's side, mapped onto the daemon's tasks
//! (`pipeline/tasks/`), which are the upstreams' 2025-11-25 tasks.
//!
//! - `server/discover` declares the extension in `capabilities.extensions` when a tool the
//!   token may see takes tasks (as a session's `initialize` declares `tasks`).
//! - A host declares the extension per request, in
//!   `_meta["io.modelcontextprotocol/clientCapabilities"].extensions`. Its pass-through
//!   `tools/call` of a tool whose server runs it as a task (`execution.taskSupport` `optional`
//!   or `required`) creates the server's task and answers the extension's handle,
//!   `{"resultType": "task", "taskId", "status", …}`, with the daemon's id
//!   (`server:upstream-id`), owned by the token (a stateless host has no session).
//! - A host that does not declare it gets the tool's result for an `optional` tool (a plain
//!   call) and `-32021` (missing required client capability, rmcp's and the revision's code,
//!   with the capability in `data`) for a `required` one, rather than a task it cannot read.
//! - `tasks/get` is the upstream's `tasks/get`, and once the task is terminal its
//!   `tasks/result` too, folded into the one answer the extension has (`result` of a completed
//!   task, `error` of a failed one); `tasks/cancel` is the upstream's, acknowledged with an
//!   empty result; `tasks/update` is refused (the gateway's tasks never ask their host for
//!   input: the daemon answers a server's questions itself). `tasks/list`, which the
//!   extension does not have, is served as to a session, paged (`tasks.rs`).
//!
//! The task methods need the extension declared, as rmcp's server side of it does: `-32021`
//! otherwise. Another token's task id is not found, in the words an id never issued gets.

use serde_json::{Map, Value, json};

use std::sync::Arc;

use super::messages::{RpcError, excerpt};
use super::task_runs::TaskRuns;
use crate::catalog::TaskSupport;
use crate::pipeline::CallContext;
use crate::pipeline::tasks::TaskFollowUp;
use crate::services::Services;

/// The extension's identifier, in capabilities.
pub(super) const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// `_meta` key of a 2026-era request's client capabilities.
const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";

/// MCP's code for a request the client lacks a capability for (2026-07-28).
const MISSING_REQUIRED_CLIENT_CAPABILITY: i64 = -32021;

/// Whether `method` is a task method answered here for a stateless host.
pub(super) fn is_task_method(method: &str) -> bool {
    matches!(
        method,
        "tasks/get" | "tasks/cancel" | "tasks/update" | "tasks/list"
    )
}

/// Whether a stateless request's `_meta` client capabilities declare the tasks extension.
pub(super) fn declares_tasks(params: &Value) -> bool {
    params
        .pointer("/_meta")
        .and_then(|meta| meta.get(META_CLIENT_CAPABILITIES))
        .and_then(|capabilities| capabilities.get("extensions"))
        .and_then(|extensions| extensions.get(TASKS_EXTENSION))
        .is_some()
}

/// Whether the token of `context` may see a tool that may run as a task: one a 2025-era
/// server declares task support for, or any of a 2026-07-28 server's.
pub(super) fn offers_tasks(services: &Services, context: &CallContext) -> bool {
    super::tasks::capability(services, context).is_some()
}

/// Adds the extension to a discover result's capabilities.
pub(super) fn declare_extension(discover: &mut Value) {
    if let Some(capabilities) = discover
        .get_mut("capabilities")
        .and_then(Value::as_object_mut)
    {
        let extensions = capabilities
            .entry("extensions")
            .or_insert_with(|| json!({}));
        if let Some(extensions) = extensions.as_object_mut() {
            extensions.insert(TASKS_EXTENSION.to_owned(), json!({}));
        }
    }
}

/// The `-32021` error for a host that did not declare the extension, saying what `what` needs.
fn missing_extension(what: &str) -> RpcError {
    RpcError {
        code: MISSING_REQUIRED_CLIENT_CAPABILITY,
        message: format!(
            "{what} needs the {TASKS_EXTENSION} extension; declare it in the request's \
             params._meta[{META_CLIENT_CAPABILITIES:?}].extensions (as \
             {{\"{TASKS_EXTENSION}\": {{}}}})"
        ),
        data: Some(json!({
            "requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}
        })),
    }
}

/// What a stateless pass-through `tools/call` does with tasks, from the tool's task support,
/// whether its server speaks 2026-07-28 (any call may be a task there) and whether the host
/// declared the extension (pure).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum CallRoute {
    /// A plain call, answered with the tool's result.
    Plain,
    /// Create the server's (2025-11-25) task and answer its handle.
    Task,
    /// Run the call in the background as the gateway's task (`task_runs.rs`).
    Run,
    /// Refuse: the tool runs only as a task and the host cannot read one.
    Refuse,
}

/// Decides a call's route.
pub(super) fn route(
    support: TaskSupport,
    server_speaks_stateless: bool,
    host_declares_tasks: bool,
) -> CallRoute {
    match (support, host_declares_tasks) {
        (TaskSupport::Forbidden, true) if server_speaks_stateless => CallRoute::Run,
        (TaskSupport::Forbidden, _) => CallRoute::Plain,
        (_, true) => CallRoute::Task,
        (TaskSupport::Optional, false) => CallRoute::Plain,
        (TaskSupport::Required, false) => CallRoute::Refuse,
    }
}

/// A stateless pass-through `tools/call`: `None` when it is a plain call (answered as any
/// other), else the task's handle or the refusal.
pub(super) async fn call(
    services: &Arc<Services>,
    runs: &TaskRuns,
    params: &Value,
    context: &CallContext,
) -> Option<Result<Value, RpcError>> {
    let name = params.get("name").and_then(Value::as_str)?;
    let tools = services.discovery.visible_tools(context);
    let names = super::pass_through::names_of(&tools);
    let address = names.resolve(name).ok()?;
    let support = tools
        .iter()
        .find(|visible| visible.server == address.server && visible.tool.name() == address.tool)?
        .tool
        .task_support;
    let stateless = services.discovery.speaks_stateless(&address.server);
    let arguments = match params.get("arguments") {
        Some(Value::Object(arguments)) => arguments.clone(),
        None | Some(Value::Null) => Map::new(),
        // Refused by the plain call's reading of it.
        Some(_) => return None,
    };
    match route(support, stateless, declares_tasks(params)) {
        CallRoute::Plain => None,
        CallRoute::Run => Some(Ok(runs
            .start(services, &address.server, &address.tool, arguments, context)
            .unwrap_or_else(refusal_result))),
        CallRoute::Refuse => Some(Err(missing_extension(&format!(
            "tool {:?} runs only as a task, so calling it",
            excerpt(name)
        )))),
        CallRoute::Task => {
            let created = super::tasks::create(
                services,
                &address.server,
                &address.tool,
                arguments,
                Map::new(),
                context,
            )
            .await;
            // The host made a plain `tools/call`: a refusal before any task exists (invalid
            // arguments, policy, a server down) is a tool error its model can act on, as for
            // any call (`pass_through::error_result`), not a JSON-RPC error.
            Some(Ok(match created {
                Ok(created) => handle(&created).unwrap_or_else(|| {
                    refusal_result(RpcError::invalid_params(format!(
                        "the server of {:?} answered the task's creation without a task",
                        excerpt(name)
                    )))
                }),
                Err(refused) => refusal_result(refused),
            }))
        }
    }
}

/// A refusal as a tool result with `isError: true`: its message as text and the daemon's error
/// object in `_meta["tool-cli/error"]`, as `pass_through::error_result` words one.
fn refusal_result(refused: RpcError) -> Value {
    let mut result = json!({
        "content": [{"type": "text", "text": refused.message}],
        "isError": true,
    });
    if let Some(data) = refused.data {
        result["_meta"] = json!({"tool-cli/error": data});
    }
    result
}

/// A 2025 task's members as the extension's `Task` names them: `ttl` → `ttlMs` (`null` is
/// unlimited), `pollInterval` → `pollIntervalMs`; the rest unchanged.
fn task_of_revision(task: &Map<String, Value>) -> Map<String, Value> {
    let mut renamed = Map::new();
    for (key, value) in task {
        let key = match key.as_str() {
            "ttl" => "ttlMs",
            "pollInterval" => "pollIntervalMs",
            other => other,
        };
        renamed.insert(key.to_owned(), value.clone());
    }
    renamed.entry("ttlMs").or_insert(Value::Null);
    renamed
}

/// The extension's `CreateTaskResult` for a 2025 `CreateTaskResult` (`{task: {…}}`).
pub(super) fn handle(created: &Value) -> Option<Value> {
    let task = created.get("task")?.as_object()?;
    task.get("taskId")?.as_str()?;
    let mut handle = Map::new();
    handle.insert("resultType".to_owned(), json!("task"));
    handle.extend(task_of_revision(task));
    if let Some(meta) = created.get("_meta") {
        handle.insert("_meta".to_owned(), meta.clone());
    }
    Some(Value::Object(handle))
}

/// What `tasks/result` answered for a terminal task, when it was asked.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Outcome {
    /// Not asked: the task is not terminal, or was cancelled.
    None,
    /// The task's result.
    Result(Value),
    /// The JSON-RPC error it answered.
    Error(Value),
}

/// The extension's `tasks/get` answer (`DetailedTask`) for a 2025 task and, once terminal,
/// its outcome. A 2025 task waiting for input is `working` here: its server's question goes
/// to the daemon, which answers it (or declines) itself, never to a stateless host.
pub(super) fn detailed(task: &Value, outcome: Outcome) -> Value {
    let mut detailed = Map::new();
    detailed.insert("resultType".to_owned(), json!("complete"));
    if let Some(task) = task.as_object() {
        detailed.extend(task_of_revision(task));
    }
    let status = detailed
        .get("status")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let status = status.as_deref();
    if status == Some("input_required") {
        detailed.insert("status".to_owned(), json!("working"));
        detailed.entry("statusMessage").or_insert(json!(
            "the server asked for input, which the daemon answers"
        ));
    }
    match (status, outcome) {
        (Some("completed"), Outcome::Result(result)) => {
            detailed.insert("result".to_owned(), result);
        }
        (Some("completed"), Outcome::Error(error)) => {
            // The task completed but its result could not be read: report the failure.
            detailed.insert("status".to_owned(), json!("failed"));
            detailed.insert("error".to_owned(), error);
        }
        (Some("failed"), Outcome::Error(error)) => {
            detailed.insert("error".to_owned(), error);
        }
        (Some("failed"), outcome) => {
            let message = detailed
                .get("statusMessage")
                .and_then(Value::as_str)
                .unwrap_or("the task failed")
                .to_owned();
            let mut error = json!({"code": -32603, "message": message});
            if let Outcome::Result(result) = outcome {
                error["data"] = json!({"result": result});
            }
            detailed.insert("error".to_owned(), error);
        }
        _ => {}
    }
    Value::Object(detailed)
}

/// The refusal of a `tasks/update`: the gateway's tasks never wait for their host's input.
fn no_input(task_id: &str) -> RpcError {
    RpcError::invalid_params(format!(
        "task {:?} asks its host for no input: the daemon answers a server's questions \
         itself, so tasks/update has nothing to deliver; poll it with tasks/get",
        excerpt(task_id)
    ))
}

/// Answers one task method of a stateless host (the owner is its token).
pub(super) async fn answer(
    services: &Services,
    runs: &TaskRuns,
    method: &str,
    params: &Value,
    context: &CallContext,
) -> Result<Value, RpcError> {
    if !declares_tasks(params) {
        return Err(missing_extension(method));
    }
    if method == "tasks/list" {
        let cursor = super::tasks::cursor(params)?;
        let mut tasks = super::tasks::owned_tasks(services, context).await?;
        for task in tasks.iter_mut() {
            if let Some(members) = task.as_object() {
                *task = Value::Object(task_of_revision(members));
            }
        }
        tasks.extend(runs.list(context));
        return super::tasks::page(tasks, cursor, super::tasks::LIST_PAGE)
            .map_err(RpcError::invalid_params);
    }
    let task_id = params
        .get("taskId")
        .and_then(Value::as_str)
        .ok_or_else(|| RpcError::invalid_params(format!("{method} needs \"taskId\", a string")))?;
    if runs.owns(task_id, context) {
        return match method {
            "tasks/cancel" => runs.cancel(task_id),
            "tasks/update" => Err(no_input(task_id)),
            _ => runs
                .get(task_id)
                .ok_or_else(|| RpcError::invalid_params(format!("no task {:?}", excerpt(task_id)))),
        };
    }
    let calls = &services.calls;
    let daemon_error = |error| super::resources::daemon_error(services, error);
    match method {
        "tasks/cancel" => {
            let follow_up = TaskFollowUp::Cancel { task_id };
            calls
                .task_follow_up(method, follow_up, context)
                .await
                .map_err(daemon_error)?;
            Ok(json!({"resultType": "complete"}))
        }
        "tasks/update" => {
            // Found first, so an id this host does not own is refused as any other.
            calls
                .task_follow_up(method, TaskFollowUp::Get { task_id }, context)
                .await
                .map_err(daemon_error)?;
            Err(no_input(task_id))
        }
        _ => {
            let task = calls
                .task_follow_up(method, TaskFollowUp::Get { task_id }, context)
                .await
                .map_err(daemon_error)?;
            let terminal = matches!(
                crate::pipeline::tasks::wire::status(&task),
                Some("completed" | "failed")
            );
            let outcome = if terminal {
                let result = TaskFollowUp::Result { task_id };
                match calls.task_follow_up("tasks/get", result, context).await {
                    Ok(result) => Outcome::Result(result),
                    Err(error) => Outcome::Error(daemon_error(error).to_json()),
                }
            } else {
                Outcome::None
            };
            Ok(detailed(&task, outcome))
        }
    }
}

impl super::Endpoint {
    /// The answer of a stateless request the tasks extension concerns: `server/discover`
    /// declaring it, the task methods, a pass-through `tools/call` that creates a task or is
    /// refused for want of the extension; `None` for anything else.
    pub(super) async fn answer_tasks(
        &self,
        mode: super::Mode,
        method: &str,
        params: &Value,
        context: &CallContext,
    ) -> Option<Result<super::Reply, RpcError>> {
        let runs = &self.stateless.runs;
        let answer = match method {
            "server/discover" => {
                let mut discover = super::stateless::discover_result(mode);
                if offers_tasks(&self.services, context) {
                    declare_extension(&mut discover);
                }
                // What a `subscriptions/listen` stream tells (`listen.rs`).
                super::listen::advertise(&mut discover, mode);
                Ok(discover)
            }
            _ if is_task_method(method) => {
                answer(&self.services, runs, method, params, context).await
            }
            "tools/call" if mode == super::Mode::PassThrough => {
                call(&self.services, runs, params, context).await?
            }
            _ => return None,
        };
        Some(answer.map(super::Reply::Json))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(capabilities: Value) -> Value {
        json!({"_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "host", "version": "1"},
            META_CLIENT_CAPABILITIES: capabilities,
        }})
    }

    #[test]
    fn the_extension_is_read_from_the_requests_own_capabilities() {
        assert!(declares_tasks(&meta(
            json!({"extensions": {TASKS_EXTENSION: {}}})
        )));
        assert!(!declares_tasks(&meta(json!({}))));
        assert!(!declares_tasks(&meta(
            json!({"extensions": {"io.modelcontextprotocol/apps": {}}})
        )));
        assert!(!declares_tasks(&json!({"name": "x"})));
    }

    #[test]
    fn a_call_is_a_task_only_for_a_tool_that_takes_one_and_a_host_that_reads_one() {
        use TaskSupport::*;
        for stateless in [false, true] {
            assert_eq!(route(Forbidden, stateless, false), CallRoute::Plain);
            assert_eq!(route(Optional, stateless, true), CallRoute::Task);
            assert_eq!(route(Optional, stateless, false), CallRoute::Plain);
            assert_eq!(route(Required, stateless, true), CallRoute::Task);
            assert_eq!(route(Required, stateless, false), CallRoute::Refuse);
        }
        // A 2026 server's tools declare nothing: any call may be a task, run by the gateway
        // for a host that reads tasks, a plain call for one that does not.
        assert_eq!(route(Forbidden, false, true), CallRoute::Plain);
        assert_eq!(route(Forbidden, true, true), CallRoute::Run);
    }

    #[test]
    fn a_missing_extension_is_the_revisions_error_with_the_capability() {
        let error = missing_extension("tasks/get");
        assert_eq!(error.code, -32021);
        assert!(error.message.starts_with("tasks/get needs"), "{error:?}");
        let data: rmcp::model::ClientCapabilities =
            serde_json::from_value(error.data.unwrap()["requiredCapabilities"].clone()).unwrap();
        assert!(data.supports_tasks());
    }

    #[test]
    fn a_2025_created_task_becomes_the_extensions_handle_as_rmcp_reads_it() {
        let created = json!({"task": {"taskId": "everything:abc", "status": "working",
            "createdAt": "2026-11-28T19:00:00Z", "lastUpdatedAt": "2026-11-28T19:00:00Z",
            "ttl": 300000, "pollInterval": 1000}});
        let handle = handle(&created).unwrap();
        let read: rmcp::model::CreateTaskResult = serde_json::from_value(handle.clone()).unwrap();
        assert_eq!(read.task.task_id, "everything:abc");
        assert_eq!(read.task.ttl_ms, Some(300000));
        assert_eq!(read.task.poll_interval_ms, Some(1000));
        // As a client reads an answer of unknown kind off the wire.
        let answer: rmcp::model::ServerResult = serde_json::from_value(handle).unwrap();
        assert!(
            matches!(answer, rmcp::model::ServerResult::CreateTaskResult(_)),
            "{answer:?}"
        );
        assert_eq!(handle_of_nothing(), None);
    }

    fn handle_of_nothing() -> Option<Value> {
        handle(&json!({"content": []}))
    }

    fn task(status: &str) -> Value {
        json!({"taskId": "s:1", "status": status, "createdAt": "2026-11-28T19:00:00Z",
            "lastUpdatedAt": "2026-11-28T19:00:01Z", "ttl": null, "statusMessage": "stage 2"})
    }

    fn read(detailed: Value) -> rmcp::model::GetTaskResult {
        serde_json::from_value(detailed.clone()).unwrap_or_else(|e| panic!("{e}: {detailed}"))
    }

    #[test]
    fn each_2025_status_becomes_a_detailed_task_rmcp_reads() {
        use rmcp::model::TaskPayload;
        let working = read(detailed(&task("working"), Outcome::None));
        assert_eq!(working.task.payload, TaskPayload::Working);
        assert_eq!(working.task.task.ttl_ms, None);
        let asking = read(detailed(&task("input_required"), Outcome::None));
        assert_eq!(asking.task.payload, TaskPayload::Working);
        let result = json!({"content": [{"type": "text", "text": "report"}]});
        let done = read(detailed(
            &task("completed"),
            Outcome::Result(result.clone()),
        ));
        assert!(
            matches!(&done.task.payload, TaskPayload::Completed { result: r } if Value::Object(r.clone()) == result)
        );
        let error = json!({"code": -32000, "message": "boom"});
        let failed = read(detailed(&task("failed"), Outcome::Error(error.clone())));
        assert!(
            matches!(&failed.task.payload, TaskPayload::Failed { error: e } if Value::Object(e.clone()) == error)
        );
        // A failed task whose result is a tool result: the error carries it.
        let failed = detailed(&task("failed"), Outcome::Result(result.clone()));
        assert_eq!(failed["error"]["message"], "stage 2");
        assert_eq!(failed["error"]["data"]["result"], result);
        read(failed);
        let unread = read(detailed(&task("completed"), Outcome::Error(error)));
        assert_eq!(unread.task.status(), rmcp::model::TaskStatus::Failed);
        let cancelled = read(detailed(&task("cancelled"), Outcome::None));
        assert_eq!(cancelled.task.payload, TaskPayload::Cancelled);
    }

    #[test]
    fn discover_declares_the_extension_beside_the_other_capabilities() {
        let mut discover = json!({"capabilities": {"tools": {}}});
        declare_extension(&mut discover);
        let capabilities: rmcp::model::ServerCapabilities =
            serde_json::from_value(discover["capabilities"].clone()).unwrap();
        assert!(capabilities.supports_tasks());
        assert!(capabilities.tools.is_some());
    }
}
