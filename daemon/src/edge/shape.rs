//! Request shapes: what a body that is valid JSON but not a JSON-RPC request is (it gets `-32600`),
//! and the plain HTTP answers the edge gives of its own.
//!
//! jsonrpsee's server answered such a body (say `{"hello":"world"}` or `42`) with `-32700 Parse
//! error`, which tells the caller their JSON is broken when it is not; JSON-RPC 2.0 says `-32600
//! Invalid Request`. The dispatch (`dispatch/jsonrpc.rs`) classifies with [`shape`], one borrowed
//! parse with no allocation for the members it skips, each body that is not a well-formed request
//! (a well-formed one is recognised by parsing it as one, so the hot path parses once). Malformed
//! JSON and requests with an `id` but a bad shape keep the answers jsonrpsee's server gave. A batch
//! within [`MAX_BATCH_LEN`] has its entries run at once (`batch.rs`), each marked with the
//! batch's length ([`BatchLen`]), so each request's answer can be held to its share of the
//! response size limit.
//!
//! Notifications (no `id`) are not run: over HTTP nothing could report their outcome. They are
//! answered `204 No Content`.

use std::sync::LazyLock;

use hyper::body::Bytes;
use hyper::{Response, StatusCode, header};
use serde::Deserialize;
use serde_json::value::RawValue;
use tool_cli_protocol::{ErrorData, ErrorObject, RequestId, code};

use crate::edge::http_body::{HttpBody, HttpResponse};

/// Default largest request body accepted.
pub const DEFAULT_MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

/// How long a request's body may take to arrive once its head has. hyper's header-read timeout
/// stops a client trickling its head; without this one, a client trickling its body (one byte
/// a second under a `Content-Length` within the limit) held its connection, and one of the
/// daemon's 1024 connection slots, forever. A 4 MiB body crosses loopback in milliseconds.
pub(crate) const BODY_READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Most requests in one JSON-RPC batch.
pub(crate) const MAX_BATCH_LEN: u32 = 100;

/// Attached to a batch request: how many entries it has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BatchLen(pub(crate) usize);

#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Shape {
    /// A request, or malformed JSON: answered as jsonrpsee's server answered it.
    PassThrough,
    /// A batch of this many entries, at least one of them not a notification.
    Batch(usize),
    /// Notifications only: none is run; the client gets no body.
    Notifications,
    /// Valid JSON that is not a request (or a request with an id JSON-RPC does not allow).
    NotARequest,
    /// Not UTF-8, so not JSON at all.
    NotUtf8,
}

/// The members that decide the shape, borrowed from the body.
#[derive(Deserialize)]
struct Probe<'a> {
    /// `Some` whenever the member is there, `null` included: JSON-RPC 2.0 makes a request a
    /// notification only when it has no `id` member at all.
    #[serde(borrow, default, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    method: Option<&'a RawValue>,
    #[serde(borrow, default)]
    jsonrpc: Option<&'a RawValue>,
}

impl Probe<'_> {
    fn is_notification(&self) -> bool {
        self.id.is_none()
            && self.method.is_some_and(|m| m.get().starts_with('"'))
            && self.jsonrpc.is_some_and(|v| v.get() == r#""2.0""#)
    }

    /// JSON-RPC ids are strings, numbers or null; we take integers that fit 64 bits, and
    /// strings that are Unicode text (`"\ud800"`, a lone surrogate, is valid JSON but no
    /// string, so it could not be echoed back in an answer).
    fn has_valid_id(&self) -> bool {
        self.id.is_some_and(|id| {
            let text = id.get();
            (text.starts_with('"') && serde_json::from_str::<String>(text).is_ok())
                || text == "null"
                || text.parse::<u64>().is_ok()
        })
    }
}

/// Deserializes a member that is there, whatever its value (`null` too), as `Some`.
fn present<'de, D>(deserializer: D) -> Result<Option<&'de RawValue>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    <&'de RawValue>::deserialize(deserializer).map(Some)
}

pub(crate) fn shape(body: &[u8]) -> Shape {
    // JSON is UTF-8: anything else is malformed.
    if std::str::from_utf8(body).is_err() {
        return Shape::NotUtf8;
    }
    let first = body.iter().find(|b| !b.is_ascii_whitespace());
    if first == Some(&b'[') {
        return match serde_json::from_slice::<Vec<Probe<'_>>>(body) {
            Ok(batch) if !batch.is_empty() && batch.iter().all(Probe::is_notification) => {
                Shape::Notifications
            }
            Ok(batch) if !batch.is_empty() => Shape::Batch(batch.len()),
            Ok(_) => Shape::PassThrough,
            // Entries that are not objects still count: each gets an answer of its own.
            Err(_) => match serde_json::from_slice::<Vec<serde::de::IgnoredAny>>(body) {
                Ok(entries) if !entries.is_empty() => Shape::Batch(entries.len()),
                _ => Shape::PassThrough,
            },
        };
    }
    match serde_json::from_slice::<Probe<'_>>(body) {
        Ok(probe) if probe.id.is_some() => {
            if probe.has_valid_id() {
                Shape::PassThrough
            } else {
                Shape::NotARequest
            }
        }
        Ok(probe) if probe.is_notification() => Shape::Notifications,
        Ok(_) => Shape::NotARequest,
        // Not an object: valid JSON of another kind is not a request; anything else is
        // malformed, and answered so.
        Err(_) if serde_json::from_slice::<serde::de::IgnoredAny>(body).is_ok() => {
            Shape::NotARequest
        }
        Err(_) => Shape::PassThrough,
    }
}

/// The `-32603` answer to a request whose handler panicked, with the request's id when it has
/// one (a batch gets a single error with a null id).
pub(super) fn internal_error(body: &[u8]) -> HttpResponse {
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "application/json")
        .body(HttpBody::from(internal_error_body(body)))
        .expect("static response parts are valid")
}

/// A JSON-RPC error answer, as the protocol's envelope writes it: the edge's own errors, for
/// requests no method sees.
fn error_body(
    id: Option<RequestId>,
    code: i32,
    message: String,
    data: Option<ErrorData>,
) -> String {
    let error = ErrorObject {
        code,
        message,
        data: data.and_then(|data| serde_json::to_value(data).ok()),
    };
    serde_json::to_string(&tool_cli_protocol::Response::error(id, error))
        .expect("an envelope of plain values encodes")
}

/// The body of [`internal_error`].
pub(crate) fn internal_error_body(body: &[u8]) -> String {
    let id = serde_json::from_slice::<Probe<'_>>(body)
        .ok()
        .and_then(|probe| probe.id)
        .and_then(|id| serde_json::from_str::<RequestId>(id.get()).ok());
    error_body(
        id,
        code::INTERNAL_ERROR,
        "Internal error: the daemon failed while handling this request; see its log".to_owned(),
        Some(ErrorData::Internal {
            message: "handler panicked".to_owned(),
        }),
    )
}

pub(super) fn parse_error() -> HttpResponse {
    json_response(error_body(
        None,
        code::PARSE_ERROR,
        "Parse error: the body is not UTF-8, so it is not JSON".to_owned(),
        None,
    ))
}

fn json_response(body: impl Into<HttpBody>) -> HttpResponse {
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "application/json")
        .body(body.into())
        .expect("static response parts are valid")
}

/// The `-32600` answer to valid JSON that is not a request (alone, or as a batch entry).
pub(crate) fn invalid_request_body() -> Bytes {
    static BODY: LazyLock<Bytes> = LazyLock::new(|| {
        Bytes::from(error_body(
            None,
            code::INVALID_REQUEST,
            "Invalid request: expected a JSON-RPC 2.0 request object {\"jsonrpc\": \"2.0\", \
             \"id\": ..., \"method\": ...} or a batch of them"
                .to_owned(),
            None,
        ))
    });
    BODY.clone()
}

/// The `-32600` answer to a batch of more requests than the daemon runs at once: nothing of it
/// ran, and the message says the limit and what to do.
pub(super) fn batch_too_large(len: usize) -> HttpResponse {
    let limit = MAX_BATCH_LEN;
    json_response(error_body(
        None,
        code::INVALID_REQUEST,
        format!(
            "Invalid request: this batch holds {len} requests, and a batch holds at most \
             {limit}; none of it ran: send it as several batches of at most {limit}"
        ),
        None,
    ))
}

pub(super) fn invalid_request() -> HttpResponse {
    json_response(invalid_request_body())
}

/// The 413 answer to a body over `limit` bytes: a JSON-RPC error (id null: the request was never
/// read) saying the limit and what to do, so that a client shows more than "HTTP 413". The
/// connection ends with it, since the rest of the body is not read.
pub(super) fn too_large(limit: usize) -> HttpResponse {
    let message = format!(
        "Invalid request: the request body is over the daemon's limit of {limit} bytes \
         ({:.1} MiB, the daemon's --max-body-bytes); pass large content another way (a file or \
         resource the server reads, or several smaller calls), or start the daemon with a \
         higher --max-body-bytes",
        limit as f64 / (1024.0 * 1024.0)
    );
    let body = error_body(None, code::INVALID_REQUEST, message, None);
    Response::builder()
        .status(StatusCode::PAYLOAD_TOO_LARGE)
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::CONNECTION, "close")
        .body(HttpBody::from(body))
        .expect("static response parts are valid")
}

pub(super) fn plain_status(status: StatusCode) -> HttpResponse {
    Response::builder()
        .status(status)
        .body(HttpBody::empty())
        .expect("static response parts are valid")
}

/// [`plain_status`] that also ends the connection: the rest of the body is never read, so the
/// connection cannot carry another request.
pub(super) fn closing_status(status: StatusCode) -> HttpResponse {
    Response::builder()
        .status(status)
        .header(header::CONNECTION, "close")
        .body(HttpBody::empty())
        .expect("static response parts are valid")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_valid_json_that_is_not_a_request_is_caught() {
        for body in [
            r#"{"jsonrpc":"2.0","id":1,"method":"listServers"}"#,
            r#"{"jsonrpc":"2.0","id":"x","method":"listServers"}"#,
            r#"{"id":1}"#,
            "[]",
            r#"{"jsonrpc":"2.0","id":1,"#,
            "not json",
            "",
        ] {
            assert_eq!(shape(body.as_bytes()), Shape::PassThrough, "{body}");
        }
        assert_eq!(shape(b"{\"method\":\"\xff\"}"), Shape::NotUtf8);
        assert_eq!(shape(br#"[{"hello":1}]"#), Shape::Batch(1));
        assert_eq!(
            shape(br#"[1, {"jsonrpc":"2.0","id":1,"method":"b"}, "x"]"#),
            Shape::Batch(3)
        );
        assert_eq!(shape(b"[1, 2"), Shape::PassThrough);
        assert_eq!(
            shape(br#"[{"jsonrpc":"2.0","method":"a"},{"jsonrpc":"2.0","id":1,"method":"b"}]"#),
            Shape::Batch(2)
        );
        for body in [
            r#"{"jsonrpc":"2.0","method":"note"}"#,
            r#"[{"jsonrpc":"2.0","method":"a"},{"jsonrpc":"2.0","method":"b"}]"#,
        ] {
            assert_eq!(shape(body.as_bytes()), Shape::Notifications, "{body}");
        }
        for body in [
            r#"{"hello":"world"}"#,
            "42",
            r#""text""#,
            "null",
            r#"{"jsonrpc":"1.0","method":"x"}"#,
            r#"{"jsonrpc":"2.0","method":7}"#,
            r#"{"jsonrpc":"2.0","id":{"a":1},"method":"x"}"#,
            r#"{"jsonrpc":"2.0","id":1.5,"method":"x"}"#,
            r#"{"jsonrpc":"2.0","id":-1,"method":"x"}"#,
            r#"{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"x"}"#,
            r#"{"jsonrpc":"2.0","id":"\ud800","method":"x"}"#,
            r#"{"jsonrpc":"2.0","id":"a\udc00b","method":"x"}"#,
        ] {
            assert_eq!(shape(body.as_bytes()), Shape::NotARequest, "{body}");
        }
    }

    #[test]
    fn a_null_id_is_a_request_and_only_a_missing_id_a_notification() {
        for body in [
            r#"{"jsonrpc":"2.0","id":null,"method":"x"}"#,
            r#"{"jsonrpc":"2.0","id":"\ud800\udc00","method":"x"}"#,
        ] {
            assert_eq!(shape(body.as_bytes()), Shape::PassThrough, "{body}");
        }
        assert_eq!(
            shape(br#"[{"jsonrpc":"2.0","id":null,"method":"a"},{"jsonrpc":"2.0","method":"b"}]"#),
            Shape::Batch(2)
        );
        assert_eq!(
            shape(br#"[{"jsonrpc":"2.0","method":"a"}]"#),
            Shape::Notifications
        );
    }
}
