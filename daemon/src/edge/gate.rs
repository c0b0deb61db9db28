//! The request gate: every check that needs only the request head, made before any body is
//! read ([`Gate::admit`], the first step of the dispatch, `dispatch.rs`).
//!
//! In order: only `POST` (`GET` for `/metrics`, the Prometheus page; `GET` and `DELETE` at the MCP
//! gateway too); a `Host` naming this daemon (loopback or `localhost` with our port, or
//! a name given with `--allow-host`), which stops DNS rebinding, and the same for the authority
//! of an absolute-form target (`POST http://evil.example/`); no foreign `Origin` (a browser
//! page); no transfer coding but `chunked` (a `gzip` we would silently ignore is refused); no
//! query string (a token must never travel in a URL, where logs and histories keep it); a known
//! path; and exactly one `Authorization: Bearer` header carrying a live token, whose [`Grant`] is
//! attached to the request for the handlers (the metrics page, which names every server and
//! tool, needs the owner token and is answered here). Every refusal has an empty body, and no response
//! ever carries CORS headers.
//!
//! The content type is not checked: the reference bridge accepts any, and a browser is stopped
//! without it (a cross-site request that needs no preflight cannot carry `Authorization`, and a
//! preflight gets 405; a page always sends `Origin`; a rebound name fails the `Host` check).
//! `Upgrade` is ignored, as HTTP lets a server do: the daemon never switches protocols. The body
//! is checked to be UTF-8 JSON by the dispatch. The unauthenticated `/identity` challenge is
//! answered here too: it needs no body and proves the daemon holds the token before the client
//! sends it.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::SystemTime;

use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use tool_cli_protocol::identity;

use crate::edge::http_body::{HttpBody, HttpResponse};

use crate::auth::{Grant, TokenStore};

/// Where the Prometheus metrics page is served (`GET`, owner token).
pub(crate) const METRICS_PATH: &str = "/metrics";

/// The Prometheus text exposition format.
const METRICS_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// What the gate lets through.
#[derive(Debug)]
pub(crate) struct Gate {
    /// Every token.
    pub(crate) tokens: Arc<TokenStore>,
    /// Accepted `Host` values (lowercase); empty disables the check (a Unix socket, which no
    /// browser can reach).
    pub(crate) hosts: Vec<String>,
    /// Accepted `Origin` values; a request without `Origin` is not from a browser page.
    pub(crate) origins: Vec<String>,
    /// Also accepted at the MCP gateway: the daemon's own loopback origins
    /// ([`Gate::own_origins`]).
    pub(crate) own_origins: Vec<String>,
    /// Largest body accepted.
    pub(crate) max_body_bytes: usize,
    /// Writes the `/metrics` page.
    pub(crate) metrics: MetricsPage,
    /// The MCP gateway at `/mcp` (`gateway/`), when served.
    pub(crate) mcp: Option<Arc<crate::edge::gateway::Endpoint>>,
}

/// What answers `GET /metrics`: the page's text, made when it is asked for.
#[derive(Clone)]
pub(crate) struct MetricsPage(pub(crate) Arc<dyn Fn(&Grant) -> String + Send + Sync>);

impl std::fmt::Debug for MetricsPage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MetricsPage")
    }
}

/// What the gate decided about a request that passes.
#[derive(Debug)]
enum Pass {
    /// A JSON-RPC request, with the caller's grant.
    Rpc(Grant),
    /// The identity challenge.
    Identity,
    /// The metrics page, asked for with the owner token.
    Metrics(Grant),
    /// The MCP gateway, with the caller's grant.
    Mcp(Grant),
}

impl Gate {
    /// The `Host` values that name a daemon listening on `port` on loopback, then each of
    /// `allowed_names` (from `--allow-host`) with that port.
    pub(crate) fn hosts(port: u16, allowed_names: &[String]) -> Vec<String> {
        let mut hosts = vec![
            format!("127.0.0.1:{port}"),
            format!("localhost:{port}"),
            format!("[::1]:{port}"),
        ];
        hosts.extend(
            allowed_names
                .iter()
                .map(|name| format!("{}:{port}", name.to_ascii_lowercase())),
        );
        hosts
    }

    /// The daemon's own loopback origins (`http://127.0.0.1:{port}`, `http://localhost:{port}`,
    /// `http://[::1]:{port}`), accepted as `Origin` at the MCP gateway only: MCP's Streamable
    /// HTTP says a server must accept a valid localhost `Origin` (the conformance suite's
    /// DNS-rebinding scenario checks it), and only a page the daemon served could carry one,
    /// and it serves none. The JSON-RPC endpoint keeps its stricter rule (no `Origin` but the
    /// allowed ones). A rebound name fails the `Host` check whatever its `Origin`.
    pub(crate) fn own_origins(port: u16) -> Vec<String> {
        ["127.0.0.1", "localhost", "[::1]"]
            .iter()
            .map(|host| format!("http://{host}:{port}"))
            .collect()
    }

    fn names_us(&self, host: &str) -> bool {
        self.hosts.iter().any(|ok| ok.eq_ignore_ascii_case(host))
    }

    /// Decides on a request head: [`Pass::Rpc`] to pass it on with its grant, [`Pass::Identity`]
    /// for the identity challenge (answered by [`Gate::identity`]), [`Pass::Metrics`] for the
    /// metrics page, `Err(status)` to refuse it.
    fn check(
        &self,
        method: &Method,
        uri: &hyper::Uri,
        headers: &HeaderMap,
    ) -> Result<Pass, StatusCode> {
        // `/metrics` is read with GET (what Prometheus sends); everything else is a POST.
        let metrics = uri.path() == METRICS_PATH;
        // The MCP gateway also takes `DELETE` (a host ending its session) and `GET` (its
        // standalone stream of server notifications).
        let mcp = self.mcp.is_some() && uri.path() == crate::edge::gateway::PATH;
        let method_ok = if metrics {
            method == Method::GET
        } else if mcp {
            method == Method::POST || method == Method::DELETE || method == Method::GET
        } else {
            method == Method::POST
        };
        if !method_ok {
            return Err(StatusCode::METHOD_NOT_ALLOWED);
        }
        if !self.hosts.is_empty() {
            let mut hosts = headers.get_all(header::HOST).iter();
            let host_ok = match (hosts.next(), hosts.next()) {
                (Some(host), None) => host.to_str().is_ok_and(|host| self.names_us(host)),
                _ => false,
            };
            // An absolute-form target (`POST http://evil.example/ HTTP/1.1`) names the host it
            // is for, and HTTP says that name wins over `Host`: it must name us too.
            let target_ok = uri
                .authority()
                .is_none_or(|authority| self.names_us(authority.as_str()));
            if !host_ok || !target_ok {
                return Err(StatusCode::FORBIDDEN);
            }
        }
        for origin in headers.get_all(header::ORIGIN) {
            let allowed = origin.to_str().is_ok_and(|origin| {
                self.origins.iter().any(|ok| ok == origin)
                    || (mcp && self.own_origins.iter().any(|ok| ok == origin))
            });
            if !allowed {
                return Err(StatusCode::FORBIDDEN);
            }
        }
        if !only_chunked(headers) {
            return Err(StatusCode::NOT_IMPLEMENTED);
        }
        // The gateway's mode may be chosen in the URL (a host's config often holds only a URL);
        // the gateway refuses any other query.
        if uri.query().is_some() && !mcp {
            return Err(StatusCode::BAD_REQUEST);
        }
        match uri.path() {
            "/" | METRICS_PATH => {}
            _ if mcp => {}
            identity::PATH => return Ok(Pass::Identity),
            _ => return Err(StatusCode::NOT_FOUND),
        }
        let mut authorizations = headers.get_all(header::AUTHORIZATION).iter();
        let grant = match (authorizations.next(), authorizations.next()) {
            (Some(value), None) => self
                .tokens
                .authenticate(value.as_bytes(), SystemTime::now()),
            _ => None,
        };
        let Some(grant) = grant else {
            return Err(StatusCode::UNAUTHORIZED);
        };
        if metrics {
            // The page names every server and tool; a scoped token may see only some.
            return if grant.is_owner {
                Ok(Pass::Metrics(grant))
            } else {
                Err(StatusCode::FORBIDDEN)
            };
        }
        if mcp {
            // The gateway reads a body over the limit to its end before it refuses it (with the
            // JSON-RPC error MCP clients read), since a client still writing when the
            // connection closes sees a broken connection instead of the answer.
            return Ok(Pass::Mcp(grant));
        }
        let declared = headers
            .get(header::CONTENT_LENGTH)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.parse::<u64>().ok());
        if declared.is_some_and(|length| length > self.max_body_bytes as u64) {
            return Err(StatusCode::PAYLOAD_TOO_LARGE);
        }
        Ok(Pass::Rpc(grant))
    }

    /// Answers the identity challenge from the request head alone.
    fn identity(&self, headers: &HeaderMap) -> HttpResponse {
        let text = |name: &str| headers.get(name).and_then(|value| value.to_str().ok());
        let (Some(nonce), Some(token_id)) = (
            text(identity::NONCE_HEADER),
            text(identity::TOKEN_ID_HEADER),
        ) else {
            return status(StatusCode::BAD_REQUEST);
        };
        if !identity::is_nonce(nonce) || !identity::is_token_id(token_id) {
            return status(StatusCode::BAD_REQUEST);
        }
        let Some(token) = self.tokens.by_id(token_id, SystemTime::now()) else {
            // Said in so many words, so that a client can tell "this daemon does not know your
            // token" (exit 4) from a listener that fails the proof (exit 8). It tells the asker
            // nothing the 403 alone did not: whether a 64-bit id it already holds is live.
            let body = format!(r#"{{"error":"{}"}}"#, identity::UNKNOWN_TOKEN_ID);
            return json_answer(StatusCode::FORBIDDEN, body);
        };
        let host = text(header::HOST.as_str()).unwrap_or("");
        let body = format!(r#"{{"proof":"{}"}}"#, token.prove(nonce, host));
        json_answer(StatusCode::OK, body)
    }
}

/// No `Transfer-Encoding`, or exactly `chunked`. hyper de-chunks a `gzip, chunked` body and
/// hands over the gzip bytes as they are; a coding we do not apply is refused (501, as HTTP
/// says), not silently ignored.
fn only_chunked(headers: &HeaderMap) -> bool {
    let mut codings = headers
        .get_all(header::TRANSFER_ENCODING)
        .iter()
        .flat_map(|value| value.to_str().unwrap_or("?").split(','))
        .map(str::trim);
    match (codings.next(), codings.next()) {
        (None, _) => true,
        (Some(coding), None) => coding.eq_ignore_ascii_case("chunked"),
        _ => false,
    }
}

/// The answer to a refused request, with the header its status calls for: empty, except a 401,
/// which says `{"error":"Unauthorized"}` as the reference bridge does (scripts written for it
/// read that body).
fn refusal(code: StatusCode) -> HttpResponse {
    let mut response = match code {
        StatusCode::UNAUTHORIZED => json_answer(code, UNAUTHORIZED_BODY.to_owned()),
        _ => status(code),
    };
    let extra = match code {
        StatusCode::METHOD_NOT_ALLOWED => Some((header::ALLOW, "POST")),
        StatusCode::UNAUTHORIZED => Some((header::WWW_AUTHENTICATE, "Bearer")),
        _ => None,
    };
    if let Some((name, value)) = extra {
        response
            .headers_mut()
            .insert(name, HeaderValue::from_static(value));
    }
    response
}

/// The body of a 401, the reference bridge's.
const UNAUTHORIZED_BODY: &str = r#"{"error":"Unauthorized"}"#;

/// The metrics page.
fn metrics_answer(text: String) -> HttpResponse {
    Response::builder()
        .status(StatusCode::OK)
        .header(
            header::CONTENT_TYPE,
            HeaderValue::from_static(METRICS_CONTENT_TYPE),
        )
        .header(header::CACHE_CONTROL, HeaderValue::from_static("no-store"))
        .body(HttpBody::from(text))
        .expect("static response parts are valid")
}

/// An answer of the identity challenge: a small JSON body.
fn json_answer(code: StatusCode, body: String) -> HttpResponse {
    Response::builder()
        .status(code)
        .header(header::CONTENT_TYPE, "application/json")
        .body(HttpBody::from(body))
        .expect("static response parts are valid")
}

fn status(code: StatusCode) -> HttpResponse {
    Response::builder()
        .status(code)
        .body(HttpBody::empty())
        .expect("static response parts are valid")
}

/// Reads an admitted gateway request's body (within `limit`, within the body timeout) and
/// answers it.
async fn mcp_answer<B>(
    endpoint: Arc<crate::edge::gateway::Endpoint>,
    grant: Grant,
    request: Request<B>,
    limit: usize,
) -> HttpResponse
where
    B: hyper::body::Body<Data = hyper::body::Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let (parts, body) = request.into_parts();
    let read = read_within(body, limit);
    let body = match tokio::time::timeout(crate::edge::shape::BODY_READ_TIMEOUT, read).await {
        Ok(BodyRead::Whole(body)) => body,
        Ok(BodyRead::TooLarge) => return crate::edge::shape::too_large(limit),
        Ok(BodyRead::Broken) => return status(StatusCode::BAD_REQUEST),
        Err(_) => return status(StatusCode::REQUEST_TIMEOUT),
    };
    endpoint
        .handle(crate::edge::gateway::GatewayRequest {
            grant,
            method: parts.method,
            query: parts.uri.query().map(str::to_owned),
            headers: parts.headers,
            body,
        })
        .await
}

/// Most bytes of a gateway body read and dropped past the limit so that its refusal reaches the
/// client; past this the connection is closed instead.
const DRAIN_CEILING: usize = 256 * 1024 * 1024;

/// What reading a gateway body came to.
enum BodyRead {
    Whole(hyper::body::Bytes),
    /// Over the limit (and read to its end, within [`DRAIN_CEILING`]).
    TooLarge,
    Broken,
}

/// Reads `body` whole if it is within `limit`; past it, reads on without keeping anything.
async fn read_within<B>(body: B, limit: usize) -> BodyRead
where
    B: hyper::body::Body<Data = hyper::body::Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    use http_body_util::BodyExt as _;
    let mut body = std::pin::pin!(body);
    let mut kept = Vec::new();
    let mut seen = 0usize;
    while let Some(frame) = body.frame().await {
        let Ok(frame) = frame else {
            return BodyRead::Broken;
        };
        let Ok(data) = frame.into_data() else {
            continue;
        };
        seen = seen.saturating_add(data.len());
        if seen <= limit {
            kept.extend_from_slice(&data);
        } else {
            kept = Vec::new();
            if seen > DRAIN_CEILING {
                return BodyRead::TooLarge;
            }
        }
    }
    if seen > limit {
        BodyRead::TooLarge
    } else {
        BodyRead::Whole(hyper::body::Bytes::from(kept))
    }
}

/// What the gate made of a request.
pub(crate) enum Admission<B> {
    /// A JSON-RPC request for the dispatch, the caller's [`Grant`] (and trace context) in its
    /// extensions.
    Rpc(Request<B>),
    /// Answered from the head alone: a refusal, or the identity challenge.
    Answered(HttpResponse),
    /// Answered by work of its own: the metrics page, the MCP gateway.
    Answering(Pin<Box<dyn Future<Output = HttpResponse> + Send>>),
}

impl Gate {
    /// Decides on `request` from its head: passes a JSON-RPC request on with its grant, or
    /// answers it.
    pub(crate) fn admit<B>(&self, mut request: Request<B>) -> Admission<B>
    where
        B: hyper::body::Body<Data = hyper::body::Bytes> + Send + 'static,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        match self.check(request.method(), request.uri(), request.headers()) {
            Ok(Pass::Rpc(grant)) => {
                request.extensions_mut().insert(grant);
                // The caller's trace context, read by the request's span (`otel/edge.rs`).
                if let Some(trace) = crate::otel::CallerTraceHeaders::of(request.headers()) {
                    request.extensions_mut().insert(trace);
                }
                Admission::Rpc(request)
            }
            Ok(Pass::Identity) => Admission::Answered(self.identity(request.headers())),
            Ok(Pass::Metrics(grant)) => {
                let page = self.metrics.clone();
                Admission::Answering(Box::pin(async move {
                    // Reading /proc and locking each breaker briefly: off the async workers.
                    let text = tokio::task::spawn_blocking(move || (page.0)(&grant))
                        .await
                        .unwrap_or_default();
                    metrics_answer(text)
                }))
            }
            Ok(Pass::Mcp(grant)) => {
                let endpoint = self.mcp.clone().expect("admitted only when served");
                let limit = self.max_body_bytes;
                Admission::Answering(Box::pin(mcp_answer(endpoint, grant, request, limit)))
            }
            Err(StatusCode::PAYLOAD_TOO_LARGE) => {
                Admission::Answered(crate::edge::shape::too_large(self.max_body_bytes))
            }
            Err(code) => Admission::Answered(refusal(code)),
        }
    }
}

#[cfg(test)]
mod tests;
