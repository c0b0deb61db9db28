//! The owner's commands: `tool-cli health` (exit 1 when an enabled server is not ready, so a
//! script can poll it) and `tool-cli token mint|list|revoke`, with plain words for a daemon too
//! old to serve them.

use serde_json::Value;
use tool_cli_protocol::code;
use tool_cli_protocol::methods::{
    HealthResult, ListTokensResult, MintTokenParams, MintTokenResult, RevokeTokenParams,
    RevokeTokenResult, ServerState, name,
};

use super::output::Output;
use crate::client::{Client, parse_result};
use crate::error::Error;
use crate::render;

/// `tool-cli health`: the table (or the raw result), then exit 1 when an enabled server is not
/// ready, so that a script can poll it.
pub(super) async fn health(client: &mut Client, output: &mut Output<'_>) -> Result<(), Error> {
    let result = match client.call(name::HEALTH, None).await {
        Ok(result) => result,
        Err(Error::Rpc { error, .. }) if error.code == code::METHOD_NOT_FOUND => {
            return Err(Error::Other(
                "this daemon does not serve `health`; it is older than this tool-cli, so \
                 restart it with a newer tool-cli-daemon (`tool-cli` still lists the servers' \
                 states)"
                    .to_owned(),
            ));
        }
        Err(error) => return Err(error),
    };
    // Parsed even for --json: the exit code depends on the states.
    let servers: HealthResult = parse_result(name::HEALTH, result.clone())?;
    if output.json {
        output.emit_json(&result)?;
    } else if servers.servers.is_empty() {
        let why = super::why_no_servers(client).await;
        output.emit_text(&why)?;
    } else {
        output.emit_text(&render::health(&servers))?;
    }
    let unhealthy: Vec<(String, String)> = servers
        .servers
        .iter()
        .filter(|server| render::is_unhealthy(server.state))
        .map(|server| (server.name.clone(), server.state.as_str().to_owned()))
        .collect();
    if unhealthy.is_empty() {
        return Ok(());
    }
    let enabled = servers
        .servers
        .iter()
        .filter(|server| server.state != ServerState::Disabled)
        .count();
    Err(Error::Unhealthy { unhealthy, enabled })
}

/// `tool-cli token mint`: only the token on stdout, so `TOKEN=$(tool-cli token mint ...)` works,
/// and a one-line summary on stderr; `--json` prints the whole result instead.
pub(super) async fn mint_token(
    client: &mut Client,
    output: &mut Output<'_>,
    params: MintTokenParams,
) -> Result<(), Error> {
    let result = client
        .call(name::MINT_TOKEN, Some(to_value(params)?))
        .await
        .map_err(|error| older_daemon(error, "token mint"))?;
    if output.json {
        return output.emit_json(&result);
    }
    let minted: MintTokenResult = parse_result(name::MINT_TOKEN, result)?;
    output.emit_text(&minted.token)?;
    let summary = render::minted_summary(&minted, epoch_seconds_now());
    eprintln!("tool-cli: {}", crate::sanitize::text(&summary));
    Ok(())
}

/// A "method not found" from a daemon that predates the token methods, said plainly.
pub(super) fn older_daemon(error: Error, command: &str) -> Error {
    match error {
        Error::Rpc { error, .. } if error.code == code::METHOD_NOT_FOUND => Error::Other(format!(
            "this daemon does not serve `tool-cli {command}`; it is older than this tool-cli, \
             so restart it with a newer tool-cli-daemon"
        )),
        other => other,
    }
}

/// Now, in seconds since the Unix epoch, for "expires in ..." (0 if the clock is before 1970).
fn epoch_seconds_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|elapsed| elapsed.as_secs())
        .unwrap_or(0)
}

/// `tool-cli token revoke`: `revoked ID`, or exit 1 when no live token has that id.
pub(super) async fn revoke_token(
    client: &mut Client,
    output: &mut Output<'_>,
    token_id: String,
) -> Result<(), Error> {
    let params = to_value(RevokeTokenParams {
        token_id: token_id.clone(),
    })?;
    let result = client
        .call(name::REVOKE_TOKEN, Some(params))
        .await
        .map_err(|error| older_daemon(error, "token revoke"))?;
    if output.json {
        output.emit_json(&result)?;
    }
    let revoked: RevokeTokenResult = parse_result(name::REVOKE_TOKEN, result)?;
    if !revoked.revoked {
        return Err(Error::Other(format!(
            "no live token has id {token_id}: it was never minted by this daemon, was \
             already revoked, or expired; `tool-cli token list` shows the live ones"
        )));
    }
    if output.json {
        return Ok(());
    }
    output.emit_text(&format!("revoked {token_id}"))
}

/// `tool-cli token list`: the live minted tokens, never their secrets.
pub(super) async fn list_tokens(client: &mut Client, output: &mut Output<'_>) -> Result<(), Error> {
    let result = client
        .call(name::LIST_TOKENS, None)
        .await
        .map_err(|error| older_daemon(error, "token list"))?;
    if output.json {
        return output.emit_json(&result);
    }
    let tokens: ListTokensResult = parse_result(name::LIST_TOKENS, result)?;
    output.emit_text(&render::tokens(&tokens, epoch_seconds_now()))
}

fn to_value<T: serde::Serialize>(params: T) -> Result<Value, Error> {
    serde_json::to_value(params)
        .map_err(|error| Error::Other(format!("cannot encode the params: {error}")))
}

/// How long `tool-cli server restart` waits at least: the daemon waits up to a minute (or the
/// server's longer call timeout) for the new connection to settle.
const RESTART_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(65);

/// `tool-cli server restart NAME`: fails (exit 1) unless the server comes back `ready`.
pub(super) async fn restart_server(
    client: &mut Client,
    output: &mut Output<'_>,
    server: String,
) -> Result<(), Error> {
    use tool_cli_protocol::methods::{RestartServerResult, ServerState};
    let params = serde_json::json!({ "server": server });
    let result = client
        .call_with_timeout(name::RESTART_SERVER, Some(params), RESTART_TIMEOUT)
        .await?;
    if output.json {
        output.emit_json(&result)?;
    }
    let restarted: RestartServerResult = parse_result(name::RESTART_SERVER, result)?;
    let state = restarted.state.as_str();
    if restarted.state != ServerState::Ready {
        return Err(Error::Other(format!(
            "restarted {}, but it is {state}{}; `tool-cli health` shows how it goes on",
            restarted.server,
            restarted
                .error
                .map(|error| format!(": {error}"))
                .unwrap_or_default()
        )));
    }
    if output.json {
        return Ok(());
    }
    output.emit_text(&format!("restarted {}: {state}", restarted.server))
}

/// `tool-cli traces report`: the daemon's aggregate of its own trace files.
pub(super) async fn traces_report(
    client: &mut Client,
    output: &mut Output<'_>,
    request: crate::traces::ReportRequest,
) -> Result<(), Error> {
    let result = client
        .call(name::TRACES_REPORT, Some(to_value(&request.params)?))
        .await
        .map_err(|error| older_daemon(error, "traces report"))?;
    if output.json {
        return output.emit_json(&result);
    }
    let report: tool_cli_protocol::trace::TracesReport = parse_result(name::TRACES_REPORT, result)?;
    output.emit_text(&crate::traces::render(&report, request.markdown))
}
