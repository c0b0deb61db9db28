//! The HTTP client of a remote server: hyper-util's pooled client over rustls, the one HTTP stack
//! the build already has for the agent's LLM backends, used for the server's MCP traffic
//! (Streamable HTTP, `streamable.rs`) and its OAuth requests (`oauth/flow.rs`).
//!
//! It replaces reqwest, which the daemon built only for this (with tower-http and its own layers,
//! a second HTTP client on the same hyper; docs/benchmarks.md, "First build"). What reqwest did
//! that we still want is here: one connection pool per server, rustls with the server's roots
//! (`tls.rs`), a deadline on a request, bounded body reads. What it did that we do not need is
//! not: no compression and no cookie store. Redirects are followed as reqwest did, at most 10:
//! OAuth's metadata and token requests as a browser would; MCP traffic only where the request
//! stays whole (307/308, or 301/302/303 of the stream's GET), never from https:// to http://, and
//! without the bearer token or configured headers to another origin (`streamable.rs`); another
//! 3xx is the server's answer, which the transport reports. Proxies from the environment
//! (`HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY`, `NO_PROXY`) are honoured as reqwest did
//! (`proxy.rs`).

mod answers;
mod proxy;
mod sse_limit;
mod streamable;

use std::path::Path;
use std::time::Duration;

use bytes::Bytes;
use futures_util::{Stream, StreamExt as _};
use http_body_util::{BodyExt as _, BodyStream, Full};
use hyper::body::Incoming;
use hyper::http::{Method, Request, Response, StatusCode, Uri, header};
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioTimer};

pub use proxy::{Proxies, ProxyConfigError};
pub use sse_limit::bounded_sse_stream;
pub(in crate::pool) use streamable::PostMessage;

use super::tls::{self, TlsError};

type Connector = hyper_rustls::HttpsConnector<proxy::ProxyConnector>;

/// The HTTP client of one remote server (cheap to clone: clones share the connection pool).
#[derive(Clone)]
pub struct HttpClient {
    inner: Client<Connector, Full<Bytes>>,
    proxies: Proxies,
}

/// Why a remote server's HTTP client cannot be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The trust roots could not be loaded.
    #[error(transparent)]
    Tls(#[from] TlsError),
    /// A proxy variable of the environment cannot be used.
    #[error(transparent)]
    Proxy(#[from] ProxyConfigError),
}

impl std::fmt::Debug for HttpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HttpClient")
    }
}

/// Why an HTTP exchange failed before an answer could be read whole.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HttpError {
    /// The URL is not an absolute `http://` or `https://` URL.
    #[error("the URL is not a valid http:// or https:// URL ({0})")]
    InvalidUrl(String),
    /// The request could not be built (an invalid header, for instance).
    #[error("the request could not be built: {0}")]
    Request(#[source] hyper::http::Error),
    /// The request could not be sent or its answer's head not read (connect, TLS, reset). The
    /// URL is shown without userinfo and query, where secrets go.
    #[error("error sending request for url ({url})")]
    Send {
        url: String,
        #[source]
        source: hyper_util::client::legacy::Error,
    },
    /// The answer's body broke off.
    #[error("error reading the response body")]
    Body(#[source] hyper::Error),
    /// No answer within the request's deadline.
    #[error("no answer within {} s", .0.as_secs())]
    Timeout(Duration),
    /// The answer's body is larger than the reader accepts.
    #[error("the answer is over {0} bytes")]
    TooLarge(usize),
    /// Redirected more times than followed.
    #[error("redirected more than {0} times")]
    TooManyRedirects(usize),
}

impl HttpError {
    /// The request never reached the server: no connection could be made.
    pub fn is_connect(&self) -> bool {
        matches!(self, HttpError::Send { source, .. } if source.is_connect())
    }

    /// The deadline passed.
    pub fn is_timeout(&self) -> bool {
        matches!(self, HttpError::Timeout(_))
    }
}

/// Redirects a request follows (OAuth and MCP), as reqwest's default policy did.
const MAX_REDIRECTS: usize = 10;

impl HttpClient {
    /// A client trusting the platform's roots and `ca_file`'s (`tls.rs`), through the proxies
    /// of the daemon's environment (`proxy.rs`).
    pub fn new(ca_file: Option<&Path>) -> Result<HttpClient, ClientError> {
        let proxies = Proxies::from_process_environment()?;
        Ok(HttpClient::with_parts(
            tls::client_config(ca_file)?,
            proxies,
        ))
    }

    /// A client with this rustls configuration and these proxies.
    pub(crate) fn with_parts(
        config: tokio_rustls::rustls::ClientConfig,
        proxies: Proxies,
    ) -> HttpClient {
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(config)
            .https_or_http()
            .enable_http1()
            .wrap_connector(proxy::ProxyConnector::new(proxies.clone()));
        let inner = Client::builder(TokioExecutor::new())
            // Idle connections are closed after the pool's idle timeout (90 s), which needs a
            // timer to be enforced.
            .pool_timer(TokioTimer::new())
            .build(connector);
        HttpClient { inner, proxies }
    }

    /// Sends `request` and returns the answer with its body unread.
    pub async fn send(
        &self,
        mut request: Request<Full<Bytes>>,
    ) -> Result<Response<Incoming>, HttpError> {
        if let Some(authorization) = self.proxies.authorization_for_plain_http(request.uri()) {
            request
                .headers_mut()
                .insert(header::PROXY_AUTHORIZATION, authorization);
        }
        let url = url_without_secrets(request.uri());
        self.inner
            .request(request)
            .await
            .map_err(|source| HttpError::Send { url, source })
    }

    /// Sends one request (method, URL, headers, body) with a deadline on the whole exchange,
    /// following redirects as a browser would (at most 10: a 303, or a 301/302
    /// of a POST, becomes a GET without body; a 307/308 repeats the request), and reads the
    /// answer whole, at most `max_body` bytes. For OAuth's small JSON exchanges.
    pub async fn exchange(
        &self,
        request: Exchange<'_>,
        deadline: Duration,
        max_body: usize,
    ) -> Result<Answer, HttpError> {
        tokio::time::timeout(deadline, self.exchange_unbounded(request, max_body))
            .await
            .unwrap_or(Err(HttpError::Timeout(deadline)))
    }

    async fn exchange_unbounded(
        &self,
        request: Exchange<'_>,
        max_body: usize,
    ) -> Result<Answer, HttpError> {
        let mut method = request.method;
        let mut uri = parse_uri(request.url)?;
        let mut body = request.body;
        for _ in 0..=MAX_REDIRECTS {
            let mut builder = Request::builder().method(method.clone()).uri(uri.clone());
            for (name, value) in request.headers {
                // The body's type goes with the body.
                if body.is_none() && name.eq_ignore_ascii_case("content-type") {
                    continue;
                }
                builder = builder.header(*name, value.as_str());
            }
            let outgoing = builder
                .body(Full::new(body.clone().unwrap_or_default()))
                .map_err(HttpError::Request)?;
            let response = self.send(outgoing).await?;
            let status = response.status();
            let location = response
                .headers()
                .get(header::LOCATION)
                .and_then(|value| value.to_str().ok())
                .and_then(|location| resolve(&uri, location));
            match (redirect_kind(status, &method), location) {
                (Some(kind), Some(next)) => {
                    if kind == Redirect::AsGet {
                        method = Method::GET;
                        body = None;
                    }
                    uri = next;
                }
                _ => {
                    let headers = response.headers().clone();
                    let body = read_capped(response.into_body(), max_body).await?;
                    return Ok(Answer {
                        status,
                        headers,
                        body,
                    });
                }
            }
        }
        Err(HttpError::TooManyRedirects(MAX_REDIRECTS))
    }
}

/// One request for [`HttpClient::exchange`].
pub struct Exchange<'a> {
    pub method: Method,
    pub url: &'a str,
    pub headers: &'a [(&'a str, String)],
    pub body: Option<Bytes>,
}

/// An answer read whole.
#[derive(Debug)]
pub struct Answer {
    pub status: StatusCode,
    pub headers: hyper::http::HeaderMap,
    pub body: Vec<u8>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Redirect {
    /// Repeat the request at the new URL (307, 308; 301 and 302 of a GET).
    Same,
    /// Fetch the new URL with GET and no body (303; 301 and 302 of anything but GET or HEAD).
    AsGet,
}

/// How a redirect status is followed, if it is one.
fn redirect_kind(status: StatusCode, method: &Method) -> Option<Redirect> {
    match status {
        StatusCode::TEMPORARY_REDIRECT | StatusCode::PERMANENT_REDIRECT => Some(Redirect::Same),
        StatusCode::SEE_OTHER => Some(Redirect::AsGet),
        StatusCode::MOVED_PERMANENTLY | StatusCode::FOUND => {
            match *method == Method::GET || *method == Method::HEAD {
                true => Some(Redirect::Same),
                false => Some(Redirect::AsGet),
            }
        }
        _ => None,
    }
}

/// The URL a `Location` header points to, resolved against the request's URL.
fn resolve(base: &Uri, location: &str) -> Option<Uri> {
    let base = url::Url::parse(&base.to_string()).ok()?;
    let next = base.join(location).ok()?;
    matches!(next.scheme(), "http" | "https")
        .then(|| next.as_str().parse().ok())
        .flatten()
}

/// A request's URL for an error: scheme, host, port and path, without the userinfo and query
/// that may hold secrets.
fn url_without_secrets(uri: &Uri) -> String {
    let authority = uri.authority().map_or("", |authority| {
        let text = authority.as_str();
        text.rsplit_once('@').map_or(text, |(_, host)| host)
    });
    format!(
        "{}://{authority}{}",
        uri.scheme_str().unwrap_or("http"),
        uri.path()
    )
}

/// An absolute `http://` or `https://` URL as hyper takes it.
pub(crate) fn parse_uri(url: &str) -> Result<Uri, HttpError> {
    let uri: Uri = url
        .parse()
        .map_err(|error: hyper::http::uri::InvalidUri| HttpError::InvalidUrl(error.to_string()))?;
    match (uri.scheme_str(), uri.authority()) {
        (Some("http" | "https"), Some(_)) => Ok(uri),
        _ => Err(HttpError::InvalidUrl(
            "expected an absolute URL starting with http:// or https://".to_owned(),
        )),
    }
}

/// Reads a body whole, refusing it past `max` bytes (counted as they arrive, whatever
/// `Content-Length` claims).
pub(crate) async fn read_capped(body: Incoming, max: usize) -> Result<Vec<u8>, HttpError> {
    let mut chunks = std::pin::pin!(body_stream(body));
    let mut read = Vec::new();
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk?;
        if chunk.len() > max - read.len() {
            return Err(HttpError::TooLarge(max));
        }
        read.extend_from_slice(&chunk);
    }
    Ok(read)
}

/// A body's data frames as a stream of bytes (trailers are skipped).
pub(crate) fn body_stream(body: Incoming) -> impl Stream<Item = Result<Bytes, HttpError>> {
    BodyStream::new(body.map_err(HttpError::Body)).filter_map(|frame| async move {
        match frame {
            Ok(frame) => frame.into_data().ok().map(Ok),
            Err(error) => Some(Err(error)),
        }
    })
}

#[cfg(test)]
mod tests;
