//! `answerElicitation`: the caller's answer to a question an MCP server asked in the middle of
//! its call (`elicitation/create`), relayed to it as a `callEvents` event of type
//! `elicitation` when the server's config has `"elicitation": "ask"`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The `type` of the `callEvents` event that carries a server's question: `{seq, type:
/// "elicitation", elicitationId, server, message, requestedSchema}`.
pub const ELICITATION_EVENT: &str = "elicitation";

/// The `type` of the `callEvents` event saying a question will take no answer any more, because
/// the daemon declined it (no answer in time): `{seq, type: "elicitationClosed", elicitationId,
/// reason}`.
pub const ELICITATION_CLOSED_EVENT: &str = "elicitationClosed";

/// What the caller does with a server's question (MCP's `ElicitResult.action`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ElicitationAnswer {
    /// The user answered: `content` holds the fields.
    Accept,
    /// The user said no.
    Decline,
    /// The user dismissed the question without choosing.
    Cancel,
}

impl ElicitationAnswer {
    /// The word on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            ElicitationAnswer::Accept => "accept",
            ElicitationAnswer::Decline => "decline",
            ElicitationAnswer::Cancel => "cancel",
        }
    }
}

/// Params of `answerElicitation`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AnswerElicitationParams {
    /// The `progressId` of the call whose events carried the question.
    pub progress_id: String,
    /// The event's `elicitationId`.
    pub elicitation_id: String,
    /// `accept`, `decline` or `cancel`.
    pub action: ElicitationAnswer,
    /// With `accept`: the fields, checked against the event's `requestedSchema`. Absent
    /// otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Value>,
}

/// Result of `answerElicitation`: the answer was handed to the server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AnswerElicitationResult {
    /// The question answered.
    pub elicitation_id: String,
    /// The action sent.
    pub action: ElicitationAnswer,
    /// The fields sent with `accept` (as checked; absent otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Map<String, Value>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_read_the_documented_shape() {
        let params: AnswerElicitationParams = serde_json::from_value(serde_json::json!({
            "progressId": "p", "elicitationId": "e1", "action": "accept",
            "content": {"name": "Ada"}
        }))
        .unwrap();
        assert_eq!(params.action, ElicitationAnswer::Accept);
        assert_eq!(params.elicitation_id, "e1");
        assert!(
            serde_json::from_value::<AnswerElicitationParams>(serde_json::json!({
                "progressId": "p", "elicitationId": "e1", "action": "maybe"
            }))
            .is_err()
        );
    }
}
