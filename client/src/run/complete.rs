//! `tool-cli __complete ...`: the live names the completion scripts ask for.
//!
//! A shell waits for this while the user waits for the shell, so the daemon gets a short
//! timeout, and any failure (no daemon, a refused token, a slow answer) prints nothing and
//! exits 0: the shell then simply offers no live names.

use std::io::Write;
use std::time::Duration;

use crate::args::complete::Request;
use crate::client::Client;

/// How long a completion may wait for the daemon, connection included.
const COMPLETION_TIMEOUT: Duration = Duration::from_millis(1500);

/// Prints the names for `request`, one a line, when `client` (if any) answers in time.
pub(crate) async fn run(request: Request, client: Option<Client>, stdout: &mut dyn Write) {
    let Some(client) = client else {
        return;
    };
    let mut client = client.with_timeout(COMPLETION_TIMEOUT);
    let lookup = names(&mut client, request);
    let Ok(Some(names)) = tokio::time::timeout(COMPLETION_TIMEOUT, lookup).await else {
        return;
    };
    let mut text = String::new();
    for name in names {
        // A name with a newline or a control character would break the shell's list.
        if !name.is_empty() && !name.chars().any(char::is_control) {
            text.push_str(&name);
            text.push('\n');
        }
    }
    let _ = stdout.write_all(text.as_bytes());
}

async fn names(client: &mut Client, request: Request) -> Option<Vec<String>> {
    match request {
        Request::Servers => Some(
            client
                .list_servers()
                .await
                .ok()?
                .servers
                .into_iter()
                .map(|server| server.name)
                .collect(),
        ),
        Request::Tools { server } => Some(
            client
                .list_tools(&server)
                .await
                .ok()?
                .tools
                .into_iter()
                .map(|tool| tool.name)
                .collect(),
        ),
        Request::Params { server, tool } => {
            let described = client.describe_tool(&server, &tool).await.ok()?;
            let properties = described.pointer("/inputSchema/properties")?.as_object()?;
            Some(properties.keys().map(|key| format!("{key}=")).collect())
        }
        Request::Nothing => None,
    }
}
