//! Error codes and the structured `data` of every error the daemon returns.
//!
//! Standard JSON-RPC codes are used where one fits (an unknown server, tool or invalid arguments
//! are all `-32602`, as the reference protocol has it); failures of an upstream MCP server use the
//! implementation-defined range `-32000..=-32099`. The `data` member always carries an
//! [`ErrorData`], tagged by `kind`, so a program can tell the cases apart without parsing messages.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// JSON-RPC error codes.
pub mod code {
    /// The request body is not valid JSON.
    pub const PARSE_ERROR: i32 = -32700;
    /// The body is JSON but not a valid JSON-RPC request.
    pub const INVALID_REQUEST: i32 = -32600;
    /// No such method.
    pub const METHOD_NOT_FOUND: i32 = -32601;
    /// Missing or ill-typed params, unknown server or tool, or arguments that fail the tool's schema.
    pub const INVALID_PARAMS: i32 = -32602;
    /// A fault inside the daemon, or a tool whose discovered schema cannot be compiled.
    pub const INTERNAL_ERROR: i32 = -32603;
    /// The MCP server is not connected (failed to start, exited, or still connecting).
    pub const SERVER_UNAVAILABLE: i32 = -32001;
    /// The call did not finish within its timeout; the MCP server was sent a cancellation.
    pub const TIMEOUT: i32 = -32002;
    /// The MCP server answered with a JSON-RPC error of its own, or with an answer the daemon
    /// could not accept (malformed, or too large to pass on).
    pub const UPSTREAM_ERROR: i32 = -32003;
    /// The server's concurrency limit and wait queue are full; retry later.
    pub const BUSY: i32 = -32004;
    /// The server's circuit breaker is open after repeated failures; retry after the cooldown.
    pub const CIRCUIT_OPEN: i32 = -32005;
    /// The token's scope or the config's policy forbids this, or it needs confirmation.
    pub const FORBIDDEN: i32 = -32006;
    /// A guard of the caller's session refused the call before any work: the same failing call
    /// repeated (a loop), or the session's budget of calls or time is spent.
    pub const GUARD_REFUSED: i32 = -32009;
    /// The daemon is shutting down and the request did not finish within the grace period; it
    /// was cancelled. Another daemon may serve it.
    pub const SHUTTING_DOWN: i32 = -32007;
    /// The answer is larger than the daemon sends in one response (or, in a batch, than each
    /// request's share of it), or, for one call of a `callMany`, no room was left for its answer
    /// so it was not sent; either way nothing that changes anything had run. Ask again alone.
    pub const RESPONSE_TOO_LARGE: i32 = -32008;
    /// Signing in to a remote server over OAuth 2.1 failed at one step (discovery, registration,
    /// authorization, token exchange or refresh).
    pub const AUTH_FAILED: i32 = -32010;
    /// The caller went away (closed its connection: Ctrl-C, a killed client) before the answer,
    /// and the call was cancelled. Never sent, since no one is left to read it: it is the code
    /// of such a call's `error` in its trace line.
    pub const CANCELLED: i32 = -32011;
    /// Pinning held the tool back: it changed (or appeared) since its server was pinned, or the
    /// pin store cannot be trusted. Nothing was sent; a person reviews and approves it.
    pub const PIN_REFUSED: i32 = -32012;
}

/// Most tool names listed in an `unknownTool` error.
pub const MAX_LISTED_TOOLS: usize = 10;

/// The structured `data` of an error, tagged by `kind`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "kind",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
#[non_exhaustive]
pub enum ErrorData {
    /// The request params are missing, or a member has the wrong type.
    InvalidParams {
        /// The method whose params were wrong.
        method: String,
        /// What was wrong, naming the member.
        message: String,
    },
    /// No configured server has this name.
    UnknownServer {
        /// The name asked for.
        server: String,
        /// Every configured server.
        known_servers: Vec<String>,
    },
    /// The server offers no tool of this name.
    UnknownTool {
        /// The server asked for.
        server: String,
        /// The tool asked for.
        tool: String,
        /// The tools whose names are closest to the one asked for (by edit distance, closest
        /// first), at most [`MAX_LISTED_TOOLS`]: a server with thousands of tools must not make
        /// an error of hundreds of kilobytes.
        known_tools: Vec<String>,
        /// The same names under the reference bridge's member name, for scripts written for it.
        #[serde(default)]
        discovered_tools: Vec<String>,
        /// How many tools the server offers in all (visible to this token).
        #[serde(default)]
        tool_count: usize,
    },
    /// The arguments do not satisfy the tool's `inputSchema`; nothing was sent to the server.
    InvalidArguments {
        /// The server of the tool.
        server: String,
        /// The tool whose schema failed.
        tool: String,
        /// Each failing location, in document order.
        errors: Vec<ArgumentError>,
        /// The same failures in the format of the reference bridge (ajv's), for scripts written
        /// for it: one entry per missing or unexpected property, as ajv reports them.
        #[serde(default)]
        validation_errors: Vec<ValidationError>,
    },
    /// The tool's discovered `inputSchema` is not a valid JSON Schema.
    InvalidSchema {
        /// The server of the tool.
        server: String,
        /// The tool with the bad schema.
        tool: String,
        /// Why the schema was rejected.
        message: String,
    },
    /// The server is not connected.
    ServerUnavailable {
        /// The server asked for.
        server: String,
        /// Its state, as in `listServers`.
        state: String,
        /// Why it is not connected, when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        last_error: Option<String>,
    },
    /// The server's process exited (or its connection closed) while the call was pending.
    ServerExited {
        /// The server that went away.
        server: String,
        /// How it ended, e.g. `exit code 1` or `signal 9 (SIGKILL)`, when known.
        exit: String,
        /// Its last lines of stderr, oldest first.
        stderr_tail: Vec<String>,
    },
    /// The call timed out; a `notifications/cancelled` was sent to the server.
    Timeout {
        /// The server of the tool.
        server: String,
        /// The method or tool that timed out.
        tool: String,
        /// The timeout that expired, in milliseconds.
        timeout_ms: u64,
    },
    /// The MCP server answered with a JSON-RPC error.
    Upstream {
        /// The server that answered.
        server: String,
        /// Its error code.
        code: i64,
        /// Its error message.
        message: String,
        /// Its error data, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        data: Option<Value>,
    },
    /// The MCP server answered, but its answer breaks the MCP protocol (a `CallToolResult` whose
    /// `content` is not an array, say); nothing of it is passed on.
    InvalidResult {
        /// The server that answered.
        server: String,
        /// The MCP method or tool the answer was for.
        method: String,
        /// What was wrong with the answer.
        message: String,
    },
    /// The answer to one request was larger than the daemon accepts or can pass on: over the
    /// message limit when it arrived from the server, or, in a `callMany`/`callChain`, over the
    /// room left in the answer when it could not be spilled either. The request ran (the tool
    /// may have changed something); its answer was dropped, the server's connection kept, and
    /// nothing is retried. Only this request failed.
    ResultTooLarge {
        /// The server that answered.
        server: String,
        /// The MCP method or tool the answer was for.
        method: String,
        /// The answer's size in bytes, when it was read to its end (a stdio server's line, an
        /// entry of a fan-out); absent when reading stopped at the limit (a Streamable HTTP
        /// body or event).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        bytes: Option<u64>,
        /// The limit it exceeded, in bytes.
        limit_bytes: u64,
        /// How to ask for less: a narrower query, a `LIMIT`, or the paging arguments the tool
        /// declares.
        hint: String,
    },
    /// The server has as many calls in flight and queued as it may; nothing was sent.
    Busy {
        /// The busy server.
        server: String,
        /// Calls executing.
        in_flight: usize,
        /// Calls waiting.
        queued: usize,
        /// A suggested wait before retrying, in milliseconds.
        retry_after_ms: u64,
    },
    /// The server's circuit breaker is open; nothing was sent.
    CircuitOpen {
        /// The server.
        server: String,
        /// Milliseconds until a probe call will be allowed.
        retry_after_ms: u64,
        /// The failure that opened it, when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        last_error: Option<String>,
    },
    /// The token's scope or the config's policy does not allow this.
    NotPermitted {
        /// The server asked for.
        server: String,
        /// The tool asked for, when the refusal is about a tool.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tool: Option<String>,
        /// Why, in words: the token's scope or the config's policy.
        reason: String,
    },
    /// The tool is destructive; call again with `"confirm": true` to run it.
    ConfirmationRequired {
        /// The server.
        server: String,
        /// The destructive tool.
        tool: String,
    },
    /// A fault inside the daemon; the details are in its log.
    Internal {
        /// A short description.
        message: String,
    },
    /// No session of this id belongs to the caller's token.
    UnknownSession {
        /// The id asked for.
        session_id: String,
    },
    /// The same call (server, tool, arguments) kept failing in this session; refused before
    /// doing any work.
    LoopDetected {
        /// The server as the caller named it (`*` when routed).
        server: String,
        /// The tool.
        tool: String,
        /// The hash of the arguments (as in traces).
        arguments_hash: String,
        /// How many times it failed.
        failures: u32,
        /// The configured limit.
        limit: u32,
    },
    /// The session's budget is spent.
    BudgetExceeded {
        /// The session.
        session_id: String,
        /// Which budget: `calls` or `wallTimeMs`.
        budget: String,
        /// How much was used.
        used: u64,
        /// The limit.
        limit: u64,
    },
    /// An idempotency key was reused for a different call.
    IdempotencyConflict {
        /// The key.
        key: String,
        /// What differs.
        message: String,
    },
    /// The daemon is shutting down and the request outlived the grace period.
    ShuttingDown {
        /// The grace period, in milliseconds.
        grace_ms: u64,
    },
    /// The answer does not fit the response size limit.
    ResponseTooLarge {
        /// The method whose answer it was.
        method: String,
        /// The size of the encoded result, in bytes.
        bytes: usize,
        /// The most this answer could take: `--max-response-bytes`, divided by the number of
        /// requests in a batch.
        limit_bytes: usize,
    },
    /// A call of a `callMany` that was not run: the fan-out's answer had no room left for more
    /// results (its other entries filled `--max-response-bytes` and what the token may keep
    /// spilled). Nothing was sent for this call; send it again on its own.
    AnswerFull {
        /// The method whose answer was full (`callMany`).
        method: String,
        /// The most the answer could take, in bytes.
        limit_bytes: usize,
    },
    /// A remote server needs authorization the daemon does not have: it refused the
    /// credentials (HTTP 401, or 403 for scope), or it waits for a sign-in (`tool-cli auth login
    /// SERVER`). Nothing was run.
    AuthRequired {
        /// The server.
        server: String,
        /// What happened and what to do, naming `tool-cli auth login SERVER` when signing in
        /// helps.
        message: String,
    },
    /// Pinning holds the tool (or prompt, or resource template) back (`docs/pinning.md`): it
    /// changed or appeared since its server was pinned, or the pin store cannot be trusted.
    /// Nothing was sent.
    PinRefused {
        /// The server.
        server: String,
        /// The tool held back; for a prompt or resource template, its name or `uriTemplate`.
        tool: String,
        /// What is held back when it is not a tool: `prompt` or `resourceTemplate`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        item: Option<String>,
        /// Why: `changed`, `new` or `storeUntrusted`.
        reason: String,
        /// The pinned fields that differ now (`description`, `inputSchema`, …); empty unless
        /// `changed`.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        changed_fields: Vec<String>,
        /// What happened and how to review and approve it (naming `tool-cli pin diff` and
        /// `tool-cli pin approve`), or how to restore the store.
        message: String,
    },
    /// Signing in to a remote server over OAuth 2.1 failed (`authLogin`, `authComplete`).
    AuthFailed {
        /// The server.
        server: String,
        /// The step that failed: `discovery`, `registration`, `authorization`, `token` or
        /// `refresh`.
        step: String,
        /// What went wrong and what would be right.
        message: String,
    },
}

impl ErrorData {
    /// The JSON-RPC code that goes with this kind of error.
    pub fn code(&self) -> i32 {
        match self {
            ErrorData::InvalidParams { .. }
            | ErrorData::UnknownServer { .. }
            | ErrorData::UnknownTool { .. }
            | ErrorData::InvalidArguments { .. } => code::INVALID_PARAMS,
            ErrorData::InvalidSchema { .. } | ErrorData::Internal { .. } => code::INTERNAL_ERROR,
            // Like an unavailable server for clients that do not know the kind: nothing ran.
            ErrorData::ServerUnavailable { .. }
            | ErrorData::ServerExited { .. }
            | ErrorData::AuthRequired { .. } => code::SERVER_UNAVAILABLE,
            ErrorData::Timeout { .. } => code::TIMEOUT,
            ErrorData::Upstream { .. }
            | ErrorData::InvalidResult { .. }
            | ErrorData::ResultTooLarge { .. } => code::UPSTREAM_ERROR,
            ErrorData::Busy { .. } => code::BUSY,
            ErrorData::CircuitOpen { .. } => code::CIRCUIT_OPEN,
            ErrorData::NotPermitted { .. } | ErrorData::ConfirmationRequired { .. } => {
                code::FORBIDDEN
            }
            ErrorData::UnknownSession { .. } | ErrorData::IdempotencyConflict { .. } => {
                code::INVALID_PARAMS
            }
            ErrorData::LoopDetected { .. } | ErrorData::BudgetExceeded { .. } => {
                code::GUARD_REFUSED
            }
            ErrorData::ShuttingDown { .. } => code::SHUTTING_DOWN,
            ErrorData::ResponseTooLarge { .. } | ErrorData::AnswerFull { .. } => {
                code::RESPONSE_TOO_LARGE
            }
            ErrorData::AuthFailed { .. } => code::AUTH_FAILED,
            ErrorData::PinRefused { .. } => code::PIN_REFUSED,
        }
    }

    /// The `kind` tag this error carries on the wire (`"unknownTool"`, …).
    pub fn kind(&self) -> &'static str {
        match self {
            ErrorData::InvalidParams { .. } => "invalidParams",
            ErrorData::UnknownServer { .. } => "unknownServer",
            ErrorData::UnknownTool { .. } => "unknownTool",
            ErrorData::InvalidArguments { .. } => "invalidArguments",
            ErrorData::InvalidSchema { .. } => "invalidSchema",
            ErrorData::ServerUnavailable { .. } => "serverUnavailable",
            ErrorData::ServerExited { .. } => "serverExited",
            ErrorData::Timeout { .. } => "timeout",
            ErrorData::Upstream { .. } => "upstream",
            ErrorData::InvalidResult { .. } => "invalidResult",
            ErrorData::ResultTooLarge { .. } => "resultTooLarge",
            ErrorData::AnswerFull { .. } => "answerFull",
            ErrorData::Busy { .. } => "busy",
            ErrorData::CircuitOpen { .. } => "circuitOpen",
            ErrorData::NotPermitted { .. } => "notPermitted",
            ErrorData::ConfirmationRequired { .. } => "confirmationRequired",
            ErrorData::Internal { .. } => "internal",
            ErrorData::ShuttingDown { .. } => "shuttingDown",
            ErrorData::ResponseTooLarge { .. } => "responseTooLarge",
            ErrorData::UnknownSession { .. } => "unknownSession",
            ErrorData::LoopDetected { .. } => "loopDetected",
            ErrorData::BudgetExceeded { .. } => "budgetExceeded",
            ErrorData::IdempotencyConflict { .. } => "idempotencyConflict",
            ErrorData::AuthFailed { .. } => "authFailed",
            ErrorData::AuthRequired { .. } => "authRequired",
            ErrorData::PinRefused { .. } => "pinRefused",
        }
    }
}

/// The one wording of each kind of error: what was wrong and what would be right. The daemon
/// sends it as the error's `message`; a client adds only what is its own (a flag to pass, a
/// command to run).
impl fmt::Display for ErrorData {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&describe(self))
    }
}

fn describe(data: &ErrorData) -> String {
    match data {
        ErrorData::InvalidParams { method, message } => {
            format!("invalid params for {method}: {message}")
        }
        ErrorData::AuthRequired { server, message } => {
            format!("server \"{server}\" needs authorization: {message}")
        }
        // The words are the pin check's (`tool_cli_gateway_core::pin::verify::PinRefusal`), so
        // a refused call and `tool-cli pin verify` name the same commands.
        ErrorData::PinRefused { message, .. } => message.clone(),
        ErrorData::AuthFailed {
            server,
            step,
            message,
        } => format!("signing in to server \"{server}\" failed at {step}: {message}"),
        ErrorData::UnknownServer {
            server,
            known_servers,
        } => {
            if known_servers.is_empty() {
                format!("unknown server \"{server}\"; this token can see no servers")
            } else {
                format!(
                    "unknown server \"{server}\"; known servers: {}",
                    known_servers.join(", ")
                )
            }
        }
        ErrorData::UnknownTool {
            server,
            tool,
            known_tools,
            ..
        } if server == "*" => {
            if known_tools.is_empty() {
                format!(
                    "no server offers a tool \"{tool}\"; `tool-cli SERVER` lists a server's tools"
                )
            } else {
                format!(
                    "no server offers a tool \"{tool}\"; did you mean: {}",
                    known_tools.join(", ")
                )
            }
        }
        ErrorData::UnknownTool {
            server,
            tool,
            known_tools,
            tool_count,
            ..
        } => {
            if known_tools.is_empty() {
                format!("server \"{server}\" has no tool \"{tool}\"; it offers none")
            } else if *tool_count > known_tools.len() {
                format!(
                    "server \"{server}\" has no tool \"{tool}\"; the closest of its {tool_count} \
                     tools: {}",
                    known_tools.join(", ")
                )
            } else {
                format!(
                    "server \"{server}\" has no tool \"{tool}\"; its tools: {}",
                    known_tools.join(", ")
                )
            }
        }
        ErrorData::InvalidArguments {
            server,
            tool,
            errors,
            ..
        } => format!(
            "arguments for {server}/{tool} do not match its input schema: {}",
            describe_errors(errors)
        ),
        ErrorData::InvalidSchema {
            server,
            tool,
            message,
        } => format!("the input schema of {server}/{tool} is not a valid JSON Schema: {message}"),
        ErrorData::ServerUnavailable {
            server,
            state,
            last_error,
        } => match last_error {
            Some(error) => {
                format!("server \"{server}\" is not available (state: {state}): {error}")
            }
            None => format!("server \"{server}\" is not available (state: {state})"),
        },
        ErrorData::ServerExited { server, exit, .. } => {
            format!("server \"{server}\" exited while the request was pending ({exit})")
        }
        ErrorData::Timeout {
            server,
            tool,
            timeout_ms,
        } => {
            format!("{server}/{tool} did not answer within {timeout_ms} ms; the call was cancelled")
        }
        ErrorData::Upstream {
            server,
            code,
            message,
            ..
        } => format!("server \"{server}\" returned an error: {message} (code {code})"),
        ErrorData::InvalidResult {
            server,
            method,
            message,
        } => format!(
            "server \"{server}\" answered {method} with a result that is not valid MCP: {message}; \
             the server is at fault (report it to its authors)"
        ),
        ErrorData::ResultTooLarge {
            server,
            method,
            bytes,
            limit_bytes,
            hint,
        } => {
            let size = match bytes {
                Some(bytes) => format!("{bytes} bytes, over the {limit_bytes}-byte limit"),
                None => format!("more than the {limit_bytes}-byte limit"),
            };
            format!(
                "the answer of server \"{server}\" to {method} was {size}, so it was dropped (the \
                 request ran; only this call failed and it is not retried); {hint}"
            )
        }
        ErrorData::AnswerFull {
            method,
            limit_bytes,
        } => format!(
            "not run: the {method} answer had no room left for this call's result (the results \
             before it filled the {limit_bytes} bytes it may take and what this token may keep \
             spilled); nothing was sent for this call: send it again on its own"
        ),
        ErrorData::Busy {
            server,
            in_flight,
            queued,
            retry_after_ms,
        } => format!(
            "server \"{server}\" is busy: {in_flight} calls in flight and {queued} waiting; \
             retry in about {retry_after_ms} ms"
        ),
        ErrorData::CircuitOpen {
            server,
            retry_after_ms,
            last_error,
        } => format!(
            "server \"{server}\" is failing and its circuit breaker is open; nothing was sent; \
             retry in {retry_after_ms} ms{}",
            last_error
                .as_ref()
                .map(|e| format!(" (last failure: {e})"))
                .unwrap_or_default()
        ),
        ErrorData::NotPermitted {
            server,
            tool,
            reason,
        } => describe_refusal(server, tool.as_deref(), reason),
        ErrorData::ConfirmationRequired { server, tool } => format!(
            "tool \"{tool}\" of server \"{server}\" is destructive; to run it, pass \"confirm\": \
             true in callTool (tool-cli: --yes)"
        ),
        ErrorData::Internal { message } => message.clone(),
        ErrorData::ShuttingDown { grace_ms } => format!(
            "the daemon is shutting down and this request did not finish within its {grace_ms} ms \
             grace period; it was cancelled (send it again once a daemon is running)"
        ),
        ErrorData::ResponseTooLarge {
            method,
            bytes,
            limit_bytes,
        } => format!(
            "the answer to {method} is {bytes} bytes, over the {limit_bytes} bytes it may take \
             (--max-response-bytes, shared by the requests of a batch); nothing was changed: send \
             the request alone, or raise the limit"
        ),
        ErrorData::UnknownSession { session_id } => format!(
            "no session \"{session_id}\" belongs to this token; `openSession` starts one, and \
             `callTool` with a new sessionId creates it"
        ),
        ErrorData::LoopDetected {
            server,
            tool,
            failures,
            limit,
            ..
        } => format!(
            "loop detected: {server}/{tool} with these same arguments failed {failures} times in \
             this session (limit {limit}); nothing was sent. Change the arguments or the tool \
             instead of repeating the call"
        ),
        ErrorData::BudgetExceeded {
            session_id,
            budget,
            used,
            limit,
        } => format!(
            "session \"{session_id}\" has spent its {budget} budget ({used} of {limit}); nothing \
             was sent. Open a new session to continue"
        ),
        ErrorData::IdempotencyConflict { key, message } => format!(
            "idempotency key \"{key}\" was already used for a different call ({message}); use a \
             new key for a new call"
        ),
    }
}

fn describe_refusal(server: &str, tool: Option<&str>, reason: &str) -> String {
    let prefix = match (server, tool) {
        (server, Some(tool)) => format!("tool \"{tool}\" of server \"{server}\" is not permitted"),
        ("", None) => "not permitted".to_owned(),
        (server, None) => format!("server \"{server}\" is not permitted"),
    };
    // A reason that already says it all (another bridge's, say) is not prefixed twice.
    if reason.starts_with(&prefix) {
        return reason.to_owned();
    }
    format!("{prefix}: {reason}")
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

/// One way in which arguments fail a schema.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ArgumentError {
    /// JSON Pointer to the failing value in the arguments (`""` for the whole object).
    pub path: String,
    /// JSON Pointer to the schema keyword that failed, e.g. `/properties/limit/type`.
    pub schema_path: String,
    /// What was wrong, in words.
    pub message: String,
}

/// One entry of `validationErrors`: a failure in the format of ajv, the validator of the
/// reference bridge.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ValidationError {
    /// JSON Pointer to the failing value (`""` for the arguments object itself).
    pub instance_path: String,
    /// URI fragment of the failing schema keyword, e.g. `#/properties/limit/type`.
    pub schema_path: String,
    /// The keyword that failed: `type`, `required`, `additionalProperties`, `minimum`, …
    pub keyword: String,
    /// The keyword's details as ajv names them, e.g. `{"missingProperty": "sql"}`,
    /// `{"type": "integer"}`, `{"comparison": ">=", "limit": 1}`.
    pub params: Value,
    /// ajv's wording, e.g. `must have required property 'sql'`.
    pub message: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_data_is_tagged_by_kind_in_camel_case() {
        let data = ErrorData::UnknownTool {
            server: "demo".into(),
            tool: "nope".into(),
            known_tools: vec!["sql_query".into()],
            discovered_tools: vec!["sql_query".into()],
            tool_count: 1,
        };
        let json = serde_json::to_value(&data).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "kind": "unknownTool",
                "server": "demo",
                "tool": "nope",
                "knownTools": ["sql_query"],
                "discoveredTools": ["sql_query"],
                "toolCount": 1,
            })
        );
        assert_eq!(serde_json::from_value::<ErrorData>(json).unwrap(), data);
        assert_eq!(data.code(), code::INVALID_PARAMS);
        // What a daemon without the reference's fields sent still reads.
        let older = serde_json::json!({
            "kind": "unknownTool", "server": "demo", "tool": "nope", "knownTools": [],
        });
        assert!(serde_json::from_value::<ErrorData>(older).is_ok());
    }

    #[test]
    fn size_errors_say_what_ran() {
        let too_large = ErrorData::ResultTooLarge {
            server: "demo".into(),
            method: "sql_query".into(),
            bytes: Some(20_000_000),
            limit_bytes: 16_777_216,
            hint: "ask for less".into(),
        };
        assert_eq!(
            serde_json::to_value(&too_large).unwrap(),
            serde_json::json!({"kind": "resultTooLarge", "server": "demo", "method": "sql_query",
                "bytes": 20_000_000, "limitBytes": 16_777_216, "hint": "ask for less"})
        );
        // The request ran: an upstream-side failure, not "nothing was changed".
        assert_eq!(too_large.code(), code::UPSTREAM_ERROR);
        let unknown_size = serde_json::json!({"kind": "resultTooLarge", "server": "r",
            "method": "m", "limitBytes": 10, "hint": "h"});
        assert!(matches!(
            serde_json::from_value::<ErrorData>(unknown_size).unwrap(),
            ErrorData::ResultTooLarge { bytes: None, .. }
        ));
        let full = ErrorData::AnswerFull {
            method: "callMany".into(),
            limit_bytes: 1024,
        };
        assert_eq!(
            serde_json::to_value(&full).unwrap(),
            serde_json::json!({"kind": "answerFull", "method": "callMany", "limitBytes": 1024})
        );
        // Not run: nothing was changed by it.
        assert_eq!(full.code(), code::RESPONSE_TOO_LARGE);
    }
}
