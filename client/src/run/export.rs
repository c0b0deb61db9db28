//! `tool-cli export FORMAT [--server S] [--strict] [--base-url URL]`: the tools the token can
//! see (or one server's), each as its server listed it (`describeTool`), converted by
//! `tool_cli_gateway_core::export` into an OpenAI or Anthropic tools array or an OpenAPI 3.1
//! document on stdout, with a note per refused or adjusted tool on stderr. A tool that cannot be
//! exported (a schema that is not an object) is left out and the command exits 1.

use serde_json::Value;
use tool_cli_gateway_core::export::{
    ExportOptions, ExportTool, NoteKind, OpenAiShape, anthropic, openai, openapi,
};
use tool_cli_protocol::methods::{ListServersResult, ListToolsResult, name};

use super::output::note;
use super::{Output, warn};
use crate::args::ExportRequest;
use crate::client::{Client, parse_result};
use crate::error::Error;

/// Runs `tool-cli export`.
pub(super) async fn run(
    client: &mut Client,
    output: &mut Output<'_>,
    request: ExportRequest,
) -> Result<(), Error> {
    // With no --server, every server with tools; one whose tools cannot be listed (down since
    // before it was first connected) is left out with a warning, and counts as refused.
    let (servers, named) = match &request.server {
        Some(server) => (vec![server.clone()], true),
        None => {
            let listed: ListServersResult = parse_result(
                name::LIST_SERVERS,
                client.call(name::LIST_SERVERS, None).await?,
            )?;
            let servers = listed
                .servers
                .into_iter()
                .filter(|server| server.tool_count > 0)
                .map(|server| server.name)
                .collect();
            (servers, false)
        }
    };
    let mut refused = 0;
    let mut tools: Vec<(String, Value)> = Vec::new();
    for server in &servers {
        let params = serde_json::json!({"server": server});
        let listed = client.call(name::LIST_TOOLS, Some(params)).await;
        let listed: ListToolsResult = match listed {
            Ok(listed) => parse_result(name::LIST_TOOLS, listed)?,
            Err(error) if !named => {
                warn(&format!("left out server {server}: {error}"));
                refused += 1;
                continue;
            }
            Err(error) => return Err(error),
        };
        for tool in listed.tools {
            let params = serde_json::json!({"server": server, "tool": tool.name});
            let described = client.call(name::DESCRIBE_TOOL, Some(params)).await?;
            tools.push((server.clone(), described));
        }
    }
    let exported: Vec<ExportTool<'_>> = tools
        .iter()
        .map(|(server, tool)| ExportTool { server, tool })
        .collect();
    let options = ExportOptions {
        strict_when_compatible: request.strict,
        title: None,
        server_url: request.base_url.clone(),
    };
    let export = match request.format.as_str() {
        "openai" => openai(&exported, OpenAiShape::ChatCompletions, &options),
        "openai-responses" => openai(&exported, OpenAiShape::Responses, &options),
        "anthropic" => anthropic(&exported, &options),
        _ => openapi(&exported, &options),
    };
    for entry in &export.notes {
        match entry.kind {
            NoteKind::Refused => {
                refused += 1;
                warn(&entry.to_string());
            }
            NoteKind::Warning => warn(&entry.to_string()),
            _ => note(&entry.to_string()),
        }
    }
    output.emit_json(&export.document)?;
    if refused > 0 {
        return Err(Error::ExportRefused { refused });
    }
    Ok(())
}
