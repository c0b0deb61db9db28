//! Turning a JSON-RPC error into advice: what failed and what to do instead.
//!
//! The daemon's errors carry a structured `data` tagged by `kind` (unknown names, failing argument
//! paths, a server's last stderr lines), worded once by the protocol (`ErrorData`'s `Display`);
//! this adds what is the command line's own. A tool-cli 1.x bridge sends its own shapes without
//! a `kind`: `validationErrors` in ajv's format for invalid arguments and `discoveredTools` for
//! an unknown tool, read here as ours and worded the same; anything else falls back to the
//! error's message and code.

use std::fmt;

use serde_json::Value;
use tool_cli_protocol::{ArgumentError, ErrorData, ErrorObject, MAX_TIMEOUT_MS};

use crate::render::truncate;

/// A JSON-RPC error of `method`, displayed as advice.
pub(crate) struct RpcMessage<'a> {
    pub(crate) method: &'a str,
    pub(crate) error: &'a ErrorObject,
}

impl fmt::Display for RpcMessage<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        describe_rpc_error(f, self.method, self.error)
    }
}

/// Longest excerpt of an error's free-form `data` in a message: it stays readable when a server
/// attaches a large payload.
const DATA_EXCERPT: usize = 300;

/// Turns a JSON-RPC error into advice: the protocol's wording of its structured `data` (the
/// same words the daemon sent as its message), with what only the command line can add (a flag
/// to pass, a command to run, a likely typo, a server's last stderr lines).
fn describe_rpc_error(
    f: &mut fmt::Formatter<'_>,
    method: &str,
    error: &ErrorObject,
) -> fmt::Result {
    let data = match error.error_data() {
        Some(data) => data,
        None => match error.data.as_ref().and_then(reference_data) {
            Some(data) => data,
            None => {
                write!(
                    f,
                    "{method} failed: {} (code {})",
                    error.message, error.code
                )?;
                if let Some(data) = &error.data {
                    write!(f, "; data: {}", truncate(&data.to_string(), DATA_EXCERPT))?;
                }
                return Ok(());
            }
        },
    };
    write!(f, "{data}")?;
    match &data {
        ErrorData::UnknownServer {
            server,
            known_servers,
        } => {
            if let Some(guess) = did_you_mean(server, known_servers) {
                write!(f, "; did you mean {guess:?}?")?;
            }
        }
        ErrorData::UnknownTool {
            server,
            tool,
            known_tools,
            ..
        } if server != "*" => {
            if let Some(guess) = did_you_mean(tool, known_tools) {
                write!(f, "; did you mean {guess:?}?")?;
            }
        }
        ErrorData::InvalidArguments { server, tool, .. } => write!(
            f,
            "\nsee `tool-cli {server} {tool}` for its parameters and an example"
        )?,
        ErrorData::InvalidSchema { .. } => f.write_str("; this is a bug of the MCP server")?,
        ErrorData::ServerExited { stderr_tail, .. } if !stderr_tail.is_empty() => {
            f.write_str("; its last stderr lines:")?;
            for line in stderr_tail {
                write!(f, "\n  {line}")?;
            }
        }
        ErrorData::Timeout { .. } => {
            write!(f, "; raise --timeout (at most {MAX_TIMEOUT_MS})")?;
        }
        ErrorData::Upstream {
            data: Some(data), ..
        } => write!(f, "; data: {}", truncate(&data.to_string(), DATA_EXCERPT))?,
        ErrorData::CircuitOpen { .. } => f.write_str(" (`tool-cli health` shows the breaker)")?,
        _ => {}
    }
    Ok(())
}

/// The data shapes of a tool-cli 1.x bridge, which have no `kind` (`validationErrors` in ajv's
/// `{instancePath, schemaPath, keyword, params, message}`, and `discoveredTools`), as ours, so
/// they are worded the same.
fn reference_data(data: &Value) -> Option<ErrorData> {
    let text = |name: &str| {
        data.get(name)
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_owned()
    };
    if let Some(errors) = data.get("validationErrors").and_then(Value::as_array) {
        let errors = errors
            .iter()
            .map(|error| {
                let field = |name: &str| error.get(name).and_then(Value::as_str).unwrap_or("");
                ArgumentError {
                    path: field("instancePath").to_owned(),
                    schema_path: field("schemaPath").to_owned(),
                    message: error
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or("is invalid")
                        .to_owned(),
                }
            })
            .collect();
        return Some(ErrorData::InvalidArguments {
            server: text("server"),
            tool: text("tool"),
            errors,
            validation_errors: Vec::new(),
        });
    }
    let known_tools: Vec<String> = data
        .get("discoveredTools")?
        .as_array()?
        .iter()
        .map(|name| match name {
            Value::String(name) => name.clone(),
            other => other.to_string(),
        })
        .collect();
    Some(ErrorData::UnknownTool {
        server: text("server"),
        tool: text("tool"),
        tool_count: known_tools.len(),
        discovered_tools: known_tools.clone(),
        known_tools,
    })
}

/// The known name closest to `wanted`, when it is close enough to be a likely typo.
pub(crate) fn did_you_mean<'a>(wanted: &str, known: &'a [String]) -> Option<&'a str> {
    let wanted_lower = wanted.to_lowercase();
    known
        .iter()
        .map(|name| (edit_distance(&wanted_lower, &name.to_lowercase()), name))
        .filter(|(distance, name)| *distance <= (name.chars().count() / 3).max(2))
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, name)| name.as_str())
}

/// Levenshtein distance over chars; names are short, so the quadratic table is fine.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, a_char) in a.chars().enumerate() {
        let mut current = vec![i + 1; b.len() + 1];
        for (j, b_char) in b.iter().enumerate() {
            let substitution = previous[j] + usize::from(a_char != *b_char);
            current[j + 1] = substitution.min(previous[j + 1] + 1).min(current[j] + 1);
        }
        previous = current;
    }
    previous[b.len()]
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn describe(code: i32, message: &str, data: Option<Value>) -> String {
        let error = ErrorObject {
            code,
            message: message.into(),
            data,
        };
        RpcMessage {
            method: "callTool",
            error: &error,
        }
        .to_string()
    }

    #[test]
    fn edit_distance_counts_single_edits() {
        assert_eq!(edit_distance("", ""), 0);
        assert_eq!(edit_distance("sql_query", "sql_query"), 0);
        assert_eq!(edit_distance("sql_qeury", "sql_query"), 2);
        assert_eq!(edit_distance("sq_query", "sql_query"), 1);
        assert_eq!(edit_distance("abc", ""), 3);
    }

    #[test]
    fn did_you_mean_picks_a_close_name_only() {
        let known = vec!["sql_query".to_owned(), "describe_schema".to_owned()];
        assert_eq!(did_you_mean("sql_qury", &known), Some("sql_query"));
        assert_eq!(did_you_mean("SQL_QUERY", &known), Some("sql_query"));
        assert_eq!(did_you_mean("describe", &known), None);
        assert_eq!(did_you_mean("weather", &known), None);
    }

    #[test]
    fn reference_validation_errors_read_like_ours() {
        // What a tool-cli 1.x bridge sends: ajv's errors, no `kind`.
        let data = json!({"server": "ref", "tool": "echo", "validationErrors": [
            {"instancePath": "", "schemaPath": "#/required", "keyword": "required",
             "params": {"missingProperty": "text"},
             "message": "must have required property 'text'"},
            {"instancePath": "/times", "schemaPath": "#/properties/times/type",
             "keyword": "type", "params": {"type": "integer"}, "message": "must be integer"},
        ]});
        assert_eq!(
            describe(-32602, "Invalid arguments", Some(data)),
            "arguments for ref/echo do not match its input schema: (root): must have required \
             property 'text'; /times: must be integer\n\
             see `tool-cli ref echo` for its parameters and an example"
        );
    }

    #[test]
    fn reference_discovered_tools_read_like_ours() {
        let data = json!({"server": "ref", "tool": "ecko", "discoveredTools": ["echo", "add"]});
        assert_eq!(
            describe(-32602, "Unknown tool", Some(data)),
            "server \"ref\" has no tool \"ecko\"; its tools: echo, add; did you mean \"echo\"?"
        );
    }

    #[test]
    fn ours_beside_the_reference_fields_is_read_as_ours() {
        // Our daemon may add the reference's fields beside its own; `kind` decides.
        let data = json!({"kind": "unknownTool", "server": "demo", "tool": "x",
                          "knownTools": ["sql_query"], "discoveredTools": ["sql_query"]});
        assert_eq!(
            describe(-32602, "unknown tool", Some(data)),
            "server \"demo\" has no tool \"x\"; its tools: sql_query"
        );
    }

    #[test]
    fn other_errors_fall_back_to_message_code_and_data() {
        assert_eq!(
            describe(-32603, "MCP error -32002: Resource not found", None),
            "callTool failed: MCP error -32002: Resource not found (code -32603)"
        );
        assert_eq!(
            describe(-32000, "boom", Some(json!({"detail": 1}))),
            "callTool failed: boom (code -32000); data: {\"detail\":1}"
        );
    }
}
