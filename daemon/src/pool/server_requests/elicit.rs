//! A server's elicitation relayed to the caller watching its one call in flight: a form
//! question as the caller's relay asks it, a URL-mode one as far as the caller can show it
//! (`EventRelay::ask_url`), the answer awaited within `elicitationTimeoutMs` while the call
//! runs, and the reason to decline with when none can come.

use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction};
use serde_json::{Value, json};
use tool_cli_protocol::elicitation::{ELICITATION_EVENT, ElicitationAnswer};

use super::{ServerRequests, Withdrawal, clip};
use crate::provider::{EventRelay, RelayedAnswer, UrlQuestion, UrlRelay};

impl ServerRequests {
    /// Relays a question to the caller of the server's one watched call in flight and waits
    /// (up to `elicitationTimeoutMs`, while the call runs and the server still asks) for the
    /// answer; `Err` is the reason to decline with.
    pub(super) async fn relay(
        &self,
        request: &ElicitRequestParams,
        withdrawn: Withdrawal<'_>,
    ) -> Result<ElicitResult, String> {
        let watchers = self.watchers();
        let log = crate::elicitation::route(&watchers).map_err(|no_route| {
            let reason = no_route.reason(&self.server);
            tracing::info!(server = %self.server, %reason, "elicitation declined");
            reason
        })?;
        let (id, answer) = match request {
            ElicitRequestParams::FormElicitationParams {
                message,
                requested_schema,
                ..
            } => {
                let schema = serde_json::to_value(requested_schema).unwrap_or(Value::Null);
                let mut event = serde_json::Map::new();
                event.insert("type".to_owned(), json!(ELICITATION_EVENT));
                event.insert("server".to_owned(), json!(self.server));
                event.insert("message".to_owned(), json!(clip(message)));
                event.insert("requestedSchema".to_owned(), schema.clone());
                log.ask(schema, event)
            }
            ElicitRequestParams::UrlElicitationParams {
                message,
                url,
                elicitation_id,
                ..
            } => {
                let question = UrlQuestion {
                    message: clip(message),
                    url: url.clone(),
                    elicitation_id: elicitation_id.clone(),
                };
                match log.ask_url(&question) {
                    UrlRelay::Asked(id, answer) => (id, answer),
                    outcome => return Err(self.url_not_asked(&question, &outcome)),
                }
            }
            _ => {
                return Err(format!(
                    "declined by the tool-cli daemon: server \"{}\" asked for an elicitation \
                     of a mode the daemon does not know",
                    self.server
                ));
            }
        };
        tracing::info!(server = %self.server, elicitation_id = %id, "elicitation relayed to the caller");
        self.await_answer(log.as_ref(), id, answer, withdrawn).await
    }

    /// Why a URL-mode elicitation was declined without a question (the reason sent back to
    /// the server, and logged).
    fn url_not_asked(&self, question: &UrlQuestion, outcome: &UrlRelay) -> String {
        let reason = match outcome {
            UrlRelay::InResult => format!(
                "declined by the tool-cli daemon: server \"{}\" asked to send the user to a web \
                 page, which the caller's MCP host cannot ask about (it declared form \
                 elicitation only); the URL was given to the host in the call's result instead",
                self.server
            ),
            _ => format!(
                "declined by the tool-cli daemon: server \"{}\" asked to send the user to a web \
                 page, which its caller cannot show (only an MCP host through the gateway can)",
                self.server
            ),
        };
        tracing::info!(
            server = %self.server,
            elicitation_id = %clip(&question.elicitation_id),
            %reason,
            "URL elicitation declined"
        );
        reason
    }

    /// Waits for the caller's answer to question `id` (up to `elicitationTimeoutMs`, while the
    /// call runs and the server still asks); `Err` is the reason to decline with.
    async fn await_answer(
        &self,
        log: &dyn EventRelay,
        id: String,
        mut answer: tokio::sync::oneshot::Receiver<RelayedAnswer>,
        withdrawn: Withdrawal<'_>,
    ) -> Result<ElicitResult, String> {
        let timeout = self.settings.elicitation_timeout;
        let closing = tokio::select! {
            answered = &mut answer => match answered {
                Ok(answered) => return Ok(self.answered(&id, answered)),
                Err(_) => "its answer reached nobody".to_owned(),
            },
            () = tokio::time::sleep(timeout) => format!(
                "no answer came within {} ms (the server's elicitationTimeoutMs)",
                timeout.as_millis()
            ),
            () = log.ended() => "the call ended before an answer came".to_owned(),
            why = withdrawn.withdrawn() => why.to_owned(),
        };
        if !log.close_question(&id, &closing)
            && let Ok(answered) = answer.try_recv()
        {
            // Answered in the same instant it was given up on: the answer wins.
            return Ok(self.answered(&id, answered));
        }
        tracing::info!(server = %self.server, elicitation_id = %id, reason = %closing, "elicitation declined");
        Err(format!(
            "declined by the tool-cli daemon: server \"{}\" asked the caller (elicitation \
             \"{id}\"), but {closing}",
            self.server
        ))
    }

    /// The result for the server of the caller's answer (never logged: it is the user's).
    fn answered(&self, id: &str, (action, content): RelayedAnswer) -> ElicitResult {
        tracing::info!(
            server = %self.server,
            elicitation_id = %id,
            action = action.as_str(),
            "elicitation answered by the caller"
        );
        let mut result = ElicitResult::new(match action {
            ElicitationAnswer::Accept => ElicitationAction::Accept,
            ElicitationAnswer::Decline => ElicitationAction::Decline,
            ElicitationAnswer::Cancel => ElicitationAction::Cancel,
        });
        result.content = content.map(Value::Object);
        result
    }
}
