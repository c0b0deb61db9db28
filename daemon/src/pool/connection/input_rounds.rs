//! The 2026-07-28 multi-round-trip flow: a stateless server that needs something from us
//! during a request (an elicitation, a sampling request, the roots) answers `tools/call`,
//! `prompts/get` or `resources/read` with `resultType: "input_required"`, its `inputRequests` and an opaque `requestState`; we answer
//! each request as we answer a 2025 server's requests (`server_requests.rs`: the config's roots,
//! elicitation declined or relayed to the caller, sampling by the caller's host or the agent
//! backend) and send the request again with `inputResponses` and the state echoed back, all
//! within the request's one timeout. At most [`MAX_INPUT_ROUNDS`] rounds; a server still asking
//! then is refused (`result_check.rs`).

use std::time::{Duration, Instant};

use rmcp::model::{ClientRequest, InputRequest, InputRequests, InputResponses};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::super::server_requests::Withdrawal;
use super::Connection;
use crate::error::Error;
use crate::provider::CallTicket;
use tool_cli_protocol::ErrorData;

/// How many `input_required` rounds one call answers.
pub(crate) const MAX_INPUT_ROUNDS: usize = 8;

/// Whether a result asks for input before the call completes.
pub(super) fn is_input_required(result: &Value) -> bool {
    result.get("resultType").and_then(Value::as_str) == Some("input_required")
}

impl Connection {
    /// Sends the request `build` makes (from the answers and the state of the round before,
    /// none at first) until its result is not `input_required` or the rounds run out; the last
    /// result, which the caller checks. `label` names the request in errors (the tool's name for
    /// a call, else the method).
    pub(super) async fn request_answering_input(
        &self,
        label: &str,
        timeout: Duration,
        ticket: &CallTicket,
        mut build: impl FnMut(Option<InputResponses>, Option<String>) -> ClientRequest,
    ) -> Result<Value, Error> {
        let deadline = Instant::now() + timeout;
        let (mut responses, mut state) = (None, None);
        let mut rounds = 0;
        loop {
            let request = build(responses.take(), state.take());
            let left = deadline.saturating_duration_since(Instant::now());
            let result = self.request(request, label, left, ticket).await?;
            if rounds == MAX_INPUT_ROUNDS || !is_input_required(&result) {
                return Ok(result);
            }
            let withdrawn = CancellationToken::new();
            let (answered, echoed) = self
                .answer_input_requests(&result, Withdrawal::by_the_server(&withdrawn))
                .await
                .map_err(|message| ErrorData::InvalidResult {
                    server: self.server.clone(),
                    method: label.to_owned(),
                    message,
                })?;
            responses = Some(answered);
            state = echoed;
            rounds += 1;
        }
    }

    /// The answers to an `input_required` result's requests, keyed as the server keyed them,
    /// and the state to send back; an error when a request cannot be read or answered.
    #[allow(deprecated)] // Roots and sampling: see the imports of `connection.rs`.
    pub(super) async fn answer_input_requests(
        &self,
        result: &Value,
        withdrawn: Withdrawal<'_>,
    ) -> Result<(InputResponses, Option<String>), String> {
        let state = result
            .get("requestState")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let requests: InputRequests = match result.get("inputRequests") {
            None | Some(Value::Null) => InputRequests::new(),
            Some(requests) => serde_json::from_value(requests.clone()).map_err(|error| {
                format!(
                    "its inputRequests are not elicitation, sampling or roots requests: {error}"
                )
            })?,
        };
        let answers = &self.published.server_requests;
        let mut responses = InputResponses::new();
        for (key, request) in requests {
            let response = match request {
                InputRequest::Elicitation(request) => {
                    serde_json::to_value(answers.elicit(&request.params, withdrawn).await)
                }
                InputRequest::CreateMessage(request) => {
                    let sampled = answers.sample(&request.params).await.map_err(|error| {
                        format!("its sampling request {key:?} failed: {}", error.message)
                    })?;
                    serde_json::to_value(sampled)
                }
                InputRequest::ListRoots(_) => serde_json::to_value(answers.list_roots()),
                // `InputRequest` may grow: a kind we do not know is not answered with a guess.
                #[allow(unreachable_patterns)]
                _ => {
                    return Err(format!(
                        "its input request {key:?} is of a kind we do not answer"
                    ));
                }
            }
            .map_err(|error| format!("the answer to {key:?} could not be encoded: {error}"))?;
            responses.insert(key, response);
        }
        Ok((responses, state))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_an_input_required_result_starts_a_round() {
        assert!(is_input_required(&json!({"resultType": "input_required"})));
        assert!(!is_input_required(
            &json!({"resultType": "complete", "content": []})
        ));
        assert!(!is_input_required(&json!({"content": []})));
    }
}
