//! The request gate: every check that needs only the request head, in one tower layer, before
//! any body is read.
//!
//! In order: only `POST` (`GET` for `/metrics`, the Prometheus page); a `Host` naming this daemon (loopback or `localhost` with our port, or
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
//! What reaches jsonrpsee is labelled `application/json` and stripped of `Upgrade`, so jsonrpsee
//! never answers 415 or its websocket 403 (both with bodies) itself; the body is checked to be
//! UTF-8 JSON by the next layer. The unauthenticated `/identity` challenge is answered here too:
//! it needs no body and proves the daemon holds the token before the client sends it.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::SystemTime;

use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use jsonrpsee::server::{HttpBody, HttpRequest, HttpResponse};
use tool_cli_protocol::identity;

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
    /// Largest body accepted.
    pub(crate) max_body_bytes: usize,
    /// Writes the `/metrics` page.
    pub(crate) metrics: MetricsPage,
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
        let method_ok = if metrics {
            method == Method::GET
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
            let allowed = origin
                .to_str()
                .is_ok_and(|origin| self.origins.iter().any(|ok| ok == origin));
            if !allowed {
                return Err(StatusCode::FORBIDDEN);
            }
        }
        if !only_chunked(headers) {
            return Err(StatusCode::NOT_IMPLEMENTED);
        }
        if uri.query().is_some() {
            return Err(StatusCode::BAD_REQUEST);
        }
        match uri.path() {
            "/" | METRICS_PATH => {}
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

/// What jsonrpsee must see of a request the gate let through: a JSON content type whatever the
/// client sent (jsonrpsee would answer any other with its own 415 and a text body), and no
/// `Upgrade` (a websocket upgrade would get its 403 with a text body). We never switch
/// protocols, which HTTP lets a server decide by ignoring `Upgrade`.
fn prepare_for_jsonrpsee(headers: &mut HeaderMap) {
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    headers.remove(header::UPGRADE);
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

/// Tower layer applying a [`Gate`].
#[derive(Clone)]
pub(crate) struct GateLayer {
    gate: Arc<Gate>,
}

impl GateLayer {
    pub(crate) fn new(gate: Arc<Gate>) -> GateLayer {
        GateLayer { gate }
    }
}

impl<S> tower::Layer<S> for GateLayer {
    type Service = GateService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        GateService {
            inner,
            gate: Arc::clone(&self.gate),
        }
    }
}

/// The service of [`GateLayer`].
#[derive(Clone)]
pub(crate) struct GateService<S> {
    inner: S,
    gate: Arc<Gate>,
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl<S, B> tower::Service<HttpRequest<B>> for GateService<S>
where
    S: tower::Service<HttpRequest<B>, Response = HttpResponse> + Send,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
{
    type Response = HttpResponse;
    type Error = S::Error;
    type Future = BoxFuture<Result<HttpResponse, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request<B>) -> Self::Future {
        match self
            .gate
            .check(request.method(), request.uri(), request.headers())
        {
            Ok(Pass::Rpc(grant)) => {
                request.extensions_mut().insert(grant);
                prepare_for_jsonrpsee(request.headers_mut());
                Box::pin(self.inner.call(request))
            }
            Ok(Pass::Identity) => {
                let response = self.gate.identity(request.headers());
                Box::pin(async { Ok(response) })
            }
            Ok(Pass::Metrics(grant)) => {
                let page = self.gate.metrics.clone();
                Box::pin(async move {
                    // Reading /proc and locking each breaker briefly: off the async workers.
                    let text = tokio::task::spawn_blocking(move || (page.0)(&grant))
                        .await
                        .unwrap_or_default();
                    Ok(metrics_answer(text))
                })
            }
            Err(StatusCode::PAYLOAD_TOO_LARGE) => {
                let response = crate::shape::too_large(self.gate.max_body_bytes);
                Box::pin(async { Ok(response) })
            }
            Err(code) => {
                let response = refusal(code);
                Box::pin(async { Ok(response) })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::Token;

    fn gate() -> Gate {
        Gate {
            tokens: Arc::new(TokenStore::new(Token::from_text(&"ab".repeat(32)).unwrap())),
            hosts: Gate::hosts(4000, &["host.docker.internal".to_owned()]),
            origins: vec!["http://allowed.example".to_owned()],
            max_body_bytes: 1024,
            metrics: MetricsPage(Arc::new(|_: &Grant| String::new())),
        }
    }

    fn head(method: &str, uri: &str, headers: &[(&str, &str)]) -> (Method, hyper::Uri, HeaderMap) {
        let mut map = HeaderMap::new();
        for (name, value) in headers {
            map.append(
                header::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                HeaderValue::from_str(value).unwrap(),
            );
        }
        (method.parse().unwrap(), uri.parse().unwrap(), map)
    }

    fn verdict(method: &str, uri: &str, headers: &[(&str, &str)]) -> u16 {
        let (method, uri, headers) = head(method, uri, headers);
        match gate().check(&method, &uri, &headers) {
            Ok(Pass::Rpc(_)) => 200,
            Ok(Pass::Identity) => 0,
            Ok(Pass::Metrics(_)) => 1,
            Err(code) => refusal(code).status().as_u16(),
        }
    }

    const BEARER: &str = "Bearer abababababababababababababababababababababababababababababababab";

    #[test]
    fn each_rule_has_its_status() {
        let ok = [
            ("host", "127.0.0.1:4000"),
            ("content-type", "application/json"),
            ("authorization", BEARER),
        ];
        assert_eq!(verdict("POST", "/", &ok), 200);
        assert_eq!(verdict("GET", "/", &ok), 405);
        // The metrics page: GET only, same host, origin, query and token rules, owner only.
        assert_eq!(verdict("GET", "/metrics", &ok), 1);
        assert_eq!(verdict("POST", "/metrics", &ok), 405);
        assert_eq!(verdict("GET", "/metrics", &ok[..2]), 401);
        assert_eq!(verdict("GET", "/metrics?x=1", &ok), 400);
        assert_eq!(
            verdict(
                "GET",
                "/metrics",
                &[ok[1], ok[2], ("host", "evil.example:4000")]
            ),
            403
        );
        assert_eq!(verdict("OPTIONS", "/", &ok), 405);
        for host in [
            "evil.example",
            "localhost.evil.example",
            "127.0.0.1:4001",
            "127.0.0.1",
            "host.docker.internal",
            "host.docker.internal:4001",
        ] {
            let headers = [ok[1], ok[2], ("host", host)];
            assert_eq!(verdict("POST", "/", &headers), 403, "{host}");
        }
        assert_eq!(verdict("POST", "/", &ok[1..]), 403, "missing host");
        assert_eq!(
            verdict("POST", "/", &[ok[0], ok[0], ok[1], ok[2]]),
            403,
            "two hosts"
        );
        for host in ["LOCALHOST:4000", "[::1]:4000", "Host.Docker.Internal:4000"] {
            assert_eq!(verdict("POST", "/", &[("host", host), ok[1], ok[2]]), 200);
        }
        // An absolute-form target names the host it is for: it must be us, like `Host`.
        for target in [
            "http://evil.example/",
            "http://127.0.0.1:4001/",
            "http://user@127.0.0.1:4000/",
        ] {
            assert_eq!(verdict("POST", target, &ok), 403, "{target}");
        }
        assert_eq!(verdict("POST", "http://127.0.0.1:4000/", &ok), 200);
        for origin in ["http://evil.example", "null", "http://localhost:4001"] {
            let headers = [ok[0], ok[1], ok[2], ("origin", origin)];
            assert_eq!(verdict("POST", "/", &headers), 403, "{origin}");
        }
        let allowed = [ok[0], ok[1], ok[2], ("origin", "http://allowed.example")];
        assert_eq!(verdict("POST", "/", &allowed), 200);
        for coding in ["gzip, chunked", "gzip", "chunked, chunked", "identity"] {
            let headers = [ok[0], ok[1], ok[2], ("transfer-encoding", coding)];
            assert_eq!(verdict("POST", "/", &headers), 501, "{coding}");
        }
        let chunked = [ok[0], ok[1], ok[2], ("transfer-encoding", "Chunked")];
        assert_eq!(verdict("POST", "/", &chunked), 200);
        assert_eq!(verdict("POST", "/?token=x", &ok), 400);
        assert_eq!(verdict("POST", "/other", &ok), 404);
        // Any content type, or none: the body decides.
        for content_type in [
            "text/plain",
            "application/x-www-form-urlencoded",
            "application/json; charset=utf-16",
        ] {
            let headers = [ok[0], ("content-type", content_type), ok[2]];
            assert_eq!(verdict("POST", "/", &headers), 200, "{content_type}");
        }
        assert_eq!(verdict("POST", "/", &[ok[0], ok[2]]), 200);
        assert_eq!(verdict("POST", "/", &ok[..2]), 401);
        assert_eq!(verdict("POST", "/", &[ok[0], ok[1], ok[2], ok[2]]), 401);
        assert_eq!(
            verdict(
                "POST",
                "/",
                &[ok[0], ok[1], ok[2], ("content-length", "2048")]
            ),
            413
        );
        assert_eq!(verdict("POST", "/identity", &[ok[0], ok[1]]), 0);
        assert_eq!(verdict("POST", "/identity", &[ok[0]]), 0);
    }

    #[test]
    fn jsonrpsee_sees_json_and_no_upgrade() {
        let (_, _, mut headers) = head(
            "POST",
            "/",
            &[
                ("content-type", "text/plain; charset=utf-16"),
                ("connection", "upgrade"),
                ("upgrade", "websocket"),
            ],
        );
        prepare_for_jsonrpsee(&mut headers);
        assert_eq!(headers[header::CONTENT_TYPE], "application/json");
        assert!(headers.get(header::UPGRADE).is_none());
        let (_, _, mut headers) = head("POST", "/", &[]);
        prepare_for_jsonrpsee(&mut headers);
        assert_eq!(headers[header::CONTENT_TYPE], "application/json");
    }

    #[test]
    fn identity_proves_the_token_for_the_host_dialed() {
        let gate = gate();
        let token = gate.tokens.owner().clone();
        let nonce = "1".repeat(64);
        let (_, _, headers) = head(
            "POST",
            "/identity",
            &[
                ("host", "127.0.0.1:4000"),
                (identity::NONCE_HEADER, &nonce),
                (identity::TOKEN_ID_HEADER, &token.id()),
            ],
        );
        let response = gate.identity(&headers);
        assert_eq!(response.status(), StatusCode::OK);

        let (_, _, headers) = head(
            "POST",
            "/identity",
            &[
                ("host", "127.0.0.1:4000"),
                (identity::NONCE_HEADER, &nonce),
                (identity::TOKEN_ID_HEADER, "0000000000000000"),
            ],
        );
        let unknown = gate.identity(&headers);
        assert_eq!(unknown.status(), StatusCode::FORBIDDEN);
        assert_eq!(
            unknown.headers().get(header::CONTENT_TYPE).unwrap(),
            "application/json"
        );
        let (_, _, headers) = head(
            "POST",
            "/identity",
            &[
                (identity::NONCE_HEADER, "short"),
                (identity::TOKEN_ID_HEADER, &token.id()),
            ],
        );
        assert_eq!(gate.identity(&headers).status(), StatusCode::BAD_REQUEST);
    }
}
