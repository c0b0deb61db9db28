//! The request-shape layer: a body that is valid JSON but not a JSON-RPC request gets `-32600`.
//!
//! jsonrpsee answers such a body (say `{"hello":"world"}` or `42`) with `-32700 Parse error`,
//! which tells the caller their JSON is broken when it is not; JSON-RPC 2.0 says `-32600 Invalid
//! Request`. This layer sits after the auth layer (so it never reads an unauthenticated body),
//! buffers the body within the size limit, and looks at its shape with one borrowed parse: no
//! allocation for the members it skips. Requests, notifications and batches pass through
//! untouched; jsonrpsee itself answers malformed JSON and requests with an `id` but a bad shape.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use http_body_util::{BodyExt as _, Limited};
use hyper::body::Bytes;
use hyper::{Request, Response, StatusCode, header};
use jsonrpsee::server::{HttpBody, HttpRequest, HttpResponse};
use serde::Deserialize;
use serde_json::value::RawValue;

/// Largest request body accepted (jsonrpsee's own default).
pub(crate) const MAX_REQUEST_BODY_BYTES: usize = 10 * 1024 * 1024;

/// Tower layer answering `-32600` for JSON that is not a request.
#[derive(Clone, Copy, Default)]
pub(crate) struct RequestShapeLayer;

impl<S> tower::Layer<S> for RequestShapeLayer {
    type Service = RequestShapeService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        RequestShapeService { inner }
    }
}

/// The service of [`RequestShapeLayer`].
#[derive(Clone)]
pub(crate) struct RequestShapeService<S> {
    inner: S,
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
        Box::pin(async move {
            let (parts, body) = request.into_parts();
            let bytes = match Limited::new(body, MAX_REQUEST_BODY_BYTES).collect().await {
                Ok(collected) => collected.to_bytes(),
                Err(_) => return Ok(plain_status(StatusCode::PAYLOAD_TOO_LARGE)),
            };
            if let Shape::NotARequest = shape(&bytes) {
                return Ok(invalid_request());
            }
            let request =
                Request::from_parts(parts, HttpBody::new(http_body_util::Full::new(bytes)));
            inner.call(request).await
        })
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Shape {
    /// Let jsonrpsee answer: a request, a notification, a batch, or malformed JSON.
    PassThrough,
    /// Valid JSON that is not a request and carries no id.
    NotARequest,
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

fn shape(body: &[u8]) -> Shape {
    let first = body.iter().find(|b| !b.is_ascii_whitespace());
    if first == Some(&b'[') {
        return Shape::PassThrough;
    }
    match serde_json::from_slice::<Probe<'_>>(body) {
        Ok(probe) => {
            let is_notification = probe.id.is_none()
                && probe.method.is_some_and(|m| m.get().starts_with('"'))
                && probe.jsonrpc.is_some_and(|v| v.get() == r#""2.0""#);
            if probe.id.is_some() || is_notification {
                Shape::PassThrough
            } else {
                Shape::NotARequest
            }
        }
        // Not an object: valid JSON of another kind is not a request; anything else is
        // malformed and jsonrpsee says so.
        Err(_) if serde_json::from_slice::<serde::de::IgnoredAny>(body).is_ok() => {
            Shape::NotARequest
        }
        Err(_) => Shape::PassThrough,
    }
}

fn invalid_request() -> HttpResponse {
    let body = r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request: expected a JSON-RPC 2.0 request object {\"jsonrpc\": \"2.0\", \"id\": ..., \"method\": ...} or a batch of them"}}"#;
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "application/json")
        .body(HttpBody::from(body))
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

    #[test]
    fn only_valid_json_that_is_not_a_request_is_caught() {
        for body in [
            r#"{"jsonrpc":"2.0","id":1,"method":"listServers"}"#,
            r#"{"jsonrpc":"2.0","method":"note"}"#,
            r#"{"id":1}"#,
            r#"[{"hello":1}]"#,
            r#"{"jsonrpc":"2.0","id":1,"#,
            "not json",
            "",
        ] {
            assert_eq!(shape(body.as_bytes()), Shape::PassThrough, "{body}");
        }
        for body in [
            r#"{"hello":"world"}"#,
            "42",
            r#""text""#,
            "null",
            r#"{"jsonrpc":"1.0","method":"x"}"#,
            r#"{"jsonrpc":"2.0","method":7}"#,
        ] {
            assert_eq!(shape(body.as_bytes()), Shape::NotARequest, "{body}");
        }
    }
}
