//! The daemon's error type: every way a request can fail, with what the caller needs to fix it.
//!
//! Handlers and the pool return [`Error`]; only the RPC layer (`rpc.rs`) turns it into a
//! JSON-RPC error object, through [`Error::to_data`], so codes and `data` shapes are decided in
//! one place and defined in `tool-cli-protocol`.

use tool_cli_protocol::error::MAX_LISTED_TOOLS;
use tool_cli_protocol::{ArgumentError, ErrorData, ValidationError};

/// A failed request.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The params are missing or ill-typed.
    #[error("invalid params for {method}: {message}")]
    InvalidParams {
        /// The method.
        method: String,
        /// What was wrong.
        message: String,
    },
    /// No server of that name.
    #[error("unknown server \"{server}\"; known servers: {}", known_servers.join(", "))]
    UnknownServer {
        /// The name asked for.
        server: String,
        /// Every configured server.
        known_servers: Vec<String>,
    },
    /// The server has no such tool.
    #[error("{}", describe_unknown_tool(server, tool, known_tools))]
    UnknownTool {
        /// The server.
        server: String,
        /// The tool asked for.
        tool: String,
        /// Every tool of the server (the wire gets the closest few).
        known_tools: Vec<String>,
    },
    /// Arguments failed the tool's input schema.
    #[error(
        "arguments for {server}/{tool} do not match its input schema: {}",
        describe_errors(errors)
    )]
    InvalidArguments {
        /// The server.
        server: String,
        /// The tool.
        tool: String,
        /// Each failure.
        errors: Vec<ArgumentViolation>,
    },
    /// The tool's own schema cannot be compiled.
    #[error("the input schema of {server}/{tool} is not a valid JSON Schema: {message}")]
    InvalidSchema {
        /// The server.
        server: String,
        /// The tool.
        tool: String,
        /// Why.
        message: String,
    },
    /// The server is not connected.
    #[error("server \"{server}\" is {state}{}", last_error.as_ref().map(|e| format!(": {e}")).unwrap_or_default())]
    ServerUnavailable {
        /// The server.
        server: String,
        /// Its state name.
        state: &'static str,
        /// Why.
        last_error: Option<String>,
    },
    /// The server went away while the request was pending.
    #[error("server \"{server}\" exited while the request was pending ({exit})")]
    ServerExited {
        /// The server.
        server: String,
        /// How it ended.
        exit: String,
        /// Its last stderr lines.
        stderr_tail: Vec<String>,
    },
    /// The request timed out and was cancelled upstream.
    #[error("{server}/{tool} did not answer within {timeout_ms} ms; the call was cancelled")]
    Timeout {
        /// The server.
        server: String,
        /// The tool or method.
        tool: String,
        /// The timeout.
        timeout_ms: u64,
    },
    /// The server answered with an error.
    #[error("server \"{server}\" returned an error: {message} (code {code})")]
    Upstream {
        /// The server.
        server: String,
        /// Its code.
        code: i64,
        /// Its message.
        message: String,
        /// Its data (boxed: it is rare and would make every `Result` larger).
        data: Option<Box<serde_json::Value>>,
    },
    /// The server's concurrency limit and queue are full.
    #[error(
        "server \"{server}\" is busy: {in_flight} calls in flight and {queued} waiting; retry in about {retry_after_ms} ms"
    )]
    Busy {
        /// The server.
        server: String,
        /// Calls executing.
        in_flight: usize,
        /// Calls waiting.
        queued: usize,
        /// Suggested wait.
        retry_after_ms: u64,
    },
    /// The server's circuit breaker is open.
    #[error("server \"{server}\" is failing and its circuit breaker is open; nothing was sent; retry in {retry_after_ms} ms{}", last_error.as_ref().map(|e| format!(" (last failure: {e})")).unwrap_or_default())]
    CircuitOpen {
        /// The server.
        server: String,
        /// When a probe will be allowed.
        retry_after_ms: u64,
        /// The failure that opened it.
        last_error: Option<String>,
    },
    /// The token's scope or the config's policy forbids it.
    #[error("{}", describe_refusal(server, tool.as_deref(), reason))]
    NotPermitted {
        /// The server.
        server: String,
        /// The tool, when the refusal is about one.
        tool: Option<String>,
        /// Why, and what would be allowed.
        reason: String,
    },
    /// A destructive tool called without `"confirm": true`.
    #[error("{}", crate::policy::confirmation_message(server, tool))]
    ConfirmationRequired {
        /// The server.
        server: String,
        /// The tool.
        tool: String,
    },
    /// Something failed inside the daemon.
    #[error("internal error: {0}")]
    Internal(String),
    /// The daemon is shutting down and the request outlived the grace period.
    #[error(
        "the daemon is shutting down and this request did not finish within its {grace_ms} ms \
         grace period; it was cancelled (send it again once a daemon is running)"
    )]
    ShuttingDown {
        /// The grace period.
        grace_ms: u64,
    },
    /// An answer too large to send.
    #[error(
        "the answer to {method} is {bytes} bytes, over the {limit_bytes} bytes it may take \
         (--max-response-bytes{}); nothing was changed: send the request alone, or raise the \
         limit",
        if *in_batch { ", shared by the requests of a batch" } else { "" }
    )]
    ResponseTooLarge {
        /// The method.
        method: String,
        /// The encoded result's size.
        bytes: usize,
        /// What it could take.
        limit_bytes: usize,
        /// Whether the limit was a batch's share.
        in_batch: bool,
    },
}

/// One way arguments fail a schema, in both formats the wire carries: ours and the reference
/// bridge's (ajv's, which splits some of ours into several entries).
#[derive(Debug, Clone, PartialEq)]
pub struct ArgumentViolation {
    /// Ours.
    pub error: ArgumentError,
    /// The reference's entries for the same failure (none for our "… and N more" summary).
    pub reference: Vec<ValidationError>,
}

fn describe_refusal(server: &str, tool: Option<&str>, reason: &str) -> String {
    match (server, tool) {
        (server, Some(tool)) => {
            format!("tool \"{tool}\" of server \"{server}\" is not permitted: {reason}")
        }
        ("", None) => format!("not permitted: {reason}"),
        (server, None) => format!("server \"{server}\" is not permitted: {reason}"),
    }
}

fn describe_unknown_tool(server: &str, tool: &str, known_tools: &[String]) -> String {
    if known_tools.is_empty() {
        return format!("server \"{server}\" has no tool \"{tool}\"; it offers none");
    }
    let closest = closest_names(tool, known_tools, MAX_LISTED_TOOLS);
    let mut message = format!("server \"{server}\" has no tool \"{tool}\"; ");
    if closest.len() < known_tools.len() {
        message.push_str(&format!(
            "the closest of its {} tools: {}",
            known_tools.len(),
            closest.join(", ")
        ));
    } else {
        message.push_str(&format!("its tools: {}", closest.join(", ")));
    }
    message
}

/// At most `limit` of `names`, closest to `wanted` first (edit distance, ties in list order).
/// A list of every name is what the caller needs when there are few; when there are thousands
/// the near misses are the useful part, and the size of an error stays bounded.
pub(crate) fn closest_names(wanted: &str, names: &[String], limit: usize) -> Vec<String> {
    if limit == 0 {
        return Vec::new();
    }
    // (distance, position): unique, so sorting them breaks ties by the server's order.
    let mut scored: Vec<(usize, usize)> = names
        .iter()
        .enumerate()
        .map(|(index, name)| (edit_distance(wanted, name), index))
        .collect();
    if scored.len() > limit {
        scored.select_nth_unstable(limit - 1);
        scored.truncate(limit);
    }
    scored.sort_unstable();
    scored
        .into_iter()
        .map(|(_, index)| names[index].clone())
        .collect()
}

/// Levenshtein distance over characters. Names are short; the first 128 characters decide, so
/// a hostile server's megabyte-long tool name costs no more than a long one.
fn edit_distance(a: &str, b: &str) -> usize {
    const CONSIDERED: usize = 128;
    let a: Vec<char> = a.chars().take(CONSIDERED).collect();
    let b: Vec<char> = b.chars().take(CONSIDERED).collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    let mut current = vec![0; b.len() + 1];
    for (i, ca) in a.iter().enumerate() {
        current[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitution = previous[j] + usize::from(ca != cb);
            current[j + 1] = substitution.min(previous[j + 1] + 1).min(current[j] + 1);
        }
        std::mem::swap(&mut previous, &mut current);
    }
    previous[b.len()]
}

fn describe_errors(errors: &[ArgumentViolation]) -> String {
    errors
        .iter()
        .map(|violation| {
            let e = &violation.error;
            let path = if e.path.is_empty() { "(root)" } else { &e.path };
            format!("{path}: {}", e.message)
        })
        .collect::<Vec<_>>()
        .join("; ")
}

impl Error {
    /// The structured `data` for the wire.
    pub fn to_data(&self) -> ErrorData {
        match self {
            Error::InvalidParams { method, message } => ErrorData::InvalidParams {
                method: method.clone(),
                message: message.clone(),
            },
            Error::UnknownServer {
                server,
                known_servers,
            } => ErrorData::UnknownServer {
                server: server.clone(),
                known_servers: known_servers.clone(),
            },
            Error::UnknownTool {
                server,
                tool,
                known_tools,
            } => {
                let closest = closest_names(tool, known_tools, MAX_LISTED_TOOLS);
                ErrorData::UnknownTool {
                    server: server.clone(),
                    tool: tool.clone(),
                    known_tools: closest.clone(),
                    discovered_tools: closest,
                    tool_count: known_tools.len(),
                }
            }
            Error::InvalidArguments {
                server,
                tool,
                errors,
            } => ErrorData::InvalidArguments {
                server: server.clone(),
                tool: tool.clone(),
                errors: errors.iter().map(|v| v.error.clone()).collect(),
                validation_errors: errors
                    .iter()
                    .flat_map(|v| v.reference.iter().cloned())
                    .collect(),
            },
            Error::InvalidSchema {
                server,
                tool,
                message,
            } => ErrorData::InvalidSchema {
                server: server.clone(),
                tool: tool.clone(),
                message: message.clone(),
            },
            Error::ServerUnavailable {
                server,
                state,
                last_error,
            } => ErrorData::ServerUnavailable {
                server: server.clone(),
                state: (*state).to_owned(),
                last_error: last_error.clone(),
            },
            Error::ServerExited {
                server,
                exit,
                stderr_tail,
            } => ErrorData::ServerExited {
                server: server.clone(),
                exit: exit.clone(),
                stderr_tail: stderr_tail.clone(),
            },
            Error::Timeout {
                server,
                tool,
                timeout_ms,
            } => ErrorData::Timeout {
                server: server.clone(),
                tool: tool.clone(),
                timeout_ms: *timeout_ms,
            },
            Error::Upstream {
                server,
                code,
                message,
                data,
            } => ErrorData::Upstream {
                server: server.clone(),
                code: *code,
                message: message.clone(),
                data: data.as_deref().cloned(),
            },
            Error::Busy {
                server,
                in_flight,
                queued,
                retry_after_ms,
            } => ErrorData::Busy {
                server: server.clone(),
                in_flight: *in_flight,
                queued: *queued,
                retry_after_ms: *retry_after_ms,
            },
            Error::CircuitOpen {
                server,
                retry_after_ms,
                last_error,
            } => ErrorData::CircuitOpen {
                server: server.clone(),
                retry_after_ms: *retry_after_ms,
                last_error: last_error.clone(),
            },
            Error::NotPermitted {
                server,
                tool,
                reason,
            } => ErrorData::NotPermitted {
                server: server.clone(),
                tool: tool.clone(),
                reason: reason.clone(),
            },
            Error::ConfirmationRequired { server, tool } => ErrorData::ConfirmationRequired {
                server: server.clone(),
                tool: tool.clone(),
            },
            Error::Internal(message) => ErrorData::Internal {
                message: message.clone(),
            },
            Error::ShuttingDown { grace_ms } => ErrorData::ShuttingDown {
                grace_ms: *grace_ms,
            },
            Error::ResponseTooLarge {
                method,
                bytes,
                limit_bytes,
                ..
            } => ErrorData::ResponseTooLarge {
                method: method.clone(),
                bytes: *bytes,
                limit_bytes: *limit_bytes,
            },
        }
    }
}

impl From<crate::policy::Denial> for Error {
    fn from(denial: crate::policy::Denial) -> Error {
        use crate::policy::Denial;
        let reason = denial.to_string();
        match denial {
            Denial::ConfirmationRequired { server, tool } => {
                Error::ConfirmationRequired { server, tool }
            }
            Denial::ServerNotPermitted { server, scope } => Error::NotPermitted {
                server,
                tool: None,
                reason: format!(
                    "this token's scope ({scope}) does not include it; use a token whose scope \
                     does"
                ),
            },
            Denial::ToolNotPermitted {
                server,
                tool,
                reason,
            } => Error::NotPermitted {
                server,
                tool: Some(tool),
                reason,
            },
            Denial::ScopeExpired { .. } => Error::NotPermitted {
                server: String::new(),
                tool: None,
                reason,
            },
            // `Denial` is non-exhaustive: a new kind of refusal is still a refusal.
            #[allow(unreachable_patterns)]
            _ => Error::NotPermitted {
                server: String::new(),
                tool: None,
                reason,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|name| (*name).to_owned()).collect()
    }

    #[test]
    fn edit_distance_counts_insertions_deletions_and_substitutions() {
        assert_eq!(edit_distance("", ""), 0);
        assert_eq!(edit_distance("echo", "echo"), 0);
        assert_eq!(edit_distance("echo", "ecko"), 1);
        assert_eq!(edit_distance("echo", "eco"), 1);
        assert_eq!(edit_distance("echo", "echoes"), 2);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("é", "e"), 1, "characters, not bytes");
    }

    #[test]
    fn closest_names_are_capped_and_nearest_first() {
        let few = names(&["sql_query", "describe_schema"]);
        assert_eq!(
            closest_names("describe", &few, 10),
            names(&["describe_schema", "sql_query"])
        );
        let many: Vec<String> = (0..10_000).map(|i| format!("tool_{i}")).collect();
        let closest = closest_names("tool_42", &many, 10);
        assert_eq!(closest.len(), 10);
        assert_eq!(closest[0], "tool_42");
        // Ties keep the server's order.
        assert_eq!(
            closest_names("x", &names(&["b", "a", "c"]), 2),
            names(&["b", "a"])
        );
    }

    #[test]
    fn an_unknown_tool_among_thousands_stays_small() {
        let known_tools: Vec<String> = (0..10_000).map(|i| format!("extra_{i}")).collect();
        let error = Error::UnknownTool {
            server: "big".into(),
            tool: "extra_77x".into(),
            known_tools,
        };
        let message = error.to_string();
        assert!(message.contains("closest of its 10000 tools"), "{message}");
        assert!(message.len() < 400, "{message}");
        let ErrorData::UnknownTool {
            known_tools,
            discovered_tools,
            tool_count,
            ..
        } = error.to_data()
        else {
            panic!("unknownTool data");
        };
        assert_eq!(tool_count, 10_000);
        assert_eq!(known_tools.len(), MAX_LISTED_TOOLS);
        assert_eq!(known_tools[0], "extra_77");
        assert_eq!(discovered_tools, known_tools);
    }
}
