//! Prompts: `listPrompts` and `getPrompt`, scoped by the grant like resources; the rendering
//! goes to the server through the pipeline's protection (`pipeline/prompts.rs`).

use serde_json::Value;
use tool_cli_protocol::methods::{GetPromptParams, ListPromptsParams, ListPromptsResult};

use super::Discovery;
use crate::error::Error;
use crate::pipeline::CallContext;

impl Discovery {
    /// `listPrompts`.
    pub(crate) async fn list_prompts(
        &self,
        params: ListPromptsParams,
        context: &CallContext,
    ) -> Result<ListPromptsResult, Error> {
        self.pipeline
            .list_prompts(context, params.server.as_deref())
            .await
    }

    /// `getPrompt`: the server's complete `GetPromptResult`.
    pub(crate) async fn get_prompt(
        &self,
        params: GetPromptParams,
        context: &CallContext,
    ) -> Result<Value, Error> {
        let arguments = params.arguments.unwrap_or_default();
        self.pipeline
            .get_prompt(context, &params.server, &params.name, &arguments)
            .await
    }
}
