//! Carrying out one [`Command`] against the daemon: the requests it needs and the output.
//!
//! This is where the `tool-cli` binary talks to the daemon (through a [`Client`], which makes
//! the identity check and the handshake before the first request) and writes to stdout or files
//! (through [`Output`], which also decides what is sanitised for a terminal). Each command is
//! its request(s), then either the raw result (`--json`) or the human rendering from
//! [`crate::render`], to stdout or to the `--out` file with a one-line summary. Resources
//! (`resources.rs`), the owner's commands `health` and `token` (`admin.rs`) and `daemon
//! start|stop|status` (`daemon.rs`, which needs no daemon to begin with) have modules of their
//! own, as do `chain` and `many` (`chain.rs`).

mod admin;
mod agent;
mod auth;
mod call;
mod call_options;
mod chain;
pub(crate) mod complete;
pub(crate) mod config;
pub(crate) mod daemon;
mod elicitation;
mod export;
mod listing;
mod one_shot;
mod output;
mod pin;
pub(crate) mod plain;
mod progress;
mod prompts;
mod record;
mod resources;
mod search;
mod servers;
mod session;
mod skill;

use std::io::Write;

use serde_json::Value;
use tool_cli_protocol::code;
use tool_cli_protocol::methods::{ListServersResult, ListToolsResult, ReadResourceParams, name};

use crate::args::{Command, Invocation};
use crate::base64;
use crate::client::{Client, ToolCall, parse_result};
use crate::error::Error;
use crate::render;
pub(crate) use output::{Output, warn};

/// Runs the invocation with `client`. The body goes to `stdout` (the process's stdout in `main`,
/// a buffer in tests); `stdout_is_terminal` says whether a person is reading it, in which case
/// text results are sanitised too.
pub(crate) async fn run(
    mut invocation: Invocation,
    mut client: Client,
    stdout: &mut dyn Write,
    stdout_is_terminal: bool,
) -> Result<(), Error> {
    match invocation.one_shot.take() {
        None => run_command(invocation, &mut client, stdout, stdout_is_terminal).await,
        Some(server) => one_shot::run(server, invocation, client, stdout, stdout_is_terminal).await,
    }
}

/// Carries out one command against the daemon.
async fn run_command(
    invocation: Invocation,
    client: &mut Client,
    stdout: &mut dyn Write,
    stdout_is_terminal: bool,
) -> Result<(), Error> {
    let mut output = Output {
        json: invocation.json,
        out: invocation.out.as_deref(),
        stdout,
        terminal: stdout_is_terminal,
    };

    match invocation.command {
        Command::ListServers => {
            let result = client.call(name::LIST_SERVERS, None).await?;
            if output.json {
                return output.emit_json(&result);
            }
            let servers: ListServersResult = parse_result(name::LIST_SERVERS, result)?;
            if servers.servers.is_empty() {
                return output.emit_text(&why_no_servers(client).await);
            }
            output.emit_text(&render::servers(&servers))
        }
        Command::ListTools { server } => {
            // `--json` keeps the whole list scripts expect; a person gets the first page.
            let paged = !output.json && !invocation.all;
            let params = listing::params(&server, paged);
            let result = client.call(name::LIST_TOOLS, Some(params)).await?;
            if output.json {
                return output.emit_json(&result);
            }
            let tools: ListToolsResult = parse_result(name::LIST_TOOLS, result)?;
            output.emit_text(&render::tools(&tools))?;
            if let Some(more) = listing::more_note(&tools) {
                output::note(&more);
            }
            Ok(())
        }
        Command::ServerHelp { server } => {
            let result = client
                .call(name::LIST_TOOLS, Some(server_params(&server)))
                .await?;
            if output.json {
                return output.emit_json(&result);
            }
            let tools: ListToolsResult = parse_result(name::LIST_TOOLS, result)?;
            output.emit_text(&render::server_help(&tools))
        }
        Command::DescribeTool { server, tool } => {
            let result = client.describe_tool(&server, &tool).await?;
            if output.json {
                return output.emit_json(&result);
            }
            output.emit_text(&render::tool_schema(&server, &result))
        }
        Command::CallTool {
            server,
            tool,
            arguments,
        } => {
            let mut call = ToolCall::new(&server, &tool).arguments(Value::Object(arguments));
            if invocation.confirm {
                call = call.confirm();
            }
            call::call(
                client,
                &mut output,
                (&server, &tool),
                call,
                (&invocation.call, invocation.raw),
            )
            .await
        }
        Command::CallToolWords {
            server,
            tool,
            arguments,
        } => {
            let arguments = call::resolve_words(client, &server, &tool, arguments).await?;
            let mut call = ToolCall::new(&server, &tool).arguments(Value::Object(arguments));
            if invocation.confirm {
                call = call.confirm();
            }
            call::call(
                client,
                &mut output,
                (&server, &tool),
                call,
                (&invocation.call, invocation.raw),
            )
            .await
        }
        Command::Health { tools } => admin::health(client, &mut output, tools).await,
        Command::Session(command) => session::run(client, &mut output, command).await,
        Command::Agent(command) => {
            agent::run(
                client,
                &mut output,
                command,
                &invocation.call,
                invocation.timeout_ms,
            )
            .await
        }
        Command::Prompt(command) => prompts::run(client, &mut output, command).await,
        Command::MintToken(params) => admin::mint_token(client, &mut output, params).await,
        Command::RevokeToken { token_id } => {
            admin::revoke_token(client, &mut output, token_id).await
        }
        Command::ListTokens => admin::list_tokens(client, &mut output).await,
        Command::RestartServer { server } => {
            admin::restart_server(client, &mut output, server).await
        }
        Command::ManageServers(command) => servers::run(client, &mut output, command).await,
        Command::ListResources { server } => {
            resources::list(client, &mut output, server, resources::Listing::Resources).await
        }
        Command::ListResourceTemplates { server } => {
            resources::list(client, &mut output, server, resources::Listing::Templates).await
        }
        Command::ReadResource { server, uri, meta } => {
            let server = match server {
                Some(server) => server,
                None => resources::only_ready_server(client).await?,
            };
            let params = serde_json::to_value(ReadResourceParams {
                server,
                uri: uri.clone(),
            })
            .map_err(|error| Error::Other(format!("cannot encode the params: {error}")))?;
            let result = client.call(name::READ_RESOURCE, Some(params)).await?;
            let result = client.unspill(result).await?;
            if output.json {
                return output.emit_json(&result);
            }
            if meta {
                return output.emit_text(&render::resource_meta(&result));
            }
            resources::emit_body(&mut output, &uri, &result)
        }
        Command::TracesReport(request) => admin::traces_report(client, &mut output, request).await,
        Command::Auth(command) => auth::run(client, &mut output, command).await,
        Command::Search(request) => search::search(client, &mut output, request).await,
        Command::Export(request) => export::run(client, &mut output, request).await,
        Command::Pin(command) => pin::run(client, &mut output, command).await,
        Command::Batch(command) => {
            let flags = crate::args::chain_document::BatchFlags {
                session: invocation.call.session.clone(),
                dry_run: invocation.call.dry_run,
                confirm: invocation.confirm,
                timeout_ms: invocation.timeout_ms,
                max_concurrent: command.max_concurrent,
            };
            chain::run(client, &mut output, command, flags).await
        }
        Command::Skill { server } => skill::run(client, &mut output, server).await,
        Command::Record(command) => {
            // `--out` names the recording here, not a file for the summary.
            output.out = None;
            record::run(client, &mut output, command).await
        }
        Command::Daemon(_)
        | Command::Mcp { .. }
        | Command::Completions(_)
        | Command::AgentHelp
        | Command::Complete(_)
        | Command::ConfigImport(_) => Err(Error::Other(
            "`tool-cli daemon`, `config import`, `completions` and `__complete` are run without \
                 a daemon connection; this is a bug"
                .to_owned(),
        )),
    }
}

fn server_params(server: &str) -> Value {
    serde_json::json!({ "server": server })
}

/// A call's result: raw with `--json`, else the rendering (or, with `--out`, the bytes of a
/// binary result); the text of an error result goes to stderr as the error.
fn emit_call_result(
    output: &mut Output<'_>,
    server: &str,
    tool: &str,
    result: &Value,
) -> Result<(), Error> {
    // On stderr and whatever the format: stdout stays the result, as the tool gave it.
    if let Some(warning) = render::degraded_warning(server, result) {
        output::warn(&warning);
    }
    let rendered = render::call_result(result);
    if output.json {
        output.emit_json(result)?;
    } else if !rendered.is_error {
        if let Some(path) = output.out.filter(|_| !rendered.structured) {
            let (binaries, others) = render::binary_contents(result);
            if let Some(first) = binaries.first() {
                let bytes = base64::decode(first.data).map_err(|error| {
                    Error::Protocol(format!(
                        "the {} data in the result of {server}/{tool} is not valid base64: \
                         {error}",
                        first.kind
                    ))
                })?;
                let left_out = binaries.len() - 1 + others;
                if left_out > 0 {
                    output::note(&format!(
                        "{path} holds the first binary item ({}); the result has {left_out} \
                         more {}: use --json to see them all",
                        first.mime_type.unwrap_or(first.kind),
                        if left_out == 1 { "item" } else { "items" },
                        path = path.display()
                    ));
                }
                return output.write_file(path, &bytes);
            }
        }
        if rendered.body.is_empty() {
            // Say so on stderr, so an empty stdout is not mistaken for a hang or a bug.
            output::note(&format!("{server}/{tool} returned no content"));
        }
        if rendered.structured {
            output.emit_json_text(&rendered.body)?;
        } else {
            output.emit_result_text(&rendered.body)?;
        }
    }
    if rendered.is_error {
        return Err(Error::ToolReported {
            server: server.to_owned(),
            tool: tool.to_owned(),
            text: rendered.body,
        });
    }
    Ok(())
}

/// Why `listServers` is empty, in words: an owner token sees every configured server, so an
/// empty list means none is configured; a scoped token may simply see none of them. Only the
/// owner may list tokens, which tells the two apart without a method of its own.
async fn why_no_servers(client: &mut Client) -> String {
    match client.call(name::LIST_TOKENS, None).await {
        Ok(_) => "no servers are configured; add some to the daemon's config file \
                  (TOOL_CLI_CONFIG, see `tool-cli-daemon --help`)"
            .to_owned(),
        Err(Error::Rpc { error, .. }) if error.code == code::FORBIDDEN => {
            "this token can see no server: its scope matches none of the daemon's servers; ask \
             the daemon's owner for a token that includes the ones you need (`tool-cli token \
             mint --server GLOB`)"
                .to_owned()
        }
        Err(_) => "this bridge lists no servers".to_owned(),
    }
}

#[cfg(test)]
mod tests;
