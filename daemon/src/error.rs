//! The daemon's error type: every way a request can fail, with what the caller needs to fix it.
//!
//! Handlers and the pool return [`Error`]; only the RPC layer (`rpc.rs`) turns it into a
//! JSON-RPC error object, through [`Error::to_data`], so codes and `data` shapes are decided in
//! one place and defined in `tool-cli-protocol`.

use tool_cli_protocol::{ArgumentError, ErrorData};

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
    #[error(
        "server \"{server}\" has no tool \"{tool}\"; its tools: {}",
        list_preview(known_tools)
    )]
    UnknownTool {
        /// The server.
        server: String,
        /// The tool asked for.
        tool: String,
        /// Every tool of the server.
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
        errors: Vec<ArgumentError>,
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

fn list_preview(names: &[String]) -> String {
    const SHOWN: usize = 20;
    if names.len() <= SHOWN {
        names.join(", ")
    } else {
        format!(
            "{}, … ({} more)",
            names[..SHOWN].join(", "),
            names.len() - SHOWN
        )
    }
}

fn describe_errors(errors: &[ArgumentError]) -> String {
    errors
        .iter()
        .map(|e| {
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
            } => ErrorData::UnknownTool {
                server: server.clone(),
                tool: tool.clone(),
                known_tools: known_tools.clone(),
            },
            Error::InvalidArguments {
                server,
                tool,
                errors,
            } => ErrorData::InvalidArguments {
                server: server.clone(),
                tool: tool.clone(),
                errors: errors.clone(),
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
