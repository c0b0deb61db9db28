//! `answerElicitation`: a caller's answer to a question its call's server asked, relayed to it
//! as a `callEvents` event (`"elicitation": "ask"`); the events service does the work.

use jsonrpsee::RpcModule;
use tool_cli_protocol::elicitation::AnswerElicitationParams;
use tool_cli_protocol::methods::name;

use super::{Answer, Context, call_context, fit, parse, to_rpc_error};

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
                let answered = context
                    .services
                    .events
                    .answer_elicitation(params, &call)
                    .map_err(to_rpc_error)?;
                let answer: Answer =
                    fit(name::ANSWER_ELICITATION, &answered, context.budget(&extensions))
                        .map_err(to_rpc_error);
                answer
            },
        )
        .expect("method names are unique");
}
