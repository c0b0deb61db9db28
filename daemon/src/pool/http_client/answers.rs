//! Reading a Streamable HTTP answer as rmcp's own client reads it (`streamable.rs` sends): a
//! challenge in a 401/403, a 429/5xx with its `Retry-After`, the content type, a body read whole
//! within its cap, a failed answer's JSON-RPC error, the preview of a body that is not what was
//! expected.

use std::borrow::Cow;

use hyper::body::Incoming;
use hyper::http::header::{CONTENT_TYPE, RETRY_AFTER, WWW_AUTHENTICATE};
use hyper::http::{HeaderMap, Response, StatusCode};
use rmcp::model::{ClientJsonRpcMessage, JsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::common::http_header::{EVENT_STREAM_MIME_TYPE, JSON_MIME_TYPE};
use rmcp::transport::streamable_http_client::{
    AuthRequiredError, HttpStatusError, InsufficientScopeError, StreamableHttpError,
    StreamableHttpPostResponse,
};

use super::{HttpError, read_capped};

type HttpResult<T> = Result<T, StreamableHttpError<HttpError>>;

/// Largest body of a failed answer read for its JSON-RPC error (rmcp's own limit).
const MAX_ERROR_ANSWER_BYTES: usize = 64 * 1024;
/// Longest `Retry-After` kept (rmcp's own limit).
const MAX_RETRY_AFTER_BYTES: usize = 128;

/// A 401 or 403 that carries a challenge, as rmcp's errors for them.
pub(super) fn challenge(response: &Response<Incoming>) -> HttpResult<()> {
    let status = response.status();
    if status != StatusCode::UNAUTHORIZED && status != StatusCode::FORBIDDEN {
        return Ok(());
    }
    let Some(header) = response.headers().get(WWW_AUTHENTICATE) else {
        return Ok(());
    };
    let header = header.to_str().map_err(|_| {
        StreamableHttpError::UnexpectedServerResponse(Cow::from(
            "invalid www-authenticate header value",
        ))
    })?;
    Err(match status {
        StatusCode::UNAUTHORIZED => {
            StreamableHttpError::AuthRequired(AuthRequiredError::new(header.to_owned()))
        }
        _ => StreamableHttpError::InsufficientScope(InsufficientScopeError::new(
            header.to_owned(),
            scope_in(header),
        )),
    })
}

/// The `scope` parameter of a `WWW-Authenticate` challenge, quoted or not.
pub(super) fn scope_in(header: &str) -> Option<String> {
    let start = header.to_ascii_lowercase().find("scope=")? + "scope=".len();
    let value = &header[start..];
    if let Some(quoted) = value.strip_prefix('"') {
        return quoted.find('"').map(|end| quoted[..end].to_owned());
    }
    let end = value
        .find(|c: char| c == ',' || c == ';' || c.is_whitespace())
        .unwrap_or(value.len());
    (end > 0).then(|| value[..end].to_owned())
}

/// A 429 or 5xx, with its `Retry-After` (kept as text, at most 128 bytes).
pub(super) fn status_error(status: StatusCode, headers: &HeaderMap) -> Option<HttpStatusError> {
    if status != StatusCode::TOO_MANY_REQUESTS && !status.is_server_error() {
        return None;
    }
    let retry_after = headers
        .get(RETRY_AFTER)
        .filter(|value| value.as_bytes().len() <= MAX_RETRY_AFTER_BYTES)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    Some(HttpStatusError::new(status.as_u16(), retry_after))
}

pub(super) fn content_type(response: &Response<Incoming>) -> Option<String> {
    response
        .headers()
        .get(CONTENT_TYPE)
        .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned())
}

pub(super) fn is_json(content_type: Option<&str>) -> bool {
    content_type.is_some_and(|value| value.starts_with(JSON_MIME_TYPE))
}

pub(super) fn is_event_stream(content_type: Option<&str>) -> bool {
    content_type.is_some_and(|value| value.starts_with(EVENT_STREAM_MIME_TYPE))
}

/// A message that expects no answer (a notification, or the client's own answer).
pub(super) fn expects_no_answer(message: &ClientJsonRpcMessage) -> bool {
    !matches!(message, JsonRpcMessage::Request(_))
}

/// Reads a body whole for the transport: over `max` is rmcp's size error.
pub(super) async fn read_body(
    body: Incoming,
    content_length: Option<u64>,
    max: usize,
) -> HttpResult<Vec<u8>> {
    if content_length.is_some_and(|length| length > max as u64) {
        return Err(StreamableHttpError::ResponseBodyTooLarge { max_size: max });
    }
    read_capped(body, max).await.map_err(|error| match error {
        HttpError::TooLarge(max_size) => StreamableHttpError::ResponseBodyTooLarge { max_size },
        other => StreamableHttpError::Client(other),
    })
}

pub(super) fn content_length(response: &Response<Incoming>) -> Option<u64> {
    response
        .headers()
        .get(hyper::http::header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse().ok())
}

/// A failed answer (not 2xx): its JSON-RPC error when it carries one, else the failure.
pub(super) async fn failed_answer(
    response: Response<Incoming>,
    session_id: Option<String>,
) -> HttpResult<StreamableHttpPostResponse> {
    let status = response.status();
    let content_type = content_type(&response);
    let json = is_json(content_type.as_deref());
    let status_failure = status_error(status, response.headers());
    // A rate limit, or a failure that is not JSON: its status says it all.
    if let Some(failure) = &status_failure
        && (!json || status == StatusCode::TOO_MANY_REQUESTS)
    {
        return Err(HttpStatusError::new(failure.status, failure.retry_after.clone()).into());
    }
    let length = content_length(&response);
    let body = match read_body(response.into_body(), length, MAX_ERROR_ANSWER_BYTES).await {
        Ok(body) => String::from_utf8_lossy(&body).into_owned(),
        Err(error @ StreamableHttpError::ResponseBodyTooLarge { .. }) => {
            return Err(status_failure
                .map(StreamableHttpError::from)
                .unwrap_or(error));
        }
        Err(_) => "<failed to read response body>".to_owned(),
    };
    // A 401/403 without a challenge keeps its status, not passing as a JSON-RPC error.
    let auth_failure = matches!(status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN);
    if !auth_failure && json {
        match serde_json::from_str::<ServerJsonRpcMessage>(&body) {
            Ok(message @ JsonRpcMessage::Error(_)) => {
                return Ok(StreamableHttpPostResponse::Json(message, session_id));
            }
            _ => tracing::warn!("HTTP {status}: the JSON body is not a JSON-RPC error"),
        }
    }
    if let Some(failure) = status_failure {
        return Err(failure.into());
    }
    Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(
        format!("HTTP {status}: {body}"),
    )))
}

/// The start of a body that is not what was expected, for the error that says so.
pub(super) fn preview(body: &[u8]) -> Cow<'_, str> {
    const PREVIEW_BYTES: usize = 256;
    if body.is_empty() {
        return Cow::Borrowed("<empty>");
    }
    let mut end = body.len().min(PREVIEW_BYTES);
    let text = String::from_utf8_lossy(body);
    end = end.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    Cow::Owned(text[..end].to_owned())
}

#[cfg(test)]
mod tests {
    use hyper::http::HeaderValue;

    use super::*;

    #[test]
    fn the_scope_of_a_challenge_is_read_quoted_or_not() {
        assert_eq!(
            scope_in(r#"Bearer error="insufficient_scope", scope="files:read files:write""#),
            Some("files:read files:write".to_owned())
        );
        assert_eq!(
            scope_in("Bearer Scope=read:data, error=x"),
            Some("read:data".to_owned())
        );
        assert_eq!(scope_in("Bearer realm=\"x\""), None);
    }

    #[test]
    fn only_rate_limits_and_server_errors_are_status_failures() {
        let mut headers = HeaderMap::new();
        headers.insert(RETRY_AFTER, HeaderValue::from_static("7"));
        let failure = status_error(StatusCode::TOO_MANY_REQUESTS, &headers).unwrap();
        assert_eq!(
            (failure.status, failure.retry_after.as_deref()),
            (429, Some("7"))
        );
        assert!(status_error(StatusCode::BAD_GATEWAY, &HeaderMap::new()).is_some());
        assert!(status_error(StatusCode::BAD_REQUEST, &headers).is_none());
        let long = HeaderValue::from_str(&"9".repeat(MAX_RETRY_AFTER_BYTES + 1)).unwrap();
        headers.insert(RETRY_AFTER, long);
        let failure = status_error(StatusCode::SERVICE_UNAVAILABLE, &headers).unwrap();
        assert_eq!(failure.retry_after, None);
    }

    #[test]
    fn previews_are_short_and_whole_characters() {
        assert_eq!(preview(b""), "<empty>");
        let long = "é".repeat(200);
        let shown = preview(long.as_bytes());
        assert!(
            shown.len() <= 256 && shown.chars().all(|c| c == 'é'),
            "{shown}"
        );
    }
}
