//! JSON-RPC 2.0 over jsonrpsee's method table: a request body in, its answer out.
//!
//! jsonrpsee stays the method table (`RpcModule` → [`Methods`], each method's
//! [`MethodCallback`] with its `Params`, `Extensions` and error objects); this module is what its
//! server crate did with that table over HTTP, for a single request, a notification and a batch,
//! with the answers it gave: `-32700 Parse error` for malformed JSON (status 400 when the body
//! does not even start as JSON within its first 128 bytes), `-32600 Invalid request` for an
//! object with an `id` that is no request and for an empty batch, `-32601 Method not found`. The
//! edge's own answers stay as `shape.rs` writes them: `-32600` for valid JSON that is no request,
//! `-32700` for a body that is not UTF-8, the refusal of a batch over [`MAX_BATCH_LEN`], `204`
//! for notifications (none is run), `-32603` for a handler that panicked.
//!
//! The hot path parses the body once: a well-formed request is recognised by parsing it as one
//! (`jsonrpsee::types::Request`, borrowing from the body), its callback runs on the connection's
//! own task (no channel, no task of its own), and its answer, encoded once by the callback, is
//! the response body as it is. Only a body that does not parse as a request is classified
//! ([`shape`]) to say what else it is. A batch's entries run at once and are joined in order
//! (`batch.rs`).

use std::panic::AssertUnwindSafe;

use futures_util::FutureExt as _;
use hyper::body::Bytes;
use hyper::{Response, StatusCode, header};
use jsonrpsee::types::error::ErrorCode;
use jsonrpsee::types::{ErrorObject, Id, InvalidRequest, Params, Request};
use jsonrpsee::{ConnectionId, Extensions, MethodCallback, MethodResponse, Methods};
use serde_json::value::RawValue;

use crate::edge::batch::{self, Entry};
use crate::edge::http_body::{HttpBody, HttpResponse};
use crate::edge::shape::{
    self, BatchLen, MAX_BATCH_LEN, Shape, batch_too_large, internal_error, invalid_request,
    parse_error, plain_status,
};

/// The largest answer jsonrpsee's encoder may write: no limit of its own. `answer.rs` holds each
/// answer to its share of `--max-response-bytes` before it is handed over (and spills a tool's
/// result that does not fit); a limit here would swap an answer for an error after the tool ran.
const NO_RESPONSE_LIMIT: usize = u32::MAX as usize;

/// How far into a body its first `{` or `[` must be for it to be read as JSON-RPC at all
/// (jsonrpsee's server looked no further; a body that starts later is `400 Parse error`).
const JSON_START_WINDOW: usize = 128;

/// The content type of an answer a method gave (jsonrpsee's server wrote it so).
const METHOD_ANSWER_CONTENT_TYPE: &str = "application/json; charset=utf-8";

/// The methods of the protocol, as the dispatch calls them.
#[derive(Clone)]
pub(crate) struct MethodTable {
    methods: Methods,
}

impl MethodTable {
    pub(crate) fn new(methods: impl Into<Methods>) -> MethodTable {
        MethodTable {
            methods: methods.into(),
        }
    }

    /// Answers one HTTP request's body. `extensions` are the request's (the gate's grant, the
    /// caller's trace context); every method sees them.
    pub(crate) async fn answer(
        &self,
        body: Bytes,
        extensions: Extensions,
        connection: ConnectionId,
    ) -> HttpResponse {
        let Ok(text) = std::str::from_utf8(&body) else {
            return parse_error();
        };
        match json_start(text) {
            Some((_, b'[')) => self.answer_batch(text, extensions, connection).await,
            Some((at, b'{')) if at < JSON_START_WINDOW => {
                let Ok(request) = serde_json::from_str::<Request<'_>>(text) else {
                    return not_a_parsed_request(text);
                };
                // A handler that panics answers its request with -32603; the daemon keeps
                // serving.
                let call = AssertUnwindSafe(self.call(request, extensions, connection));
                match call.catch_unwind().await {
                    Ok(answer) => method_answer(answer),
                    Err(_) => {
                        tracing::error!("a request handler panicked; answered -32603");
                        internal_error(text.as_bytes())
                    }
                }
            }
            _ => not_a_parsed_request(text),
        }
    }

    /// Runs one request through its method.
    async fn call(
        &self,
        request: Request<'_>,
        extensions: Extensions,
        connection: ConnectionId,
    ) -> MethodResponse {
        let Request {
            id, method, params, ..
        } = request;
        let params = Params::new(params.as_deref().map(RawValue::get));
        match self.methods.method_with_name(&method) {
            None => MethodResponse::error(id, ErrorObject::from(ErrorCode::MethodNotFound)),
            Some((_, MethodCallback::Async(callback))) => {
                let answer = callback(
                    id.into_owned(),
                    params.into_owned(),
                    connection,
                    NO_RESPONSE_LIMIT,
                    extensions,
                );
                answer.await
            }
            Some((_, MethodCallback::Sync(callback))) => {
                callback(id, params, NO_RESPONSE_LIMIT, extensions)
            }
            // Subscriptions need a connection that stays open for their notifications, which
            // plain HTTP is not; none is registered (jsonrpsee's HTTP server answered so too).
            Some((_, MethodCallback::Subscription(_) | MethodCallback::Unsubscription(_))) => {
                tracing::warn!(%method, "a subscription method was called over HTTP");
                MethodResponse::error(id, ErrorObject::from(ErrorCode::InternalError))
            }
        }
    }

    /// Answers a body that starts with `[`.
    async fn answer_batch(
        &self,
        text: &str,
        mut extensions: Extensions,
        connection: ConnectionId,
    ) -> HttpResponse {
        let len = match shape::shape(text.as_bytes()) {
            Shape::Notifications => return plain_status(StatusCode::NO_CONTENT),
            // Over the limit: refused whole, with the standard code.
            Shape::Batch(len) if len > MAX_BATCH_LEN as usize => return batch_too_large(len),
            Shape::Batch(len) => len,
            // `[]`, or malformed JSON.
            Shape::PassThrough => return not_a_parsed_request(text),
            Shape::NotARequest => return invalid_request(),
            Shape::NotUtf8 => return parse_error(),
        };
        let Some(entries) = batch::plan(text.as_bytes()) else {
            return not_a_parsed_request(text);
        };
        extensions.insert(BatchLen(len));
        let extensions = &extensions;
        let runs = entries.into_iter().map(|entry| async move {
            match entry {
                Entry::Skip => None,
                Entry::Invalid => Some(shape::invalid_request_body()),
                Entry::Run(text) => Some(self.answer_entry(text, extensions, connection).await),
            }
        });
        let answers: Vec<Bytes> = futures_util::future::join_all(runs)
            .await
            .into_iter()
            .flatten()
            .collect();
        if answers.is_empty() {
            // Only notifications were in it: nothing to say, as for a notification batch.
            return plain_status(StatusCode::NO_CONTENT);
        }
        Response::builder()
            .status(StatusCode::OK)
            .header(header::CONTENT_TYPE, "application/json")
            .body(HttpBody::from(batch::join(&answers)))
            .expect("static response parts are valid")
    }

    /// The answer to one entry of a batch that is to be run (`Entry::Run`: an object with a
    /// usable id, or an empty array), answered as it would be alone.
    async fn answer_entry(
        &self,
        text: &str,
        extensions: &Extensions,
        connection: ConnectionId,
    ) -> Bytes {
        let Ok(request) = serde_json::from_str::<Request<'_>>(text) else {
            return answer_bytes(parse_failure(text));
        };
        let call = AssertUnwindSafe(self.call(request, extensions.clone(), connection));
        match call.catch_unwind().await {
            Ok(answer) => answer_bytes(answer),
            Err(_) => {
                tracing::error!("a request handler panicked; answered -32603");
                Bytes::from(shape::internal_error_body(text.as_bytes()))
            }
        }
    }
}

/// Where a body's JSON starts: the index and byte of its first non-whitespace byte.
fn json_start(text: &str) -> Option<(usize, u8)> {
    text.bytes()
        .enumerate()
        .find(|(_, byte)| !byte.is_ascii_whitespace())
}

/// The answer to a UTF-8 body that did not parse as a request: valid JSON that is no request
/// (`-32600`), notifications (`204`, not run), or what jsonrpsee's server answered.
fn not_a_parsed_request(text: &str) -> HttpResponse {
    match shape::shape(text.as_bytes()) {
        Shape::NotARequest => invalid_request(),
        Shape::Notifications => plain_status(StatusCode::NO_CONTENT),
        Shape::NotUtf8 => parse_error(),
        Shape::PassThrough | Shape::Batch(_) => match json_start(text) {
            Some((at, b'{' | b'[')) if at < JSON_START_WINDOW => method_answer(parse_failure(text)),
            // Empty, blank, or not JSON from its first byte.
            _ => malformed(),
        },
    }
}

/// What jsonrpsee's server answered a body that starts as JSON but is no request: for an
/// object, `-32600` with its `id` when one can be read, else `-32700`; for an array, `-32600`
/// when it is empty (a batch of nothing), else `-32700` (`shape` sends any other array to the
/// batch).
fn parse_failure(text: &str) -> MethodResponse {
    if text.trim_start().starts_with('[') {
        return match serde_json::from_str::<Vec<&RawValue>>(text) {
            Ok(_) => MethodResponse::error(Id::Null, ErrorObject::from(ErrorCode::InvalidRequest)),
            Err(_) => MethodResponse::error(Id::Null, ErrorObject::from(ErrorCode::ParseError)),
        };
    }
    match serde_json::from_str::<InvalidRequest<'_>>(text) {
        Ok(InvalidRequest { id }) => {
            MethodResponse::error(id, ErrorObject::from(ErrorCode::InvalidRequest))
        }
        Err(_) => MethodResponse::error(Id::Null, ErrorObject::from(ErrorCode::ParseError)),
    }
}

/// A method's answer (or jsonrpsee's error), as encoded, taken over without a copy.
fn answer_bytes(answer: MethodResponse) -> Bytes {
    let (json, _, _) = answer.into_parts();
    Bytes::from(String::from(Box::<str>::from(json)))
}

/// The HTTP response carrying a method's answer.
fn method_answer(answer: MethodResponse) -> HttpResponse {
    Response::builder()
        .status(StatusCode::OK)
        .header(
            header::CONTENT_TYPE,
            header::HeaderValue::from_static(METHOD_ANSWER_CONTENT_TYPE),
        )
        .body(HttpBody::from(answer_bytes(answer)))
        .expect("static response parts are valid")
}

/// `400 Parse error`: a body that does not start as JSON.
fn malformed() -> HttpResponse {
    let answer = MethodResponse::error(Id::Null, ErrorObject::from(ErrorCode::ParseError));
    let mut response = method_answer(answer);
    *response.status_mut() = StatusCode::BAD_REQUEST;
    response
}
