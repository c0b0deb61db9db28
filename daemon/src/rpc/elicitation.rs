//! `answerElicitation`: a caller's answer to a question its call's server asked, relayed to it
//! as a `callEvents` event (`"elicitation": "ask"`). Registered by `rpc.rs`; the checks are
//! [`crate::elicitation`]'s, the questions live in the call's events buffer
//! ([`crate::call_events`]).
//!
//! Only the token that made the call can find it: the buffer is looked up under the caller's
//! own token, so another token gets `notPermitted` whether or not such a question exists.

use jsonrpsee::RpcModule;
use tool_cli_protocol::ErrorData;
use tool_cli_protocol::elicitation::{AnswerElicitationParams, AnswerElicitationResult};
use tool_cli_protocol::methods::name;

use super::{Answer, Context, call_context, fit, parse, to_rpc_error};
use crate::elicitation::Refusal;
use crate::error::Error;

/// Registers `answerElicitation`.
pub(super) fn register(module: &mut RpcModule<Context>) {
    module
        .register_async_method(
            name::ANSWER_ELICITATION,
            |params, context, extensions| async move {
                let params: AnswerElicitationParams = parse(
                    name::ANSWER_ELICITATION,
                    &params,
                    r#"{"progressId": string, "elicitationId": string, "action": "accept" | "decline" | "cancel", "content"?: object}"#,
                )?;
                let call = call_context(&extensions)?;
                let answered = answer(&context, &call.grant.token_id, params)
                    .map_err(to_rpc_error)?;
                let answer: Answer =
                    fit(name::ANSWER_ELICITATION, &answered, context.budget(&extensions))
                        .map_err(to_rpc_error);
                answer
            },
        )
        .expect("method names are unique");
}

fn answer(
    context: &Context,
    token_id: &str,
    params: AnswerElicitationParams,
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
    let log = context
        .orchestrator
        .call_events
        .find(token_id, &progress_id)
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
