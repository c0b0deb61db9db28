//! The HTTPS client the LLM backends share, and its retry policy.
//!
//! hyper 1 through hyper-util's pooled client, TLS by rustls with the ring provider and the
//! webpki roots (no OpenSSL, no system store); plain `http://` is allowed too, for local
//! OpenAI-compatible servers and the loopback fakes of the tests. A request that fails before
//! any answer (connection refused, 429, 500/502/503/504, 529 overloaded) is sent again after a
//! backoff that honours `retry-after` / `retry-after-ms`; nothing is retried once a stream has
//! started, because tokens may already have been billed. The retry decision is a pure function
//! and the retry loop is generic over the attempt, so both are tested with paused time.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::{BodyExt as _, Full};
use hyper::body::{Bytes, Incoming};
use hyper::header::{HeaderMap, HeaderName, HeaderValue};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

use super::LlmError;
use crate::config::ApiKey;

/// When and how often a failed request is sent again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// The first backoff; doubled per retry.
    pub base_delay: Duration,
    /// No wait is longer than this, whatever `retry-after` says.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 4,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(60),
        }
    }
}

/// Where a backend sends its requests.
#[derive(Debug, Clone)]
pub struct HttpSettings {
    /// The API base (`https://api.anthropic.com`, `http://127.0.0.1:11434/v1`, …).
    pub base_url: String,
    /// The key, when the endpoint needs one.
    pub api_key: Option<ApiKey>,
    /// Retries.
    pub retry: RetryPolicy,
}

/// Statuses worth another try: rate limits, server faults, Anthropic's 529 overloaded.
pub(crate) fn is_retryable_status(status: u16) -> bool {
    matches!(status, 408 | 409 | 429 | 500 | 502 | 503 | 504 | 529)
}

/// The server's requested wait: `retry-after-ms` (milliseconds), else `retry-after` in seconds
/// (an HTTP date is ignored: the backoff applies then).
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(ms) = text("retry-after-ms").and_then(|v| v.trim().parse::<f64>().ok())
        && ms.is_finite()
        && ms >= 0.0
    {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    text("retry-after")
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map(Duration::from_secs_f64)
}

/// How long to wait before retry number `retry` (1-based): the server's `retry-after` when it
/// gave one, else exponential backoff with equal jitter (`jitter` in `0.0..1.0`), both capped.
pub(crate) fn retry_delay(
    policy: &RetryPolicy,
    retry: u32,
    server_says: Option<Duration>,
    jitter: f64,
) -> Duration {
    if let Some(wait) = server_says {
        return wait.min(policy.max_delay);
    }
    let exponent = retry.saturating_sub(1).min(16);
    let full = policy
        .base_delay
        .saturating_mul(1u32 << exponent)
        .min(policy.max_delay);
    full / 2 + full.mul_f64(jitter.clamp(0.0, 1.0) / 2.0)
}

/// The outcome of one attempt of a retried operation.
pub(crate) enum Attempt<T> {
    /// It worked.
    Done(T),
    /// It failed in a way worth retrying.
    Retry {
        /// The failure, returned when the retries run out.
        error: LlmError,
        /// The server's requested wait.
        retry_after: Option<Duration>,
    },
    /// It failed for good.
    Fail(LlmError),
}

/// Runs `attempt(1)`, `attempt(2)`, … until one is not [`Attempt::Retry`] or the policy's
/// retries are spent, sleeping between them with `tokio::time` (so tests can pause the clock).
pub(crate) async fn with_retries<T, F, Fut>(
    policy: &RetryPolicy,
    deadline: Option<tokio::time::Instant>,
    mut attempt: F,
) -> Result<T, LlmError>
where
    F: FnMut(u32) -> Fut,
    Fut: Future<Output = Attempt<T>>,
{
    let mut number = 1;
    loop {
        match attempt(number).await {
            Attempt::Done(value) => return Ok(value),
            Attempt::Fail(error) => return Err(error),
            Attempt::Retry { error, retry_after } => {
                if number > policy.max_retries {
                    return Err(error);
                }
                let jitter = rand::random::<f64>();
                let wait = retry_delay(policy, number, retry_after, jitter);
                if let Some(deadline) = deadline
                    && tokio::time::Instant::now() + wait > deadline
                {
                    // Sleeping would outlive the caller: say so now, with the provider's reason.
                    return Err(past_deadline(error, wait));
                }
                tracing::debug!(
                    attempt = number,
                    wait_ms = wait.as_millis() as u64,
                    %error,
                    "llm request failed; retrying"
                );
                tokio::time::sleep(wait).await;
                number += 1;
            }
        }
    }
}

/// A retryable error whose wait would pass the deadline, with a note saying so.
fn past_deadline(error: LlmError, wait: Duration) -> LlmError {
    let note = format!(
        "; not retried: the wait asked for ({:.1} s) would pass this call's deadline",
        wait.as_secs_f64()
    );
    match error {
        LlmError::Status {
            provider,
            status,
            message,
        } => LlmError::Status {
            provider,
            status,
            message: format!("{message}{note}"),
        },
        LlmError::Transport {
            provider,
            endpoint,
            message,
        } => LlmError::Transport {
            provider,
            endpoint,
            message: format!("{message}{note}"),
        },
        other => other,
    }
}

type Connector = hyper_rustls::HttpsConnector<HttpConnector>;

/// The shared HTTP client (cheap to clone).
#[derive(Clone)]
pub(crate) struct HttpClient {
    client: Client<Connector, Full<Bytes>>,
}

impl std::fmt::Debug for HttpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HttpClient")
    }
}

impl HttpClient {
    pub(crate) fn new() -> Result<Self, LlmError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_provider_and_webpki_roots(provider)
            .map_err(|error| LlmError::Config(format!("cannot set up TLS: {error}")))?
            .https_or_http()
            .enable_http1()
            .build();
        let client = Client::builder(TokioExecutor::new()).build(connector);
        Ok(Self { client })
    }

    /// POSTs `body` to `url` with `headers`, retrying per `policy` until a 2xx answer starts;
    /// returns that answer with its body unread (a stream). `provider` names the API in errors.
    pub(crate) async fn post(
        &self,
        provider: &'static str,
        url: &str,
        headers: &[(HeaderName, HeaderValue)],
        body: Bytes,
        policy: &RetryPolicy,
        deadline: Option<tokio::time::Instant>,
    ) -> Result<hyper::Response<Incoming>, LlmError> {
        let uri: hyper::Uri = url.parse().map_err(|error| {
            LlmError::Config(format!(
                "the {provider} endpoint {url:?} is not a valid URL ({error}); set agent.baseUrl \
                 to an http:// or https:// URL"
            ))
        })?;
        with_retries(policy, deadline, |attempt| {
            let uri = uri.clone();
            let body = body.clone();
            async move {
                let mut request = hyper::Request::post(uri);
                for (name, value) in headers {
                    request = request.header(name, value);
                }
                let request = match request.body(Full::new(body)) {
                    Ok(request) => request,
                    Err(error) => {
                        return Attempt::Fail(LlmError::Config(format!(
                            "cannot build the {provider} request: {error}"
                        )));
                    }
                };
                tracing::debug!(provider, url, attempt, "llm request");
                let response = match self.client.request(request).await {
                    Ok(response) => response,
                    Err(error) => {
                        return Attempt::Retry {
                            error: LlmError::Transport {
                                provider,
                                endpoint: url.to_owned(),
                                message: error_chain(&error),
                            },
                            retry_after: None,
                        };
                    }
                };
                let status = response.status().as_u16();
                if response.status().is_success() {
                    return Attempt::Done(response);
                }
                let wait = retry_after(response.headers());
                let message = error_message(response.into_body()).await;
                let error = LlmError::Status {
                    provider,
                    status,
                    message,
                };
                if is_retryable_status(status) {
                    Attempt::Retry {
                        error,
                        retry_after: wait,
                    }
                } else {
                    Attempt::Fail(error)
                }
            }
        })
        .await
    }
}

/// The error's message with its sources, which hyper keeps apart.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    message
}

/// The provider's error message from an error body (`{"error": {"message": …}}` in both APIs),
/// else the start of the body.
async fn error_message(body: Incoming) -> String {
    const LIMIT: usize = 64 * 1024;
    let bytes = match http_body_util::Limited::new(body, LIMIT).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => return "(the error body could not be read)".to_owned(),
    };
    let parsed: Option<serde_json::Value> = serde_json::from_slice(&bytes).ok();
    let message = parsed.as_ref().and_then(|value| {
        value
            .pointer("/error/message")
            .or_else(|| value.get("message"))
            .or_else(|| value.get("error"))
            .and_then(serde_json::Value::as_str)
            .map(str::to_owned)
    });
    message.unwrap_or_else(|| crate::summary::one_line(&String::from_utf8_lossy(&bytes)))
}

/// The most bytes of a non-streamed answer read.
const MAX_BODY_BYTES: usize = 16 * 1024 * 1024;

/// Whether a provider answered with a stream of server-sent events (what both backends ask for)
/// rather than one JSON body (an error, or a server that ignores `stream`).
pub(crate) fn is_event_stream<B>(response: &hyper::Response<B>) -> bool {
    response
        .headers()
        .get(hyper::header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("text/event-stream"))
}

/// Reads a whole (non-streamed) answer body.
pub(crate) async fn collect_body(
    provider: &'static str,
    body: Incoming,
) -> Result<Bytes, LlmError> {
    http_body_util::Limited::new(body, MAX_BODY_BYTES)
        .collect()
        .await
        .map(|collected| collected.to_bytes())
        .map_err(|error| LlmError::StreamCut {
            provider,
            message: format!("the answer body could not be read: {error}"),
            usage: crate::cost::Usage::default(),
        })
}

/// Reads a streaming body chunk by chunk into `on_chunk`; returns an error text when the
/// connection breaks.
pub(crate) async fn read_stream(
    mut body: Incoming,
    mut on_chunk: impl FnMut(&[u8]) -> Result<bool, String>,
) -> Result<(), String> {
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|error| error_chain(&error))?;
        if let Some(data) = frame.data_ref()
            && !on_chunk(data)?
        {
            return Ok(());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_is_honoured_and_capped() {
        let policy = RetryPolicy::default();
        assert_eq!(
            retry_delay(&policy, 1, Some(Duration::from_secs(3)), 0.9),
            Duration::from_secs(3)
        );
        assert_eq!(
            retry_delay(&policy, 1, Some(Duration::from_secs(3600)), 0.0),
            policy.max_delay
        );
        // Equal jitter: between half and all of 500 ms × 2^(retry-1).
        assert_eq!(retry_delay(&policy, 3, None, 0.0), Duration::from_secs(1));
        assert_eq!(retry_delay(&policy, 3, None, 1.0), Duration::from_secs(2));
        assert_eq!(retry_delay(&policy, 40, None, 1.0), policy.max_delay);
    }

    #[test]
    fn retry_after_headers_in_seconds_or_milliseconds() {
        let mut headers = HeaderMap::new();
        headers.insert("retry-after", HeaderValue::from_static("2"));
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(2)));
        headers.insert("retry-after-ms", HeaderValue::from_static("250"));
        assert_eq!(retry_after(&headers), Some(Duration::from_millis(250)));
        let mut dated = HeaderMap::new();
        dated.insert(
            "retry-after",
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(retry_after(&dated), None);
    }

    #[test]
    fn which_statuses_are_retried() {
        for status in [429, 500, 502, 503, 504, 529] {
            assert!(is_retryable_status(status), "{status}");
        }
        for status in [400, 401, 403, 404, 413, 422] {
            assert!(!is_retryable_status(status), "{status}");
        }
    }

    fn overloaded() -> LlmError {
        LlmError::Status {
            provider: "anthropic",
            status: 529,
            message: "Overloaded".into(),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn the_loop_waits_exactly_what_the_server_asked() {
        let start = tokio::time::Instant::now();
        let policy = RetryPolicy::default();
        let result = with_retries(&policy, None, |attempt| async move {
            if attempt < 3 {
                Attempt::Retry {
                    error: overloaded(),
                    retry_after: Some(Duration::from_secs(7)),
                }
            } else {
                Attempt::Done(attempt)
            }
        })
        .await;
        assert_eq!(result, Ok(3));
        assert_eq!(start.elapsed(), Duration::from_secs(14));
    }

    #[tokio::test(start_paused = true)]
    async fn retries_run_out_and_permanent_errors_are_not_retried() {
        let policy = RetryPolicy {
            max_retries: 2,
            ..RetryPolicy::default()
        };
        let mut attempts = 0;
        let result: Result<(), _> = with_retries(&policy, None, |_| {
            attempts += 1;
            async {
                Attempt::Retry {
                    error: overloaded(),
                    retry_after: None,
                }
            }
        })
        .await;
        assert_eq!(result, Err(overloaded()));
        assert_eq!(attempts, 3);

        let mut attempts = 0;
        let result: Result<(), _> = with_retries(&policy, None, |_| {
            attempts += 1;
            async { Attempt::Fail(LlmError::Config("bad".into())) }
        })
        .await;
        assert!(result.is_err());
        assert_eq!(attempts, 1);
    }

    #[tokio::test(start_paused = true)]
    async fn a_wait_past_the_deadline_fails_at_once_with_the_reason() {
        let start = tokio::time::Instant::now();
        let policy = RetryPolicy::default();
        let deadline = Some(start + Duration::from_secs(10));
        let mut attempts = 0;
        // 3 s fits before the deadline; the next 8 s would not (3 + 8 > 10).
        let result: Result<(), _> = with_retries(&policy, deadline, |_| {
            attempts += 1;
            let wait = if attempts == 1 { 3 } else { 8 };
            async move {
                Attempt::Retry {
                    error: overloaded(),
                    retry_after: Some(Duration::from_secs(wait)),
                }
            }
        })
        .await;
        assert_eq!(attempts, 2);
        assert_eq!(
            start.elapsed(),
            Duration::from_secs(3),
            "no sleep past the deadline"
        );
        let Err(LlmError::Status {
            status, message, ..
        }) = result
        else {
            panic!("a status error expected: {result:?}")
        };
        assert_eq!(status, 529);
        assert!(
            message.starts_with("Overloaded; not retried: the wait asked for (8.0 s)"),
            "{message}"
        );
    }
}
