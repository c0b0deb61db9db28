//! `--stdio` / `--url`: the daemon adds the one-shot server (`addServer`, so it gets the same
//! validation, pinning and tracing as a configured one), the command runs against it, and the
//! server is removed again (`removeServer`) however the command ended. When a server of that
//! name already runs (another one-shot of the same command at the same time), it is used and
//! left for the one that added it to remove.

use std::io::Write;
use std::time::Duration;

use serde_json::json;
use tool_cli_protocol::code;
use tool_cli_protocol::methods::name;

use super::output::note;
use crate::args::Invocation;
use crate::args::one_shot::OneShot;
use crate::client::Client;
use crate::error::Error;

/// How long the client waits for `addServer`: beyond the daemon's 30 s connect timeout.
const ADD_TIMEOUT: Duration = Duration::from_secs(45);

/// Runs `invocation` against the one-shot `server`.
pub(super) async fn run(
    server: OneShot,
    invocation: Invocation,
    mut client: Client,
    stdout: &mut dyn Write,
    stdout_is_terminal: bool,
) -> Result<(), Error> {
    let params = json!({"name": server.name, "config": server.config});
    // The daemon bounds the first start itself (its connect timeout, 30 s: a command that never
    // answers is given up then, and not kept). The request is not cut shorter: an `addServer`
    // abandoned mid-start can leave the server in the pool, where nobody would remove it.
    let added = client
        .call_with_timeout(name::ADD_SERVER, Some(params), ADD_TIMEOUT)
        .await;
    let ours = match added {
        Ok(_) => true,
        Err(Error::Rpc { error, .. })
            if error.code == code::INVALID_PARAMS && error.message.contains("already running") =>
        {
            note(&format!(
                "server {} (the same command) is already running; using it",
                server.name
            ));
            false
        }
        Err(error) => return Err(error),
    };
    let outcome = super::run_command(invocation, &mut client, stdout, stdout_is_terminal).await;
    if ours {
        remove(&mut client, &server.name).await;
    }
    outcome
}

/// Removes the one-shot server; a failure is worth a note, not the command's exit code.
async fn remove(client: &mut Client, server: &str) {
    if let Err(error) = client
        .call(name::REMOVE_SERVER, Some(json!({"name": server})))
        .await
        && !error.to_string().contains("unknown server")
    {
        note(&format!(
            "the one-shot server {server} was not removed: {error}"
        ));
    }
}
