//! Streamable HTTP servers: rmcp's reqwest client, watched so that an answer too large to accept
//! is reported as the size error it is.
//!
//! rmcp caps each SSE event (`max_sse_event_size`, set to the same `--max-message-bytes` as
//! stdio) and each plain JSON answer (16 MiB, fixed). Over the SSE cap it ends that response
//! stream and the request fails as "transport closed", which would read as the server having gone
//! away and count against its breaker, though the server is fine and answered. So the client
//! here is rmcp's own reqwest client with one addition: it notes the request id of every response
//! stream that ended for being too large ([`OversizedAnswers`]), and the connection turns that
//! request's failure into `messageTooLarge`.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};

use futures_util::StreamExt as _;
use hyper::http::{HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, JsonRpcMessage};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::common::client_side_sse::BoxedSseResponse;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpClientTransportConfig, StreamableHttpError,
    StreamableHttpPostResponse,
};

use super::Published;
use super::connection::{Connection, ServiceDone, establish};
use super::stdio::id_key;

/// Most ids remembered at once; a request abandoned before its failure was read leaves its id
/// behind, so the set is emptied rather than allowed to grow.
const MAX_REMEMBERED: usize = 64;

/// The request ids whose answers were over the size limit, until the connection reads them.
pub(crate) struct OversizedAnswers {
    /// The limit they exceeded, in bytes.
    pub(crate) limit_bytes: usize,
    ids: Mutex<HashSet<String>>,
}

impl OversizedAnswers {
    fn new(limit_bytes: usize) -> OversizedAnswers {
        OversizedAnswers {
            limit_bytes,
            ids: Mutex::new(HashSet::new()),
        }
    }

    fn record(&self, id: String) {
        let mut ids = self.ids.lock().unwrap();
        if ids.len() >= MAX_REMEMBERED {
            ids.clear();
        }
        ids.insert(id);
    }

    /// Whether the answer to request `id` (its [`id_key`]) was too large; forgets it.
    pub(crate) fn take(&self, id: &str) -> bool {
        self.ids.lock().unwrap().remove(id)
    }
}

/// rmcp's reqwest client, noting which response streams ended for being too large.
#[derive(Clone)]
struct SizeWatchingClient {
    inner: reqwest::Client,
    oversized: Arc<OversizedAnswers>,
}

impl StreamableHttpClient for SizeWatchingClient {
    type Error = reqwest::Error;

    fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> impl Future<Output = Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>>>
    + Send
    + '_ {
        self.inner
            .post_message(uri, message, session_id, auth_header, custom_headers)
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
        async move {
            let response = self
                .inner
                .post_message_with_max_sse_event_size(
                    uri,
                    message,
                    session_id,
                    auth_header,
                    custom_headers,
                    max_sse_event_size,
                )
                .await?;
            Ok(match (response, request_id) {
                (StreamableHttpPostResponse::Sse(stream, session), Some(id)) => {
                    let oversized = Arc::clone(&self.oversized);
                    StreamableHttpPostResponse::Sse(watch_sizes(stream, id, oversized), session)
                }
                (response, _) => response,
            })
        }
    }

    fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> impl Future<Output = Result<(), StreamableHttpError<Self::Error>>> + Send + '_ {
        self.inner
            .delete_session(uri, session_id, auth_header, custom_headers)
    }

    fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> impl Future<Output = Result<BoxedSseResponse, StreamableHttpError<Self::Error>>> + Send + '_
    {
        self.inner
            .get_stream(uri, session_id, last_event_id, auth_header, custom_headers)
    }

    fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> impl Future<Output = Result<BoxedSseResponse, StreamableHttpError<Self::Error>>> + Send + '_
    {
        self.inner.get_stream_with_max_sse_event_size(
            uri,
            session_id,
            last_event_id,
            auth_header,
            custom_headers,
            max_sse_event_size,
        )
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
                oversized.record(id.clone());
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

/// Connects to a Streamable HTTP server: the MCP handshake, then its tool list.
pub(crate) async fn connect(
    name: &str,
    published: Arc<Published>,
    url: &str,
    headers: &BTreeMap<String, String>,
    max_message_bytes: usize,
) -> Result<(Arc<Connection>, ServiceDone), String> {
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_owned())
        .max_sse_event_size(max_message_bytes);
    let mut custom = HashMap::new();
    for (key, value) in headers {
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
    let oversized = Arc::new(OversizedAnswers::new(max_message_bytes));
    let client = SizeWatchingClient {
        inner: reqwest::Client::default(),
        oversized: Arc::clone(&oversized),
    };
    let transport = StreamableHttpClientTransport::with_client(client, config);
    establish(
        name,
        published,
        transport,
        super::connection::Extras {
            oversized: Some(oversized),
            ..Default::default()
        },
    )
    .await
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

    #[test]
    fn remembered_ids_are_taken_once_and_stay_bounded() {
        let oversized = OversizedAnswers::new(10);
        oversized.record("7".into());
        assert!(oversized.take("7"));
        assert!(!oversized.take("7"));
        for id in 0..(MAX_REMEMBERED * 3) {
            oversized.record(id.to_string());
        }
        assert!(oversized.ids.lock().unwrap().len() <= MAX_REMEMBERED);
    }
}
