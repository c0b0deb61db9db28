//! One HTTP/1.1 connection to the daemon that proved its identity, speaking JSON-RPC.
//!
//! [`DaemonLink::connect`] opens the socket (TCP or Unix, with a short connect timeout so a dead
//! daemon is reported at once) and has the listener prove it holds the token (`POST /identity`,
//! see [`crate::identity`]) before anything carries the token; a link exists only once that
//! check passed (or the user allowed a listener that does not serve it at all, a tool-cli 1.x
//! bridge). [`DaemonLink::call`] then sends requests on the same kept-alive connection, each
//! bounded by its own timeout. A run is a handful of sequential requests, so a bare hyper http1
//! connection is all we need; a pooling client would only add start-up time.
//!
//! Dropping a link closes its socket at once (the task driving the connection is aborted), which
//! is how a request is cancelled: the daemon sees the connection go and cancels the call
//! upstream. A link whose request was abandoned (a timeout, a dropped future) is never reused.

use std::time::Duration;

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Bytes;
use hyper::client::conn::http1::SendRequest;
use hyper::{Method, Request, StatusCode, header};
use hyper_util::rt::TokioIo;
use serde::Serialize;
use serde_json::Value;
use tool_cli_protocol::Response;

use crate::endpoint::{Endpoint, Target};
use crate::error::Error;
use crate::identity;

pub(crate) mod blocking;

/// Largest answer to `POST /identity` read: a proof is ~80 bytes, and the listener is not
/// trusted yet, so it must not make us buffer whatever it likes.
const IDENTITY_ANSWER_LIMIT: usize = 4096;

/// How the listener answered the identity check, once it is accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Identity {
    /// It proved it holds the token.
    Proven,
    /// It was not asked: the daemon id beside the address names a daemon process that is alive,
    /// and a live daemon holds its address ([`crate::vouch`]).
    Vouched,
    /// It does not serve the check (HTTP 401 or 404, as a tool-cli 1.x bridge answers), and the
    /// user allowed that.
    NotServed {
        /// The status it answered.
        status: u16,
    },
}

/// A link of either kind: hyper's on the tokio runtime, or the blocking one of [`blocking`]
/// for a command that needs no runtime.
pub(crate) enum Link {
    Async(DaemonLink),
    Blocking(blocking::BlockingLink),
}

impl Link {
    /// [`DaemonLink::connect`], or [`blocking::BlockingLink::connect`] when `blocking`.
    pub(crate) async fn connect(
        endpoint: &Endpoint,
        (connect_timeout, identity_timeout): (Duration, Duration),
        require_identity: bool,
        vouched: bool,
        blocking: bool,
    ) -> Result<Link, Error> {
        let timeouts = (connect_timeout, identity_timeout);
        Ok(if blocking {
            Link::Blocking(blocking::BlockingLink::connect(
                endpoint,
                timeouts.0,
                timeouts.1,
                require_identity,
                vouched,
            )?)
        } else {
            Link::Async(
                DaemonLink::connect(endpoint, timeouts.0, timeouts.1, require_identity, vouched)
                    .await?,
            )
        })
    }

    /// How the listener passed the identity check.
    pub(crate) fn identity(&self) -> Identity {
        match self {
            Link::Async(link) => link.identity(),
            Link::Blocking(link) => link.identity(),
        }
    }

    /// Whether the connection has ended.
    pub(crate) fn is_closed(&self) -> bool {
        match self {
            Link::Async(link) => link.is_closed(),
            Link::Blocking(link) => link.is_closed(),
        }
    }

    /// One JSON-RPC request, bounded by `timeout`.
    pub(crate) async fn call<P: Serialize>(
        &mut self,
        method: &str,
        params: Option<P>,
        timeout: Duration,
    ) -> Result<Value, Error> {
        match self {
            Link::Async(link) => link.call(method, params, timeout).await,
            Link::Blocking(link) => link.call(method, params, timeout),
        }
    }
}

/// One keep-alive HTTP/1.1 connection whose listener passed the identity check.
pub(crate) struct DaemonLink {
    sender: SendRequest<Full<Bytes>>,
    /// The task driving the connection; aborted on drop so the socket closes at once.
    driver: tokio::task::JoinHandle<()>,
    /// Where the connection goes, for messages.
    target: Target,
    /// `Bearer <token>`, built once.
    authorization: String,
    /// The `Host` header, which HTTP/1.1 requires and the identity proof is bound to.
    host_header: String,
    identity: Identity,
    next_id: u64,
}

impl Drop for DaemonLink {
    fn drop(&mut self) {
        self.driver.abort();
    }
}

impl DaemonLink {
    /// Opens the connection and has the listener prove it holds the token, within
    /// `identity_timeout`. A listener that does not serve the check (401/404) is accepted only
    /// when `require_identity` is false. With `vouched` (the caller checked the endpoint's daemon
    /// id, [`crate::vouch`]) the check is skipped. Must run inside a tokio runtime, which drives
    /// the connection in a spawned task. The token is not sent by this function.
    pub(crate) async fn connect(
        endpoint: &Endpoint,
        connect_timeout: Duration,
        identity_timeout: Duration,
        require_identity: bool,
        vouched: bool,
    ) -> Result<DaemonLink, Error> {
        let target = &endpoint.target;
        let (sender, driver) = match target {
            Target::Tcp { host, port } => {
                let connect = tokio::net::TcpStream::connect((host.as_str(), *port));
                let stream = connect_within(endpoint, connect_timeout, connect).await?;
                // Requests are small and sent whole; waiting for Nagle would only add latency.
                let _ = stream.set_nodelay(true);
                http_handshake(Box::new(stream)).await?
            }
            #[cfg(unix)]
            Target::Unix { path } => {
                let connect = tokio::net::UnixStream::connect(path);
                let stream = connect_within(endpoint, connect_timeout, connect).await?;
                http_handshake(Box::new(stream)).await?
            }
            #[cfg(not(unix))]
            Target::Unix { .. } => {
                return Err(Error::Connect {
                    address: target.describe(),
                    reason: "Unix sockets are not supported on this platform".to_owned(),
                });
            }
        };
        let mut link = DaemonLink {
            sender,
            driver,
            target: target.clone(),
            authorization: format!("Bearer {}", endpoint.token),
            host_header: target.host_header(),
            identity: Identity::Vouched,
            next_id: 1,
        };
        if vouched {
            return Ok(link);
        }
        let proved = link.prove_identity(&endpoint.token, require_identity);
        link.identity = match tokio::time::timeout(identity_timeout, proved).await {
            Ok(outcome) => outcome?,
            Err(_elapsed) => {
                return Err(link.unproven(format!(
                    "it did not answer POST {} within {} ms",
                    tool_cli_protocol::identity::PATH,
                    identity_timeout.as_millis()
                )));
            }
        };
        Ok(link)
    }

    /// How the listener passed the identity check.
    pub(crate) fn identity(&self) -> Identity {
        self.identity
    }

    /// Whether the connection has ended (the daemon closes connections that stay idle, for
    /// instance after its header-read timeout): a new request needs a new link then.
    pub(crate) fn is_closed(&self) -> bool {
        self.sender.is_closed()
    }

    /// Sends one JSON-RPC request and waits at most `timeout` for its response. After a
    /// timeout the link must be dropped: its connection still carries the abandoned request.
    pub(crate) async fn call<P: Serialize>(
        &mut self,
        method: &str,
        params: Option<P>,
        timeout: Duration,
    ) -> Result<Value, Error> {
        let id = self.next_id;
        self.next_id += 1;
        let request = tool_cli_protocol::Request::new(id, method, params);
        let body = serde_json::to_vec(&request).map_err(|error| {
            Error::Other(format!("cannot encode the {method} request: {error}"))
        })?;
        // On a vouched link nothing has been asked of the daemon before this first request: a
        // connection it ends before answering was most likely never served (its cap).
        let first_unchecked = id == 1 && matches!(self.identity, Identity::Vouched);
        match tokio::time::timeout(timeout, self.exchange(method, body, first_unchecked)).await {
            Ok(result) => result,
            Err(_elapsed) => Err(Error::Timeout {
                method: method.to_owned(),
                timeout_ms: timeout.as_millis() as u64,
            }),
        }
    }

    /// `POST /identity` with a fresh nonce and the token's id, no `Authorization`.
    async fn prove_identity(
        &mut self,
        token: &str,
        require_identity: bool,
    ) -> Result<Identity, Error> {
        use tool_cli_protocol::identity::{NONCE_HEADER, PATH, TOKEN_ID_HEADER};
        let nonce = identity::new_nonce().map_err(|error| {
            Error::Other(format!(
                "cannot read random bytes for the identity check from /dev/urandom: {error}"
            ))
        })?;
        let request = Request::builder()
            .method(Method::POST)
            .uri(PATH)
            .header(header::HOST, &self.host_header)
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::ACCEPT, "application/json")
            .header(NONCE_HEADER, &nonce)
            .header(TOKEN_ID_HEADER, identity::token_id(token))
            .body(Full::new(Bytes::new()))
            .map_err(|error| Error::Other(format!("cannot build the HTTP request: {error}")))?;
        let sent = async {
            self.sender.ready().await?;
            self.sender.send_request(request).await
        };
        // A listener that closes or resets the connection instead of answering is most likely
        // our daemon at its connection limit: "cannot reach", not "impostor".
        let response = sent.await.map_err(|error| self.lost(&error))?;
        let status = response.status();
        let body = Limited::new(response.into_body(), IDENTITY_ANSWER_LIMIT)
            .collect()
            .await
            .map_err(|error| self.unproven(format!("its answer cannot be read: {error}")))?
            .to_bytes();
        match check_identity_answer(status, &body, token, &nonce, &self.host_header) {
            IdentityAnswer::Proven => Ok(Identity::Proven),
            IdentityAnswer::NotServed if !require_identity => Ok(Identity::NotServed {
                status: status.as_u16(),
            }),
            IdentityAnswer::NotServed => Err(Error::NoIdentityProof {
                address: self.target.describe(),
                status: status.as_u16(),
            }),
            IdentityAnswer::UnknownToken => Err(Error::UnknownToken {
                address: self.target.describe(),
            }),
            IdentityAnswer::Wrong(reason) => Err(self.unproven(reason)),
        }
    }

    fn unproven(&self, reason: String) -> Error {
        Error::IdentityUnproven {
            address: self.target.describe(),
            unix_socket: matches!(self.target, Target::Unix { .. }),
            reason,
        }
    }

    fn lost(&self, error: &hyper::Error) -> Error {
        Error::ConnectionLost {
            address: self.target.describe(),
            reason: lost_reason(error),
        }
    }

    /// Sends one request and reads its answer. With `first_unchecked`, a connection that ends
    /// before the answer's head is [`Error::ClosedUnanswered`] rather than a transport failure.
    async fn exchange(
        &mut self,
        method: &str,
        body: Vec<u8>,
        first_unchecked: bool,
    ) -> Result<Value, Error> {
        let address = self.target.describe();
        let unanswered = |error: hyper::Error| {
            if first_unchecked {
                Error::ClosedUnanswered {
                    address: address.clone(),
                    reason: lost_reason(&error),
                }
            } else {
                Error::Transport(error.to_string())
            }
        };
        let mut request = Request::builder()
            .method(Method::POST)
            .uri("/")
            .header(header::HOST, &self.host_header)
            .header(header::AUTHORIZATION, &self.authorization)
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::ACCEPT, "application/json");
        // The script's trace continues through the daemon (`trace_context.rs`).
        if let Some(context) = crate::trace_context::from_environment() {
            request = request.header("traceparent", &context.traceparent);
            if let Some(state) = &context.tracestate {
                request = request.header("tracestate", state);
            }
        }
        let request = request
            .body(Full::new(Bytes::from(body)))
            .map_err(|error| Error::Other(format!("cannot build the HTTP request: {error}")))?;
        let ready = self.sender.ready().await;
        ready.map_err(unanswered)?;
        let sent = self.sender.send_request(request).await;
        let response = sent.map_err(unanswered)?;
        let status = response.status();
        let bytes = response
            .into_body()
            .collect()
            .await
            .map_err(|error| Error::Transport(error.to_string()))?
            .to_bytes();
        decode_response(method, status, &bytes)
    }
}

impl DaemonLink {
    /// Sends one `POST` (or another method) to `path` with the token and `headers`, and reads
    /// the whole answer: for the MCP relay (`mcp_relay.rs`), which passes the gateway's
    /// messages through rather than speaking JSON-RPC to the daemon itself.
    pub(crate) async fn exchange_raw(
        &mut self,
        method: Method,
        path: &str,
        headers: &[(&str, String)],
        body: Vec<u8>,
    ) -> Result<(StatusCode, header::HeaderMap, Bytes), Error> {
        let (status, headers, body) = self.exchange_streamed(method, path, headers, body).await?;
        let bytes = body
            .collect()
            .await
            .map_err(|error| Error::Transport(error.to_string()))?
            .to_bytes();
        Ok((status, headers, bytes))
    }

    /// [`DaemonLink::exchange_raw`], with the answer's body left to read as it comes (the
    /// gateway's SSE answers carry messages before the call's answer). The link takes no other
    /// request until that body has been read to its end or dropped.
    pub(crate) async fn exchange_streamed(
        &mut self,
        method: Method,
        path: &str,
        headers: &[(&str, String)],
        body: Vec<u8>,
    ) -> Result<(StatusCode, header::HeaderMap, hyper::body::Incoming), Error> {
        let mut request = Request::builder()
            .method(method)
            .uri(path)
            .header(header::HOST, &self.host_header)
            .header(header::AUTHORIZATION, &self.authorization)
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::ACCEPT, "application/json, text/event-stream");
        for (name, value) in headers {
            request = request.header(*name, value);
        }
        let request = request
            .body(Full::new(Bytes::from(body)))
            .map_err(|error| Error::Other(format!("cannot build the HTTP request: {error}")))?;
        self.sender
            .ready()
            .await
            .map_err(|error| Error::Transport(error.to_string()))?;
        let response = self
            .sender
            .send_request(request)
            .await
            .map_err(|error| Error::Transport(error.to_string()))?;
        let status = response.status();
        let headers = response.headers().clone();
        Ok((status, headers, response.into_body()))
    }
}

/// How a connection ended under `error`, for "the connection was … before it answered".
fn lost_reason(error: &hyper::Error) -> String {
    let reset = std::error::Error::source(error)
        .and_then(|source| source.downcast_ref::<std::io::Error>())
        .is_some_and(|io| io.kind() == std::io::ErrorKind::ConnectionReset);
    if reset {
        "reset".to_owned()
    } else {
        format!("closed ({error})")
    }
}

/// Connects within `timeout`, turning failures into "cannot reach" errors naming the target
/// (and, for the default port, why it was tried).
async fn connect_within<S>(
    endpoint: &Endpoint,
    timeout: Duration,
    connect: impl Future<Output = std::io::Result<S>>,
) -> Result<S, Error> {
    match tokio::time::timeout(timeout, connect).await {
        Err(_elapsed) => Err(connect_failure(endpoint, timeout, None)),
        Ok(Err(error)) => Err(connect_failure(endpoint, timeout, Some(error))),
        Ok(Ok(stream)) => Ok(stream),
    }
}

/// The error for a connection to `endpoint` that failed with `error`, or timed out after
/// `timeout` when there is none: "no daemon found" for the default port tried as a fallback,
/// else "cannot reach" naming the target.
fn connect_failure(endpoint: &Endpoint, timeout: Duration, error: Option<std::io::Error>) -> Error {
    let target = &endpoint.target;
    if let Some(why) = &endpoint.fallback {
        return Error::NoDaemon(format!(
            "no daemon found: {why}, and nothing answers on the default port {}",
            target.describe()
        ));
    }
    let Some(error) = error else {
        return Error::ConnectTimeout {
            address: target.describe(),
            timeout_ms: timeout.as_millis() as u64,
        };
    };
    let reason = match (error.kind(), target) {
        (std::io::ErrorKind::ConnectionRefused, _) => "connection refused".to_owned(),
        (std::io::ErrorKind::NotFound, Target::Unix { .. }) => "no such socket".to_owned(),
        _ => error.to_string(),
    };
    Error::Connect {
        address: target.describe(),
        reason,
    }
}

/// A connected byte stream: TCP or a Unix socket.
trait Stream: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send {}

impl<S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send> Stream for S {}

/// Starts the HTTP/1.1 session on a connected stream; returns the sender and the task driving
/// the connection. The stream is boxed so that hyper's connection code is compiled once rather
/// than once per transport: a call makes a handful of reads and writes, so the indirection costs
/// nothing measurable, and the binary stays smaller.
async fn http_handshake(
    stream: Box<dyn Stream>,
) -> Result<(SendRequest<Full<Bytes>>, tokio::task::JoinHandle<()>), Error> {
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|error| Error::Transport(error.to_string()))?;
    // The task ends when `sender` is dropped or the daemon closes the socket; a failure there
    // surfaces as an error of the pending request, so it is not reported twice.
    let driver = tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok((sender, driver))
}

/// What an answer to `POST /identity` means.
#[derive(Debug, PartialEq, Eq)]
enum IdentityAnswer {
    /// The right proof.
    Proven,
    /// 401 or 404: the listener does not know the endpoint (a tool-cli 1.x bridge answers 401
    /// to every path it does not serve; a tool-cli-daemon older than the check, 404).
    NotServed,
    /// 403 `{"error": "unknownTokenId"}`: it says it knows no live token with this id.
    UnknownToken,
    /// Anything else; the text says what was wrong with it.
    Wrong(String),
}

/// Reads the answer to `POST /identity`.
fn check_identity_answer(
    status: StatusCode,
    body: &[u8],
    token: &str,
    nonce_hex: &str,
    host: &str,
) -> IdentityAnswer {
    let json = serde_json::from_slice::<Value>(body).ok();
    let member = |name: &str| {
        json.as_ref()
            .and_then(|answer| answer.get(name)?.as_str().map(str::to_owned))
    };
    match status {
        StatusCode::OK => {}
        StatusCode::UNAUTHORIZED | StatusCode::NOT_FOUND => return IdentityAnswer::NotServed,
        StatusCode::FORBIDDEN
            if member("error").as_deref()
                == Some(tool_cli_protocol::identity::UNKNOWN_TOKEN_ID) =>
        {
            return IdentityAnswer::UnknownToken;
        }
        StatusCode::FORBIDDEN => {
            return IdentityAnswer::Wrong(
                "it answered HTTP 403 without a reason: a daemon refusing the Host it was \
                 reached by (check TOOL_CLI_HOST), or one older than this tool-cli that does not \
                 know this token"
                    .to_owned(),
            );
        }
        other => return IdentityAnswer::Wrong(format!("it answered HTTP {}", other.as_u16())),
    }
    let Some(proof) = member("proof") else {
        return IdentityAnswer::Wrong(format!(
            "its answer is not a JSON object with a proof: {}",
            excerpt(body)
        ));
    };
    if identity::proof_matches(&proof, token, nonce_hex, host) {
        IdentityAnswer::Proven
    } else {
        IdentityAnswer::Wrong("its proof is wrong".to_owned())
    }
}

/// Interprets an HTTP response to a JSON-RPC request.
fn decode_response(method: &str, status: StatusCode, body: &[u8]) -> Result<Value, Error> {
    if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN {
        return Err(Error::AuthRefused {
            status: status.as_u16(),
        });
    }
    // A JSON-RPC error may come with a non-200 status from some servers; prefer its content.
    match serde_json::from_slice::<Response>(body) {
        Ok(response) if status.is_success() || response.error.is_some() => {
            response.into_result().map_err(|error| Error::Rpc {
                method: method.to_owned(),
                error: Box::new(error),
            })
        }
        Err(error) if status.is_success() => Err(Error::Protocol(format!(
            "the answer to {method} is not a JSON-RPC response ({error}): {}",
            excerpt(body)
        ))),
        _ => Err(Error::Http {
            status: status.as_u16(),
            body: excerpt(body),
        }),
    }
}

/// The start of a body, for messages.
fn excerpt(body: &[u8]) -> String {
    const LIMIT: usize = 300;
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    match text.char_indices().nth(LIMIT) {
        Some((index, _)) => format!("{}…", &text[..index]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests;
