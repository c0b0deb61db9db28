//! MCP's Streamable HTTP over [`HttpClient`]: rmcp's `StreamableHttpClient`, the three requests
//! its transport makes (POST a message, GET the server's stream, DELETE the session).
//!
//! The answers are read as rmcp's own reqwest client reads them (rmcp 3.9,
//! `transport/common/reqwest/streamable_http_client.rs`), so the transport behaves the same: a 401
//! or 403 with a challenge is `AuthRequired` / `InsufficientScope`, 429 and 5xx carry their
//! `Retry-After`, a JSON-RPC error in a failed answer is kept, a 404 in a session is an expired
//! session, a plain JSON answer is read up to 16 MiB and an SSE answer's events are capped at
//! `max_sse_event_size` (`sse_limit.rs`).
//!
//! rmcp's client follows what the reqwest client under it follows, which by default was up to
//! 10 redirects; `send_mcp` keeps that for the redirects that keep the request whole
//! (`mcp_redirect`), so a server behind Starlette's `/mcp` -> `/mcp/` 307 still works.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::http::header::{
    ACCEPT, AUTHORIZATION, CONTENT_TYPE, LOCATION, RETRY_AFTER, WWW_AUTHENTICATE,
};
use hyper::http::{HeaderMap, HeaderName, HeaderValue, Method, Request, Response, StatusCode, Uri};
use rmcp::model::{ClientJsonRpcMessage, JsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::common::client_side_sse::BoxedSseResponse;
use rmcp::transport::common::http_header::{
    EVENT_STREAM_MIME_TYPE, HEADER_LAST_EVENT_ID, HEADER_MCP_PROTOCOL_VERSION, HEADER_SESSION_ID,
    JSON_MIME_TYPE,
};
use rmcp::transport::streamable_http_client::{
    AuthRequiredError, HttpStatusError, InsufficientScopeError, StreamableHttpClient,
    StreamableHttpError, StreamableHttpPostResponse,
};

use super::{
    HttpClient, HttpError, MAX_REDIRECTS, body_stream, bounded_sse_stream, parse_uri, read_capped,
    resolve,
};

type HttpResult<T> = Result<T, StreamableHttpError<HttpError>>;

/// Largest plain JSON answer read (rmcp's own limit).
const MAX_JSON_ANSWER_BYTES: usize = 16 * 1024 * 1024;
/// Largest body of a failed answer read for its JSON-RPC error (rmcp's own limit).
const MAX_ERROR_ANSWER_BYTES: usize = 64 * 1024;
/// Longest `Retry-After` kept (rmcp's own limit).
const MAX_RETRY_AFTER_BYTES: usize = 128;
/// What an SSE answer may hold when the transport names no cap (rmcp's default).
const DEFAULT_MAX_SSE_EVENT_BYTES: usize = 16 * 1024 * 1024;

/// Headers the transport sets itself, which a configured header must not replace
/// (`MCP-Protocol-Version` is let through: the transport adds it as a custom header).
const RESERVED_HEADERS: [&str; 3] = ["accept", HEADER_SESSION_ID, HEADER_LAST_EVENT_ID];

/// The parts of a request every one of the three shares.
struct Outgoing<'a> {
    method: Method,
    uri: &'a str,
    session_id: Option<&'a str>,
    auth_token: Option<String>,
    custom_headers: HashMap<HeaderName, HeaderValue>,
}

impl HttpClient {
    /// Sends one of the transport's requests, following a redirect that keeps the request
    /// whole (`mcp_redirect`), at most 10 as reqwest did. A redirect to another origin carries
    /// neither the bearer token nor the configured headers (they are the first server's
    /// credentials); only `MCP-Protocol-Version` goes with it.
    async fn send_mcp(
        &self,
        outgoing: Outgoing<'_>,
        extra: &[(HeaderName, String)],
        body: Option<Bytes>,
    ) -> HttpResult<Response<Incoming>> {
        for name in outgoing.custom_headers.keys() {
            if RESERVED_HEADERS
                .iter()
                .any(|reserved| name.as_str().eq_ignore_ascii_case(reserved))
                && !name
                    .as_str()
                    .eq_ignore_ascii_case(HEADER_MCP_PROTOCOL_VERSION)
            {
                return Err(StreamableHttpError::ReservedHeaderConflict(
                    name.to_string(),
                ));
            }
        }
        let first = parse_uri(outgoing.uri).map_err(StreamableHttpError::Client)?;
        let mut uri = first.clone();
        for _ in 0..=MAX_REDIRECTS {
            let same_origin = same_origin(&first, &uri);
            let request = mcp_request(&outgoing, extra, uri.clone(), same_origin, body.clone())
                .map_err(|error| StreamableHttpError::Client(HttpError::Request(error)))?;
            let response = self
                .send(request)
                .await
                .map_err(StreamableHttpError::Client)?;
            let location = response
                .headers()
                .get(LOCATION)
                .and_then(|value| value.to_str().ok());
            match mcp_redirect(&outgoing.method, response.status(), &uri, location) {
                Some(next) => uri = next,
                None => return Ok(response),
            }
        }
        Err(StreamableHttpError::Client(HttpError::TooManyRedirects(
            MAX_REDIRECTS,
        )))
    }
}

/// One attempt of a transport request at `uri`.
fn mcp_request(
    outgoing: &Outgoing<'_>,
    extra: &[(HeaderName, String)],
    uri: Uri,
    same_origin: bool,
    body: Option<Bytes>,
) -> Result<Request<Full<Bytes>>, hyper::http::Error> {
    let mut builder = Request::builder().method(outgoing.method.clone()).uri(uri);
    for (name, value) in extra {
        builder = builder.header(name, value.as_str());
    }
    if let Some(token) = outgoing.auth_token.as_deref()
        && same_origin
    {
        builder = builder.header(AUTHORIZATION, format!("Bearer {token}"));
    }
    if let Some(session_id) = outgoing.session_id {
        builder = builder.header(HEADER_SESSION_ID, session_id);
    }
    for (name, value) in &outgoing.custom_headers {
        if same_origin
            || name
                .as_str()
                .eq_ignore_ascii_case(HEADER_MCP_PROTOCOL_VERSION)
        {
            builder = builder.header(name, value);
        }
    }
    builder.body(Full::new(body.unwrap_or_default()))
}

/// Where a transport request is redirected to, if the redirect is followed: a 307 or 308
/// (the method and body are kept, as HTTP says; a POST of a JSON-RPC message stays one), or a
/// 301, 302 or 303 of the GET that opens the server's stream. A 301/302/303 of a POST or
/// DELETE is not followed (it would turn the message into a GET without body, which no MCP
/// server answers), nor is a redirect from https:// to http://: the 3xx is then the answer, and
/// the transport reports it. Pure, for the tests.
pub(super) fn mcp_redirect(
    method: &Method,
    status: StatusCode,
    current: &Uri,
    location: Option<&str>,
) -> Option<Uri> {
    let follows = match status {
        StatusCode::TEMPORARY_REDIRECT | StatusCode::PERMANENT_REDIRECT => true,
        StatusCode::MOVED_PERMANENTLY | StatusCode::FOUND | StatusCode::SEE_OTHER => {
            *method == Method::GET
        }
        _ => false,
    };
    if !follows {
        return None;
    }
    let next = resolve(current, location?)?;
    let downgrade = current.scheme_str() == Some("https") && next.scheme_str() != Some("https");
    (!downgrade).then_some(next)
}

/// Two URLs share an origin: scheme, host and port (the scheme's default when absent).
fn same_origin(first: &Uri, other: &Uri) -> bool {
    let port = |uri: &Uri| {
        uri.port_u16().or(match uri.scheme_str() {
            Some("https") => Some(443),
            _ => Some(80),
        })
    };
    first.scheme_str() == other.scheme_str()
        && first
            .host()
            .zip(other.host())
            .is_some_and(|(one, two)| one.eq_ignore_ascii_case(two))
        && port(first) == port(other)
}

/// A 401 or 403 that carries a challenge, as rmcp's errors for them.
fn challenge(response: &Response<Incoming>) -> HttpResult<()> {
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
fn scope_in(header: &str) -> Option<String> {
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
fn status_error(status: StatusCode, headers: &HeaderMap) -> Option<HttpStatusError> {
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

fn content_type(response: &Response<Incoming>) -> Option<String> {
    response
        .headers()
        .get(CONTENT_TYPE)
        .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned())
}

fn is_json(content_type: Option<&str>) -> bool {
    content_type.is_some_and(|value| value.starts_with(JSON_MIME_TYPE))
}

fn is_event_stream(content_type: Option<&str>) -> bool {
    content_type.is_some_and(|value| value.starts_with(EVENT_STREAM_MIME_TYPE))
}

/// A message that expects no answer (a notification, or the client's own answer).
fn expects_no_answer(message: &ClientJsonRpcMessage) -> bool {
    !matches!(message, JsonRpcMessage::Request(_))
}

/// Reads a body whole for the transport: over `max` is rmcp's size error.
async fn read_body(body: Incoming, content_length: Option<u64>, max: usize) -> HttpResult<Vec<u8>> {
    if content_length.is_some_and(|length| length > max as u64) {
        return Err(StreamableHttpError::ResponseBodyTooLarge { max_size: max });
    }
    read_capped(body, max).await.map_err(|error| match error {
        HttpError::TooLarge(max_size) => StreamableHttpError::ResponseBodyTooLarge { max_size },
        other => StreamableHttpError::Client(other),
    })
}

fn content_length(response: &Response<Incoming>) -> Option<u64> {
    response
        .headers()
        .get(hyper::http::header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse().ok())
}

/// A failed answer (not 2xx): its JSON-RPC error when it carries one, else the failure.
async fn failed_answer(
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

/// One POST of a message, as rmcp's transport asks for it.
pub(in crate::pool) struct PostMessage {
    pub uri: Arc<str>,
    pub message: ClientJsonRpcMessage,
    pub session_id: Option<Arc<str>>,
    pub auth_token: Option<String>,
    pub custom_headers: HashMap<HeaderName, HeaderValue>,
    pub max_sse_event_size: usize,
}

impl HttpClient {
    /// POSTs a message as [`StreamableHttpClient::post_message_with_max_sse_event_size`] does,
    /// and also hands back the body of an answer that came as one plain JSON body (not SSE):
    /// rmcp's typed message drops the members rmcp does not model (a tool's `execution`, for
    /// one), and the pool passes listings and task answers through unnarrowed
    /// (`pool/raw_results.rs`).
    pub(in crate::pool) async fn post_keeping_json(
        &self,
        post: PostMessage,
    ) -> HttpResult<(StreamableHttpPostResponse, Option<Vec<u8>>)> {
        let PostMessage {
            uri,
            message,
            session_id,
            auth_token,
            custom_headers,
            max_sse_event_size,
        } = post;
        let body = serde_json::to_vec(&message)?;
        let outgoing = Outgoing {
            method: Method::POST,
            uri: &uri,
            session_id: session_id.as_deref(),
            auth_token,
            custom_headers,
        };
        let extra = [
            (
                ACCEPT,
                format!("{EVENT_STREAM_MIME_TYPE}, {JSON_MIME_TYPE}"),
            ),
            (CONTENT_TYPE, JSON_MIME_TYPE.to_owned()),
        ];
        let response = self.send_mcp(outgoing, &extra, Some(body.into())).await?;
        challenge(&response)?;
        let status = response.status();
        if matches!(status, StatusCode::ACCEPTED | StatusCode::NO_CONTENT) {
            return Ok((StreamableHttpPostResponse::Accepted, None));
        }
        if status == StatusCode::NOT_FOUND && session_id.is_some() {
            return Err(StreamableHttpError::SessionExpired);
        }
        let new_session = response
            .headers()
            .get(HEADER_SESSION_ID)
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned);
        if !status.is_success() {
            return failed_answer(response, new_session)
                .await
                .map(|response| (response, None));
        }
        let length = content_length(&response);
        // Some servers answer a notification with an empty 200 instead of 202.
        if length == Some(0) && expects_no_answer(&message) {
            return Ok((StreamableHttpPostResponse::Accepted, None));
        }
        let content_type = content_type(&response);
        if is_event_stream(content_type.as_deref()) {
            let events = bounded_sse_stream(body_stream(response.into_body()), max_sse_event_size);
            return Ok((StreamableHttpPostResponse::Sse(events, new_session), None));
        }
        if !is_json(content_type.as_deref()) {
            tracing::error!("unexpected content type: {content_type:?}");
            return Err(StreamableHttpError::UnexpectedContentType(content_type));
        }
        let body = read_body(response.into_body(), length, MAX_JSON_ANSWER_BYTES).await?;
        match serde_json::from_slice::<ServerJsonRpcMessage>(&body) {
            Ok(parsed) => Ok((
                StreamableHttpPostResponse::Json(parsed, new_session),
                Some(body),
            )),
            // Nobody waits for an answer to this message: an unusable one is as good as none.
            Err(error) if expects_no_answer(&message) => {
                tracing::warn!("the JSON answer to a notification is not JSON-RPC: {error}");
                Ok((StreamableHttpPostResponse::Accepted, None))
            }
            Err(error) => Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(
                format!(
                    "could not parse JSON response as ServerJsonRpcMessage: {error}: {}",
                    preview(&body)
                ),
            ))),
        }
    }
}

impl StreamableHttpClient for HttpClient {
    type Error = HttpError;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> HttpResult<StreamableHttpPostResponse> {
        self.post_message_with_max_sse_event_size(
            uri,
            message,
            session_id,
            auth_token,
            custom_headers,
            DEFAULT_MAX_SSE_EVENT_BYTES,
        )
        .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> HttpResult<StreamableHttpPostResponse> {
        let post = PostMessage {
            uri,
            message,
            session_id,
            auth_token,
            custom_headers,
            max_sse_event_size,
        };
        self.post_keeping_json(post)
            .await
            .map(|(response, _body)| response)
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> HttpResult<()> {
        let outgoing = Outgoing {
            method: Method::DELETE,
            uri: &uri,
            session_id: Some(&session_id),
            auth_token,
            custom_headers,
        };
        let response = self.send_mcp(outgoing, &[], None).await?;
        let status = response.status();
        if status == StatusCode::METHOD_NOT_ALLOWED {
            tracing::debug!("the server does not support deleting its session");
            return Ok(());
        }
        if status.is_client_error() || status.is_server_error() {
            return Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(
                format!("HTTP {status} to the session's DELETE"),
            )));
        }
        Ok(())
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> HttpResult<BoxedSseResponse> {
        self.get_stream_with_max_sse_event_size(
            uri,
            session_id,
            last_event_id,
            auth_token,
            custom_headers,
            DEFAULT_MAX_SSE_EVENT_BYTES,
        )
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> HttpResult<BoxedSseResponse> {
        let outgoing = Outgoing {
            method: Method::GET,
            uri: &uri,
            session_id: session_id.as_deref(),
            auth_token,
            custom_headers,
        };
        let mut extra = vec![(
            ACCEPT,
            format!("{EVENT_STREAM_MIME_TYPE}, {JSON_MIME_TYPE}"),
        )];
        if let Some(last_event_id) = last_event_id {
            extra.push((HeaderName::from_static("last-event-id"), last_event_id));
        }
        let response = self.send_mcp(outgoing, &extra, None).await?;
        let status = response.status();
        if status == StatusCode::METHOD_NOT_ALLOWED {
            return Err(StreamableHttpError::ServerDoesNotSupportSse);
        }
        challenge(&response)?;
        if let Some(failure) = status_error(status, response.headers()) {
            return Err(failure.into());
        }
        if !status.is_success() {
            return Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(
                format!("HTTP {status} to the GET of the server's stream"),
            )));
        }
        let content_type = content_type(&response);
        if !is_event_stream(content_type.as_deref()) && !is_json(content_type.as_deref()) {
            return Err(StreamableHttpError::UnexpectedContentType(content_type));
        }
        Ok(bounded_sse_stream(
            body_stream(response.into_body()),
            max_sse_event_size,
        ))
    }
}

/// The start of a body that is not what was expected, for the error that says so.
fn preview(body: &[u8]) -> Cow<'_, str> {
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
