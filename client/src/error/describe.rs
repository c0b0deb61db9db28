//! Turning a JSON-RPC error into advice: what failed and what to do instead.
//!
//! The daemon's errors carry a structured `data` tagged by `kind` (unknown names, failing argument
//! paths, a server's last stderr lines); a tool-cli 1.x bridge sends its own shapes without a
//! `kind`: `validationErrors` in ajv's format for invalid arguments and `discoveredTools` for an
//! unknown tool. Both are rendered equally well here; anything else falls back to the error's
//! message and code.

use std::fmt;

use serde_json::Value;
use tool_cli_protocol::{ErrorData, ErrorObject, MAX_TIMEOUT_MS};

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

/// Turns a JSON-RPC error into advice, using its structured `data` when it is one of ours.
fn describe_rpc_error(
    f: &mut fmt::Formatter<'_>,
    method: &str,
    error: &ErrorObject,
) -> fmt::Result {
    let Some(data) = error.error_data() else {
        if let Some(data) = &error.data
            && describe_reference_data(f, data)?
        {
            return Ok(());
        }
        write!(
            f,
            "{method} failed: {} (code {})",
            error.message, error.code
        )?;
        if let Some(data) = &error.data {
            write!(f, "; data: {}", truncate(&data.to_string(), DATA_EXCERPT))?;
        }
        return Ok(());
    };
    match data {
        ErrorData::UnknownServer {
            server,
            known_servers,
        } => {
            write!(f, "unknown server {server:?}")?;
            if known_servers.is_empty() {
                f.write_str("; no server is configured")?;
            } else {
                write!(f, " (known servers: {})", known_servers.join(", "))?;
            }
            if let Some(guess) = did_you_mean(&server, &known_servers) {
                write!(f, "; did you mean {guess:?}?")?;
            }
            Ok(())
        }
        ErrorData::UnknownTool {
            server,
            tool,
            known_tools,
            tool_count,
            ..
        } => write_unknown_tool(f, &server, &tool, &known_tools, tool_count),
        ErrorData::InvalidArguments {
            server,
            tool,
            errors,
            ..
        } => {
            write!(
                f,
                "the arguments do not match the input schema of {server}/{tool}:"
            )?;
            for argument_error in &errors {
                let path = if argument_error.path.is_empty() {
                    "(the arguments object)"
                } else {
                    argument_error.path.as_str()
                };
                write!(f, "\n  {path}: {}", argument_error.message)?;
            }
            write!(
                f,
                "\nsee `tool-cli {server} {tool}` for its parameters and an example"
            )
        }
        ErrorData::InvalidParams { method, message } => {
            write!(f, "the daemon refused the params of {method}: {message}")
        }
        ErrorData::InvalidSchema {
            server,
            tool,
            message,
        } => write!(
            f,
            "{server}/{tool} cannot be called: its input schema is not a valid JSON Schema \
             ({message}); this is a bug of the MCP server"
        ),
        ErrorData::ServerUnavailable {
            server,
            state,
            last_error,
        } => {
            write!(f, "server {server:?} is not available (state: {state})")?;
            if let Some(last_error) = last_error {
                write!(f, ": {last_error}")?;
            }
            Ok(())
        }
        ErrorData::ServerExited {
            server,
            exit,
            stderr_tail,
        } => {
            write!(
                f,
                "server {server:?} exited while the request was pending ({exit})"
            )?;
            if !stderr_tail.is_empty() {
                f.write_str("; its last stderr lines:")?;
                for line in &stderr_tail {
                    write!(f, "\n  {line}")?;
                }
            }
            Ok(())
        }
        ErrorData::Timeout {
            server,
            tool,
            timeout_ms,
        } => write!(
            f,
            "{server}/{tool} did not finish within {timeout_ms} ms and was cancelled; raise \
             --timeout (at most {MAX_TIMEOUT_MS})"
        ),
        ErrorData::Upstream {
            server,
            code,
            message,
            data,
        } => {
            write!(
                f,
                "server {server:?} answered with an error: {message} (code {code})"
            )?;
            if let Some(data) = data {
                write!(f, "; data: {}", truncate(&data.to_string(), DATA_EXCERPT))?;
            }
            Ok(())
        }
        ErrorData::Busy {
            server,
            in_flight,
            queued,
            retry_after_ms,
        } => write!(
            f,
            "server {server:?} is busy: {in_flight} {} in flight and {queued} queued fill its \
             limit, so the call was not sent; this is transient, retry in {retry_after_ms} ms",
            if in_flight == 1 { "call" } else { "calls" }
        ),
        ErrorData::CircuitOpen {
            server,
            retry_after_ms,
            last_error,
        } => {
            write!(
                f,
                "server {server:?} is failing: its circuit breaker opened after repeated \
                 failures"
            )?;
            if let Some(last_error) = last_error {
                write!(f, " (last error: {})", truncate(&last_error, DATA_EXCERPT))?;
            }
            write!(
                f,
                " and refuses calls without sending them; this is transient, retry in \
                 {retry_after_ms} ms (`tool-cli health` shows the breaker)"
            )
        }
        ErrorData::NotPermitted {
            server,
            tool,
            reason,
        } => {
            let subject = match (server.is_empty(), tool) {
                (_, Some(tool)) => format!("tool {tool:?} of server {server:?}"),
                (false, None) => format!("server {server:?}"),
                (true, None) => method.to_owned(),
            };
            let prefix = format!("{subject} is not permitted");
            // A daemon may already say it all in `reason`; the prefix is not repeated then.
            if reason.starts_with(&prefix) {
                f.write_str(&reason)
            } else {
                write!(f, "{prefix}: {reason}")
            }
        }
        ErrorData::ConfirmationRequired { server, tool } => write!(
            f,
            "tool {tool:?} of server {server:?} is destructive; run it again with --yes to \
             confirm"
        ),
        ErrorData::ResultTooLarge {
            server,
            method,
            bytes,
            limit_bytes,
            hint,
        } => {
            write!(f, "the answer of server {server:?} to {method} was ")?;
            match bytes {
                Some(bytes) => write!(f, "{bytes} bytes, over the {limit_bytes}-byte limit")?,
                None => write!(f, "over the {limit_bytes}-byte limit")?,
            }
            write!(
                f,
                ", so it was dropped; the call ran (it may have changed something) and was not \
                 retried; {hint}"
            )
        }
        ErrorData::AnswerFull {
            method,
            limit_bytes,
        } => write!(
            f,
            "not run: the {method} answer had no room left for this call's result ({limit_bytes} \
             bytes, and what may be spilled, were taken); nothing was sent for it: run it on its \
             own"
        ),
        ErrorData::Internal { message } => write!(
            f,
            "the daemon failed internally: {message}; its log has the details"
        ),
        // `ErrorData` is non-exhaustive: a newer daemon may send kinds we do not know yet.
        _ => write!(
            f,
            "{method} failed: {} (code {})",
            error.message, error.code
        ),
    }
}

/// The data shapes of a tool-cli 1.x bridge, which have no `kind`: `validationErrors` (ajv's
/// `{instancePath, schemaPath, keyword, params, message}`) and `discoveredTools`. Returns
/// whether `data` was one of them (and was written).
fn describe_reference_data(f: &mut fmt::Formatter<'_>, data: &Value) -> Result<bool, fmt::Error> {
    let text = |name: &str| data.get(name).and_then(Value::as_str).unwrap_or("?");
    let names = |member: &str| -> Option<Vec<String>> {
        let list = data.get(member)?.as_array()?;
        Some(
            list.iter()
                .map(|name| match name {
                    Value::String(name) => name.clone(),
                    other => other.to_string(),
                })
                .collect(),
        )
    };
    if let Some(errors) = data.get("validationErrors").and_then(Value::as_array) {
        let (server, tool) = (text("server"), text("tool"));
        write!(
            f,
            "the arguments do not match the input schema of {server}/{tool}:"
        )?;
        for error in errors {
            let path = error
                .get("instancePath")
                .and_then(Value::as_str)
                .filter(|path| !path.is_empty())
                .unwrap_or("(the arguments object)");
            let message = error
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("is invalid");
            write!(f, "\n  {path}: {message}")?;
        }
        write!(
            f,
            "\nsee `tool-cli {server} {tool}` for its parameters and an example"
        )?;
        return Ok(true);
    }
    if let Some(known_tools) = names("discoveredTools") {
        let count = known_tools.len();
        write_unknown_tool(f, text("server"), text("tool"), &known_tools, count)?;
        return Ok(true);
    }
    Ok(false)
}

/// `server "demo" has no tool "x" (its tools: …); did you mean "y"?`
fn write_unknown_tool(
    f: &mut fmt::Formatter<'_>,
    server: &str,
    tool: &str,
    known_tools: &[String],
    tool_count: usize,
) -> fmt::Result {
    if server == "*" {
        // A routed call: no server offers the tool; the names are `server/tool`.
        write!(f, "no server offers a tool {tool:?}")?;
        if !known_tools.is_empty() {
            write!(f, "; did you mean: {}", known_tools.join(", "))?;
        }
        return Ok(());
    }
    write!(f, "server {server:?} has no tool {tool:?}")?;
    if known_tools.is_empty() {
        f.write_str("; it offers no tools")?;
    } else if tool_count > known_tools.len() {
        // The daemon lists only the closest names of a large catalog.
        write!(
            f,
            " (the closest of its {tool_count} tools: {})",
            known_tools.join(", ")
        )?;
    } else {
        write!(f, " (its tools: {})", known_tools.join(", "))?;
    }
    if let Some(guess) = did_you_mean(tool, known_tools) {
        write!(f, "; did you mean {guess:?}?")?;
    }
    Ok(())
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
            "the arguments do not match the input schema of ref/echo:\n  \
             (the arguments object): must have required property 'text'\n  \
             /times: must be integer\n\
             see `tool-cli ref echo` for its parameters and an example"
        );
    }

    #[test]
    fn reference_discovered_tools_read_like_ours() {
        let data = json!({"server": "ref", "tool": "ecko", "discoveredTools": ["echo", "add"]});
        assert_eq!(
            describe(-32602, "Unknown tool", Some(data)),
            "server \"ref\" has no tool \"ecko\" (its tools: echo, add); did you mean \"echo\"?"
        );
    }

    #[test]
    fn ours_beside_the_reference_fields_is_read_as_ours() {
        // Our daemon may add the reference's fields beside its own; `kind` decides.
        let data = json!({"kind": "unknownTool", "server": "demo", "tool": "x",
                          "knownTools": ["sql_query"], "discoveredTools": ["sql_query"]});
        assert_eq!(
            describe(-32602, "unknown tool", Some(data)),
            "server \"demo\" has no tool \"x\" (its tools: sql_query)"
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
