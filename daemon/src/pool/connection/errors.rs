//! The errors of a connection's requests: what rmcp's service errors, a closed stream and an
//! oversized answer become, saying how the server ended when it did.

use std::sync::atomic::Ordering;
use std::time::Duration;

use rmcp::ServiceError;
use tool_cli_protocol::ErrorData;

use super::super::STDERR_TAIL_LINES;
use super::super::http::size_limit_in;
use super::Connection;
use crate::error::Error;
use crate::provider::CallTicket;

impl Connection {
    /// The error of a request for the caller `ticket` names that rmcp failed.
    pub(super) async fn service_error(
        &self,
        err: ServiceError,
        label: &str,
        timeout: Duration,
        ticket: &CallTicket,
    ) -> Error {
        match err {
            ServiceError::McpError(error) => ErrorData::Upstream {
                server: self.server.clone(),
                code: error.code.0.into(),
                message: error.message.into_owned(),
                data: error.data,
            }
            .into(),
            ServiceError::Timeout { .. } => {
                Error::timeout(&self.server, label, timeout.as_millis() as u64)
            }
            ServiceError::TransportSend(error) if self.process.is_none() => {
                if let Some(limit) = size_limit_in(&error_chain(&error)) {
                    return self.too_large(label, None, limit);
                }
                // The HTTP client noted why (a 401 naming `tool-cli auth login`, a 403 for scope).
                if let Some(reason) = self.stream_closed.lock().unwrap().take() {
                    if self
                        .auth_refused
                        .as_ref()
                        .is_some_and(|refused| refused.swap(false, Ordering::Relaxed))
                    {
                        return ErrorData::AuthRequired {
                            server: self.server.clone(),
                            message: reason,
                        }
                        .into();
                    }
                    return ErrorData::ServerExited {
                        server: self.server.clone(),
                        exit: reason,
                        stderr_tail: Vec::new(),
                    }
                    .into();
                }
                ErrorData::ServerExited {
                    server: self.server.clone(),
                    exit: format!("the HTTP transport failed: {}", transport_cause(&error)),
                    stderr_tail: Vec::new(),
                }
                .into()
            }
            ServiceError::TransportClosed | ServiceError::TransportSend(_) => {
                self.closed_error(ticket).await
            }
            other => Error::internal(format!("{label} on server \"{}\": {other}", self.server)),
        }
    }

    /// The error of a request whose stream ended or whose pipe broke: how the server ended, and
    /// its last stderr lines only to a caller that had it to itself (`callers.rs`).
    pub(super) async fn closed_error(&self, ticket: &CallTicket) -> Error {
        let alone = self.callers.alone_at_end(ticket.caller.as_deref());
        // The stream ends a moment before the exit status is known; wait for it briefly so the
        // error can say how the server ended.
        let mut ended = self.ended.clone();
        let _ =
            tokio::time::timeout(Duration::from_millis(500), ended.wait_for(|ended| *ended)).await;
        ErrorData::ServerExited {
            server: self.server.clone(),
            exit: self.describe_end().await,
            stderr_tail: self
                .process
                .as_ref()
                .filter(|_| alone)
                .map(|p| p.stderr.tail(STDERR_TAIL_LINES))
                .unwrap_or_default(),
        }
        .into()
    }

    /// The error for an answer to `label` over `limit` bytes (`bytes` long, when it was read to
    /// its end): that request's own failure, saying how to ask for less.
    pub(super) fn too_large(&self, label: &str, bytes: Option<u64>, limit: u64) -> Error {
        tracing::warn!(server = %self.server, method = label, bytes, limit, "answer over the size limit");
        let schema = self
            .published
            .catalog
            .borrow()
            .get(label)
            .and_then(|tool| tool.input_schema());
        ErrorData::ResultTooLarge {
            server: self.server.clone(),
            method: label.to_owned(),
            bytes,
            limit_bytes: limit,
            hint: super::super::oversized::how_to_ask_for_less(label, schema.as_ref()),
        }
        .into()
    }
}

/// An error and its sources, joined: rmcp wraps transport errors a few levels deep.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// Why a transport failed, without rmcp's wrapper (whose text names the transport's Rust type):
/// the underlying error and its sources, e.g. "error sending request for url (…): client error
/// (Connect): tcp connect error: Connection refused (os error 111)".
fn transport_cause(error: &rmcp::transport::DynamicTransportError) -> String {
    let mut parts: Vec<String> = Vec::new();
    use rmcp::transport::streamable_http_client::StreamableHttpError;
    let mut next: Option<&(dyn std::error::Error + 'static)> = Some(error.error.as_ref());
    // rmcp's HTTP error keeps the client's error without naming it as its source.
    if let Some(StreamableHttpError::Client(client)) = error
        .error
        .downcast_ref::<StreamableHttpError<crate::pool::http_client::HttpError>>()
    {
        next = Some(client);
    }
    while let Some(cause) = next {
        let text = cause.to_string();
        // Some wrappers repeat their source's text in their own.
        if !parts.last().is_some_and(|last| last.contains(&text)) {
            parts.push(text);
        }
        next = cause.source();
    }
    parts.join(": ")
}

/// What a failed MCP handshake says: for a transport failure, what the transport could not do
/// and why, in place of rmcp's text naming Rust types.
pub(in crate::pool) fn handshake_error(error: &rmcp::service::ClientInitializeError) -> String {
    match error {
        rmcp::service::ClientInitializeError::TransportError { error, context } => {
            format!(
                "the MCP handshake failed: could not {context}: {}",
                transport_cause(error)
            )
        }
        other => format!("the MCP handshake failed: {other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Layer(&'static str, Option<Box<Layer>>);
    impl std::fmt::Display for Layer {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(self.0)
        }
    }
    impl std::error::Error for Layer {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            self.1.as_deref().map(|layer| layer as _)
        }
    }

    #[test]
    fn a_handshake_transport_error_says_why_without_rust_type_names() {
        let cause = Layer(
            "Client error: error sending request for url (http://127.0.0.1:1/mcp)",
            Some(Box::new(Layer(
                "error sending request for url (http://127.0.0.1:1/mcp)",
                Some(Box::new(Layer("Connection refused (os error 111)", None))),
            ))),
        );
        let error = rmcp::service::ClientInitializeError::TransportError {
            error: rmcp::transport::DynamicTransportError::from_parts(
                "rmcp::transport::worker::WorkerTransport<Something<Else>>",
                std::any::TypeId::of::<Layer>(),
                Box::new(cause),
            ),
            context: "send initialize request".into(),
        };
        assert_eq!(
            handshake_error(&error),
            "the MCP handshake failed: could not send initialize request: Client error: error \
             sending request for url (http://127.0.0.1:1/mcp): Connection refused (os error 111)"
        );
        let closed = rmcp::service::ClientInitializeError::ConnectionClosed("initialize".into());
        assert_eq!(
            handshake_error(&closed),
            "the MCP handshake failed: connection closed: initialize"
        );
    }
}
