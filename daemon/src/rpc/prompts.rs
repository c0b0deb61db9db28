//! The prompt methods, `listPrompts` and `getPrompt`: params in, results or errors out.
//!
//! Kept beside `rpc.rs` (which registers them) so that file stays about the protocol's core;
//! the handlers follow its `Answer` style and delegate to the discovery service.

use jsonrpsee::RpcModule;
use tool_cli_protocol::methods::{GetPromptParams, ListPromptsParams, name};

use crate::answer::fit;
use crate::rpc::{Context, call_context, parse, to_rpc_error};

/// Registers `listPrompts` and `getPrompt`.
pub(crate) fn register(module: &mut RpcModule<Context>) {
    module
        .register_async_method(
            name::LIST_PROMPTS,
            |params, context, extensions| async move {
                let params: ListPromptsParams = if params.as_str().is_none() {
                    ListPromptsParams::default()
                } else {
                    parse(name::LIST_PROMPTS, &params, r#"{"server"?: string}"#)?
                };
                let call = call_context(&extensions)?;
                let prompts = context
                    .until_grace_over(context.services.discovery.list_prompts(params, &call))
                    .await?;
                fit(name::LIST_PROMPTS, &prompts, context.budget(&extensions)).map_err(to_rpc_error)
            },
        )
        .expect("method names are unique");
    module
        .register_async_method(name::GET_PROMPT, |params, context, extensions| async move {
            let params: GetPromptParams = parse(
                name::GET_PROMPT,
                &params,
                r#"{"server": string, "name": string, "arguments"?: {string: string}}"#,
            )?;
            let call = call_context(&extensions)?;
            let prompt = context
                .until_grace_over(context.services.discovery.get_prompt(params, &call))
                .await?;
            fit(name::GET_PROMPT, &prompt, context.budget(&extensions)).map_err(to_rpc_error)
        })
        .expect("method names are unique");
}
