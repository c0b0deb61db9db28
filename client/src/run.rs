//! Carrying out one [`Command`]: handshake, the method calls it needs, and the output.
//!
//! This is the only module that both talks to the daemon and writes to stdout or files. It keeps
//! the order every command follows: connect, `getBridgeInfo` (refusing a bridge of another
//! protocol or major version), the command's own requests on the same connection, then either
//! the raw result (`--json`) or the human rendering from [`crate::render`], to stdout or to the
//! `--out` file with a one-line summary.

use std::io::Write as _;
use std::path::Path;
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tool_cli_protocol::methods::{
    BridgeProtocol, CallToolParams, DescribeToolParams, ListServersResult, ListToolsResult,
    ReadResourceParams, ServerParams, ServerState, name,
};
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
pub(crate) async fn run(invocation: Invocation, endpoint: Endpoint) -> Result<(), Error> {
    let timeout = Duration::from_millis(invocation.timeout_ms);
    let connection = Connection::open(&endpoint, CONNECT_TIMEOUT.min(timeout)).await?;
    let mut session = Session {
        connection,
        timeout,
    };
    session.check_bridge().await?;
    let output = Output {
        json: invocation.json,
        out: invocation.out.as_deref(),
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
                server: server.clone(),
                tool: tool.clone(),
                arguments: Some(arguments),
                timeout_ms: Some(invocation.timeout_ms),
                session_id: None,
            };
            let result = session
                .connection
                .call(name::CALL_TOOL, Some(params), timeout + CALL_TIMEOUT_MARGIN)
                .await?;
            let rendered = render::call_result(&result);
            if output.json {
                output.emit_json(&result)?;
            } else if !rendered.is_error {
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
        Command::ListResources { server } => {
            list_resources(&mut session, &output, server, Listing::Resources).await
        }
        Command::ListResourceTemplates { server } => {
            list_resources(&mut session, &output, server, Listing::Templates).await
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
            emit_resource_body(&output, &uri, &result)
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
    output: &Output<'_>,
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
fn emit_resource_body(output: &Output<'_>, uri: &str, result: &Value) -> Result<(), Error> {
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
}

impl Output<'_> {
    fn emit_json(&self, value: &Value) -> Result<(), Error> {
        self.emit_bytes(render::pretty(value).as_bytes())
    }

    fn emit_text(&self, text: &str) -> Result<(), Error> {
        if text.is_empty() {
            return self.emit_bytes(b"");
        }
        if text.ends_with('\n') {
            self.emit_bytes(text.as_bytes())
        } else {
            self.emit_bytes(format!("{text}\n").as_bytes())
        }
    }

    fn emit_bytes(&self, bytes: &[u8]) -> Result<(), Error> {
        match self.out {
            Some(path) => self.write_file(path, bytes),
            None => write_stdout(bytes),
        }
    }

    fn write_file(&self, path: &Path, bytes: &[u8]) -> Result<(), Error> {
        std::fs::write(path, bytes).map_err(|source| Error::Io {
            action: format!("write {}", path.display()),
            source,
        })?;
        write_stdout(format!("wrote {} bytes to {}\n", bytes.len(), path.display()).as_bytes())
    }
}

/// Writes to stdout; a closed pipe (`tool-cli ... | head`) is not an error worth reporting.
fn write_stdout(bytes: &[u8]) -> Result<(), Error> {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(bytes).and_then(|()| stdout.flush()) {
        Err(error) if error.kind() != std::io::ErrorKind::BrokenPipe => Err(Error::Io {
            action: "write to stdout".to_owned(),
            source: error,
        }),
        _ => Ok(()),
    }
}
