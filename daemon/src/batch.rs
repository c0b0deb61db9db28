//! JSON-RPC batches, answered concurrently and in order.
//!
//! jsonrpsee runs a batch's requests one after the other, so five one-second tool calls in one
//! batch took five seconds. The shape layer hands a batch here instead: it is split into its
//! entries, each entry goes to jsonrpsee as a request of its own (same head, same grant, the
//! batch's length attached so each answer keeps to its share of the response limit), all of them
//! run at once, and their answers are joined into one array in request order. What each entry
//! answers does not change: an error stays that entry's error, a notification is not run and gets
//! no entry, and an entry that is not a request object gets `-32600`.
//!
//! The split is pure ([`plan`]); [`answer_concurrently`] does the I/O.

use std::panic::AssertUnwindSafe;

use futures_util::FutureExt as _;
use http_body_util::BodyExt as _;
use hyper::body::Bytes;
use hyper::{Request, Response, StatusCode, header};
use jsonrpsee::server::{HttpBody, HttpRequest, HttpResponse};
use serde_json::value::RawValue;

use crate::shape::{self, BatchLen, Shape};

/// What to do with one entry of a batch.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Entry<'a> {
    /// Hand it to jsonrpsee as a request of its own (a request, or an object jsonrpsee answers
    /// with an error naming its id).
    Run(&'a str),
    /// A notification: not run, no answer (as for a notification sent alone).
    Skip,
    /// Not a request object (a number, a string, a nested array, an object without a usable
    /// id): answered `-32600` with a null id.
    Invalid,
}

/// Splits a batch body into its entries and says what to do with each; `None` if the body is not
/// a JSON array (the shape layer has already checked it is).
pub(crate) fn plan(body: &[u8]) -> Option<Vec<Entry<'_>>> {
    let entries: Vec<&RawValue> = serde_json::from_slice(body).ok()?;
    Some(
        entries
            .into_iter()
            .map(|entry| {
                let text = entry.get();
                match shape::shape(text.as_bytes()) {
                    Shape::PassThrough => Entry::Run(text),
                    Shape::Notifications if text.starts_with('{') => Entry::Skip,
                    // A nested array is not a request, whatever it holds.
                    _ => Entry::Invalid,
                }
            })
            .collect(),
    )
}

/// Joins the entries' answers, in request order, into the batch's answer array.
pub(crate) fn join(answers: &[Bytes]) -> Vec<u8> {
    let total: usize = answers.iter().map(|answer| answer.len() + 1).sum();
    let mut body = Vec::with_capacity(total + 1);
    body.push(b'[');
    for (index, answer) in answers.iter().enumerate() {
        if index > 0 {
            body.push(b',');
        }
        body.extend_from_slice(answer);
    }
    body.push(b']');
    body
}

/// Answers a batch by running every entry through `inner` at once. `parts` is the batch's request
/// head (with the gate's grant in its extensions); `batch_len` its number of entries.
pub(crate) async fn answer_concurrently<S>(
    inner: S,
    parts: &hyper::http::request::Parts,
    entries: Vec<Entry<'_>>,
    batch_len: usize,
) -> Result<HttpResponse, S::Error>
where
    S: tower::Service<HttpRequest<HttpBody>, Response = HttpResponse> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    let runs = entries.into_iter().map(|entry| {
        let mut inner = inner.clone();
        async move {
            let text = match entry {
                Entry::Skip => return Ok(None),
                Entry::Invalid => return Ok(Some(shape::invalid_request_body())),
                Entry::Run(text) => text,
            };
            let request = entry_request(parts, text, batch_len);
            match AssertUnwindSafe(inner.call(request)).catch_unwind().await {
                Ok(Ok(response)) => Ok(answer_body(response).await),
                Ok(Err(error)) => Err(error),
                Err(_) => {
                    tracing::error!("a request handler panicked; answered -32603");
                    Ok(Some(Bytes::from(shape::internal_error_body(
                        text.as_bytes(),
                    ))))
                }
            }
        }
    });
    let mut answers = Vec::new();
    for answer in futures_util::future::join_all(runs).await {
        if let Some(answer) = answer? {
            answers.push(answer);
        }
    }
    if answers.is_empty() {
        // Only notifications were run: nothing to say, as for a notification batch.
        return Ok(Response::builder()
            .status(StatusCode::NO_CONTENT)
            .body(HttpBody::empty())
            .expect("static response parts are valid"));
    }
    Ok(Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "application/json")
        .body(HttpBody::from(join(&answers)))
        .expect("static response parts are valid"))
}

/// One entry as a request of its own: the batch's head and extensions, the entry as the body.
fn entry_request(parts: &hyper::http::request::Parts, text: &str, batch_len: usize) -> HttpRequest {
    let mut request = Request::new(HttpBody::new(http_body_util::Full::new(
        Bytes::copy_from_slice(text.as_bytes()),
    )));
    *request.method_mut() = parts.method.clone();
    *request.uri_mut() = parts.uri.clone();
    *request.version_mut() = parts.version;
    *request.headers_mut() = parts.headers.clone();
    request
        .headers_mut()
        .insert(header::CONTENT_LENGTH, text.len().into());
    *request.extensions_mut() = parts.extensions.clone();
    request.extensions_mut().insert(BatchLen(batch_len));
    request
}

/// The JSON-RPC answer in a response to one entry, if it has one.
async fn answer_body(response: HttpResponse) -> Option<Bytes> {
    let bytes = response.into_body().collect().await.ok()?.to_bytes();
    let trimmed = bytes.trim_ascii();
    if trimmed.is_empty() {
        return None;
    }
    Some(bytes.slice_ref(trimmed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_run_skipped_or_refused_in_order() {
        let body = br#"[{"jsonrpc":"2.0","id":1,"method":"a"}, {"jsonrpc":"2.0","method":"note"},
            42, [1], {"hello":1}, {"jsonrpc":"2.0","id":"x","method":"b","params":{"k":[1,2]}}]"#;
        let entries = plan(body).expect("an array");
        assert_eq!(
            entries,
            vec![
                Entry::Run(r#"{"jsonrpc":"2.0","id":1,"method":"a"}"#),
                Entry::Skip,
                Entry::Invalid,
                Entry::Invalid,
                Entry::Invalid,
                Entry::Run(r#"{"jsonrpc":"2.0","id":"x","method":"b","params":{"k":[1,2]}}"#),
            ]
        );
        assert_eq!(plan(b"{\"id\":1}"), None);
    }

    #[test]
    fn answers_join_into_one_array_in_order() {
        let answers = [
            Bytes::from_static(br#"{"id":2}"#),
            Bytes::from_static(br#"{"id":1}"#),
        ];
        assert_eq!(join(&answers), br#"[{"id":2},{"id":1}]"#);
        let parsed: serde_json::Value = serde_json::from_slice(&join(&answers)).unwrap();
        assert_eq!(parsed[0]["id"], 2);
    }
}
