//! `tool-cli session open|summary|list|close`: the session methods, with the id alone on stdout
//! for `open` so that `SESSION=$(tool-cli session open ...)` works.

use serde_json::Value;
use tool_cli_protocol::methods::name;
use tool_cli_protocol::orchestration::{
    CloseSessionResult, ListSessionsResult, OpenSessionResult, SessionParams, SessionSummary,
};

use super::admin::older_daemon;
use super::output::Output;
use crate::args::session::SessionCommand;
use crate::client::{Client, parse_result};
use crate::error::Error;
use crate::render;

/// Runs one session command.
pub(super) async fn run(
    client: &mut Client,
    output: &mut Output<'_>,
    command: SessionCommand,
) -> Result<(), Error> {
    match command {
        SessionCommand::Open(params) => {
            let result = client
                .call(name::OPEN_SESSION, Some(to_value(&params)?))
                .await
                .map_err(|error| older_daemon(error, "session open"))?;
            if output.json {
                return output.emit_json(&result);
            }
            let opened: OpenSessionResult = parse_result(name::OPEN_SESSION, result)?;
            output.emit_text(&opened.session_id)
        }
        SessionCommand::Summary { session_id } => {
            let params = to_value(&SessionParams { session_id })?;
            let result = client
                .call(name::SESSION_SUMMARY, Some(params))
                .await
                .map_err(|error| older_daemon(error, "session summary"))?;
            if output.json {
                return output.emit_json(&result);
            }
            let summary: SessionSummary = parse_result(name::SESSION_SUMMARY, result)?;
            output.emit_text(&render::session_summary(&summary))
        }
        SessionCommand::List => {
            let result = client
                .call(name::LIST_SESSIONS, None)
                .await
                .map_err(|error| older_daemon(error, "session list"))?;
            if output.json {
                return output.emit_json(&result);
            }
            let sessions: ListSessionsResult = parse_result(name::LIST_SESSIONS, result)?;
            output.emit_text(&render::sessions(&sessions))
        }
        SessionCommand::Close { session_id } => {
            let params = to_value(&SessionParams {
                session_id: session_id.clone(),
            })?;
            let result = client
                .call(name::CLOSE_SESSION, Some(params))
                .await
                .map_err(|error| older_daemon(error, "session close"))?;
            if output.json {
                return output.emit_json(&result);
            }
            let _: CloseSessionResult = parse_result(name::CLOSE_SESSION, result)?;
            output.emit_text(&format!("closed {session_id}"))
        }
    }
}

fn to_value<T: serde::Serialize>(params: &T) -> Result<Value, Error> {
    serde_json::to_value(params)
        .map_err(|error| Error::Other(format!("cannot encode the params: {error}")))
}
