//! A 2026-07-28 task that asks for input mid-task: its `tasks/get` says `status:
//! "input_required"` with `inputRequests` (elicitation, sampling, roots, keyed by the server),
//! and the client answers them with `tasks/update` (`taskId`, `inputResponses` keyed the same)
//! while the task keeps running. Each request goes through the same relay as a plain call's
//! input round (`input_rounds.rs`: elicitation by the server's `elicitation` setting, sampling
//! by `allowSampling` and the backend, the config's roots); a declined or cancelled question
//! goes back as the `ElicitResult` it is. The call's deadline bounds the wait for an answer: when
//! it passes while a question is open the question is withdrawn from the caller and the call
//! ends, which cancels the task at the server (`tasks.rs`).
//!
//! The extension makes `tasks/update` eventually consistent: a `tasks/get` right after it may
//! still list the requests just answered. Keys are unique over a task's life, so a request
//! already answered is never asked again; only the ones not seen before are.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use rmcp::model::{ClientRequest, CustomRequest};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use super::super::server_requests::Withdrawal;
use super::Connection;
use crate::error::Error;
use crate::provider::CallTicket;
use tool_cli_protocol::ErrorData;

/// How many `tasks/update` one followed task gets before it is refused as asking without end
/// (the same bound as a plain call's input rounds).
pub(super) const MAX_TASK_UPDATES: usize = super::input_rounds::MAX_INPUT_ROUNDS;

/// How long an open question may take to close at the caller once the call's deadline passed.
const CLOSE_GRACE: Duration = Duration::from_secs(1);

/// The requests of `requests` (a task's `inputRequests` object) not answered before (pure).
pub(super) fn unanswered(
    requests: &Map<String, Value>,
    answered: &BTreeSet<String>,
) -> Map<String, Value> {
    requests
        .iter()
        .filter(|(key, _)| !answered.contains(*key))
        .map(|(key, request)| (key.clone(), request.clone()))
        .collect()
}

/// What a task still asking after [`MAX_TASK_UPDATES`] updates is refused with (pure).
pub(super) fn still_asking(task_id: &str, requests: &Map<String, Value>) -> String {
    let methods: BTreeSet<&str> = requests
        .values()
        .filter_map(|request| request.get("method").and_then(Value::as_str))
        .collect();
    format!(
        "task {task_id:?} was still asking for input ({}) after {MAX_TASK_UPDATES} answers; it \
         was cancelled",
        methods.into_iter().collect::<Vec<_>>().join(", ")
    )
}

impl Connection {
    /// Answers `requests` (the ones of task `task_id` not answered before) and sends the
    /// answers with `tasks/update`, within the call's `deadline`: a timeout when it passes
    /// first (the open question withdrawn from the caller), an error naming the request that
    /// cannot be answered.
    pub(super) async fn answer_task_input(
        &self,
        task_id: &str,
        requests: Map<String, Value>,
        tool: &str,
        (deadline, timeout): (Instant, Duration),
        ticket: &CallTicket,
    ) -> Result<(), Error> {
        let invalid = |message: String| {
            Error::from(ErrorData::InvalidResult {
                server: self.server.clone(),
                method: tool.to_owned(),
                message,
            })
        };
        let timed_out = || Error::timeout(&self.server, tool, timeout.as_millis() as u64);
        tracing::info!(
            server = %self.server,
            tool,
            task_id,
            requests = requests.len(),
            "the task asks for input"
        );
        let asked = json!({ "inputRequests": requests });
        let withdrawn = CancellationToken::new();
        let answering = self.answer_input_requests(&asked, Withdrawal::at_the_deadline(&withdrawn));
        tokio::pin!(answering);
        let answered = tokio::select! {
            answered = &mut answering => answered,
            () = tokio::time::sleep_until(deadline.into()) => {
                // The question is closed at the caller (an `elicitationClosed` event, the
                // CLI's form put away) before the call ends and the task is cancelled.
                withdrawn.cancel();
                let _ = tokio::time::timeout(CLOSE_GRACE, &mut answering).await;
                return Err(timed_out());
            }
        };
        let (responses, _state) = answered.map_err(|message| {
            invalid(format!("task {task_id:?} asked for input, but {message}"))
        })?;
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(timed_out());
        }
        let update = ClientRequest::CustomRequest(CustomRequest::new(
            "tasks/update",
            Some(json!({"taskId": task_id, "inputResponses": responses})),
        ));
        match self.request(update, "tasks/update", left, ticket).await {
            Ok(_) => Ok(()),
            Err(error) => match error.data() {
                Some(ErrorData::Upstream { message, .. }) => Err(invalid(format!(
                    "the server asked for input in task {task_id:?}, then refused \
                     tasks/update with the answers: {message}"
                ))),
                _ => Err(error),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn only_requests_not_answered_before_are_asked() {
        let requests = object(json!({
            "name": {"method": "elicitation/create"},
            "roots": {"method": "roots/list"}
        }));
        let none = BTreeSet::new();
        assert_eq!(unanswered(&requests, &none), requests);
        let name = BTreeSet::from(["name".to_owned()]);
        assert_eq!(
            unanswered(&requests, &name),
            object(json!({"roots": {"method": "roots/list"}}))
        );
        let both = BTreeSet::from(["name".to_owned(), "roots".to_owned()]);
        assert!(unanswered(&requests, &both).is_empty());
    }

    #[test]
    fn a_task_asking_without_end_is_named_with_what_it_asks() {
        let requests = object(json!({
            "a": {"method": "elicitation/create"},
            "b": {"method": "sampling/createMessage"},
            "c": {"method": "elicitation/create"}
        }));
        assert_eq!(
            still_asking("t-1", &requests),
            format!(
                "task \"t-1\" was still asking for input (elicitation/create, \
                 sampling/createMessage) after {MAX_TASK_UPDATES} answers; it was cancelled"
            )
        );
    }
}
