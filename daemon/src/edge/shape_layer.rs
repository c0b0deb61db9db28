//! The request-shape layer: the tower layer that reads a request's body within its size and time
//! limits, classifies it ([`super::shape`]), answers what jsonrpsee would answer wrongly, and hands
//! a batch within the limit to [`super::batch`] so its entries run at once.
//!
//! It sits after the auth layer, so it never reads an unauthenticated body. A handler that panics
//! answers its request with `-32603` and the daemon keeps serving. Kept apart from `shape.rs` so
//! that the pure classification (which `batch.rs` uses) does not import the batch runner back.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_util::FutureExt as _;
use http_body_util::{BodyExt as _, LengthLimitError, Limited};
use hyper::body::Bytes;
use hyper::{Request, StatusCode};
use jsonrpsee::server::{HttpBody, HttpRequest, HttpResponse};

use super::shape::{
    BatchLen, MAX_BATCH_LEN, Shape, batch_too_large, closing_status, internal_error,
    invalid_request, parse_error, plain_status, shape, too_large,
};

/// How long a request's body may take to arrive once its head has. hyper's header-read timeout
/// stops a client trickling its head; without this one, a client trickling its body (one byte
/// a second under a `Content-Length` within the limit) held its connection, and one of the
/// daemon's 1024 connection slots, forever. A 4 MiB body crosses loopback in milliseconds.
pub(crate) const BODY_READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

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
            let collect = Limited::new(body, max_body_bytes).collect();
            let Ok(collected) = tokio::time::timeout(BODY_READ_TIMEOUT, collect).await else {
                return Ok(closing_status(StatusCode::REQUEST_TIMEOUT));
            };
            let bytes = match collected {
                Ok(collected) => collected.to_bytes(),
                Err(error) if error.is::<LengthLimitError>() => {
                    return Ok(too_large(max_body_bytes));
                }
                // The body ended early or broke (a Content-Length that lied, say).
                Err(_) => return Ok(plain_status(StatusCode::BAD_REQUEST)),
            };
            let shape = shape(&bytes);
            let mut parts = parts;
            match shape {
                Shape::NotARequest => return Ok(invalid_request()),
                Shape::NotUtf8 => return Ok(parse_error()),
                // Within the limit, the entries run at once; over it, the whole batch is
                // refused with one error.
                Shape::Batch(len) if len <= MAX_BATCH_LEN as usize => {
                    if let Some(entries) = super::batch::plan(&bytes) {
                        return super::batch::answer_concurrently(inner, &parts, entries, len)
                            .await;
                    }
                    parts.extensions.insert(BatchLen(len));
                }
                // Over the limit: refused whole, by us, with the standard code (jsonrpsee's own
                // answer uses -32010, which our protocol gives to `authFailed`).
                Shape::Batch(len) => return Ok(batch_too_large(len)),
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

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::header;
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

    #[tokio::test(start_paused = true)]
    async fn a_body_that_never_finishes_arriving_is_408_and_closes_the_connection() {
        let handler = tower::service_fn(|_: HttpRequest<HttpBody>| async {
            panic!("the handler must not see a body that never arrived");
            #[allow(unreachable_code)]
            Ok::<HttpResponse, std::convert::Infallible>(plain_status(StatusCode::OK))
        });
        let mut service = RequestShapeLayer::new(1024).layer(handler);
        // One byte, then nothing ever again (paused time runs the clock forward).
        let first = futures_util::stream::once(async {
            Ok::<_, std::convert::Infallible>(hyper::body::Frame::data(Bytes::from_static(b"{")))
        });
        let trickle = futures_util::StreamExt::chain(first, futures_util::stream::pending());
        let request = Request::post("/").body(http_body_util::StreamBody::new(trickle));
        let response = service.call(request.unwrap()).await.unwrap();
        assert_eq!(response.status(), StatusCode::REQUEST_TIMEOUT);
        assert_eq!(response.headers()[header::CONNECTION], "close");
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        assert!(bytes.is_empty(), "a refusal has an empty body");
    }
}
