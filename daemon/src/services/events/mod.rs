//! The events service: `callEvents` (the progress and log notifications of a call made with
//! `progress: true`, long-polled from another connection) and `answerElicitation` (a caller's
//! answer to a question its call's server asked), over every token's event buffers
//! (`log.rs`).
//!
//! Only the token that made a call can find its buffer: it is looked up under the caller's own
//! token, so another token gets `notPermitted` whether or not such a question exists.

mod log;

pub(crate) use log::CallEventLog;

use std::sync::Arc;
use std::time::Duration;

use tool_cli_protocol::ErrorData;
use tool_cli_protocol::elicitation::{AnswerElicitationParams, AnswerElicitationResult};
use tool_cli_protocol::methods::{CallEventsParams, CallEventsResult, CallToolParams, name};

use crate::elicitation::Refusal;
use crate::error::Error;
use crate::pipeline::CallContext;
use log::CallEventHub;

/// Every token's call event buffers.
#[derive(Default)]
pub(crate) struct Events {
    hub: CallEventHub,
}

impl Events {
    /// The events buffer of a `callTool` that asked for progress (`progress: true` with a
    /// `progressId`, or a `progressId` alone), an unlisted one for a call with
    /// `resetTimeoutOnProgress` that did not, or `None` for a plain call.
    pub(crate) fn progress_log(
        &self,
        params: &CallToolParams,
        context: &CallContext,
    ) -> Result<Option<Arc<CallEventLog>>, Error> {
        // A timeout that restarts on progress needs the progress counted, events asked for or
        // not.
        let counted = params.reset_timeout_on_progress == Some(true);
        match (params.progress, params.progress_id.as_deref()) {
            (Some(false), _) | (None, None) if counted => Ok(Some(CallEventLog::unlisted())),
            (Some(false), _) | (None, None) => Ok(None),
            (Some(true), None) => Err(Error::invalid_params(
                name::CALL_TOOL,
                "progress: true needs a progressId, the name you will poll callEvents with (e.g. \
                 \"progressId\": \"call-1\")",
            )),
            (_, Some(id)) => self.hub.attach(&context.grant.token_id, id).map(Some),
        }
    }

    /// `callEvents`: the events after `after`, waiting for one when there is none.
    pub(crate) async fn call_events(
        &self,
        params: CallEventsParams,
        context: &CallContext,
    ) -> Result<CallEventsResult, Error> {
        self.hub
            .events(
                &context.grant.token_id,
                &params.progress_id,
                params.after,
                params.wait_ms.map(Duration::from_millis),
            )
            .await
    }

    /// `answerElicitation`: checks the answer against the question and hands it to the
    /// server's waiting request.
    pub(crate) fn answer_elicitation(
        &self,
        params: AnswerElicitationParams,
        context: &CallContext,
    ) -> Result<AnswerElicitationResult, Error> {
        let AnswerElicitationParams {
            progress_id,
            elicitation_id,
            action,
            content,
        } = params;
        // The ids are the caller's: repeated cut, as every refusal repeats a caller's words.
        let shown = |id: &str| {
            let mut id = id.to_owned();
            crate::error::cut_echo(&mut id);
            id
        };
        let (shown_progress, shown_elicitation) = (shown(&progress_id), shown(&elicitation_id));
        let not_permitted = || -> Error {
            ErrorData::NotPermitted {
                server: String::new(),
                tool: None,
                reason: format!(
                    "no call \"{shown_progress}\" of this token has an elicitation \
                     \"{shown_elicitation}\"; answer with the token that made the call, the \
                     progressId it was made with and the elicitationId of its callEvents event"
                ),
            }
            .into()
        };
        let log = self
            .hub
            .find(&context.grant.token_id, &progress_id)
            .ok_or_else(not_permitted)?;
        match log.answer(&elicitation_id, action, content.as_ref()) {
            Ok(content) => Ok(AnswerElicitationResult {
                elicitation_id,
                action,
                content,
            }),
            Err(Refusal::Unknown { known }) if known.is_empty() => Err(not_permitted()),
            Err(refusal) => Err(Error::invalid_params(
                name::ANSWER_ELICITATION,
                refusal.message(&shown_elicitation, &shown_progress),
            )),
        }
    }
}
