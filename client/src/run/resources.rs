//! `tool-cli resource list|templates|read`: one server or every ready one, `skill://` resources
//! hidden, a partial failure reported without failing the whole listing, and binary contents
//! written only to a file.

use serde_json::{Value, json};
use tool_cli_protocol::code;
use tool_cli_protocol::methods::{ListServersResult, ServerState, name};

use super::output::{self, Output};
use crate::base64;
use crate::client::{Client, parse_result};
use crate::error::Error;
use crate::render;

/// `resource read` without `--server`: fine when exactly one server is ready.
pub(super) async fn only_ready_server(client: &mut Client) -> Result<String, Error> {
    let (ready, all) = ready_servers(client).await?;
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
pub(super) enum Listing {
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
pub(super) async fn list(
    client: &mut Client,
    output: &mut Output<'_>,
    server: Option<String>,
    listing: Listing,
) -> Result<(), Error> {
    if let Some(server) = server {
        let params = json!({ "server": server });
        let result = client.call(listing.method(), Some(params)).await?;
        let items = visible_items(&result, listing);
        if output.json {
            return output.emit_json(&json!({"server": server, listing.member(): items}));
        }
        return output.emit_text(&render::resource_group(&server, &items, listing.uri_key()));
    }

    let (ready, all) = ready_servers(client).await?;
    if ready.is_empty() {
        return Err(Error::Other(format!(
            "no server is ready to list {} from ({})",
            listing.member(),
            describe_states(&all)
        )));
    }
    let mut outcomes: Vec<(String, Result<Vec<Value>, Error>)> = Vec::new();
    for server in ready {
        let params = json!({ "server": server });
        let outcome = match client.call(listing.method(), Some(params)).await {
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
            output::warn(&format!(
                "cannot list the {} of {server}: {error}",
                listing.member()
            ));
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
pub(super) fn emit_body(output: &mut Output<'_>, uri: &str, result: &Value) -> Result<(), Error> {
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
    output.emit_result_text(&text.join("\n"))
}

/// Names of the servers in state `ready`, in config order, and the whole listing.
async fn ready_servers(client: &mut Client) -> Result<(Vec<String>, ListServersResult), Error> {
    let result = client.call(name::LIST_SERVERS, None).await?;
    let servers: ListServersResult = parse_result(name::LIST_SERVERS, result)?;
    let ready = servers
        .servers
        .iter()
        .filter(|server| server.state == ServerState::Ready)
        .map(|server| server.name.clone())
        .collect();
    Ok((ready, servers))
}
