//! The 2026-07-28 multi-round-trip flow: a stateless server that needs something from us
//! during a call (an elicitation, a sampling request, the roots) answers `tools/call` with
//! `resultType: "input_required"`, its `inputRequests` and an opaque `requestState`; we answer
//! each request as we answer a 2025 server's requests (`server_requests.rs`: the config's roots,
//! elicitation declined or relayed to the caller, sampling by the caller's host or the agent
//! backend) and send the call again with `inputResponses` and the state echoed back. At most
//! [`MAX_INPUT_ROUNDS`] rounds; a server still asking then is refused (`result_check.rs`).

use rmcp::model::{InputRequest, InputRequests, InputResponses};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::Connection;

/// How many `input_required` rounds one call answers.
pub(crate) const MAX_INPUT_ROUNDS: usize = 8;

/// Whether a result asks for input before the call completes.
pub(super) fn is_input_required(result: &Value) -> bool {
    result.get("resultType").and_then(Value::as_str) == Some("input_required")
}

impl Connection {
    /// The answers to an `input_required` result's requests, keyed as the server keyed them,
    /// and the state to send back; an error when a request cannot be read or answered.
    #[allow(deprecated)] // Roots and sampling: see the imports of `connection.rs`.
    pub(super) async fn answer_input_requests(
        &self,
        result: &Value,
        withdrawn: &CancellationToken,
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
