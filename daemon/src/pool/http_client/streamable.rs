//! MCP's Streamable HTTP over [`HttpClient`]: rmcp's `StreamableHttpClient`, the three requests
//! its transport makes (POST a message, GET the server's stream, DELETE the session).
//!
//! The answers are read (`answers.rs`) as rmcp's own reqwest client reads them (rmcp 3.9,
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
use hyper::http::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, LOCATION};
use hyper::http::{HeaderName, HeaderValue, Method, Request, Response, StatusCode, Uri};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::common::client_side_sse::BoxedSseResponse;
use rmcp::transport::common::http_header::{
    EVENT_STREAM_MIME_TYPE, HEADER_LAST_EVENT_ID, HEADER_MCP_PROTOCOL_VERSION, HEADER_SESSION_ID,
    JSON_MIME_TYPE,
};
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
};

use super::answers::{
    challenge, content_length, content_type, expects_no_answer, failed_answer, is_event_stream,
    is_json, preview, read_body, status_error,
};
use super::{
    HttpClient, HttpError, MAX_REDIRECTS, body_stream, bounded_sse_stream, parse_uri, resolve,
};

type HttpResult<T> = Result<T, StreamableHttpError<HttpError>>;

/// Largest plain JSON answer read (rmcp's own limit).
const MAX_JSON_ANSWER_BYTES: usize = 16 * 1024 * 1024;
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
