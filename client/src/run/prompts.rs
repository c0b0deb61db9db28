//! `tool-cli prompt list|get`: one request each, printed raw (`--json`) or rendered.

use tool_cli_protocol::methods::{GetPromptParams, ListPromptsParams, name};

use super::output::Output;
use crate::args::PromptCommand;
use crate::client::Client;
use crate::error::Error;
use crate::render;

/// Runs a prompt command.
pub(super) async fn run(
    client: &mut Client,
    output: &mut Output<'_>,
    command: PromptCommand,
) -> Result<(), Error> {
    match command {
        PromptCommand::List { server } => {
            let params = encode(&ListPromptsParams { server })?;
            let result = client.call(name::LIST_PROMPTS, Some(params)).await?;
            if output.json {
                return output.emit_json(&result);
            }
            output.emit_text(&render::prompt_list(&result))
        }
        PromptCommand::Get {
            server,
            name: prompt,
            arguments,
        } => {
            let params = encode(&GetPromptParams {
                server,
                name: prompt,
                arguments: (!arguments.is_empty()).then_some(arguments),
            })?;
            let result = client.call(name::GET_PROMPT, Some(params)).await?;
            if output.json {
                return output.emit_json(&result);
            }
            output.emit_text(&render::prompt_messages(&result))
        }
    }
}

fn encode(params: &impl serde::Serialize) -> Result<serde_json::Value, Error> {
    serde_json::to_value(params)
        .map_err(|error| Error::Other(format!("cannot encode the params: {error}")))
}
