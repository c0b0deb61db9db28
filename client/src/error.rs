//! Every way a `tool-cli` run or a [`Client`](crate::Client) request can fail, each with its
//! documented exit code.
//!
//! Scripts and agents branch on the exit code, so each failure maps to exactly one code (see
//! [`exit`]) and the mapping lives here, in [`Error::exit_code`], not scattered through the code.
//! Messages are lowercase, without a trailing period, and say what was wrong and what would be
//! right: for a JSON-RPC error the structured `data` of the daemon (or of a 1.x bridge) is turned
//! into that advice by [`describe`]. In `--json` mode the same error is printed as a JSON
//! envelope ([`Error::envelope`]) so a program need not parse the message.

mod describe;

pub(crate) use describe::did_you_mean;

use serde_json::{Value, json};
use tool_cli_protocol::{ErrorObject, MAX_TIMEOUT_MS, code};

/// Exit codes of `tool-cli`, as documented in `--help` and `docs/cli.md`; [`Error::exit_code`]
/// gives the one of each error.
pub mod exit {
    /// Success.
    pub const OK: i32 = 0;
    /// Any other error, including errors the MCP server itself reported, a server that is busy
    /// (`-32004`) or whose circuit breaker is open (`-32005`), and `tool-cli health` finding an
    /// enabled server that is not ready. Busy and open-breaker errors are transient, yet they
    /// get no code of their own: the wait before a retry is in their message, and a code of
    /// their own would change the meaning of 1 for the scripts already branching on it.
    pub const OTHER: i32 = 1;
    /// Bad command line, or tool arguments that are not a JSON object.
    pub const USAGE: i32 = 2;
    /// The daemon cannot be reached: no port or token, connection refused, connect timeout, or
    /// the connection closed before the identity check was answered (a daemon at its connection
    /// limit); `tool-cli daemon status` when no daemon runs.
    pub const UNREACHABLE: i32 = 3;
    /// The daemon does not know or refused the token: its identity check says the token id is
    /// unknown (revoked, expired, another daemon's), or a request got HTTP 401/403.
    pub const AUTH: i32 = 4;
    /// JSON-RPC invalid params: unknown server or tool, arguments failing the input schema.
    pub const INVALID_PARAMS: i32 = 5;
    /// The tool ran and returned `isError: true`.
    pub const TOOL_ERROR: i32 = 6;
    /// No answer in time, on our side or the daemon's (`-32002`).
    pub const TIMEOUT: i32 = 7;
    /// The listener did not prove it holds the token (`POST /identity`), so the token was not
    /// sent: a stale `TOOL_CLI_PORT` or `TOOL_CLI_SOCKET`, another program there, or a bridge
    /// that does not serve the proof (a tool-cli 1.x bridge) without `--no-identity`. Distinct
    /// from 3 and 4 because nothing should retry it blindly: the address itself is suspect.
    pub const IDENTITY: i32 = 8;
    /// Forbidden (`-32006`): the token's scope or the daemon's policy does not allow this, or a
    /// destructive tool needs `--yes`.
    pub const FORBIDDEN: i32 = 9;
    /// `tool-cli agent`: a guard halted the run (cost ceiling, step limit, loop, cancelled by
    /// another client) before a final answer; what the run had is on stdout. A run halted by its
    /// time limit exits 7, a failed run 1.
    pub const AGENT_HALTED: i32 = 10;
    /// `tool-cli agent`: the agent could not do the task (status `cannot`: part of it names
    /// nothing the tools or the data have, or it asks about the future) or refused it (status
    /// `refused`: a change to data the tools only read); the answer on stdout says why and what
    /// would work. Nothing made up, nothing changed.
    pub const AGENT_DECLINED: i32 = 11;
    /// Interrupted by Ctrl-C (SIGINT); `tool-cli agent` exits so once the daemon acknowledged
    /// the cancellation of its run.
    pub const INTERRUPTED: i32 = 130;
}

/// How to get a daemon, appended to every "cannot reach" message.
const START_HINT: &str = "start one with `tool-cli daemon start`, or with \
     `eval \"$(tool-cli-daemon --print-env &)\"` in a shell";

/// A failed request or run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The command line (or a library argument) is wrong; the message says how.
    #[error("{0}")]
    Usage(String),
    /// No daemon address or token could be found.
    #[error("{0}; {START_HINT}")]
    NoDaemon(String),
    /// The connection failed, e.g. refused.
    #[error(
        "cannot reach the tool-cli daemon at {address} ({reason}); is it running? {START_HINT}"
    )]
    Connect {
        /// `host:port` or the socket's path.
        address: String,
        /// What the operating system said.
        reason: String,
    },
    /// The connection did not complete in time.
    #[error(
        "cannot reach the tool-cli daemon at {address}: no connection within {timeout_ms} ms; \
         check TOOL_CLI_HOST and TOOL_CLI_PORT, or {START_HINT}"
    )]
    ConnectTimeout {
        /// `host:port` or the socket's path.
        address: String,
        /// The connect timeout.
        timeout_ms: u64,
    },
    /// The connection was closed or reset before the listener answered the identity check, as
    /// a daemon at its connection limit does; the token was not sent.
    #[error(
        "cannot reach the tool-cli daemon at {address}: the connection was {reason} before it \
         answered the identity check, so the token was not sent; the daemon may be at its \
         connection limit: retry in a moment"
    )]
    ConnectionLost {
        /// `host:port` or the socket's path.
        address: String,
        /// What happened: `closed`, `reset`, ...
        reason: String,
    },
    /// The connection was closed or reset before the daemon answered the first request on it,
    /// on a link whose daemon its id vouched for (so without an identity check first): what a
    /// daemon at its connection limit does to a new connection.
    #[error(
        "cannot reach the tool-cli daemon at {address}: the connection was {reason} before it \
         answered; the daemon may be at its connection limit: retry in a moment (`tool-cli \
         daemon status` says whether it still runs)"
    )]
    ClosedUnanswered {
        /// `host:port` or the socket's path.
        address: String,
        /// What happened: `closed`, `reset`, ...
        reason: String,
    },
    /// The listener did not prove it holds the token, which was therefore not sent.
    #[error("{}", unproven_message(address, *unix_socket, reason))]
    IdentityUnproven {
        /// `host:port` or the socket's path.
        address: String,
        /// Whether the address is a Unix socket (for the name of the variable to suspect).
        unix_socket: bool,
        /// What the answer was.
        reason: String,
    },
    /// The listener does not serve the identity proof at all (it answered `POST /identity` with
    /// 401 or 404, as a tool-cli 1.x bridge does), and the user did not allow that.
    #[error(
        "this bridge does not prove its identity (a tool-cli 1.x bridge?): the listener at \
         {address} answered HTTP {status} to POST /identity, so the token was not sent; if you \
         trust what listens there, allow it with TOOL_CLI_REQUIRE_IDENTITY=0 or --no-identity \
         (docs/security.md says what that risks)"
    )]
    NoIdentityProof {
        /// `host:port` or the socket's path.
        address: String,
        /// 401 or 404.
        status: u16,
    },
    /// The daemon's identity check says it knows no live token with this id.
    #[error(
        "the daemon at {address} knows no live token with this id: it was revoked or has \
         expired, or it belongs to another daemon (the token was not sent); use a current token: \
         the daemon's own (its runtime file, or --print-env) or one from `tool-cli token mint`"
    )]
    UnknownToken {
        /// `host:port` or the socket's path.
        address: String,
    },
    /// HTTP 401 or 403 to an authenticated request.
    #[error(
        "the daemon refused the token (HTTP {status}); is TOOL_CLI_TOKEN from this daemon? \
         `tool-cli daemon status` shows the daemon of the runtime file"
    )]
    AuthRefused {
        /// The HTTP status.
        status: u16,
    },
    /// A bridge that is not tool-cli-daemon (the reference 1.x bridge, say, by its handshake)
    /// does not serve one of tool-cli-daemon's methods: it is another program, not an older
    /// version of ours.
    #[error(
        "the bridge at {address} is {implementation}, a tool-cli 1.x bridge that is not \
         tool-cli-daemon, and it does not serve `{method}`, a tool-cli-daemon method; start \
         tool-cli-daemon to use it"
    )]
    BridgeLacksMethod {
        /// `host:port` or the socket's path.
        address: String,
        /// Its `serverImplementation`: name and version.
        implementation: String,
        /// The method asked for.
        method: String,
    },
    /// Any other unexpected HTTP status.
    #[error("the daemon answered HTTP {status}{}", body_excerpt(body))]
    Http {
        /// The HTTP status.
        status: u16,
        /// The start of the body.
        body: String,
    },
    /// The connection broke during a request.
    #[error("the connection to the daemon failed: {0}; did the daemon stop?")]
    Transport(String),
    /// The daemon's answer is not what the protocol promises.
    #[error("the daemon's answer does not follow the tool-cli bridge protocol: {0}")]
    Protocol(String),
    /// The peer is not a tool-cli bridge of major version 1.
    #[error(
        "the daemon speaks {name:?} major version {major}, but this tool-cli needs \
         \"tool-cli-bridge\" major version 1; use a matching tool-cli or daemon"
    )]
    IncompatibleBridge {
        /// `bridgeProtocol.name`.
        name: String,
        /// `bridgeProtocol.major`.
        major: u64,
    },
    /// No HTTP answer within the request timeout; the connection was closed, which cancels the
    /// request in the daemon.
    #[error(
        "no answer from the daemon to {method} within {timeout_ms} ms; raise --timeout \
         (at most {MAX_TIMEOUT_MS})"
    )]
    Timeout {
        /// The JSON-RPC method.
        method: String,
        /// The timeout.
        timeout_ms: u64,
    },
    /// The daemon answered with a JSON-RPC error.
    #[error("{}", describe::RpcMessage { method, error })]
    Rpc {
        /// The JSON-RPC method.
        method: String,
        /// The error object, `data` included. Boxed: it is large and this enum travels in
        /// every `Result`.
        error: Box<ErrorObject>,
    },
    /// The tool ran and reported an error (`isError: true`); `text` is its text content.
    #[error("{server}/{tool} reported an error{}", tool_error_text(text))]
    ToolReported {
        /// The server.
        server: String,
        /// The tool.
        tool: String,
        /// Its text content.
        text: String,
    },
    /// `tool-cli health` found enabled servers that are not ready: `(name, state)` of each, and
    /// how many servers are enabled. The table has already been printed.
    #[error("{}", unhealthy_message(unhealthy, *enabled))]
    Unhealthy {
        /// `(name, state)` of each server that is not ready.
        unhealthy: Vec<(String, String)>,
        /// How many servers are enabled.
        enabled: usize,
    },
    /// `tool-cli pin verify` found the servers differ from the pins (the report is printed).
    #[error("{problems} problem{} with the pins (see above); review with `tool-cli pin diff`", if *problems == 1 { "" } else { "s" })]
    PinsDiffer {
        /// How many problems the verdict lists.
        problems: usize,
    },
    /// `tool-cli export` left tools out (the document holds the rest; the notes said why).
    #[error(
        "{refused} tool{} or server{} left out of the export (see the warnings above); the \
         document holds the rest",
        if *refused == 1 { "" } else { "s" },
        if *refused == 1 { "" } else { "s" }
    )]
    ExportRefused {
        /// How many tools were left out.
        refused: usize,
    },
    /// Reading or writing a local file, or starting a process, failed.
    #[error("cannot {action}: {source}")]
    Io {
        /// What was being done, e.g. `write out.png`.
        action: String,
        /// Why it failed.
        #[source]
        source: std::io::Error,
    },
    /// `tool-cli agent`: the run ended without a completed answer (`status` is `halted`,
    /// `failed`, `cannot` or `refused`).
    #[error("{}", agent_message(run_id, status, reason, setting.as_deref()))]
    AgentStopped {
        /// The run.
        run_id: String,
        /// `halted`, `failed`, `cannot` or `refused`.
        status: String,
        /// The halt reason (`cost_ceiling`, `max_steps`, `timeout`, ...), the failure, or why
        /// the agent could not do or refused the task.
        reason: String,
        /// For a halted run, the setting that controls the limit that fired
        /// (`agent.timeouts.stepMs`, `timeoutMs`, `maxSteps`, `costCeilingUsd`, …).
        setting: Option<String>,
    },
    /// Ctrl-C: the command was interrupted; the message says what became of its work.
    #[error("interrupted: {0}")]
    Interrupted(String),
    /// A tool argument the tool's input schema does not know (checked by the client when it
    /// has the schema, with the closest known name); nothing was sent.
    #[error("{message}")]
    UnknownParameter {
        /// The key as given.
        key: String,
        /// The closest parameter name, when one is close enough to be a likely typo.
        suggestion: Option<String>,
        /// The whole message: the key, the known names and the suggestion.
        message: String,
    },
    /// `tool-cli chain` or `many`: some of its calls failed (a chain stops at its first). The
    /// outcomes are on stdout already; the exit code is the first failure's.
    #[error("{}", steps_failed_message(command, failures, *total, *ran))]
    StepsFailed {
        /// `chain` or `many`.
        command: String,
        /// Each failed call, in order.
        failures: Vec<StepFailure>,
        /// How many calls were asked for.
        total: usize,
        /// How many ran.
        ran: usize,
    },
    /// A failure that fits nowhere else; the message says what happened.
    #[error("{0}")]
    Other(String),
}

/// One failed call of `tool-cli chain` or `tool-cli many`.
#[derive(Debug)]
#[non_exhaustive]
pub struct StepFailure {
    /// Its index among the calls.
    pub index: usize,
    /// `SERVER/TOOL` (`*/TOOL` for a routed call no server took).
    pub label: String,
    /// What went wrong, as if it had been called alone.
    pub error: Box<Error>,
}

fn steps_failed_message(
    command: &str,
    failures: &[StepFailure],
    total: usize,
    ran: usize,
) -> String {
    let item = if command == "chain" { "step" } else { "call" };
    match failures {
        [] => format!("`tool-cli {command}` failed"),
        [only] if command == "chain" => {
            let not_run = total.saturating_sub(ran);
            let rest = match not_run {
                0 => String::new(),
                1 => " (1 later step did not run)".to_owned(),
                n => format!(" ({n} later steps did not run)"),
            };
            format!(
                "step {} of {total} ({}) failed, so the chain stopped{rest}: {}",
                only.index, only.label, only.error
            )
        }
        [only] => format!(
            "{item} {} of {total} ({}) failed: {}",
            only.index, only.label, only.error
        ),
        several => {
            let mut message = format!("{} of {total} {item}s failed:", several.len());
            for failure in several {
                // A message of several lines stays under its call.
                let error = failure.error.to_string().replace('\n', "\n    ");
                message.push_str(&format!(
                    "\n  {item} {} ({}): {error}",
                    failure.index, failure.label
                ));
            }
            message
        }
    }
}

fn agent_message(run_id: &str, status: &str, reason: &str, setting: Option<&str>) -> String {
    match status {
        "halted" => format!(
            "the agent's run {run_id} halted ({reason}) before a final answer; what it had is \
             above. {}",
            // The setting the daemon says controls the limit that fired; else by the reason.
            match (setting, reason) {
                (Some("costCeilingUsd"), _) | (None, "cost_ceiling") => {
                    "Raise --max-cost to let it spend more"
                }
                (Some("maxSteps"), _) | (None, "max_steps") => {
                    "Raise --max-steps to give it more steps"
                }
                (Some("timeoutMs"), _) => "Give it more time with --timeout",
                (Some("agent.timeouts.stepMs"), _) => {
                    "One step (an LLM call) outlived its limit: raise the daemon's \
                     agent.timeouts.stepMs for a slow model"
                }
                (Some("agent.timeouts.runMs"), _) | (None, "timeout") => {
                    "Give it more time (--timeout, or the daemon's agent.timeouts.runMs)"
                }
                (_, "loop_detected") => "It repeated a call without progress; rephrase the task",
                _ => "Run it again to retry",
            }
        ),
        "cannot" => format!("the agent could not do the task (run {run_id}): {reason}"),
        "refused" => format!("the agent refused the task (run {run_id}): {reason}"),
        _ => format!("the agent's run {run_id} failed: {reason}"),
    }
}

fn unproven_message(address: &str, unix_socket: bool, reason: &str) -> String {
    let (variable, place) = if unix_socket {
        ("TOOL_CLI_SOCKET", "socket")
    } else {
        ("TOOL_CLI_PORT", "port")
    };
    format!(
        "the listener at {address} did not prove it holds the token, so the token was not sent \
         (a stale {variable}, or another program on that {place}?); {reason}"
    )
}

fn body_excerpt(body: &str) -> String {
    if body.trim().is_empty() {
        String::new()
    } else {
        format!(": {}", body.trim())
    }
}

fn tool_error_text(text: &str) -> String {
    if text.trim().is_empty() {
        " (without a message)".to_owned()
    } else {
        format!(":\n{}", text.trim_end())
    }
}

fn unhealthy_message(unhealthy: &[(String, String)], enabled: usize) -> String {
    let listed: Vec<String> = unhealthy
        .iter()
        .map(|(server, state)| format!("{server} ({state})"))
        .collect();
    format!(
        "{} of {enabled} enabled servers {} not ready: {}",
        unhealthy.len(),
        if unhealthy.len() == 1 { "is" } else { "are" },
        listed.join(", ")
    )
}

impl Error {
    /// The process exit code for this error (see [`exit`]).
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Usage(_) => exit::USAGE,
            Error::NoDaemon(_)
            | Error::Connect { .. }
            | Error::ConnectTimeout { .. }
            | Error::ConnectionLost { .. }
            | Error::ClosedUnanswered { .. } => exit::UNREACHABLE,
            Error::AuthRefused { .. } | Error::UnknownToken { .. } => exit::AUTH,
            Error::IdentityUnproven { .. } | Error::NoIdentityProof { .. } => exit::IDENTITY,
            Error::Timeout { .. } => exit::TIMEOUT,
            Error::Rpc { error, .. } => match error.code {
                code::INVALID_PARAMS => exit::INVALID_PARAMS,
                code::TIMEOUT => exit::TIMEOUT,
                // A tool held back by its pin is refused like a policy's refusal: a person must
                // act (`tool-cli pin approve`), retrying changes nothing.
                code::FORBIDDEN | code::PIN_REFUSED => exit::FORBIDDEN,
                // Transient overload or failure of one server: "other", with the retry hint in
                // the message (see `exit::OTHER` for why there is no code of their own).
                code::BUSY | code::CIRCUIT_OPEN => exit::OTHER,
                _ => exit::OTHER,
            },
            Error::ToolReported { .. } => exit::TOOL_ERROR,
            Error::AgentStopped { status, reason, .. } => {
                match (status.as_str(), reason.as_str()) {
                    ("halted", "timeout") => exit::TIMEOUT,
                    ("halted", _) => exit::AGENT_HALTED,
                    ("cannot" | "refused", _) => exit::AGENT_DECLINED,
                    _ => exit::OTHER,
                }
            }
            Error::Interrupted(_) => exit::INTERRUPTED,
            Error::UnknownParameter { .. } => exit::INVALID_PARAMS,
            Error::StepsFailed { failures, .. } => failures
                .first()
                .map_or(exit::OTHER, |failure| failure.error.exit_code()),
            Error::Unhealthy { .. }
            | Error::ExportRefused { .. }
            | Error::PinsDiffer { .. }
            | Error::Http { .. }
            | Error::Transport(_)
            | Error::Protocol(_)
            | Error::IncompatibleBridge { .. }
            | Error::BridgeLacksMethod { .. }
            | Error::Io { .. }
            | Error::Other(_) => exit::OTHER,
        }
    }

    /// A short camelCase name of the failure, stable for programs: the daemon's `data.kind` for
    /// a JSON-RPC error (`unknownTool`, `invalidArguments`, ...; for a 1.x bridge's data, the
    /// kind it corresponds to, else `rpcError`), otherwise the client's own (`unreachable`,
    /// `noIdentityProof`, `unknownToken`, `timeout`, `toolError`, ...).
    pub fn kind(&self) -> &str {
        match self {
            Error::Usage(_) => "usage",
            Error::NoDaemon(_) => "noDaemon",
            Error::Connect { .. } => "unreachable",
            Error::ConnectTimeout { .. } => "connectTimeout",
            Error::ConnectionLost { .. } | Error::ClosedUnanswered { .. } => "connectionLost",
            Error::IdentityUnproven { .. } => "identityUnproven",
            Error::NoIdentityProof { .. } => "noIdentityProof",
            Error::UnknownToken { .. } => "unknownToken",
            Error::AuthRefused { .. } => "tokenRefused",
            Error::Http { .. } => "http",
            Error::Transport(_) => "transport",
            Error::Protocol(_) => "protocol",
            Error::IncompatibleBridge { .. } => "incompatibleBridge",
            Error::BridgeLacksMethod { .. } => "bridgeLacksMethod",
            Error::Timeout { .. } => "timeout",
            Error::Rpc { error, .. } => rpc_kind(error),
            Error::ToolReported { .. } => "toolError",
            Error::Unhealthy { .. } => "unhealthy",
            Error::ExportRefused { .. } => "exportRefused",
            Error::PinsDiffer { .. } => "pinsDiffer",
            Error::Io { .. } => "io",
            Error::AgentStopped { status, .. } if status == "halted" => "agentHalted",
            Error::AgentStopped { status, .. } if status == "cannot" => "agentCannot",
            Error::AgentStopped { status, .. } if status == "refused" => "agentRefused",
            Error::AgentStopped { .. } => "agentFailed",
            Error::Interrupted(_) => "interrupted",
            Error::UnknownParameter { .. } => "unknownParameter",
            Error::StepsFailed { .. } => "stepsFailed",
            Error::Other(_) => "other",
        }
    }

    /// The JSON-RPC error code, when the daemon answered with an error.
    pub fn rpc_code(&self) -> Option<i32> {
        match self {
            Error::Rpc { error, .. } => Some(error.code),
            _ => None,
        }
    }

    /// The error as the JSON envelope `tool-cli --json` prints on stderr:
    /// `{"error": {"code", "exitCode", "kind", "message", "data"}}`. `code` is the JSON-RPC
    /// code (`null` for a failure on the client's side) and `data` the daemon's `data` as
    /// received (or a few facts of the client's own, or `null`).
    pub fn envelope(&self) -> Value {
        let data = match self {
            Error::Rpc { error, .. } => error.data.clone().unwrap_or(Value::Null),
            Error::ToolReported { server, tool, .. } => json!({"server": server, "tool": tool}),
            Error::UnknownParameter {
                key, suggestion, ..
            } => json!({"key": key, "suggestion": suggestion}),
            Error::Timeout { method, timeout_ms } => {
                json!({"method": method, "timeoutMs": timeout_ms})
            }
            Error::Unhealthy { unhealthy, enabled } => {
                let servers: Vec<Value> = unhealthy
                    .iter()
                    .map(|(name, state)| json!({"name": name, "state": state}))
                    .collect();
                json!({"unhealthy": servers, "enabled": enabled})
            }
            Error::AgentStopped {
                run_id,
                status,
                reason,
                setting,
            } => json!({"runId": run_id, "status": status, "reason": reason, "setting": setting}),
            Error::StepsFailed {
                command,
                failures,
                total,
                ran,
            } => {
                let failed: Vec<Value> = failures
                    .iter()
                    .map(|failure| {
                        let mut entry = failure.error.envelope()["error"].take();
                        entry["index"] = json!(failure.index);
                        entry["label"] = json!(failure.label);
                        entry
                    })
                    .collect();
                json!({"command": command, "total": total, "ran": ran, "failed": failed})
            }
            Error::Http { status, .. } | Error::AuthRefused { status } => {
                json!({"status": status})
            }
            Error::NoIdentityProof { address, status } => {
                json!({"address": address, "status": status})
            }
            Error::BridgeLacksMethod {
                address,
                implementation,
                method,
            } => json!({"address": address, "implementation": implementation, "method": method}),
            Error::Connect { address, .. }
            | Error::ConnectTimeout { address, .. }
            | Error::ConnectionLost { address, .. }
            | Error::ClosedUnanswered { address, .. }
            | Error::IdentityUnproven { address, .. }
            | Error::UnknownToken { address } => json!({"address": address}),
            _ => Value::Null,
        };
        json!({"error": {
            "code": self.rpc_code(),
            "exitCode": self.exit_code(),
            "kind": self.kind(),
            "message": self.to_string(),
            "data": data,
        }})
    }
}

/// The kind of a JSON-RPC error: the `data.kind` it carries, or the kind a 1.x bridge's data
/// shape corresponds to.
fn rpc_kind(error: &ErrorObject) -> &str {
    let data = error.data.as_ref();
    if let Some(kind) = data
        .and_then(|data| data.get("kind"))
        .and_then(Value::as_str)
    {
        return kind;
    }
    match data {
        Some(data) if data.get("validationErrors").is_some() => "invalidArguments",
        Some(data) if data.get("discoveredTools").is_some() => "unknownTool",
        _ => match error.code {
            code::METHOD_NOT_FOUND => "methodNotFound",
            code::INVALID_PARAMS => "invalidParams",
            _ => "rpcError",
        },
    }
}

#[cfg(test)]
mod tests;
