//! Every way a `tool-cli` run can fail, each with its documented exit code.
//!
//! Scripts and agents branch on the exit code, so each failure maps to exactly one code (see
//! [`exit`]) and the mapping lives here, in [`Error::exit_code`], not scattered through the code.
//! Messages are lowercase, without a trailing period, and say what was wrong and what would be
//! right: for a JSON-RPC error the structured `data` of the daemon (unknown names, failing
//! argument paths, a server's last stderr lines) is turned into that advice.

use std::fmt;

use tool_cli_protocol::{ErrorData, ErrorObject, MAX_TIMEOUT_MS, code};

use crate::render::truncate;

/// Exit codes, as documented in `--help`.
pub(crate) mod exit {
    /// Success.
    pub(crate) const OK: i32 = 0;
    /// Any other error, including errors the MCP server itself reported, a server that is busy
    /// (`-32004`) or whose circuit breaker is open (`-32005`), and `tool-cli health` finding an
    /// enabled server that is not ready. Busy and open-breaker errors are transient, yet they
    /// get no code of their own: the wait before a retry is in their message, and a code of
    /// their own would change the meaning of 1 for the scripts already branching on it.
    pub(crate) const OTHER: i32 = 1;
    /// Bad command line, or tool arguments that are not a JSON object.
    pub(crate) const USAGE: i32 = 2;
    /// The daemon cannot be reached: no port or token, connection refused, connect timeout.
    pub(crate) const UNREACHABLE: i32 = 3;
    /// The daemon refused the bearer token (HTTP 401 or 403).
    pub(crate) const AUTH: i32 = 4;
    /// JSON-RPC invalid params: unknown server or tool, arguments failing the input schema.
    pub(crate) const INVALID_PARAMS: i32 = 5;
    /// The tool ran and returned `isError: true`.
    pub(crate) const TOOL_ERROR: i32 = 6;
    /// No answer in time, on our side or the daemon's (`-32002`).
    pub(crate) const TIMEOUT: i32 = 7;
    /// The listener did not prove it holds the token (`POST /identity`), so the token was not
    /// sent: a stale `TOOL_CLI_PORT` or `TOOL_CLI_SOCKET`, another program there, or a daemon
    /// that does not know this token. Distinct from 3 and 4 because nothing should retry it
    /// blindly: the address itself is suspect.
    pub(crate) const IDENTITY: i32 = 8;
    /// Forbidden (`-32006`): the token's scope or the daemon's policy does not allow this, or a
    /// destructive tool needs `--yes`.
    pub(crate) const FORBIDDEN: i32 = 9;
}

/// How to get a daemon, appended to every "cannot reach" message.
const START_HINT: &str =
    "start one with `eval \"$(tool-cli-daemon --print-env &)\"` or run `tool-cli-daemon`";

/// A failed run.
#[derive(Debug)]
#[non_exhaustive]
pub(crate) enum Error {
    /// The command line is wrong; the message says how.
    Usage(String),
    /// No daemon address or token could be found.
    NoDaemon(String),
    /// The TCP connection failed, e.g. refused.
    Connect { address: String, reason: String },
    /// The TCP connection did not complete in time.
    ConnectTimeout { address: String, timeout_ms: u64 },
    /// The listener did not prove it holds the token, which was therefore not sent.
    /// `address` is `host:port` or the socket's path; `reason` says what the answer was.
    IdentityUnproven {
        address: String,
        unix_socket: bool,
        reason: String,
    },
    /// HTTP 401 or 403.
    AuthRefused { status: u16 },
    /// Any other unexpected HTTP status.
    Http { status: u16, body: String },
    /// The connection broke during a request.
    Transport(String),
    /// The daemon's answer is not what the protocol promises.
    Protocol(String),
    /// The peer is not a tool-cli bridge of major version 1.
    IncompatibleBridge { name: String, major: u64 },
    /// No HTTP answer within the request timeout.
    Timeout { method: String, timeout_ms: u64 },
    /// The daemon answered with a JSON-RPC error.
    /// Boxed: the error object is large and this enum travels in every `Result`.
    Rpc {
        method: String,
        error: Box<ErrorObject>,
    },
    /// The tool ran and reported an error; `text` is its text content.
    ToolReported {
        server: String,
        tool: String,
        text: String,
    },
    /// `tool-cli health` found enabled servers that are not ready: `(name, state)` of each, and
    /// how many servers are enabled. The table has already been printed.
    Unhealthy {
        unhealthy: Vec<(String, String)>,
        enabled: usize,
    },
    /// Reading or writing a local file failed.
    Io {
        action: String,
        source: std::io::Error,
    },
    /// A failure that fits nowhere else; the message says what happened.
    Other(String),
}

impl Error {
    /// The process exit code for this error.
    pub(crate) fn exit_code(&self) -> i32 {
        match self {
            Error::Usage(_) => exit::USAGE,
            Error::NoDaemon(_) | Error::Connect { .. } | Error::ConnectTimeout { .. } => {
                exit::UNREACHABLE
            }
            Error::AuthRefused { .. } => exit::AUTH,
            Error::IdentityUnproven { .. } => exit::IDENTITY,
            Error::Timeout { .. } => exit::TIMEOUT,
            Error::Rpc { error, .. } => match error.code {
                code::INVALID_PARAMS => exit::INVALID_PARAMS,
                code::TIMEOUT => exit::TIMEOUT,
                code::FORBIDDEN => exit::FORBIDDEN,
                // Transient overload or failure of one server: "other", with the retry hint in
                // the message (see `exit::OTHER` for why there is no code of their own).
                code::BUSY | code::CIRCUIT_OPEN => exit::OTHER,
                _ => exit::OTHER,
            },
            Error::ToolReported { .. } => exit::TOOL_ERROR,
            Error::Unhealthy { .. }
            | Error::Http { .. }
            | Error::Transport(_)
            | Error::Protocol(_)
            | Error::IncompatibleBridge { .. }
            | Error::Io { .. }
            | Error::Other(_) => exit::OTHER,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Usage(message) | Error::Other(message) => f.write_str(message),
            Error::NoDaemon(message) => write!(f, "{message}; {START_HINT}"),
            Error::Connect { address, reason } => write!(
                f,
                "cannot reach the tool-cli daemon at {address} ({reason}); is it running? \
                 {START_HINT}"
            ),
            Error::ConnectTimeout {
                address,
                timeout_ms,
            } => write!(
                f,
                "cannot reach the tool-cli daemon at {address}: no connection within \
                 {timeout_ms} ms; check TOOL_CLI_HOST and TOOL_CLI_PORT, or {START_HINT}"
            ),
            Error::IdentityUnproven {
                address,
                unix_socket,
                reason,
            } => {
                let (variable, place) = if *unix_socket {
                    ("TOOL_CLI_SOCKET", "socket")
                } else {
                    ("TOOL_CLI_PORT", "port")
                };
                write!(
                    f,
                    "the listener at {address} did not prove it holds the token, so the token \
                     was not sent (a stale {variable}, or another program on that {place}?); \
                     {reason}"
                )
            }
            Error::AuthRefused { status } => write!(
                f,
                "the daemon refused the token (HTTP {status}); is TOOL_CLI_TOKEN from this \
                 daemon? `eval \"$(tool-cli-daemon --print-env &)\"` prints a matching pair"
            ),
            Error::Http { status, body } => {
                write!(f, "the daemon answered HTTP {status}")?;
                if !body.trim().is_empty() {
                    write!(f, ": {}", body.trim())?;
                }
                Ok(())
            }
            Error::Transport(message) => write!(
                f,
                "the connection to the daemon failed: {message}; did the daemon stop?"
            ),
            Error::Protocol(message) => write!(
                f,
                "the daemon's answer does not follow the tool-cli bridge protocol: {message}"
            ),
            Error::IncompatibleBridge { name, major } => write!(
                f,
                "the daemon speaks {name:?} major version {major}, but this tool-cli needs \
                 \"tool-cli-bridge\" major version 1; use a matching tool-cli or daemon"
            ),
            Error::Timeout { method, timeout_ms } => write!(
                f,
                "no answer from the daemon to {method} within {timeout_ms} ms; raise --timeout \
                 (at most {MAX_TIMEOUT_MS})"
            ),
            Error::Rpc { method, error } => describe_rpc_error(f, method, error),
            Error::ToolReported { server, tool, text } => {
                write!(f, "{server}/{tool} reported an error")?;
                if text.trim().is_empty() {
                    f.write_str(" (without a message)")
                } else {
                    write!(f, ":\n{}", text.trim_end())
                }
            }
            Error::Unhealthy { unhealthy, enabled } => {
                let listed: Vec<String> = unhealthy
                    .iter()
                    .map(|(server, state)| format!("{server} ({state})"))
                    .collect();
                write!(
                    f,
                    "{} of {enabled} enabled servers {} not ready: {}",
                    unhealthy.len(),
                    if unhealthy.len() == 1 { "is" } else { "are" },
                    listed.join(", ")
                )
            }
            Error::Io { action, source } => write!(f, "cannot {action}: {source}"),
        }
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
        } => {
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
            if let Some(guess) = did_you_mean(&tool, &known_tools) {
                write!(f, "; did you mean {guess:?}?")?;
            }
            Ok(())
        }
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

    fn rpc(code: i32, data: serde_json::Value) -> Error {
        Error::Rpc {
            method: "callTool".into(),
            error: Box::new(ErrorObject {
                code,
                message: "message from the daemon".into(),
                data: Some(data),
            }),
        }
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
    fn unknown_tool_lists_known_tools_and_suggests() {
        let error = rpc(
            code::INVALID_PARAMS,
            json!({"kind": "unknownTool", "server": "demo", "tool": "sql_qurey",
                   "knownTools": ["sql_query", "describe_schema"]}),
        );
        assert_eq!(error.exit_code(), exit::INVALID_PARAMS);
        assert_eq!(
            error.to_string(),
            "server \"demo\" has no tool \"sql_qurey\" (its tools: sql_query, \
             describe_schema); did you mean \"sql_query\"?"
        );
    }

    #[test]
    fn unknown_server_lists_known_servers() {
        let error = rpc(
            code::INVALID_PARAMS,
            json!({"kind": "unknownServer", "server": "github", "knownServers": ["demo"]}),
        );
        assert_eq!(error.exit_code(), exit::INVALID_PARAMS);
        assert_eq!(
            error.to_string(),
            "unknown server \"github\" (known servers: demo)"
        );
    }

    #[test]
    fn invalid_arguments_list_each_path() {
        let error = rpc(
            code::INVALID_PARAMS,
            json!({"kind": "invalidArguments", "server": "demo", "tool": "sql_query", "errors": [
                {"path": "", "schemaPath": "/required", "message": "\"query\" is a required property"},
                {"path": "/limit", "schemaPath": "/properties/limit/type", "message": "\"x\" is not of type \"integer\""},
            ]}),
        );
        assert_eq!(error.exit_code(), exit::INVALID_PARAMS);
        assert_eq!(
            error.to_string(),
            "the arguments do not match the input schema of demo/sql_query:\n  \
             (the arguments object): \"query\" is a required property\n  \
             /limit: \"x\" is not of type \"integer\"\n\
             see `tool-cli demo sql_query` for its parameters and an example"
        );
    }

    #[test]
    fn daemon_timeout_exits_with_the_timeout_code() {
        let error = rpc(
            code::TIMEOUT,
            json!({"kind": "timeout", "server": "demo", "tool": "sql_query", "timeoutMs": 500}),
        );
        assert_eq!(error.exit_code(), exit::TIMEOUT);
        assert!(error.to_string().contains("within 500 ms"));
    }

    #[test]
    fn server_exited_shows_its_stderr_tail() {
        let error = rpc(
            code::SERVER_UNAVAILABLE,
            json!({"kind": "serverExited", "server": "demo", "exit": "exit code 1",
                   "stderrTail": ["panic: boom", "bye"]}),
        );
        assert_eq!(error.exit_code(), exit::OTHER);
        assert_eq!(
            error.to_string(),
            "server \"demo\" exited while the request was pending (exit code 1); its last \
             stderr lines:\n  panic: boom\n  bye"
        );
    }

    #[test]
    fn server_unavailable_shows_state_and_last_error() {
        let error = rpc(
            code::SERVER_UNAVAILABLE,
            json!({"kind": "serverUnavailable", "server": "gh", "state": "failed",
                   "lastError": "spawn npx: not found"}),
        );
        assert_eq!(
            error.to_string(),
            "server \"gh\" is not available (state: failed): spawn npx: not found"
        );
    }

    #[test]
    fn busy_names_the_load_and_when_to_retry() {
        let error = rpc(
            code::BUSY,
            json!({"kind": "busy", "server": "demo", "inFlight": 4, "queued": 16,
                   "retryAfterMs": 250}),
        );
        assert_eq!(error.exit_code(), exit::OTHER);
        assert_eq!(
            error.to_string(),
            "server \"demo\" is busy: 4 calls in flight and 16 queued fill its limit, so the \
             call was not sent; this is transient, retry in 250 ms"
        );
    }

    #[test]
    fn circuit_open_names_the_last_error_and_when_to_retry() {
        let error = rpc(
            code::CIRCUIT_OPEN,
            json!({"kind": "circuitOpen", "server": "gh", "retryAfterMs": 12000,
                   "lastError": "connection reset"}),
        );
        assert_eq!(error.exit_code(), exit::OTHER);
        assert_eq!(
            error.to_string(),
            "server \"gh\" is failing: its circuit breaker opened after repeated failures \
             (last error: connection reset) and refuses calls without sending them; this is \
             transient, retry in 12000 ms (`tool-cli health` shows the breaker)"
        );
        let without_last_error = rpc(
            code::CIRCUIT_OPEN,
            json!({"kind": "circuitOpen", "server": "gh", "retryAfterMs": 5}),
        );
        let message = without_last_error.to_string();
        assert!(
            message.contains("repeated failures and refuses calls"),
            "{message}"
        );
        assert!(message.contains("retry in 5 ms"), "{message}");
    }

    #[test]
    fn unhealthy_lists_each_server_with_its_state() {
        let error = Error::Unhealthy {
            unhealthy: vec![
                ("gh".into(), "down".into()),
                ("slow".into(), "circuitOpen".into()),
            ],
            enabled: 3,
        };
        assert_eq!(error.exit_code(), exit::OTHER);
        assert_eq!(
            error.to_string(),
            "2 of 3 enabled servers are not ready: gh (down), slow (circuitOpen)"
        );
    }

    #[test]
    fn unknown_data_falls_back_to_message_and_code() {
        let error = rpc(-32099, json!({"kind": "somethingNew", "x": 1}));
        assert_eq!(error.exit_code(), exit::OTHER);
        let message = error.to_string();
        assert!(
            message.contains("message from the daemon (code -32099)"),
            "{message}"
        );
    }

    #[test]
    fn transport_level_exit_codes() {
        assert_eq!(Error::NoDaemon("x".into()).exit_code(), exit::UNREACHABLE);
        assert_eq!(Error::AuthRefused { status: 401 }.exit_code(), exit::AUTH);
        assert_eq!(
            Error::Timeout {
                method: "callTool".into(),
                timeout_ms: 1
            }
            .exit_code(),
            exit::TIMEOUT
        );
        assert!(
            Error::NoDaemon("no daemon found".into())
                .to_string()
                .contains("tool-cli-daemon --print-env")
        );
    }

    #[test]
    fn confirmation_required_says_to_add_yes() {
        let error = rpc(
            code::FORBIDDEN,
            json!({"kind": "confirmationRequired", "server": "db", "tool": "drop_table"}),
        );
        assert_eq!(error.exit_code(), exit::FORBIDDEN);
        assert_eq!(
            error.to_string(),
            "tool \"drop_table\" of server \"db\" is destructive; run it again with --yes to \
             confirm"
        );
    }

    #[test]
    fn not_permitted_gives_its_reason() {
        let error = rpc(
            code::FORBIDDEN,
            json!({"kind": "notPermitted", "server": "fs", "tool": "write_file",
                   "reason": "the token allows read-only tools only"}),
        );
        assert_eq!(error.exit_code(), exit::FORBIDDEN);
        assert_eq!(
            error.to_string(),
            "tool \"write_file\" of server \"fs\" is not permitted: the token allows \
             read-only tools only"
        );
        let server_only = rpc(
            code::FORBIDDEN,
            json!({"kind": "notPermitted", "server": "gh", "reason": "not in the token's servers"}),
        );
        assert_eq!(
            server_only.to_string(),
            "server \"gh\" is not permitted: not in the token's servers"
        );
        let no_server = rpc(
            code::FORBIDDEN,
            json!({"kind": "notPermitted", "server": "",
                   "reason": "only the owner token may mint tokens"}),
        );
        assert_eq!(
            no_server.to_string(),
            "callTool is not permitted: only the owner token may mint tokens"
        );
        // A reason that already says it all is not prefixed twice.
        let whole = rpc(
            code::FORBIDDEN,
            json!({"kind": "notPermitted", "server": "demo", "tool": "sql_query",
                   "reason": "tool \"sql_query\" of server \"demo\" is not permitted: scope"}),
        );
        assert_eq!(
            whole.to_string(),
            "tool \"sql_query\" of server \"demo\" is not permitted: scope"
        );
        // A forbidden error of a kind we do not know still exits 9.
        assert_eq!(
            rpc(code::FORBIDDEN, json!({"kind": "somethingNew"})).exit_code(),
            exit::FORBIDDEN
        );
    }

    #[test]
    fn unproven_identity_exits_eight_and_names_the_variable() {
        let tcp = Error::IdentityUnproven {
            address: "127.0.0.1:4567".into(),
            unix_socket: false,
            reason: "it answered HTTP 404".into(),
        };
        assert_eq!(tcp.exit_code(), exit::IDENTITY);
        assert_eq!(
            tcp.to_string(),
            "the listener at 127.0.0.1:4567 did not prove it holds the token, so the token was \
             not sent (a stale TOOL_CLI_PORT, or another program on that port?); it answered \
             HTTP 404"
        );
        let unix = Error::IdentityUnproven {
            address: "/run/d.sock".into(),
            unix_socket: true,
            reason: "its proof is wrong".into(),
        };
        assert_eq!(unix.exit_code(), exit::IDENTITY);
        assert!(
            unix.to_string()
                .contains("(a stale TOOL_CLI_SOCKET, or another program on that socket?)"),
            "{unix}"
        );
    }
}
