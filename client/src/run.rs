//! Carrying out one [`Command`]: handshake, the method calls it needs, and the output.
//!
//! This is the only module that both talks to the daemon and writes to stdout or files. It keeps
//! the order every command follows: connect, the identity check (made by the connection before
//! its first request, so the token is sent only to a listener that proved it holds it),
//! `getBridgeInfo` (refusing a bridge of another protocol or major version), the command's own
//! requests on the same connection, then either
//! the raw result (`--json`) or the human rendering from [`crate::render`], to stdout or to the
//! `--out` file with a one-line summary.

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tool_cli_protocol::methods::{
    BridgeProtocol, CallToolParams, DescribeToolParams, HealthResult, ListServersResult,
    ListTokensResult, ListToolsResult, MintTokenParams, MintTokenResult, ReadResourceParams,
    RevokeTokenParams, RevokeTokenResult, ServerParams, ServerState, name,
};
use tool_cli_protocol::trace::TracesReport;
use tool_cli_protocol::{BRIDGE_PROTOCOL_MAJOR, BRIDGE_PROTOCOL_NAME, code};

use crate::args::{Command, Invocation};
use crate::base64;
use crate::connection::{Connection, Endpoint};
use crate::error::Error;
use crate::render;

/// Longest wait for the TCP connection: a live daemon on loopback accepts in microseconds, so a
/// second is generous and keeps a dead or firewalled address from hanging an agent.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);

/// Extra time the HTTP request of `callTool` gets beyond the call's own `timeoutMs`, so that the
/// daemon's structured timeout error (which names the server and tool) arrives before ours.
const CALL_TIMEOUT_MARGIN: Duration = Duration::from_secs(2);

/// Runs the invocation against the daemon at `endpoint`.
/// The body goes to `stdout` (the process's stdout in `main`, a buffer in tests).
pub(crate) async fn run(
    invocation: Invocation,
    endpoint: Endpoint,
    stdout: &mut dyn Write,
) -> Result<(), Error> {
    let timeout = Duration::from_millis(invocation.timeout_ms);
    let connection = Connection::open(&endpoint, CONNECT_TIMEOUT.min(timeout)).await?;
    let mut session = Session {
        connection,
        timeout,
    };
    session.check_bridge().await?;
    let mut output = Output {
        json: invocation.json,
        out: invocation.out.as_deref(),
        stdout,
    };

    match invocation.command {
        Command::ListServers => {
            let result = session.call_value(name::LIST_SERVERS, None::<()>).await?;
            if output.json {
                return output.emit_json(&result);
            }
            let servers: ListServersResult = parse_result(name::LIST_SERVERS, result)?;
            output.emit_text(&render::servers(&servers))
        }
        Command::ListTools { server } => {
            let params = ServerParams { server };
            let result = session.call_value(name::LIST_TOOLS, Some(params)).await?;
            if output.json {
                return output.emit_json(&result);
            }
            let tools: ListToolsResult = parse_result(name::LIST_TOOLS, result)?;
            output.emit_text(&render::tools(&tools))
        }
        Command::DescribeTool { server, tool } => {
            let params = DescribeToolParams {
                server: server.clone(),
                tool,
            };
            let result = session
                .call_value(name::DESCRIBE_TOOL, Some(params))
                .await?;
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
            let params = CallToolParams {
                server: Some(server.clone()),
                tool: tool.clone(),
                arguments: Some(arguments),
                timeout_ms: Some(invocation.timeout_ms),
                // Sent only when given, so a plain call stays exactly what it was.
                confirm: invocation.confirm.then_some(true),
                ..CallToolParams::default()
            };
            let result = session
                .connection
                .call(name::CALL_TOOL, Some(params), timeout + CALL_TIMEOUT_MARGIN)
                .await?;
            // On stderr and whatever the format: stdout stays the result, as the tool gave it.
            if let Some(warning) = render::degraded_warning(&server, &result) {
                eprintln!("tool-cli: warning: {warning}");
            }
            let rendered = render::call_result(&result);
            if output.json {
                output.emit_json(&result)?;
            } else if !rendered.is_error {
                if rendered.body.is_empty() {
                    // Say so on stderr, so an empty stdout is not mistaken for a hang or a bug.
                    eprintln!("tool-cli: note: {server}/{tool} returned no content");
                }
                output.emit_text(&rendered.body)?;
            }
            if rendered.is_error {
                return Err(Error::ToolReported {
                    server,
                    tool,
                    text: rendered.body,
                });
            }
            Ok(())
        }
        Command::Health => health(&mut session, &mut output).await,
        Command::TracesReport(request) => {
            let result = session
                .call_value(name::TRACES_REPORT, Some(&request.params))
                .await
                .map_err(|error| older_daemon(error, "traces report"))?;
            if output.json {
                return output.emit_json(&result);
            }
            let report: TracesReport = parse_result(name::TRACES_REPORT, result)?;
            output.emit_text(&crate::traces::render(&report, request.markdown))
        }
        Command::MintToken(params) => mint_token(&mut session, &mut output, params).await,
        Command::RevokeToken { token_id } => {
            let params = RevokeTokenParams {
                token_id: token_id.clone(),
            };
            let result = session
                .call_value(name::REVOKE_TOKEN, Some(params))
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
        Command::ListTokens => {
            let result = session
                .call_value(name::LIST_TOKENS, None::<()>)
                .await
                .map_err(|error| older_daemon(error, "token list"))?;
            if output.json {
                return output.emit_json(&result);
            }
            let tokens: ListTokensResult = parse_result(name::LIST_TOKENS, result)?;
            output.emit_text(&render::tokens(&tokens, epoch_seconds_now()))
        }
        Command::ListResources { server } => {
            list_resources(&mut session, &mut output, server, Listing::Resources).await
        }
        Command::ListResourceTemplates { server } => {
            list_resources(&mut session, &mut output, server, Listing::Templates).await
        }
        Command::ReadResource { server, uri, meta } => {
            let server = match server {
                Some(server) => server,
                None => only_ready_server(&mut session).await?,
            };
            let params = ReadResourceParams {
                server,
                uri: uri.clone(),
            };
            let result = session
                .call_value(name::READ_RESOURCE, Some(params))
                .await?;
            if output.json {
                return output.emit_json(&result);
            }
            if meta {
                return output.emit_text(&render::resource_meta(&result));
            }
            emit_resource_body(&mut output, &uri, &result)
        }
    }
}

/// The connection and the per-request timeout of this run.
struct Session {
    connection: Connection,
    timeout: Duration,
}

impl Session {
    async fn call_value<P: serde::Serialize>(
        &mut self,
        method: &str,
        params: Option<P>,
    ) -> Result<Value, Error> {
        self.connection.call(method, params, self.timeout).await
    }

    /// The handshake: only `tool-cli-bridge` major 1 is spoken here. Only `bridgeProtocol` is
    /// read, so that a bridge with fewer or more capabilities than ours is still accepted.
    async fn check_bridge(&mut self) -> Result<(), Error> {
        let info = self.call_value(name::GET_BRIDGE_INFO, None::<()>).await?;
        let protocol = info.get("bridgeProtocol").cloned().unwrap_or(Value::Null);
        let name = protocol
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("(unnamed)")
            .to_owned();
        let major = protocol.get("major").and_then(Value::as_u64).unwrap_or(0);
        if name != BRIDGE_PROTOCOL_NAME || major != u64::from(BRIDGE_PROTOCOL_MAJOR) {
            return Err(Error::IncompatibleBridge { name, major });
        }
        // Also accept it as our wire type, to catch a malformed bridgeProtocol early.
        serde_json::from_value::<BridgeProtocol>(protocol).map_err(|error| {
            Error::Protocol(format!(
                "getBridgeInfo.bridgeProtocol is malformed: {error}"
            ))
        })?;
        Ok(())
    }

    /// Names of the servers in state `ready`, in config order.
    async fn ready_servers(&mut self) -> Result<(Vec<String>, ListServersResult), Error> {
        let result = self.call_value(name::LIST_SERVERS, None::<()>).await?;
        let servers: ListServersResult = parse_result(name::LIST_SERVERS, result)?;
        let ready = servers
            .servers
            .iter()
            .filter(|server| server.state == ServerState::Ready)
            .map(|server| server.name.clone())
            .collect();
        Ok((ready, servers))
    }
}

/// Deserializes a result into its wire type.
fn parse_result<T: DeserializeOwned>(method: &str, result: Value) -> Result<T, Error> {
    serde_json::from_value(result)
        .map_err(|error| Error::Protocol(format!("the result of {method} is malformed: {error}")))
}

/// `resource read` without `--server`: fine when exactly one server is ready.
async fn only_ready_server(session: &mut Session) -> Result<String, Error> {
    let (ready, all) = session.ready_servers().await?;
    match ready.as_slice() {
        [only] => Ok(only.clone()),
        [] => Err(Error::Usage(format!(
            "no server is ready to read from ({}); pass --server S once one is",
            describe_states(&all)
        ))),
        several => Err(Error::Usage(format!(
            "several servers are ready ({}); say which one with --server S",
            several.join(", ")
        ))),
    }
}

/// `demo: ready, gh: failed`, for messages.
fn describe_states(servers: &ListServersResult) -> String {
    if servers.servers.is_empty() {
        return "no servers are configured".to_owned();
    }
    servers
        .servers
        .iter()
        .map(|server| format!("{}: {}", server.name, server.state.as_str()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `tool-cli health`: the table (or the raw result), then exit 1 when an enabled server is not
/// ready, so that a script can poll it.
async fn health(session: &mut Session, output: &mut Output<'_>) -> Result<(), Error> {
    let result = match session.call_value(name::HEALTH, None::<()>).await {
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
async fn mint_token(
    session: &mut Session,
    output: &mut Output<'_>,
    params: MintTokenParams,
) -> Result<(), Error> {
    let result = session
        .call_value(name::MINT_TOKEN, Some(params))
        .await
        .map_err(|error| older_daemon(error, "token mint"))?;
    if output.json {
        return output.emit_json(&result);
    }
    let minted: MintTokenResult = parse_result(name::MINT_TOKEN, result)?;
    output.emit_text(&minted.token)?;
    eprintln!(
        "tool-cli: {}",
        render::minted_summary(&minted, epoch_seconds_now())
    );
    Ok(())
}

/// A "method not found" from a daemon that predates the token methods, said plainly.
fn older_daemon(error: Error, command: &str) -> Error {
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

/// Which of the two resource listings.
#[derive(Clone, Copy)]
enum Listing {
    Resources,
    Templates,
}

impl Listing {
    fn method(self) -> &'static str {
        match self {
            Listing::Resources => name::LIST_RESOURCES,
            Listing::Templates => name::LIST_RESOURCE_TEMPLATES,
        }
    }

    /// The member of the result holding the list.
    fn member(self) -> &'static str {
        match self {
            Listing::Resources => "resources",
            Listing::Templates => "templates",
        }
    }

    /// The member of each item holding its URI.
    fn uri_key(self) -> &'static str {
        match self {
            Listing::Resources => "uri",
            Listing::Templates => "uriTemplate",
        }
    }
}

/// `resource list` / `resource templates`, for one server or every ready one.
async fn list_resources(
    session: &mut Session,
    output: &mut Output<'_>,
    server: Option<String>,
    listing: Listing,
) -> Result<(), Error> {
    if let Some(server) = server {
        let params = ServerParams {
            server: server.clone(),
        };
        let result = session.call_value(listing.method(), Some(params)).await?;
        let items = visible_items(&result, listing);
        if output.json {
            return output.emit_json(&json!({"server": server, listing.member(): items}));
        }
        return output.emit_text(&render::resource_group(&server, &items, listing.uri_key()));
    }

    let (ready, all) = session.ready_servers().await?;
    if ready.is_empty() {
        return Err(Error::Other(format!(
            "no server is ready to list {} from ({})",
            listing.member(),
            describe_states(&all)
        )));
    }
    let mut outcomes: Vec<(String, Result<Vec<Value>, Error>)> = Vec::new();
    for server in ready {
        let params = ServerParams {
            server: server.clone(),
        };
        let outcome = match session.call_value(listing.method(), Some(params)).await {
            Ok(result) => Ok(visible_items(&result, listing)),
            Err(error) if offers_no_resources(&error) => Ok(Vec::new()),
            Err(error) => Err(error),
        };
        outcomes.push((server, outcome));
    }

    let failures = outcomes
        .iter()
        .filter(|(_, outcome)| outcome.is_err())
        .count();
    if failures == outcomes.len() {
        if outcomes.len() == 1 {
            let (_, outcome) = outcomes.pop().expect("one outcome");
            return outcome.map(|_| ());
        }
        let messages: Vec<String> = outcomes
            .iter()
            .filter_map(|(server, outcome)| {
                outcome.as_ref().err().map(|e| format!("{server}: {e}"))
            })
            .collect();
        return Err(Error::Other(format!(
            "listing {} failed on every server:\n  {}",
            listing.member(),
            messages.join("\n  ")
        )));
    }
    for (server, outcome) in &outcomes {
        if let Err(error) = outcome {
            eprintln!(
                "tool-cli: warning: cannot list the {} of {server}: {error}",
                listing.member()
            );
        }
    }

    if output.json {
        let results: Vec<Value> = outcomes
            .iter()
            .map(|(server, outcome)| match outcome {
                Ok(items) => json!({"server": server, listing.member(): items}),
                Err(error) => json!({"server": server, "error": error.to_string()}),
            })
            .collect();
        let status = if failures == 0 { "ok" } else { "partial" };
        return output.emit_json(&json!({"status": status, "results": results}));
    }
    let text: Vec<String> = outcomes
        .iter()
        .filter_map(|(server, outcome)| {
            let items = outcome.as_ref().ok()?;
            Some(render::resource_group(server, items, listing.uri_key()))
        })
        .collect();
    output.emit_text(&text.join("\n"))
}

/// The listed items minus `skill://` ones, which are served as skills, not resources.
fn visible_items(result: &Value, listing: Listing) -> Vec<Value> {
    result
        .get(listing.member())
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|item| {
            !item
                .get(listing.uri_key())
                .and_then(Value::as_str)
                .is_some_and(render::is_skill_uri)
        })
        .cloned()
        .collect()
}

/// A server without the resources capability answers "method not found"; when listing every
/// server that is an empty list, not a failure worth a warning.
fn offers_no_resources(error: &Error) -> bool {
    let Error::Rpc { error, .. } = error else {
        return false;
    };
    matches!(
        error.error_data(),
        Some(tool_cli_protocol::ErrorData::Upstream { code, .. })
            if code == i64::from(code::METHOD_NOT_FOUND)
    )
}

/// `resource read` without `--json` / `--meta`: text to stdout, or every content's bytes to the
/// `--out` file; binary content is refused without `--out`.
fn emit_resource_body(output: &mut Output<'_>, uri: &str, result: &Value) -> Result<(), Error> {
    let contents = render::resource_contents(result);
    if let Some(path) = output.out {
        let mut bytes = Vec::new();
        for content in contents {
            if let Some(text) = content.get("text").and_then(Value::as_str) {
                bytes.extend_from_slice(text.as_bytes());
            } else if let Some(blob) = content.get("blob").and_then(Value::as_str) {
                let decoded = base64::decode(blob).map_err(|error| {
                    Error::Protocol(format!("the blob of {uri} is not valid base64: {error}"))
                })?;
                bytes.extend_from_slice(&decoded);
            }
        }
        return output.write_file(path, &bytes);
    }
    if let Some(binary) = contents
        .iter()
        .find(|content| content.get("blob").is_some())
    {
        let mime = binary
            .get("mimeType")
            .and_then(Value::as_str)
            .unwrap_or("unknown type");
        return Err(Error::Usage(format!(
            "{uri} is binary ({mime}, {}); save it with --out FILE, or see its metadata \
             with --meta",
            render::human_size(render::content_size(binary))
        )));
    }
    let text: Vec<&str> = contents
        .iter()
        .filter_map(|content| content.get("text").and_then(Value::as_str))
        .collect();
    output.emit_text(&text.join("\n"))
}

/// Where the result body goes: stdout, or the `--out` file with a summary on stdout.
struct Output<'a> {
    json: bool,
    out: Option<&'a Path>,
    stdout: &'a mut dyn Write,
}

impl Output<'_> {
    fn emit_json(&mut self, value: &Value) -> Result<(), Error> {
        self.emit_bytes(render::pretty(value).as_bytes())
    }

    fn emit_text(&mut self, text: &str) -> Result<(), Error> {
        if text.is_empty() || text.ends_with('\n') {
            self.emit_bytes(text.as_bytes())
        } else {
            self.emit_bytes(format!("{text}\n").as_bytes())
        }
    }

    fn emit_bytes(&mut self, bytes: &[u8]) -> Result<(), Error> {
        match self.out {
            Some(path) => self.write_file(path, bytes),
            None => self.write_stdout(bytes),
        }
    }

    fn write_file(&mut self, path: &Path, bytes: &[u8]) -> Result<(), Error> {
        std::fs::write(path, bytes).map_err(|source| Error::Io {
            action: format!("write {}", path.display()),
            source,
        })?;
        let summary = format!("wrote {} bytes to {}\n", bytes.len(), path.display());
        self.write_stdout(summary.as_bytes())
    }

    /// A closed pipe (`tool-cli ... | head`) is not an error worth reporting.
    fn write_stdout(&mut self, bytes: &[u8]) -> Result<(), Error> {
        match self
            .stdout
            .write_all(bytes)
            .and_then(|()| self.stdout.flush())
        {
            Err(error) if error.kind() != std::io::ErrorKind::BrokenPipe => Err(Error::Io {
                action: "write to stdout".to_owned(),
                source: error,
            }),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::args::{ArgsEnv, parse};
    use crate::error::exit;
    use crate::test_support::{
        Identity, TOKEN, bridge_info, endpoint, fake_daemon, fake_listener, result, rpc_error,
    };

    /// Runs a command line against a scripted daemon; returns the outcome, stdout, and the
    /// requests the daemon saw.
    async fn run_against(
        args: &[&str],
        answers: Vec<(u16, String)>,
    ) -> (Result<(), Error>, String, Vec<String>) {
        let (port, daemon) = fake_daemon(answers).await;
        let argv = std::iter::once("tool-cli").chain(args.iter().copied());
        let invocation = parse(argv, &ArgsEnv::default(), || Ok(String::new())).unwrap();
        let mut stdout = Vec::new();
        let outcome = run(invocation, endpoint(port), &mut stdout).await;
        let seen = daemon.await.unwrap();
        (outcome, String::from_utf8(stdout).unwrap(), seen)
    }

    fn servers(states: &[(&str, &str)]) -> (u16, String) {
        let servers: Vec<Value> = states
            .iter()
            .map(|(name, state)| {
                json!({"name": name, "toolCount": 1, "examples": ["t"], "state": state,
                       "transport": "stdio"})
            })
            .collect();
        result(json!({ "servers": servers }))
    }

    #[tokio::test]
    async fn incompatible_bridge_is_refused_before_the_command() {
        let answers = vec![result(json!({
            "bridgeProtocol": {"name": "tool-cli-bridge", "major": 2, "version": "2.0"}
        }))];
        let (outcome, stdout, seen) = run_against(&["demo"], answers).await;
        let error = outcome.unwrap_err();
        assert!(
            matches!(error, Error::IncompatibleBridge { major: 2, .. }),
            "{error:?}"
        );
        assert_eq!(error.exit_code(), exit::OTHER);
        assert_eq!(stdout, "");
        assert_eq!(seen.len(), 1, "nothing is sent after a refused handshake");
    }

    #[tokio::test]
    async fn call_passes_timeout_and_prints_structured_content() {
        let answers = vec![
            bridge_info(),
            result(json!({"content": [{"type": "text", "text": "{}"}],
                          "structuredContent": {"n": 1}})),
        ];
        let (outcome, stdout, seen) =
            run_against(&["demo", "t", r#"{"a": 1}"#, "--timeout", "1234"], answers).await;
        outcome.unwrap();
        assert_eq!(stdout, "{\n  \"n\": 1\n}\n");
        assert!(
            seen[0].contains(r#""method":"getBridgeInfo""#),
            "{}",
            seen[0]
        );
        assert!(
            seen[1].contains(
                r#""params":{"server":"demo","tool":"t","arguments":{"a":1},"timeoutMs":1234}"#
            ),
            "{}",
            seen[1]
        );
    }

    #[tokio::test]
    async fn tool_error_goes_to_stderr_with_its_exit_code_and_json_still_prints() {
        let error_result = json!({"content": [{"type": "text", "text": "boom"}], "isError": true});
        let (outcome, stdout, _) = run_against(
            &["demo", "t", "{}"],
            vec![bridge_info(), result(error_result.clone())],
        )
        .await;
        let error = outcome.unwrap_err();
        assert_eq!(error.exit_code(), exit::TOOL_ERROR);
        assert_eq!(error.to_string(), "demo/t reported an error:\nboom");
        assert_eq!(stdout, "");
        let (outcome, stdout, _) = run_against(
            &["demo", "t", "{}", "--json"],
            vec![bridge_info(), result(error_result.clone())],
        )
        .await;
        assert_eq!(outcome.unwrap_err().exit_code(), exit::TOOL_ERROR);
        assert_eq!(
            serde_json::from_str::<Value>(&stdout).unwrap(),
            error_result
        );
    }

    #[tokio::test]
    async fn invalid_arguments_exit_with_invalid_params() {
        let data = json!({"kind": "invalidArguments", "server": "demo", "tool": "t",
            "errors": [{"path": "/a", "schemaPath": "/properties/a/type", "message": "bad"}]});
        let answers = vec![bridge_info(), rpc_error(-32602, "invalid arguments", data)];
        let (outcome, _, _) = run_against(&["demo", "t", r#"{"a": 1}"#], answers).await;
        let error = outcome.unwrap_err();
        assert_eq!(error.exit_code(), exit::INVALID_PARAMS);
        assert!(error.to_string().contains("/a: bad"), "{error}");
    }

    fn health_entry(name: &str, state: &str) -> Value {
        json!({"name": name, "state": state, "transport": "stdio", "restarts": 0,
               "calls": 0, "errors": 0, "inFlight": 0, "queued": 0,
               "breaker": {"state": "closed"}})
    }

    #[tokio::test]
    async fn health_exits_zero_when_every_enabled_server_is_ready() {
        let answers = vec![
            bridge_info(),
            result(json!({"servers": [
                health_entry("demo", "ready"),
                health_entry("off", "disabled"),
            ]})),
        ];
        let (outcome, stdout, seen) = run_against(&["health"], answers).await;
        outcome.unwrap();
        assert!(seen[1].contains(r#""method":"health""#), "{}", seen[1]);
        assert!(stdout.starts_with("  SERVER  STATE"), "{stdout}");
        assert!(stdout.contains("\n  demo    ready"), "{stdout}");
        assert!(!stdout.contains('!'), "{stdout}");
    }

    #[tokio::test]
    async fn health_prints_the_table_then_exits_one_for_unhealthy_servers() {
        let mut down = health_entry("gh", "down");
        down["lastError"] = json!("spawn npx: not found");
        let health = json!({"servers": [
            health_entry("demo", "ready"),
            down,
            health_entry("off", "disabled"),
        ]});
        let (outcome, stdout, _) =
            run_against(&["health"], vec![bridge_info(), result(health.clone())]).await;
        let error = outcome.unwrap_err();
        assert_eq!(error.exit_code(), exit::OTHER);
        assert_eq!(
            error.to_string(),
            "1 of 2 enabled servers is not ready: gh (down)"
        );
        assert!(stdout.contains("\n! gh      down"), "{stdout}");
        assert!(
            stdout.contains("\n    last error: spawn npx: not found\n"),
            "{stdout}"
        );

        // --json prints the raw result, and the exit code is the same.
        let (outcome, stdout, _) = run_against(
            &["health", "--json"],
            vec![bridge_info(), result(health.clone())],
        )
        .await;
        assert_eq!(outcome.unwrap_err().exit_code(), exit::OTHER);
        assert_eq!(serde_json::from_str::<Value>(&stdout).unwrap(), health);
    }

    #[tokio::test]
    async fn health_on_an_older_daemon_says_so() {
        let answers = vec![
            bridge_info(),
            rpc_error(-32601, "Method not found", json!(null)),
        ];
        let (outcome, stdout, _) = run_against(&["health"], answers).await;
        let error = outcome.unwrap_err();
        assert_eq!(error.exit_code(), exit::OTHER);
        assert!(
            error.to_string().contains("does not serve `health`"),
            "{error}"
        );
        assert_eq!(stdout, "");
    }

    #[tokio::test]
    async fn degraded_result_still_prints_on_stdout() {
        let cached = json!({
            "content": [{"type": "text", "text": "cached rows"}],
            "_meta": {"tool-cli/degraded": {"reason": "server down", "ageMs": 5000}}
        });
        let (outcome, stdout, _) = run_against(
            &["demo", "t", "{}"],
            vec![bridge_info(), result(cached.clone())],
        )
        .await;
        outcome.unwrap();
        assert_eq!(stdout, "cached rows\n");
        let (outcome, stdout, _) = run_against(
            &["demo", "t", "{}", "--json"],
            vec![bridge_info(), result(cached.clone())],
        )
        .await;
        outcome.unwrap();
        assert_eq!(serde_json::from_str::<Value>(&stdout).unwrap(), cached);
    }

    #[tokio::test]
    async fn busy_and_circuit_open_exit_one_with_a_retry_hint() {
        for (code, data) in [
            (
                -32004,
                json!({"kind": "busy", "server": "demo", "inFlight": 1, "queued": 0,
                       "retryAfterMs": 100}),
            ),
            (
                -32005,
                json!({"kind": "circuitOpen", "server": "demo", "retryAfterMs": 100}),
            ),
        ] {
            let answers = vec![bridge_info(), rpc_error(code, "refused", data)];
            let (outcome, stdout, _) = run_against(&["demo", "t", "{}"], answers).await;
            let error = outcome.unwrap_err();
            assert_eq!(error.exit_code(), exit::OTHER);
            assert!(error.to_string().contains("retry in 100 ms"), "{error}");
            assert_eq!(stdout, "");
        }
    }

    #[tokio::test]
    async fn resource_list_across_servers_reports_partial_failure() {
        let unavailable = json!({"kind": "serverUnavailable", "server": "b", "state": "exited"});
        let answers = vec![
            bridge_info(),
            servers(&[("a", "ready"), ("b", "ready"), ("c", "failed")]),
            result(json!({"server": "a", "resources": [
                {"uri": "a://one", "name": "one"},
                {"uri": "skill://hidden/SKILL.md", "name": "skill"},
            ]})),
            rpc_error(-32001, "server unavailable", unavailable),
        ];
        let (outcome, stdout, seen) = run_against(&["resource", "list", "--json"], answers).await;
        outcome.unwrap();
        assert_eq!(seen.len(), 4, "the failed server c is not asked");
        let printed: Value = serde_json::from_str(&stdout).unwrap();
        assert_eq!(printed["status"], "partial");
        assert_eq!(
            printed["results"][0],
            json!({"server": "a", "resources": [{"uri": "a://one", "name": "one"}]})
        );
        assert_eq!(printed["results"][1]["server"], "b");
        assert!(
            printed["results"][1]["error"]
                .as_str()
                .unwrap()
                .contains("exited")
        );
    }

    #[tokio::test]
    async fn resource_list_fails_when_every_server_fails() {
        let upstream = |server: &str| {
            rpc_error(
                -32003,
                "upstream",
                json!({"kind": "upstream", "server": server, "code": -32603, "message": "x"}),
            )
        };
        let answers = vec![
            bridge_info(),
            servers(&[("a", "ready"), ("b", "ready")]),
            upstream("a"),
            upstream("b"),
        ];
        let (outcome, stdout, _) = run_against(&["resource", "templates"], answers).await;
        let error = outcome.unwrap_err();
        assert_ne!(error.exit_code(), exit::OK);
        assert!(
            error.to_string().contains("failed on every server"),
            "{error}"
        );
        assert_eq!(stdout, "");
    }

    #[tokio::test]
    async fn server_without_resources_is_an_empty_group_not_a_failure() {
        let not_found = json!({"kind": "upstream", "server": "b", "code": -32601,
                               "message": "Method not found"});
        let answers = vec![
            bridge_info(),
            servers(&[("a", "ready"), ("b", "ready")]),
            result(json!({"server": "a", "resources": []})),
            rpc_error(-32003, "upstream", not_found),
        ];
        let (outcome, stdout, _) = run_against(&["--json", "resource", "list"], answers).await;
        outcome.unwrap();
        let printed: Value = serde_json::from_str(&stdout).unwrap();
        assert_eq!(printed["status"], "ok");
        assert_eq!(
            printed["results"][1],
            json!({"server": "b", "resources": []})
        );
    }

    #[tokio::test]
    async fn read_picks_the_only_ready_server_and_refuses_binary_without_out() {
        let blob = json!({"contents": [{"uri": "a://logo", "mimeType": "image/png",
                                        "blob": "iVBORw0KGgo="}]});
        let answers = vec![
            bridge_info(),
            servers(&[("a", "ready"), ("b", "failed")]),
            result(blob.clone()),
        ];
        let (outcome, stdout, seen) = run_against(&["resource", "read", "a://logo"], answers).await;
        let error = outcome.unwrap_err();
        assert_eq!(error.exit_code(), exit::USAGE);
        assert!(error.to_string().contains("--out FILE"), "{error}");
        assert_eq!(stdout, "");
        assert!(
            seen[2].contains(r#""params":{"server":"a","uri":"a://logo"}"#),
            "{}",
            seen[2]
        );

        let directory = std::env::temp_dir().join(format!("tool-cli-test-{}", std::process::id()));
        std::fs::create_dir_all(&directory).unwrap();
        let path = directory.join("logo.png");
        let path_text = path.to_str().unwrap();
        let answers = vec![bridge_info(), result(blob)];
        let (outcome, stdout, _) = run_against(
            &[
                "resource", "read", "--server", "a", "a://logo", "--out", path_text,
            ],
            answers,
        )
        .await;
        outcome.unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"\x89PNG\r\n\x1a\n");
        assert_eq!(stdout, format!("wrote 8 bytes to {path_text}\n"));
        std::fs::remove_dir_all(&directory).unwrap();
    }

    #[tokio::test]
    async fn read_without_server_needs_exactly_one_ready() {
        let answers = vec![bridge_info(), servers(&[("a", "ready"), ("b", "ready")])];
        let (outcome, _, _) = run_against(&["resource", "read", "x://y"], answers).await;
        let error = outcome.unwrap_err();
        assert_eq!(error.exit_code(), exit::USAGE);
        assert!(
            error
                .to_string()
                .contains("several servers are ready (a, b)"),
            "{error}"
        );
    }

    #[tokio::test]
    async fn yes_sends_confirm_and_its_absence_sends_nothing() {
        let done = || result(json!({"content": [{"type": "text", "text": "dropped"}]}));
        let (outcome, stdout, seen) =
            run_against(&["db", "drop", "{}", "--yes"], vec![bridge_info(), done()]).await;
        outcome.unwrap();
        assert_eq!(stdout, "dropped\n");
        assert!(seen[1].contains(r#""confirm":true"#), "{}", seen[1]);
        let (_, _, seen) = run_against(&["db", "drop", "{}"], vec![bridge_info(), done()]).await;
        assert!(!seen[1].contains("confirm"), "{}", seen[1]);
    }

    #[tokio::test]
    async fn destructive_tool_without_yes_exits_nine() {
        let data = json!({"kind": "confirmationRequired", "server": "db", "tool": "drop"});
        let answers = vec![
            bridge_info(),
            rpc_error(-32006, "confirmation required", data),
        ];
        let (outcome, stdout, _) = run_against(&["db", "drop", "{}"], answers).await;
        let error = outcome.unwrap_err();
        assert_eq!(error.exit_code(), exit::FORBIDDEN);
        assert_eq!(
            error.to_string(),
            "tool \"drop\" of server \"db\" is destructive; run it again with --yes to confirm"
        );
        assert_eq!(stdout, "");
    }

    fn minted() -> Value {
        json!({"token": "f".repeat(64), "tokenId": "0011223344556677",
               "scope": "servers demo; read-only tools", "expiresAt": 4_102_444_800_u64})
    }

    #[tokio::test]
    async fn mint_prints_only_the_token_on_stdout() {
        let (outcome, stdout, seen) = run_against(
            &[
                "token",
                "mint",
                "--server",
                "demo",
                "--read-only",
                "--ttl",
                "60",
            ],
            vec![bridge_info(), result(minted())],
        )
        .await;
        outcome.unwrap();
        assert_eq!(stdout, format!("{}\n", "f".repeat(64)));
        assert!(
            seen[1].contains(
                r#""method":"mintToken","params":{"servers":["demo"],"readOnly":true,"ttlSeconds":60}"#
            ),
            "{}",
            seen[1]
        );
        // --json: the whole result.
        let (outcome, stdout, _) = run_against(
            &["token", "mint", "--json"],
            vec![bridge_info(), result(minted())],
        )
        .await;
        outcome.unwrap();
        assert_eq!(serde_json::from_str::<Value>(&stdout).unwrap(), minted());
    }

    #[tokio::test]
    async fn mint_with_a_minted_token_is_not_permitted() {
        let data = json!({"kind": "notPermitted", "server": "",
                          "reason": "only the owner token may mint tokens"});
        let answers = vec![bridge_info(), rpc_error(-32006, "not permitted", data)];
        let (outcome, stdout, _) = run_against(&["token", "mint"], answers).await;
        let error = outcome.unwrap_err();
        assert_eq!(error.exit_code(), exit::FORBIDDEN);
        assert!(
            error.to_string().contains("only the owner token may mint"),
            "{error}"
        );
        assert_eq!(stdout, "");
    }

    #[tokio::test]
    async fn revoke_says_revoked_or_exits_one_when_unknown() {
        let (outcome, stdout, seen) = run_against(
            &["token", "revoke", "0011223344556677"],
            vec![bridge_info(), result(json!({"revoked": true}))],
        )
        .await;
        outcome.unwrap();
        assert_eq!(stdout, "revoked 0011223344556677\n");
        assert!(
            seen[1].contains(r#""params":{"tokenId":"0011223344556677"}"#),
            "{}",
            seen[1]
        );
        let (outcome, stdout, _) = run_against(
            &["token", "revoke", "0011223344556677"],
            vec![bridge_info(), result(json!({"revoked": false}))],
        )
        .await;
        let error = outcome.unwrap_err();
        assert_eq!(error.exit_code(), exit::OTHER);
        assert!(
            error
                .to_string()
                .starts_with("no live token has id 0011223344556677"),
            "{error}"
        );
        assert_eq!(stdout, "");
    }

    #[tokio::test]
    async fn token_list_prints_a_table() {
        let listed = json!({"tokens": [{"tokenId": "0011223344556677", "scope": "every server",
                                        "label": "ci"}]});
        let (outcome, stdout, seen) =
            run_against(&["token", "list"], vec![bridge_info(), result(listed)]).await;
        outcome.unwrap();
        assert!(seen[1].contains(r#""method":"listTokens""#), "{}", seen[1]);
        assert_eq!(
            stdout,
            "ID                LABEL  EXPIRES  SCOPE\n0011223344556677  ci     never    every server\n"
        );
    }

    #[tokio::test]
    async fn token_commands_on_an_older_daemon_say_so() {
        let answers = vec![
            bridge_info(),
            rpc_error(-32601, "Method not found", json!(null)),
        ];
        let (outcome, _, _) = run_against(&["token", "list"], answers).await;
        let error = outcome.unwrap_err();
        assert!(
            error
                .to_string()
                .contains("does not serve `tool-cli token list`"),
            "{error}"
        );
    }

    #[tokio::test]
    async fn a_listener_that_cannot_prove_its_identity_never_gets_the_token() {
        let wrong = json!({"proof": "ab".repeat(32)}).to_string();
        let (port, listener) =
            fake_listener(Identity::Answer(200, wrong), vec![bridge_info()]).await;
        let invocation = parse(
            ["tool-cli", "demo", "t", "{}", "--yes"],
            &ArgsEnv::default(),
            || Ok(String::new()),
        )
        .unwrap();
        let mut stdout = Vec::new();
        let error = run(invocation, endpoint(port), &mut stdout)
            .await
            .unwrap_err();
        assert_eq!(error.exit_code(), exit::IDENTITY);
        assert!(
            error.to_string().starts_with(&format!(
                "the listener at 127.0.0.1:{port} did not prove it holds the token, so the \
                 token was not sent"
            )),
            "{error}"
        );
        assert_eq!(stdout, b"");
        let seen = listener.await.unwrap();
        assert_eq!(seen.len(), 1, "only the identity check was sent: {seen:?}");
        assert!(seen[0].starts_with("POST /identity "), "{}", seen[0]);
        assert!(!seen[0].contains(TOKEN), "{}", seen[0]);
    }
}
