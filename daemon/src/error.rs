//! The daemon's error type: every way a request can fail, with what the caller needs to fix it.
//!
//! A failure the caller is told about *is* its wire description: [`Error::Reported`] wraps the
//! protocol's [`ErrorData`] (tagged by `kind`, with the JSON-RPC code that goes with it), so the
//! daemon never keeps a second copy of the error catalogue field by field. The human message is
//! the protocol's wording of that data (`ErrorData`'s `Display`), the same a client builds on. A
//! fault inside the daemon is
//! [`Error::Internal`]: its detail goes to the log, and the caller only learns that something
//! went wrong inside, never the internal text.
//!
//! Handlers and the pipeline return [`Error`]; only the RPC layer (`rpc.rs`) turns it into a
//! JSON-RPC error object, through [`Error::to_data`] and [`Error::code`].

use tool_cli_protocol::error::MAX_LISTED_TOOLS;
use tool_cli_protocol::search::ToolAlternative;
use tool_cli_protocol::{ArgumentError, ErrorData, ValidationError};

/// A failed request.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A failure the caller can act on, exactly as it goes on the wire.
    #[error("{0}")]
    Reported(Box<ErrorData>),
    /// A fault inside the daemon; the text is for the log only.
    #[error("internal error: {0}")]
    Internal(String),
    /// A failed `callTool` that asked for `alternatives`: the failure as it is, and the tools
    /// the caller can see that may do the job instead, best first (the RPC layer adds them to
    /// the error's `data`).
    #[error("{error}")]
    WithAlternatives {
        /// The failure.
        error: Box<Error>,
        /// What the caller may use instead.
        alternatives: Vec<ToolAlternative>,
    },
}

/// What an internal fault tells the caller.
pub const INTERNAL_MESSAGE: &str = "internal error in the tool-cli daemon; its log has the details";

impl From<ErrorData> for Error {
    fn from(mut data: ErrorData) -> Error {
        // A name the caller sent that matched nothing is echoed back cut: a 100 KB tool name
        // must not make a 200 KB error (message and data) or log line.
        match &mut data {
            ErrorData::UnknownTool { server, tool, .. } => {
                cut_echo(server);
                cut_echo(tool);
            }
            ErrorData::UnknownServer { server, .. } => cut_echo(server),
            _ => {}
        }
        Error::Reported(Box::new(data))
    }
}

/// The most characters of a caller's unmatched name or id an error repeats.
pub(crate) const MAX_ECHOED_CHARS: usize = 64;

/// Cuts `text` to [`MAX_ECHOED_CHARS`] characters, saying how long it was.
pub(crate) fn cut_echo(text: &mut String) {
    let chars = text.chars().count();
    if chars > MAX_ECHOED_CHARS {
        let end = text
            .char_indices()
            .nth(MAX_ECHOED_CHARS)
            .map_or(text.len(), |(index, _)| index);
        text.truncate(end);
        text.push_str(&format!("… ({chars} characters)"));
    }
}

impl Error {
    /// An internal fault; `detail` is logged, never sent.
    pub fn internal(detail: impl Into<String>) -> Error {
        Error::Internal(detail.into())
    }

    /// Invalid params of `method`.
    pub fn invalid_params(method: &str, message: impl Into<String>) -> Error {
        ErrorData::InvalidParams {
            method: method.to_owned(),
            message: message.into(),
        }
        .into()
    }

    /// `server` has no tool `tool`; `known_tools` are the ones the caller may see (the wire gets
    /// the closest few and the count, however many there are).
    pub fn unknown_tool(server: &str, tool: &str, known_tools: &[String]) -> Error {
        let closest = crate::suggest::closest_names(tool, known_tools, MAX_LISTED_TOOLS);
        ErrorData::UnknownTool {
            server: server.to_owned(),
            tool: tool.to_owned(),
            known_tools: closest.clone(),
            discovered_tools: closest,
            tool_count: known_tools.len(),
        }
        .into()
    }

    /// Arguments for `server`/`tool` failed its schema, in both formats the wire carries.
    pub fn invalid_arguments(
        server: &str,
        tool: &str,
        violations: Vec<ArgumentViolation>,
    ) -> Error {
        let mut errors = Vec::with_capacity(violations.len());
        let mut validation_errors = Vec::new();
        for violation in violations {
            errors.push(violation.error);
            validation_errors.extend(violation.reference);
        }
        ErrorData::InvalidArguments {
            server: server.to_owned(),
            tool: tool.to_owned(),
            errors,
            validation_errors,
        }
        .into()
    }

    /// A timeout of `tool` (or method) on `server`.
    pub fn timeout(server: &str, tool: &str, timeout_ms: u64) -> Error {
        ErrorData::Timeout {
            server: server.to_owned(),
            tool: tool.to_owned(),
            timeout_ms,
        }
        .into()
    }

    /// The wire description, when the caller is told about this failure (`None` for an
    /// internal fault).
    pub fn data(&self) -> Option<&ErrorData> {
        match self {
            Error::Reported(data) => Some(data),
            Error::Internal(_) => None,
            Error::WithAlternatives { error, .. } => error.data(),
        }
    }

    /// The structured `data` for the wire. An internal fault says only that it happened.
    pub fn to_data(&self) -> ErrorData {
        match self {
            Error::Reported(data) => (**data).clone(),
            Error::Internal(_) => ErrorData::Internal {
                message: INTERNAL_MESSAGE.to_owned(),
            },
            Error::WithAlternatives { error, .. } => error.to_data(),
        }
    }

    /// The message for the wire: the error's own for a reported failure, a fixed sentence for
    /// an internal fault.
    pub fn wire_message(&self) -> String {
        match self {
            Error::Reported(data) => data.to_string(),
            Error::Internal(_) => INTERNAL_MESSAGE.to_owned(),
            Error::WithAlternatives { error, .. } => error.wire_message(),
        }
    }

    /// The JSON-RPC code.
    pub fn code(&self) -> i32 {
        match self {
            Error::Reported(data) => data.code(),
            Error::Internal(_) => tool_cli_protocol::code::INTERNAL_ERROR,
            Error::WithAlternatives { error, .. } => error.code(),
        }
    }

    /// The alternatives a failed `callTool` found (`alternatives: true`), if it asked.
    pub fn alternatives(&self) -> Option<&[ToolAlternative]> {
        match self {
            Error::WithAlternatives { alternatives, .. } => Some(alternatives),
            _ => None,
        }
    }

    /// The `kind` tag of its data, for traces and statistics (`"internal"` for a fault).
    pub fn kind(&self) -> &'static str {
        match self.data() {
            None => "internal",
            Some(data) => data.kind(),
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unmatched_name_is_echoed_cut() {
        let long = "é".repeat(100_000);
        let error = Error::unknown_tool("demo", &long, &["sql_query".to_owned()]);
        let message = error.wire_message();
        assert!(message.len() < 400, "{message}");
        assert!(message.contains("… (100000 characters)"), "{message}");
        let Some(ErrorData::UnknownTool { tool, .. }) = error.data() else {
            panic!("unknownTool");
        };
        assert_eq!(tool.chars().filter(|c| *c == 'é').count(), MAX_ECHOED_CHARS);
        let server: Error = ErrorData::UnknownServer {
            server: "x".repeat(70),
            known_servers: vec!["demo".to_owned()],
        }
        .into();
        assert!(server.wire_message().contains("… (70 characters)"));
        // Names of ordinary length are left as they are.
        let short = Error::unknown_tool("demo", "sql_qery", &["sql_query".to_owned()]);
        assert!(short.wire_message().contains("\"sql_qery\""));
    }

    #[test]
    fn internal_detail_never_reaches_the_wire() {
        let error = Error::internal("mutex poisoned at pipeline/execute.rs:12");
        assert_eq!(error.code(), tool_cli_protocol::code::INTERNAL_ERROR);
        assert_eq!(error.wire_message(), INTERNAL_MESSAGE);
        let data = serde_json::to_string(&error.to_data()).unwrap();
        assert!(!data.contains("mutex"), "{data}");
        assert_eq!(error.kind(), "internal");
        // The log still has it.
        assert!(error.to_string().contains("mutex poisoned"));
    }

    #[test]
    fn reported_errors_keep_their_data_code_and_kind() {
        let error = Error::timeout("demo", "sql_query", 250);
        assert_eq!(error.code(), tool_cli_protocol::code::TIMEOUT);
        assert_eq!(error.kind(), "timeout");
        assert_eq!(
            error.to_string(),
            "demo/sql_query did not answer within 250 ms; the call was cancelled"
        );
        let wire = serde_json::to_value(error.to_data()).unwrap();
        assert_eq!(wire["kind"], "timeout");
        assert_eq!(wire["timeoutMs"], 250);
    }
}
