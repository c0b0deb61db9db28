//! `tool-cli record --server S --out FILE`: asks the daemon to restart S under the recording
//! proxy (`startRecording`), says where it records, waits for Ctrl-C or SIGTERM (or `--calls
//! N` answered tool calls, counted in the file as it grows, or `--for SECS`), then ends the
//! recording (`stopRecording`: S runs unrecorded again) and prints a summary. Every caller's
//! traffic to S is recorded meanwhile, since every caller goes through the daemon's pool.

use std::collections::HashSet;
use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::signal::unix::{SignalKind, signal};
use tool_cli_protocol::manage::{StartRecordingResult, StopRecordingResult};
use tool_cli_protocol::methods::name;

use super::admin::older_daemon;
use super::output::{Output, note};
use crate::args::record::{RecordCommand, RecordUntil};
use crate::client::{Client, parse_result};
use crate::error::Error;

/// The daemon waits up to a minute for the restarted server's first connection.
const RESTART_TIMEOUT: Duration = Duration::from_secs(65);

/// How often `--calls N` reads the file again.
const COUNT_INTERVAL: Duration = Duration::from_millis(200);

/// Records until the command's end, then prints the summary (`--json`: `stopRecording`'s
/// result).
pub(super) async fn run(
    client: &mut Client,
    output: &mut Output<'_>,
    command: RecordCommand,
) -> Result<(), Error> {
    if command.until != RecordUntil::Now {
        start(client, &command).await?;
    }
    let waited = wait(&command).await;
    let stopped = client
        .call_with_timeout(
            name::STOP_RECORDING,
            Some(json!({ "server": command.server })),
            RESTART_TIMEOUT,
        )
        .await
        .map_err(|error| older_daemon(error, "record"))?;
    waited?;
    if output.json {
        return output.emit_json(&stopped);
    }
    let stopped: StopRecordingResult = parse_result(name::STOP_RECORDING, stopped)?;
    let text = format!(
        "recorded {}: {} messages, {} lines, {} bytes, to {}{}",
        stopped.server,
        stopped.messages,
        stopped.lines,
        stopped.bytes,
        stopped.out,
        if stopped.complete {
            ""
        } else {
            " (without its end marker: the server stopped uncleanly; a replay refuses it)"
        }
    );
    output.emit_text(&text)
}

/// `startRecording`, and a note on stderr saying where and until when.
async fn start(client: &mut Client, command: &RecordCommand) -> Result<(), Error> {
    let out = command.out.display().to_string();
    let params = json!({ "server": command.server, "out": out });
    let started = client
        .call_with_timeout(name::START_RECORDING, Some(params), RESTART_TIMEOUT)
        .await
        .map_err(|error| older_daemon(error, "record"))?;
    let started: StartRecordingResult = parse_result(name::START_RECORDING, started)?;
    let end = match command.until {
        RecordUntil::Interrupted => "Ctrl-C stops".to_owned(),
        RecordUntil::Calls(calls) => format!("stops after {calls} answered tool calls or Ctrl-C"),
        RecordUntil::Elapsed(time) => format!("stops after {}s or Ctrl-C", time.as_secs()),
        RecordUntil::Now => String::new(),
    };
    note(&format!(
        "recording {} to {} ({end})",
        started.server, started.out
    ));
    Ok(())
}

/// Waits for the command's end: a signal, the count of calls, or the time.
async fn wait(command: &RecordCommand) -> Result<(), Error> {
    let listen = |kind: SignalKind, what: &str| {
        signal(kind).map_err(|source| Error::Io {
            action: format!("listen for {what}"),
            source,
        })
    };
    let mut interrupt = listen(SignalKind::interrupt(), "Ctrl-C")?;
    let mut terminate = listen(SignalKind::terminate(), "SIGTERM")?;
    let until = async {
        match command.until {
            RecordUntil::Now => {}
            RecordUntil::Interrupted => std::future::pending::<()>().await,
            RecordUntil::Elapsed(time) => tokio::time::sleep(time).await,
            RecordUntil::Calls(calls) => {
                let mut tick = tokio::time::interval(COUNT_INTERVAL);
                loop {
                    tick.tick().await;
                    if answered_tool_calls(&command.out) >= calls {
                        break;
                    }
                }
            }
        }
    };
    tokio::select! {
        biased;
        () = until => {}
        _ = interrupt.recv() => {}
        _ = terminate.recv() => {}
    }
    Ok(())
}

/// The tool calls answered in the recording at `file` so far (0 while it cannot be read).
fn answered_tool_calls(file: &Path) -> u64 {
    std::fs::read_to_string(file)
        .map(|text| count_answered_tool_calls(&text))
        .unwrap_or(0)
}

/// Counts the server's answers to the client's `tools/call` requests in a recording's text
/// (a last line still being written is skipped).
fn count_answered_tool_calls(text: &str) -> u64 {
    let mut calls = HashSet::new();
    let mut answered = 0;
    for line in text.lines() {
        let Ok(line) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let (Some(from), Some(message)) = (line["from"].as_str(), line.get("message")) else {
            continue;
        };
        let Some(id) = message.get("id").map(Value::to_string) else {
            continue;
        };
        match from {
            "client" if message["method"] == "tools/call" => {
                calls.insert(id);
            }
            "server" if message.get("method").is_none() && calls.remove(&id) => answered += 1,
            _ => {}
        }
    }
    answered
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_answered_tool_calls_are_counted() {
        let lines = [
            r#"{"sum":"","format":"tool-cli-mcp-recording"}"#,
            r#"{"seq":1,"from":"client","message":{"jsonrpc":"2.0","id":0,"method":"initialize"}}"#,
            r#"{"seq":2,"from":"server","message":{"jsonrpc":"2.0","id":0,"result":{}}}"#,
            r#"{"seq":3,"from":"client","message":{"jsonrpc":"2.0","id":1,"method":"tools/call"}}"#,
            r#"{"seq":4,"from":"client","message":{"jsonrpc":"2.0","id":2,"method":"tools/call"}}"#,
            r#"{"seq":5,"from":"server","message":{"jsonrpc":"2.0","id":7,"method":"sampling/createMessage"}}"#,
            r#"{"seq":6,"from":"server","message":{"jsonrpc":"2.0","id":2,"error":{"code":1}}}"#,
            r#"{"seq":7,"from":"server","message":{"jsonrpc":"2.0","id":1,"res"#,
        ];
        assert_eq!(count_answered_tool_calls(&lines.join("\n")), 1);
    }
}
