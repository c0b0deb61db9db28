//! `tool-cli server add|remove|reload`: runtime server management through the daemon
//! (`addServer`, `removeServer`, `reloadConfig`; owner token only).

use tool_cli_protocol::manage::{AddServerResult, ReloadConfigResult, RemoveServerResult};
use tool_cli_protocol::methods::name;

use super::admin::older_daemon;
use super::output::Output;
use crate::args::ServerCommand;
use crate::client::{Client, parse_result};
use crate::error::Error;

/// How long these wait at least: the daemon waits up to a minute for a new server's first
/// attempt, and a removed server's calls up to its call timeout.
const MANAGE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(125);

pub(super) async fn run(
    client: &mut Client,
    output: &mut Output<'_>,
    command: ServerCommand,
) -> Result<(), Error> {
    let (method, params, label) = match &command {
        ServerCommand::Add { name, config } => (
            name::ADD_SERVER,
            Some(serde_json::json!({ "name": name, "config": config })),
            "server add",
        ),
        ServerCommand::Remove { name } => (
            name::REMOVE_SERVER,
            Some(serde_json::json!({ "name": name })),
            "server remove",
        ),
        ServerCommand::Reload => (name::RELOAD_CONFIG, None, "server reload"),
    };
    let result = client
        .call_with_timeout(method, params, MANAGE_TIMEOUT)
        .await
        .map_err(|error| older_daemon(error, label))?;
    if output.json {
        return output.emit_json(&result);
    }
    let text = match command {
        ServerCommand::Add { .. } => {
            let added: AddServerResult = parse_result(method, result)?;
            let mut text = format!(
                "added {}: {}, {} tools",
                added.server,
                added.state.as_str(),
                added.tools
            );
            if let Some(error) = added.error {
                text.push_str(&format!("\n  {error}"));
            }
            for note in added.notes {
                text.push_str(&format!("\n  note: {note}"));
            }
            text
        }
        ServerCommand::Remove { .. } => {
            let removed: RemoveServerResult = parse_result(method, result)?;
            if removed.abandoned_calls == 0 {
                format!("removed {}", removed.server)
            } else {
                format!(
                    "removed {} ({} calls were still running when its drain time ran out)",
                    removed.server, removed.abandoned_calls
                )
            }
        }
        ServerCommand::Reload => render_reload(&parse_result(method, result)?),
    };
    output.emit_text(&text)
}

/// A reload in a few lines.
fn render_reload(reloaded: &ReloadConfigResult) -> String {
    let list = |names: &[String]| {
        if names.is_empty() {
            "-".to_owned()
        } else {
            names.join(", ")
        }
    };
    let mut text = format!(
        "reloaded {}\n  added: {}\n  changed: {}\n  removed: {}\n  unchanged: {}",
        reloaded.source,
        list(&reloaded.added),
        list(&reloaded.changed),
        list(&reloaded.removed),
        list(&reloaded.unchanged)
    );
    for problem in &reloaded.failed {
        text.push_str(&format!(
            "\n  not ready: {} ({}{})",
            problem.server,
            problem.state.as_str(),
            problem
                .error
                .as_deref()
                .map(|error| format!(": {error}"))
                .unwrap_or_default()
        ));
    }
    if reloaded.abandoned_calls > 0 {
        text.push_str(&format!(
            "\n  {} calls were still running when their server's drain time ran out",
            reloaded.abandoned_calls
        ));
    }
    for note in &reloaded.notes {
        text.push_str(&format!("\n  note: {note}"));
    }
    text
}
