//! What the upstream side learned while sending one request, for the request's span: the
//! JSON-RPC id it sent, the MCP version negotiated with that server, its Streamable HTTP session
//! and where it listens. The pipeline puts an [`ExchangeNote`] on the request's
//! [`super::CallTicket`] and reads it back once the request has ended; the pool writes it as it
//! sends (each attempt overwrites the last, so a retried call reports the id that answered).
//!
//! These are the MCP semantic conventions' `jsonrpc.request.id`, `mcp.protocol.version`,
//! `mcp.session.id`, `server.address` and `server.port` (docs/observability.md).

use std::sync::Mutex;

/// The facts of one request as sent; every member is what the pool knew, `None` when it did
/// not (a stdio server has no session or address).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExchangeFacts {
    /// The JSON-RPC id of the (last) request sent, as text.
    pub request_id: Option<String>,
    /// The MCP protocol version negotiated with the server at `initialize`.
    pub protocol_version: Option<String>,
    /// The Streamable HTTP session (`Mcp-Session-Id`) the request was sent in.
    pub mcp_session_id: Option<String>,
    /// The server's host, for an HTTP server.
    pub server_address: Option<String>,
    /// The server's port (the URL's, or its scheme's default), for an HTTP server.
    pub server_port: Option<u16>,
}

/// Where the pool writes a request's [`ExchangeFacts`]; shared by the ticket and the pipeline.
#[derive(Debug, Default)]
pub struct ExchangeNote {
    facts: Mutex<ExchangeFacts>,
}

impl ExchangeNote {
    /// Notes the facts of a request just sent (replacing an earlier attempt's).
    pub fn note(&self, facts: ExchangeFacts) {
        *self.facts.lock().unwrap() = facts;
    }

    /// What was noted (all `None` when nothing was sent).
    pub fn facts(&self) -> ExchangeFacts {
        self.facts.lock().unwrap().clone()
    }
}

/// The host and port of an HTTP server's URL, as `server.address` and `server.port` name them;
/// `None` for a URL without a host.
pub fn address_of(url: &str) -> Option<(String, u16)> {
    let parsed = url::Url::parse(url).ok()?;
    let host = parsed.host_str()?;
    // `[::1]` is the URL's form; the convention wants the address itself.
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_owned();
    Some((host, parsed.port_or_known_default()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_http_urls_host_and_port_are_read_with_the_schemes_default() {
        assert_eq!(
            address_of("http://127.0.0.1:8931/mcp"),
            Some(("127.0.0.1".to_owned(), 8931))
        );
        assert_eq!(
            address_of("https://mcp.example.com/v1"),
            Some(("mcp.example.com".to_owned(), 443))
        );
        assert_eq!(
            address_of("http://[::1]:9000/"),
            Some(("::1".to_owned(), 9000))
        );
        assert_eq!(address_of("not a url"), None);
    }

    #[test]
    fn a_later_attempt_replaces_the_earlier_ones_facts() {
        let note = ExchangeNote::default();
        assert_eq!(note.facts(), ExchangeFacts::default());
        note.note(ExchangeFacts {
            request_id: Some("3".into()),
            ..Default::default()
        });
        note.note(ExchangeFacts {
            request_id: Some("4".into()),
            protocol_version: Some("2025-06-18".into()),
            ..Default::default()
        });
        assert_eq!(note.facts().request_id.as_deref(), Some("4"));
        assert_eq!(note.facts().protocol_version.as_deref(), Some("2025-06-18"));
    }
}
