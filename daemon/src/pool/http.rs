//! Streamable HTTP servers: the server's HTTP client (`http_client/`), watched so that an answer
//! too large to accept is reported as the size error it is.
//!
//! The client caps each SSE event (`max_sse_event_size`, set to the same `--max-message-bytes` as
//! stdio) and each plain JSON answer (16 MiB, fixed, as rmcp's own client). Over the SSE cap it
//! ends that response stream and the request fails as "transport closed", which would read as the
//! server having gone away and count against its breaker, though the server is fine and answered.
//! So the client here is wrapped with one addition: it notes the request id of every response
//! stream that ended for being too large ([`OversizedAnswers`]), and the connection turns that
//! request's failure into `resultTooLarge` (that request alone; the connection stays).
//!
//! The same wrapper sends the server's OAuth access token (`oauth/`), renewed before it expires,
//! and remembers why a request failed where rmcp's error would only say the transport closed: an
//! untrusted TLS certificate (naming `caFile`), or a 401 (naming `tool-cli auth login`). The
//! client itself is built by `tls.rs`: rustls, the platform's roots and the server's `caFile`.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use futures_util::StreamExt as _;
use hyper::http::{HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, JsonRpcMessage};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::common::client_side_sse::BoxedSseResponse;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpClientTransportConfig, StreamableHttpError,
    StreamableHttpPostResponse,
};

use super::Published;
use super::connection::{Connection, ServiceDone, establish};
use super::http_client::{HttpClient, HttpError, PostMessage};
use super::http_tap::HttpTap;
use super::oversized::OversizedAnswers;
use super::raw_results::{RawResults, id_key};
use super::tls;
use crate::config::RemoteOptions;
use crate::oauth::{BearerError, ServerAuth};
use rmcp::transport::streamable_http_client::AuthRequiredError;
use tool_cli_replay::recording::Sender;

/// The server's HTTP client, noting which response streams ended for being too large, sending the
/// server's current OAuth access token with every request, and keeping the reason of the last
/// failure rmcp would word vaguely (an untrusted certificate, a 401).
#[derive(Clone)]
struct SizeWatchingClient {
    inner: HttpClient,
    oversized: Arc<OversizedAnswers>,
    auth: Option<Arc<ServerAuth>>,
    failure: Arc<Mutex<Option<String>>>,
    /// Set with a noted failure that is about authorization (a 401, a 403 for scope, no
    /// usable token), so the caller is told `authRequired`, not that the server went away.
    auth_refused: Arc<AtomicBool>,
    /// The `Mcp-Session-Id` last sent, for the spans' `mcp.session.id`.
    session: Arc<Mutex<Option<Arc<str>>>>,
    /// The recording, when the server is recorded (`http_tap.rs`).
    tap: Option<Arc<HttpTap>>,
    /// Raw results of the requests whose answers pass through unnarrowed (listings, MCP
    /// tasks), read from SSE answers and from plain JSON answers (whose body the client hands
    /// back beside rmcp's typed message); rmcp's typed results drop members it does not model (a
    /// tool's `execution`, a 2025 task).
    raw: Arc<RawResults>,
}

type HttpResult<T> = Result<T, StreamableHttpError<HttpError>>;

impl SizeWatchingClient {
    /// The bearer token to send: the server's OAuth token when it holds one (renewed first when
    /// it is about to expire), else the configured `Authorization` header's.
    async fn auth_header(&self, configured: Option<String>) -> HttpResult<Option<String>> {
        let Some(auth) = self.auth.as_ref().filter(|auth| auth.enabled()) else {
            return Ok(configured);
        };
        match auth.bearer().await {
            Ok(Some(token)) => Ok(Some(token)),
            Ok(None) => Ok(configured),
            Err(BearerError::NeedsLogin(reason)) => {
                self.note_auth(crate::oauth::login_hint(auth.name(), &reason));
                Err(StreamableHttpError::AuthRequired(AuthRequiredError::new(
                    String::new(),
                )))
            }
            Err(BearerError::Unavailable(reason)) => {
                self.note(reason.clone());
                Err(StreamableHttpError::UnexpectedServerResponse(reason.into()))
            }
        }
    }

    /// Notes the session a request is sent in (rmcp renews it when it expires).
    fn note_session(&self, session_id: Option<&Arc<str>>) {
        if let Some(session_id) = session_id {
            let mut noted = self.session.lock().unwrap();
            if noted.as_ref() != Some(session_id) {
                *noted = Some(Arc::clone(session_id));
            }
        }
    }

    fn note(&self, reason: String) {
        *self.failure.lock().unwrap() = Some(reason);
    }

    /// Notes an authorization failure.
    fn note_auth(&self, reason: String) {
        self.auth_refused.store(true, Ordering::Relaxed);
        self.note(reason);
    }

    /// Notes why a request failed when rmcp's own wording would hide it.
    async fn inspect<T>(&self, result: HttpResult<T>) -> HttpResult<T> {
        if let Err(error) = &result {
            match error {
                StreamableHttpError::AuthRequired(challenge) => {
                    let reason = match self.auth.as_ref().filter(|auth| auth.enabled()) {
                        Some(auth) => {
                            auth.remember_unauthorized(&challenge.www_authenticate_header);
                            auth.unauthorized().await
                        }
                        None => "the server answered 401 Unauthorized and OAuth is off for it \
                                 (\"oauth\": false); give it an Authorization header"
                            .to_owned(),
                    };
                    self.note_auth(reason);
                }
                StreamableHttpError::InsufficientScope(challenge) => {
                    let reason = match self.auth.as_ref().filter(|auth| auth.enabled()) {
                        Some(auth) => auth.insufficient_scope(&challenge.www_authenticate_header),
                        None => "the server refused the request for insufficient scope (403) \
                                 and OAuth is off for it (\"oauth\": false); its credentials \
                                 lack the permission"
                            .to_owned(),
                    };
                    self.note_auth(reason);
                }
                StreamableHttpError::Client(error) => {
                    if let Some(problem) = tls::certificate_problem(error) {
                        self.note(tls::untrusted_message(&problem));
                    }
                }
                _ => {}
            }
        }
        result
    }
}

impl StreamableHttpClient for SizeWatchingClient {
    type Error = HttpError;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        let auth_header = self.auth_header(auth_header).await?;
        self.note_session(session_id.as_ref());
        let mut custom_headers = custom_headers;
        add_trace_headers(&message, &mut custom_headers);
        if let Some(tap) = &self.tap {
            tap.record(Sender::Client, &message);
        }
        let result = self
            .inner
            .post_message(uri, message, session_id, auth_header, custom_headers)
            .await;
        let response = self.inspect(result).await?;
        Ok(self.tap_response(response))
    }

    fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> impl Future<Output = Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>>>
    + Send
    + '_ {
        let request_id = match &message {
            JsonRpcMessage::Request(request) => Some(id_key(&request.id)),
            _ => None,
        };
        let wants_raw = match &message {
            JsonRpcMessage::Request(request) => matches!(
                request.request,
                ClientRequest::ListToolsRequest(_)
                    | ClientRequest::ListResourcesRequest(_)
                    | ClientRequest::ListResourceTemplatesRequest(_)
                    | ClientRequest::CustomRequest(_)
            ),
            _ => false,
        };
        if wants_raw && let Some(id) = &request_id {
            self.raw.want(id.clone());
        }
        let mut custom_headers = custom_headers;
        add_trace_headers(&message, &mut custom_headers);
        self.note_session(session_id.as_ref());
        if let Some(tap) = &self.tap {
            tap.record(Sender::Client, &message);
        }
        async move {
            let auth_header = self.auth_header(auth_header).await?;
            let post = PostMessage {
                uri,
                message,
                session_id,
                auth_token: auth_header,
                custom_headers,
                max_sse_event_size,
            };
            let (result, json_body) = match self.inner.post_keeping_json(post).await {
                Ok((response, body)) => (Ok(response), body),
                Err(error) => (Err(error), None),
            };
            let response = self.tap_response(self.inspect(result).await?);
            if wants_raw && let Some(body) = json_body {
                offer_raw_result(&body, &self.raw);
            }
            Ok(match (response, request_id) {
                (StreamableHttpPostResponse::Sse(stream, session), Some(id)) => {
                    let oversized = Arc::clone(&self.oversized);
                    let stream = watch_sizes(stream, id, oversized);
                    let stream = match wants_raw {
                        true => keep_raw(stream, Arc::clone(&self.raw)),
                        false => stream,
                    };
                    StreamableHttpPostResponse::Sse(stream, session)
                }
                (response, _) => response,
            })
        }
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), StreamableHttpError<Self::Error>> {
        let auth_header = self.auth_header(auth_header).await?;
        self.inner
            .delete_session(uri, session_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxedSseResponse, StreamableHttpError<Self::Error>> {
        let auth_header = self.auth_header(auth_header).await?;
        let result = self
            .inner
            .get_stream(uri, session_id, last_event_id, auth_header, custom_headers)
            .await;
        Ok(self.tap_stream(self.inspect(result).await?))
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxedSseResponse, StreamableHttpError<Self::Error>> {
        let auth_header = self.auth_header(auth_header).await?;
        let result = self
            .inner
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await;
        Ok(self.tap_stream(self.inspect(result).await?))
    }
}

impl SizeWatchingClient {
    /// Records what the server answered a POST with (a JSON message, or each event of its
    /// stream as it is read), when the server is recorded.
    fn tap_response(&self, response: StreamableHttpPostResponse) -> StreamableHttpPostResponse {
        let Some(tap) = &self.tap else {
            return response;
        };
        match response {
            StreamableHttpPostResponse::Json(message, session) => {
                tap.record(Sender::Server, &message);
                StreamableHttpPostResponse::Json(message, session)
            }
            StreamableHttpPostResponse::Sse(stream, session) => {
                StreamableHttpPostResponse::Sse(self.tap_stream(stream), session)
            }
            accepted => accepted,
        }
    }

    /// Records each event of a server's SSE stream as it is read, when the server is recorded.
    fn tap_stream(&self, stream: BoxedSseResponse) -> BoxedSseResponse {
        let Some(tap) = self.tap.clone() else {
            return stream;
        };
        stream
            .inspect(move |item| {
                if let Ok(event) = item
                    && let Some(data) = &event.data
                {
                    tap.record_text(data);
                }
            })
            .boxed()
    }
}

/// Passes a response stream through, keeping the raw `result` of each answer `raw` wants.
fn keep_raw(stream: BoxedSseResponse, raw: Arc<RawResults>) -> BoxedSseResponse {
    stream
        .inspect(move |item| {
            if let Ok(event) = item
                && let Some(data) = &event.data
            {
                offer_raw_result(data.as_bytes(), &raw);
            }
        })
        .boxed()
}

/// Keeps the `result` of the answer in `message` (one JSON-RPC message, an SSE event's data or
/// a plain JSON body) if `raw` wants that answer's id; anything else is ignored.
fn offer_raw_result(message: &[u8], raw: &RawResults) {
    let Ok(serde_json::Value::Object(mut message)) = serde_json::from_slice(message) else {
        return;
    };
    if message.contains_key("method") {
        return;
    }
    let (Some(id), Some(result)) = (message.remove("id"), message.remove("result")) else {
        return;
    };
    let key = id.to_string();
    if raw.is_wanted(&key) {
        raw.offer(key, result);
    }
}

/// Passes a response stream through, noting request `id` if the stream fails for size.
fn watch_sizes(
    stream: BoxedSseResponse,
    id: String,
    oversized: Arc<OversizedAnswers>,
) -> BoxedSseResponse {
    stream
        .inspect(move |item| {
            if let Err(error) = item
                && size_limit_in(&error.to_string()).is_some()
            {
                // The client stops reading at the limit: the whole size is not known.
                oversized.record(id.clone(), None);
            }
        })
        .boxed()
}

/// The byte limit an error message of rmcp's says was exceeded, if it says so ("… exceeded the
/// maximum size of N bytes", for an SSE event and for a JSON body alike).
pub(crate) fn size_limit_in(message: &str) -> Option<u64> {
    let (_, rest) = message.split_once("exceeded the maximum size of ")?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// A remote server as the pool connects to it.
pub(crate) struct Remote<'a> {
    pub(crate) url: &'a str,
    pub(crate) headers: &'a BTreeMap<String, String>,
    pub(crate) options: &'a RemoteOptions,
    /// Its OAuth state (`None` for a server the daemon has no state for).
    pub(crate) auth: Option<Arc<ServerAuth>>,
    /// The config's secrets, redacted in a recording.
    pub(crate) secrets: Arc<crate::redact::Secrets>,
}

/// Connects to a Streamable HTTP server: the MCP handshake, then its tool list.
pub(crate) async fn connect(
    name: &str,
    published: Arc<Published>,
    remote: Remote<'_>,
    max_message_bytes: usize,
) -> Result<(Arc<Connection>, ServiceDone), String> {
    let mut config = StreamableHttpClientTransportConfig::with_uri(remote.url.to_owned())
        .max_sse_event_size(max_message_bytes);
    let mut custom = HashMap::new();
    for (key, value) in remote.headers {
        if key.eq_ignore_ascii_case("authorization")
            && let Some(token) = value.strip_prefix("Bearer ")
        {
            config = config.auth_header(token.to_owned());
            continue;
        }
        let key = HeaderName::try_from(key.as_str())
            .map_err(|err| format!("header name \"{key}\" is invalid: {err}"))?;
        let value = HeaderValue::try_from(value.as_str())
            .map_err(|err| format!("header \"{key}\" has an invalid value: {err}"))?;
        custom.insert(key, value);
    }
    config = config
        .custom_headers(custom)
        .reinit_on_expired_session(true);
    // The OAuth state's client trusts the same roots; share it (and its connection pool).
    let inner = match remote.auth.as_ref().map(|auth| auth.client()) {
        Some(Ok(client)) => client.clone(),
        Some(Err(message)) => return Err(message.to_owned()),
        None => {
            HttpClient::new(remote.options.ca_file.as_deref()).map_err(|err| err.to_string())?
        }
    };
    let oversized = Arc::new(OversizedAnswers::new(max_message_bytes));
    let failure = Arc::new(Mutex::new(None));
    let auth_refused = Arc::new(AtomicBool::new(false));
    let session = Arc::new(Mutex::new(None));
    let tap = match &remote.options.record {
        Some(path) => Some(Arc::new(
            HttpTap::open(
                path,
                name,
                remote.url,
                remote.headers.keys().cloned().collect(),
                Arc::clone(&remote.secrets),
            )
            .map_err(|error| {
                format!(
                    "the recording {} cannot be written: {error}",
                    path.display()
                )
            })?,
        )),
        None => None,
    };
    let raw = Arc::new(RawResults::default());
    let client = SizeWatchingClient {
        tap,
        raw: Arc::clone(&raw),
        session: Arc::clone(&session),
        inner,
        oversized: Arc::clone(&oversized),
        auth: remote.auth,
        failure: Arc::clone(&failure),
        auth_refused: Arc::clone(&auth_refused),
    };
    let transport = StreamableHttpClientTransport::with_client(client, config);
    establish(
        name,
        published,
        transport,
        super::connection::Extras {
            oversized: Some(oversized),
            // A request's failure reads the reason noted for it (a 401, a 403 for scope).
            stream_closed: Arc::clone(&failure),
            auth_refused: Some(auth_refused),
            address: crate::provider::address_of(remote.url),
            session: Some(session),
            raw: Some(raw),
            ..Default::default()
        },
    )
    .await
    // rmcp words these as a closed transport; the reason noted on the way is the one to give.
    .map_err(|message| failure.lock().unwrap().take().unwrap_or(message))
}

/// Copies a request's trace context (a tool call's, a prompt's, a resource read's or a
/// listing's) from its `params._meta` into the `traceparent` and `tracestate` headers, so an HTTP server (or a proxy in front of it) that reads W3C Trace
/// Context from headers joins the same trace as one that reads `_meta`.
fn add_trace_headers(
    message: &ClientJsonRpcMessage,
    headers: &mut HashMap<HeaderName, HeaderValue>,
) {
    let JsonRpcMessage::Request(request) = message else {
        return;
    };
    use rmcp::model::ClientRequest as Request;
    let meta = match &request.request {
        Request::CallToolRequest(call) => call.params.meta.as_ref(),
        Request::GetPromptRequest(get) => get.params.meta.as_ref(),
        Request::ReadResourceRequest(read) => read.params.meta.as_ref(),
        Request::ListPromptsRequest(list) => list.params.as_ref().and_then(|p| p.meta.as_ref()),
        Request::ListResourcesRequest(list) => list.params.as_ref().and_then(|p| p.meta.as_ref()),
        Request::ListResourceTemplatesRequest(list) => {
            list.params.as_ref().and_then(|p| p.meta.as_ref())
        }
        _ => None,
    };
    let Some(meta) = meta else {
        return;
    };
    for name in ["traceparent", "tracestate"] {
        if let Some(serde_json::Value::String(value)) = meta.get(name)
            && let Ok(value) = HeaderValue::from_str(value)
        {
            headers.insert(HeaderName::from_static(name), value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_limits_are_read_from_rmcps_messages() {
        // The JSON-body limit, worded by rmcp itself: if rmcp rewords it, this fails.
        let error = StreamableHttpError::<std::io::Error>::ResponseBodyTooLarge { max_size: 4096 };
        assert_eq!(size_limit_in(&error.to_string()), Some(4096));
        // The SSE event limit's wording (its type is private to rmcp); the end-to-end test of
        // an oversized event covers the real thing.
        assert_eq!(
            size_limit_in("body error: SSE event exceeded the maximum size of 1048576 bytes"),
            Some(1_048_576)
        );
        assert_eq!(size_limit_in("connection reset by peer"), None);
    }
}
