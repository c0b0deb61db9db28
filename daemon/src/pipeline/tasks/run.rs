//! Running a tool that runs only as an MCP task (`execution.taskSupport: "required"`) for a
//! caller that wants its result, as `tool-cli SERVER TOOL '{json}'` does: create the task
//! (`tools/call` with `task`), wait for `tasks/result` within the call's deadline (the server
//! holds that request until the task is terminal), and answer the final `CallToolResult`.
//! While it waits, the task's status (`tasks/get`, at the server's `pollInterval`) goes to the
//! call's event relay as progress, when the caller follows it. If the wait ends any other way
//! — the deadline, the caller gone (Ctrl-C), the server failing — the task is cancelled with
//! `tasks/cancel`, so nothing keeps working for no one.
//!
//! The whole is one attempt of one call: the execute stage's bulkhead, breakers, retries and
//! deadline hold around it, and the record stage writes one record for it.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio::time::Instant;
use tool_cli_protocol::ErrorData;

use super::wire;
use crate::error::Error;
use crate::provider::{CallTicket, TaskRequest, Upstream};

/// How long a task outlives its call at least, asked of the server as its `ttl`: long enough
/// for a `tasks/cancel` sent when the caller gives up to still find it.
const MIN_TTL: Duration = Duration::from_secs(60);

/// How long a `tasks/cancel` sent for an abandoned task may take.
const CANCEL_TIMEOUT: Duration = Duration::from_secs(5);

/// Bounds of the status polling: the server's `pollInterval`, clamped.
const MIN_POLL: Duration = Duration::from_millis(250);
const MAX_POLL: Duration = Duration::from_secs(5);

/// Runs `tool` as a task of `upstream` and waits for its result until `deadline`; `created`
/// is told the server's task id as soon as the task exists.
pub(crate) async fn run_to_completion(
    upstream: &Arc<dyn Upstream>,
    tool: &str,
    arguments: &Map<String, Value>,
    deadline: Instant,
    ticket: &CallTicket,
    created: &(dyn Fn(&str) + Send + Sync),
) -> Result<Value, Error> {
    let ttl = deadline
        .saturating_duration_since(Instant::now())
        .max(MIN_TTL);
    let task = json!({"ttl": ttl.as_millis() as u64});
    let answer = upstream
        .task_request(
            TaskRequest::Create {
                tool,
                arguments,
                task: &task,
            },
            deadline,
            ticket,
        )
        .await?;
    let server = &upstream.info().name;
    let task_id = wire::created_task_id(&answer).map_err(|malformed| {
        Error::from(ErrorData::InvalidResult {
            server: server.clone(),
            method: tool.to_owned(),
            message: malformed.to_string(),
        })
    })?;
    created(&task_id);
    // From here until a result arrives, ending any other way cancels the task.
    let mut cancel = CancelOnDrop {
        upstream: Some(Arc::clone(upstream)),
        task_id: task_id.clone(),
        caller: ticket.caller.clone(),
    };
    let result = upstream.task_request(TaskRequest::Result { task_id: &task_id }, deadline, ticket);
    let result = match ticket.relay.as_ref().filter(|relay| relay.is_followed()) {
        None => result.await,
        Some(relay) => {
            let poll = poll_interval(answer.pointer("/task/pollInterval"));
            let statuses = relay_statuses(upstream, &task_id, poll, deadline, ticket, relay);
            tokio::select! {
                result = result => result,
                never = statuses => match never {},
            }
        }
    };
    if result.is_ok() {
        cancel.upstream = None;
    }
    result
}

/// The server's suggested `pollInterval` (ms), clamped; a second when it gave none.
fn poll_interval(suggested: Option<&Value>) -> Duration {
    suggested
        .and_then(Value::as_u64)
        .map_or(Duration::from_secs(1), Duration::from_millis)
        .clamp(MIN_POLL, MAX_POLL)
}

/// Tells `relay` each new status of the task (`tasks/get` every `poll`) as a progress event
/// whose message is the status and the server's `statusMessage`. Runs until dropped.
async fn relay_statuses(
    upstream: &Arc<dyn Upstream>,
    task_id: &str,
    poll: Duration,
    deadline: Instant,
    ticket: &CallTicket,
    relay: &Arc<dyn crate::provider::EventRelay>,
) -> std::convert::Infallible {
    let mut last: Option<(String, Option<String>)> = None;
    let mut reported = 0u64;
    loop {
        if let Ok(task) = upstream
            .task_request(TaskRequest::Get { task_id }, deadline, ticket)
            .await
        {
            let status = wire::status(&task).unwrap_or("unknown").to_owned();
            let message = task
                .get("statusMessage")
                .and_then(Value::as_str)
                .map(str::to_owned);
            let now = Some((status.clone(), message.clone()));
            if now != last {
                reported += 1;
                let text = match &message {
                    Some(message) => format!("task {status}: {message}"),
                    None => format!("task {status}"),
                };
                let mut event = Map::new();
                event.insert("type".to_owned(), json!("progress"));
                event.insert("progress".to_owned(), json!(reported));
                event.insert("message".to_owned(), json!(text));
                relay.push(event);
                last = now;
            }
        }
        tokio::time::sleep(poll).await;
    }
}

/// Cancels the task when dropped while `upstream` is still set: the call ended without its
/// result (deadline, caller gone, error).
struct CancelOnDrop {
    upstream: Option<Arc<dyn Upstream>>,
    task_id: String,
    caller: Option<Arc<str>>,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Some(upstream) = self.upstream.take() else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let task_id = std::mem::take(&mut self.task_id);
        let ticket = CallTicket {
            caller: self.caller.take(),
            ..CallTicket::default()
        };
        runtime.spawn(async move {
            let deadline = Instant::now() + CANCEL_TIMEOUT;
            let cancelled = upstream
                .task_request(TaskRequest::Cancel { task_id: &task_id }, deadline, &ticket)
                .await;
            let server = &upstream.info().name;
            match cancelled {
                Ok(_) => tracing::info!(server, task_id, "cancelled an abandoned task"),
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

    #[test]
    fn the_poll_interval_follows_the_server_within_bounds() {
        assert_eq!(poll_interval(Some(&json!(1000))), Duration::from_secs(1));
        assert_eq!(poll_interval(Some(&json!(10))), MIN_POLL);
        assert_eq!(poll_interval(Some(&json!(600_000))), MAX_POLL);
        assert_eq!(poll_interval(None), Duration::from_secs(1));
        assert_eq!(poll_interval(Some(&json!("soon"))), Duration::from_secs(1));
    }
}
