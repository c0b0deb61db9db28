//! MCP task requests on a live connection (`provider/tasks.rs`): a task-augmented `tools/call`
//! and `tasks/get|result|list|cancel`. rmcp 3.9 models tasks as the 2026-07-28 extension, whose
//! shapes differ from 2025-11-25's, so nothing here goes through its typed results: over stdio
//! the request goes around rmcp (`direct.rs`) and its result arrives whole; elsewhere it is an
//! rmcp custom request, whose result the stdio tap also keeps raw.
//!
//! A 2026-07-28 server (the `io.modelcontextprotocol/tasks` extension, declared in each
//! request's client capabilities, `era.rs`) may instead answer any `tools/call` with a task
//! handle (`resultType: "task"`): the call follows it here with `tasks/get` until it ends, and
//! cancels it with `tasks/cancel` when the call gives up, so a caller sees the tool's result
//! as from any other call. That era has no `tasks/result`: the result comes with the
//! completed task. A task that asks for input mid-task (`input_required`) is answered with
//! `tasks/update` and followed on (`task_input.rs`).

use std::time::Duration;

use rmcp::model::{ClientRequest, CustomRequest};
use serde_json::Value;

use super::super::direct::request_line;
use super::Connection;
use crate::error::Error;
use crate::provider::{CALLER_META_KEY, CallTicket, TaskRequest};

impl Connection {
    /// Sends one task request for the caller `ticket` names; the server's result, unnarrowed.
    pub(crate) async fn task_request(
        &self,
        request: TaskRequest<'_>,
        timeout: Duration,
        ticket: &CallTicket,
    ) -> Result<Value, Error> {
        let _caller_in_flight = self.callers.enter(ticket.caller.clone());
        let _in_flight = self.published.server_requests.calling(ticket);
        let mut params = request.params();
        let mut meta = serde_json::Map::new();
        if let Some(context) = &ticket.trace {
            meta.insert("traceparent".to_owned(), Value::from(context.traceparent()));
            if let Some(state) = &context.trace_state {
                meta.insert("tracestate".to_owned(), Value::from(state.as_str()));
            }
        }
        if let Some(caller) = ticket.caller.as_deref() {
            meta.insert(CALLER_META_KEY.to_owned(), Value::from(caller));
        }
        let method = request.method();
        let label = request.label();
        match &self.direct {
            Some(direct) => {
                let line = |id| {
                    let mut params = params.clone();
                    let mut meta = meta.clone();
                    meta.insert("progressToken".to_owned(), Value::from(id));
                    params.insert("_meta".to_owned(), Value::Object(meta));
                    request_line(id, method, &params)
                };
                self.direct_request(direct, line, (label, timeout), ticket)
                    .await
            }
            None => {
                if !meta.is_empty() {
                    params.insert("_meta".to_owned(), Value::Object(meta));
                }
                let request = ClientRequest::CustomRequest(CustomRequest::new(
                    method,
                    Some(Value::Object(params)),
                ));
                self.request(request, label, timeout, ticket).await
            }
        }
    }
}

/// Longest wait between two `tasks/get` of a 2026 task, whatever the server suggests.
const MAX_POLL: Duration = Duration::from_secs(5);
/// Shortest wait between two `tasks/get` of a 2026 task.
const MIN_POLL: Duration = Duration::from_millis(20);
/// How long a `tasks/cancel` sent for an abandoned 2026 task may take.
const CANCEL_TIMEOUT: Duration = Duration::from_secs(5);

/// Whether a `tools/call` answer is a 2026-07-28 task handle (`resultType: "task"`, the
/// tasks extension's `CreateTaskResult`) rather than the tool's result.
pub(super) fn is_task_handle(result: &Value) -> bool {
    result.get("resultType").and_then(Value::as_str) == Some("task")
}

/// Where a 2026 task stands, read from its `tasks/get` answer (pure).
#[derive(Debug, Clone, PartialEq)]
pub(super) enum TaskState {
    /// Still running: ask again after this long.
    Working { poll: Duration },
    /// Done: the tool's `CallToolResult`.
    Completed(Value),
    /// It failed with this JSON-RPC error object.
    Failed(Value),
    /// Cancelled at the server.
    Cancelled,
    /// It waits for the answers to these requests (`inputRequests`, keyed by the server) with
    /// `tasks/update`; ask again after `poll` when all were answered already.
    InputRequired {
        requests: serde_json::Map<String, Value>,
        poll: Duration,
    },
}

/// Reads a `tasks/get` answer (or a `CreateTaskResult`'s seed task): a message saying what
/// was wrong when it is not a task the extension describes.
pub(super) fn task_state(task: &Value) -> Result<TaskState, String> {
    let status = task
        .get("status")
        .and_then(Value::as_str)
        .ok_or("the server's task has no \"status\" string")?;
    let poll = task
        .get("pollIntervalMs")
        .and_then(Value::as_u64)
        .map_or(Duration::from_millis(500), Duration::from_millis)
        .clamp(MIN_POLL, MAX_POLL);
    let object = |name: &str| {
        task.get(name)
            .filter(|value| value.is_object())
            .cloned()
            .ok_or_else(|| format!("the server's {status} task has no {name:?} object"))
    };
    Ok(match status {
        "working" => TaskState::Working { poll },
        "completed" => TaskState::Completed(object("result")?),
        "failed" => TaskState::Failed(object("error")?),
        "cancelled" => TaskState::Cancelled,
        // A seed task (the `CreateTaskResult`) carries no requests: `tasks/get` brings them.
        "input_required" => match task.get("inputRequests") {
            None | Some(Value::Null) => TaskState::Working { poll },
            Some(Value::Object(requests)) => TaskState::InputRequired {
                requests: requests.clone(),
                poll,
            },
            Some(_) => {
                return Err(
                    "the server's input_required task has no \"inputRequests\" object".to_owned(),
                );
            }
        },
        other => return Err(format!("the server's task has an unknown status {other:?}")),
    })
}

impl Connection {
    /// Follows the task a 2026 server answered `tool`'s call with (`handle`): `tasks/get` at
    /// the server's `pollIntervalMs` until it ends, within the call's `deadline`; the tool's
    /// result once completed. A wait that ends any other way (the deadline, the caller gone,
    /// an error) sends `tasks/cancel`, so nothing keeps working for no one.
    pub(super) async fn follow_task(
        &self,
        handle: &Value,
        tool: &str,
        (deadline, timeout): (std::time::Instant, Duration),
        ticket: &CallTicket,
    ) -> Result<Value, Error> {
        let invalid = |message: String| {
            Error::from(tool_cli_protocol::ErrorData::InvalidResult {
                server: self.server.clone(),
                method: tool.to_owned(),
                message,
            })
        };
        let task_id = handle
            .get("taskId")
            .and_then(Value::as_str)
            .ok_or_else(|| invalid("the server's task has no \"taskId\" string".to_owned()))?
            .to_owned();
        tracing::info!(server = %self.server, tool, task_id, "the call runs as a task");
        if let Some(note) = &ticket.task {
            note.note(&task_id);
        }
        let mut cancel = CancelOnDrop {
            peer: Some(self.peer.clone()),
            server: self.server.clone(),
            task_id: task_id.clone(),
        };
        let mut state = task_state(handle).map_err(invalid)?;
        // The input requests answered so far, by the server's keys (unique over the task's
        // life), and how many `tasks/update` were sent.
        let mut answered = std::collections::BTreeSet::new();
        let mut updates = 0;
        loop {
            match state {
                TaskState::Working { poll } => {
                    let left = deadline.saturating_duration_since(std::time::Instant::now());
                    if left.is_zero() {
                        return Err(Error::timeout(
                            &self.server,
                            tool,
                            timeout.as_millis() as u64,
                        ));
                    }
                    tokio::time::sleep(poll.min(left)).await;
                }
                TaskState::Completed(result) => {
                    cancel.peer = None;
                    return Ok(result);
                }
                TaskState::Failed(error) => {
                    cancel.peer = None;
                    return Err(tool_cli_protocol::ErrorData::Upstream {
                        server: self.server.clone(),
                        code: error.get("code").and_then(Value::as_i64).unwrap_or(-32603),
                        message: error
                            .get("message")
                            .and_then(Value::as_str)
                            .unwrap_or("the task failed")
                            .to_owned(),
                        data: error.get("data").cloned(),
                    }
                    .into());
                }
                TaskState::Cancelled => {
                    cancel.peer = None;
                    return Err(invalid(format!(
                        "the server cancelled task {task_id:?} before it completed"
                    )));
                }
                TaskState::InputRequired { ref requests, poll } => {
                    let left = deadline.saturating_duration_since(std::time::Instant::now());
                    if left.is_zero() {
                        return Err(Error::timeout(
                            &self.server,
                            tool,
                            timeout.as_millis() as u64,
                        ));
                    }
                    let fresh = super::task_input::unanswered(requests, &answered);
                    if fresh.is_empty() {
                        // Answered already; the server has not taken the answers in yet.
                        tokio::time::sleep(poll.min(left)).await;
                    } else if updates == super::task_input::MAX_TASK_UPDATES {
                        return Err(invalid(super::task_input::still_asking(&task_id, &fresh)));
                    } else {
                        answered.extend(fresh.keys().cloned());
                        self.answer_task_input(&task_id, fresh, tool, (deadline, timeout), ticket)
                            .await?;
                        updates += 1;
                    }
                }
            }
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                continue;
            }
            let get = ClientRequest::CustomRequest(CustomRequest::new(
                "tasks/get",
                Some(serde_json::json!({"taskId": task_id})),
            ));
            let answer = match self.request(get, "tasks/get", left, ticket).await {
                Ok(answer) => answer,
                Err(error) => {
                    if let Some(tool_cli_protocol::ErrorData::Upstream { message, .. }) =
                        error.data()
                    {
                        return Err(invalid(format!(
                            "the server announced task {task_id:?} for this call, then \
                             refused tasks/get for it: {message}"
                        )));
                    }
                    return Err(error);
                }
            };
            state = task_state(&answer).map_err(invalid)?;
        }
    }
}

/// Cancels a 2026 task when dropped while `peer` is still set: its call ended without the
/// task's result (deadline, caller gone, error).
struct CancelOnDrop {
    peer: Option<rmcp::Peer<rmcp::RoleClient>>,
    server: String,
    task_id: String,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Some(peer) = self.peer.take() else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let server = std::mem::take(&mut self.server);
        let task_id = std::mem::take(&mut self.task_id);
        runtime.spawn(async move {
            let cancel = ClientRequest::CustomRequest(CustomRequest::new(
                "tasks/cancel",
                Some(serde_json::json!({"taskId": task_id})),
            ));
            let options = rmcp::service::PeerRequestOptions::with_timeout(CANCEL_TIMEOUT);
            let sent = match peer.send_cancellable_request(cancel, options).await {
                Ok(handle) => handle.await_response().await.map(drop),
                Err(error) => Err(error),
            };
            match sent {
                Ok(()) => tracing::info!(server, task_id, "cancelled an abandoned task"),
                Err(error) => {
                    tracing::warn!(server, task_id, %error, "could not cancel an abandoned task")
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_a_task_result_type_is_a_task_handle() {
        assert!(is_task_handle(
            &json!({"resultType": "task", "taskId": "t"})
        ));
        assert!(!is_task_handle(
            &json!({"resultType": "complete", "content": []})
        ));
        assert!(!is_task_handle(
            &json!({"content": [], "task": {"taskId": "t"}})
        ));
    }

    #[test]
    fn a_tasks_state_is_read_from_its_status_and_payload() {
        assert_eq!(
            task_state(&json!({"taskId": "t", "status": "working", "pollIntervalMs": 50})),
            Ok(TaskState::Working {
                poll: Duration::from_millis(50)
            })
        );
        // The server's interval is kept within bounds; none given is half a second.
        assert_eq!(
            task_state(&json!({"status": "working", "pollIntervalMs": 600_000})),
            Ok(TaskState::Working { poll: MAX_POLL })
        );
        assert_eq!(
            task_state(&json!({"status": "working"})),
            Ok(TaskState::Working {
                poll: Duration::from_millis(500)
            })
        );
        let result = json!({"content": [{"type": "text", "text": "3"}]});
        assert_eq!(
            task_state(&json!({"status": "completed", "result": result})),
            Ok(TaskState::Completed(result))
        );
        let error = json!({"code": -32000, "message": "boom"});
        assert_eq!(
            task_state(&json!({"status": "failed", "error": error})),
            Ok(TaskState::Failed(error))
        );
        assert_eq!(
            task_state(&json!({"status": "cancelled"})),
            Ok(TaskState::Cancelled)
        );
        let requests = json!({"name": {"method": "elicitation/create", "params": {}}});
        assert_eq!(
            task_state(
                &json!({"status": "input_required", "inputRequests": requests,
                               "pollIntervalMs": 40})
            ),
            Ok(TaskState::InputRequired {
                requests: requests.as_object().cloned().unwrap(),
                poll: Duration::from_millis(40)
            })
        );
        // A seed task asking for input has its requests in the next tasks/get.
        assert_eq!(
            task_state(&json!({"status": "input_required", "pollIntervalMs": 40})),
            Ok(TaskState::Working {
                poll: Duration::from_millis(40)
            })
        );
    }

    #[test]
    fn a_task_without_what_its_status_promises_is_refused_with_the_reason() {
        assert_eq!(
            task_state(&json!({"status": "completed"})),
            Err("the server's completed task has no \"result\" object".to_owned())
        );
        assert_eq!(
            task_state(&json!({"status": "failed", "error": "boom"})),
            Err("the server's failed task has no \"error\" object".to_owned())
        );
        assert_eq!(
            task_state(&json!({"status": "input_required", "inputRequests": ["name"]})),
            Err("the server's input_required task has no \"inputRequests\" object".to_owned())
        );
        assert_eq!(
            task_state(&json!({"status": "paused"})),
            Err("the server's task has an unknown status \"paused\"".to_owned())
        );
        assert_eq!(
            task_state(&json!({"taskId": "t"})),
            Err("the server's task has no \"status\" string".to_owned())
        );
    }
}
