//! The request-shape layer: a body that is valid JSON but not a JSON-RPC request gets `-32600`.
//!
//! jsonrpsee answers such a body (say `{"hello":"world"}` or `42`) with `-32700 Parse error`,
//! which tells the caller their JSON is broken when it is not; JSON-RPC 2.0 says `-32600 Invalid
//! Request`. This layer sits after the auth layer (so it never reads an unauthenticated body),
//! buffers the body within the size limit, and looks at its shape with one borrowed parse: no
//! allocation for the members it skips. Requests and notifications pass through untouched;
//! jsonrpsee itself answers malformed JSON and requests with an `id` but a bad shape. A batch
//! within the limit is split here and its entries run at once (`batch.rs`), each marked with the
//! batch's length (`BatchLen`), so each request's answer can be held to its share of the
//! response size limit.
//!
//! Notifications (no `id`) are not run: jsonrpsee ignores them over HTTP, where nothing could
//! report their outcome. They are answered `204 No Content`.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use std::panic::AssertUnwindSafe;

use futures_util::FutureExt as _;
use http_body_util::{BodyExt as _, LengthLimitError, Limited};
use hyper::body::Bytes;
use hyper::{Request, Response, StatusCode, header};
use jsonrpsee::server::{HttpBody, HttpRequest, HttpResponse};
use serde::Deserialize;
use serde_json::value::RawValue;

/// Default largest request body accepted.
pub const DEFAULT_MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

/// Attached to a batch request: how many entries it has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BatchLen(pub(crate) usize);

/// Tower layer answering `-32600` for JSON that is not a request, and `-32603` for a handler
/// that panicked.
#[derive(Clone, Copy)]
pub(crate) struct RequestShapeLayer {
    max_body_bytes: usize,
}

impl RequestShapeLayer {
    pub(crate) fn new(max_body_bytes: usize) -> RequestShapeLayer {
        RequestShapeLayer { max_body_bytes }
    }
}

impl<S> tower::Layer<S> for RequestShapeLayer {
    type Service = RequestShapeService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        RequestShapeService {
            inner,
            max_body_bytes: self.max_body_bytes,
        }
    }
}

/// The service of [`RequestShapeLayer`].
#[derive(Clone)]
pub(crate) struct RequestShapeService<S> {
    inner: S,
    max_body_bytes: usize,
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl<S, B> tower::Service<HttpRequest<B>> for RequestShapeService<S>
where
    S: tower::Service<HttpRequest<HttpBody>, Response = HttpResponse> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
    B: hyper::body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Response = HttpResponse;
    type Error = S::Error;
    type Future = BoxFuture<Result<HttpResponse, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        // The clone is ready-polled by the caller's contract only for `self.inner`; swap so the
        // ready one serves this request.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let max_body_bytes = self.max_body_bytes;
        Box::pin(async move {
            let (parts, body) = request.into_parts();
            let bytes = match Limited::new(body, max_body_bytes).collect().await {
                Ok(collected) => collected.to_bytes(),
                Err(error) if error.is::<LengthLimitError>() => {
                    return Ok(plain_status(StatusCode::PAYLOAD_TOO_LARGE));
                }
                // The body ended early or broke (a Content-Length that lied, say).
                Err(_) => return Ok(plain_status(StatusCode::BAD_REQUEST)),
            };
            let shape = shape(&bytes);
            let mut parts = parts;
            match shape {
                Shape::NotARequest => return Ok(invalid_request()),
                Shape::NotUtf8 => return Ok(parse_error()),
                // Within the limit, the entries run at once; over it, jsonrpsee refuses the
                // whole batch with one error.
                Shape::Batch(len) if len <= crate::server::MAX_BATCH_LEN as usize => {
                    if let Some(entries) = crate::batch::plan(&bytes) {
                        return crate::batch::answer_concurrently(inner, &parts, entries, len)
                            .await;
                    }
                    parts.extensions.insert(BatchLen(len));
                }
                Shape::Batch(len) => {
                    parts.extensions.insert(BatchLen(len));
                }
                Shape::PassThrough | Shape::Notifications => {}
            }
            let request = Request::from_parts(
                parts,
                HttpBody::new(http_body_util::Full::new(bytes.clone())),
            );
            // A panicking handler answers its request with -32603; the daemon keeps serving.
            match AssertUnwindSafe(inner.call(request)).catch_unwind().await {
                // Notifications get nothing back: JSON-RPC answers no notification.
                Ok(Ok(_)) if shape == Shape::Notifications => {
                    Ok(plain_status(StatusCode::NO_CONTENT))
                }
                Ok(response) => response,
                Err(_) => {
                    tracing::error!("a request handler panicked; answered -32603");
                    Ok(internal_error(&bytes))
                }
            }
        })
    }
}

#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Shape {
    /// Let jsonrpsee answer: a request, or malformed JSON.
    PassThrough,
    /// Let jsonrpsee answer a batch of this many entries, at least one of them not a
    /// notification.
    Batch(usize),
    /// Notifications only: jsonrpsee ignores them; the client gets no body.
    Notifications,
    /// Valid JSON that is not a request (or a request with an id JSON-RPC does not allow).
    NotARequest,
    /// Not UTF-8, so not JSON at all.
    NotUtf8,
}

/// The members that decide the shape, borrowed from the body.
#[derive(Deserialize)]
struct Probe<'a> {
    #[serde(borrow, default)]
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

    /// JSON-RPC ids are strings, numbers or null; we take integers that fit 64 bits.
    fn has_valid_id(&self) -> bool {
        self.id.is_some_and(|id| {
            let text = id.get();
            text.starts_with('"') || text == "null" || text.parse::<u64>().is_ok()
        })
    }
}

pub(crate) fn shape(body: &[u8]) -> Shape {
    // JSON is UTF-8: anything else is malformed, which jsonrpsee reports as such.
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
        // malformed and jsonrpsee says so.
        Err(_) if serde_json::from_slice::<serde::de::IgnoredAny>(body).is_ok() => {
            Shape::NotARequest
        }
        Err(_) => Shape::PassThrough,
    }
}

/// The `-32603` answer to a request whose handler panicked, with the request's id when it has
/// one (a batch gets a single error with a null id).
fn internal_error(body: &[u8]) -> HttpResponse {
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "application/json")
        .body(HttpBody::from(internal_error_body(body)))
        .expect("static response parts are valid")
}

/// The body of [`internal_error`].
pub(crate) fn internal_error_body(body: &[u8]) -> String {
    let id = serde_json::from_slice::<Probe<'_>>(body)
        .ok()
        .and_then(|probe| probe.id.map(|id| id.get().to_owned()))
        .unwrap_or_else(|| "null".to_owned());
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":-32603,"message":"Internal error: the daemon failed while handling this request; see its log","data":{{"kind":"internal","message":"handler panicked"}}}}}}"#
    )
}

fn parse_error() -> HttpResponse {
    json_response(
        r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: the body is not UTF-8, so it is not JSON"}}"#,
    )
}

fn json_response(body: &'static str) -> HttpResponse {
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "application/json")
        .body(HttpBody::from(body))
        .expect("static response parts are valid")
}

/// The `-32600` answer to valid JSON that is not a request (alone, or as a batch entry).
pub(crate) const INVALID_REQUEST: &[u8] = br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request: expected a JSON-RPC 2.0 request object {\"jsonrpc\": \"2.0\", \"id\": ..., \"method\": ...} or a batch of them"}}"#;

fn invalid_request() -> HttpResponse {
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "application/json")
        .body(HttpBody::new(http_body_util::Full::new(
            Bytes::from_static(INVALID_REQUEST),
        )))
        .expect("static response parts are valid")
}

fn plain_status(status: StatusCode) -> HttpResponse {
    Response::builder()
        .status(status)
        .body(HttpBody::empty())
        .expect("static response parts are valid")
}

#[cfg(test)]
mod tests {
    use super::*;
    use tower::{Layer as _, Service as _};

    #[tokio::test]
    async fn a_panicking_handler_answers_internal_error_with_the_request_id() {
        let panicking = tower::service_fn(|_: HttpRequest<HttpBody>| async {
            if true {
                panic!("a handler bug");
            }
            Ok::<HttpResponse, std::convert::Infallible>(plain_status(StatusCode::OK))
        });
        let mut service = RequestShapeLayer::new(1024).layer(panicking);
        let body = r#"{"jsonrpc":"2.0","id":"req-7","method":"listServers"}"#;
        let request = Request::post("/").body(http_body_util::Full::new(Bytes::from(body)));
        let response = service.call(request.unwrap()).await.unwrap();
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        let answer: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(answer["id"], "req-7");
        assert_eq!(answer["error"]["code"], -32603);

        // And a body over the cap never reaches the handler.
        let request =
            Request::post("/").body(http_body_util::Full::new(Bytes::from(vec![b' '; 2048])));
        let response = service.call(request.unwrap()).await.unwrap();
        assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
    }

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
        ] {
            assert_eq!(shape(body.as_bytes()), Shape::NotARequest, "{body}");
        }
    }
}
