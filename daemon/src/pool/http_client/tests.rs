//! The client against a scripted HTTP server on loopback: redirects, size caps, deadlines, and
//! the Streamable HTTP answers rmcp's transport tells apart.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures_util::StreamExt as _;
use http_body_util::BodyExt as _;
use hyper::http::HeaderValue;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, JsonRpcMessage, PingRequest, RequestId};
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
};

use super::*;

/// A request as the scripted server saw it.
#[derive(Debug, Clone)]
struct Seen {
    method: Method,
    path: String,
    headers: hyper::http::HeaderMap,
    body: Vec<u8>,
}

type Script = fn(&Seen) -> Response<Full<Bytes>>;

/// Serves `script` on a loopback port until the test ends; returns the base URL and what it saw.
async fn serve(script: Script) -> (String, Arc<Mutex<Vec<Seen>>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let log = Arc::clone(&log);
            tokio::spawn(async move {
                let service = service_fn(move |request: Request<Incoming>| {
                    let log = Arc::clone(&log);
                    async move {
                        let (parts, body) = request.into_parts();
                        let body = body.collect().await?.to_bytes().to_vec();
                        let request = Seen {
                            method: parts.method,
                            path: parts.uri.path().to_owned(),
                            headers: parts.headers,
                            body,
                        };
                        let answer = script(&request);
                        log.lock().unwrap().push(request);
                        Ok::<_, hyper::Error>(answer)
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    (base, seen)
}

fn answer(status: u16, headers: &[(&str, &str)], body: &'static str) -> Response<Full<Bytes>> {
    let mut response = Response::builder().status(status);
    for (name, value) in headers {
        response = response.header(*name, *value);
    }
    response
        .body(Full::new(Bytes::from_static(body.as_bytes())))
        .unwrap()
}

fn client() -> HttpClient {
    HttpClient::new(None).unwrap()
}

fn ping() -> ClientJsonRpcMessage {
    ClientJsonRpcMessage::request(
        ClientRequest::PingRequest(PingRequest::default()),
        RequestId::Number(7),
    )
}

async fn post(
    base: &str,
    session: Option<&str>,
    headers: HashMap<HeaderName, HeaderValue>,
) -> Result<StreamableHttpPostResponse, StreamableHttpError<HttpError>> {
    client()
        .post_message_with_max_sse_event_size(
            Arc::from(format!("{base}/mcp")),
            ping(),
            session.map(Arc::from),
            Some("secret-token".to_owned()),
            headers,
            64,
        )
        .await
}

use hyper::http::HeaderName;

#[tokio::test]
async fn an_exchange_follows_redirects_keeping_or_dropping_the_body_as_the_status_says() {
    let (base, seen) = serve(|request| match request.path.as_str() {
        "/token" => answer(307, &[("location", "/token-v2")], ""),
        "/token-v2" => answer(303, &[("location", "/done")], ""),
        _ => answer(
            200,
            &[("content-type", "application/json")],
            "{\"ok\":true}",
        ),
    })
    .await;
    let url = format!("{base}/token");
    let headers = [(
        "content-type",
        "application/x-www-form-urlencoded".to_owned(),
    )];
    let request = Exchange {
        method: Method::POST,
        url: &url,
        headers: &headers,
        body: Some(Bytes::from_static(b"grant_type=x")),
    };
    let answer = client()
        .exchange(request, Duration::from_secs(30), 1024)
        .await
        .unwrap();
    assert_eq!(answer.status, StatusCode::OK);
    assert_eq!(answer.body, b"{\"ok\":true}");
    let seen = seen.lock().unwrap();
    let trail: Vec<_> = seen
        .iter()
        .map(|request| {
            (
                request.method.as_str(),
                request.path.as_str(),
                request.body.len(),
            )
        })
        .collect();
    // The 307 repeats the POST with its body; the 303 turns it into a GET without one.
    assert_eq!(
        trail,
        [
            ("POST", "/token", 12),
            ("POST", "/token-v2", 12),
            ("GET", "/done", 0)
        ]
    );
    assert!(seen[2].headers.get("content-type").is_none());
}

#[tokio::test]
async fn a_redirect_loop_ends_with_an_error() {
    let (base, seen) = serve(|_| answer(302, &[("location", "/again")], "")).await;
    let url = format!("{base}/start");
    let request = Exchange {
        method: Method::GET,
        url: &url,
        headers: &[],
        body: None,
    };
    let error = client()
        .exchange(request, Duration::from_secs(30), 1024)
        .await
        .unwrap_err();
    assert!(matches!(error, HttpError::TooManyRedirects(10)), "{error}");
    assert_eq!(seen.lock().unwrap().len(), 11);
}

#[tokio::test]
async fn an_answer_over_the_cap_is_refused_and_a_closed_port_is_a_connect_error() {
    let (base, _) = serve(|_| answer(200, &[], "0123456789abcdef")).await;
    let url = format!("{base}/big");
    let request = Exchange {
        method: Method::GET,
        url: &url,
        headers: &[],
        body: None,
    };
    let error = client()
        .exchange(request, Duration::from_secs(30), 8)
        .await
        .unwrap_err();
    assert_eq!(error.to_string(), "the answer is over 8 bytes");

    let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", closed.local_addr().unwrap());
    drop(closed);
    let request = Exchange {
        method: Method::GET,
        url: &url,
        headers: &[],
        body: None,
    };
    let error = client()
        .exchange(request, Duration::from_secs(30), 8)
        .await
        .unwrap_err();
    assert!(error.is_connect(), "{error:?}");
}

#[tokio::test]
async fn a_server_that_never_answers_is_a_timeout() {
    // Accepts the connection and holds it without answering.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let held = tokio::spawn(async move {
        let (stream, _) = listener.accept().await.unwrap();
        std::future::pending::<()>().await;
        drop(stream);
    });
    let request = Exchange {
        method: Method::GET,
        url: &url,
        headers: &[],
        body: None,
    };
    let error = client()
        .exchange(request, Duration::from_millis(200), 8)
        .await
        .unwrap_err();
    assert!(error.is_timeout(), "{error:?}");
    held.abort();
}

#[test]
fn only_absolute_http_urls_are_taken() {
    assert!(parse_uri("https://example.test/mcp").is_ok());
    for bad in ["/mcp", "ftp://example.test/", "not a url"] {
        let error = parse_uri(bad).unwrap_err();
        assert!(
            error.to_string().contains("http:// or https://"),
            "{bad}: {error}"
        );
    }
}

#[tokio::test]
async fn a_json_answer_is_parsed_and_the_request_carries_the_transports_headers() {
    let (base, seen) = serve(|_| {
        answer(
            200,
            &[
                ("content-type", "application/json"),
                ("mcp-session-id", "s-2"),
            ],
            r#"{"jsonrpc":"2.0","id":7,"result":{}}"#,
        )
    })
    .await;
    let mut headers = HashMap::new();
    headers.insert(
        HeaderName::from_static("x-api-key"),
        HeaderValue::from_static("k"),
    );
    let response = post(&base, Some("s-1"), headers).await.unwrap();
    let StreamableHttpPostResponse::Json(message, session) = response else {
        panic!("expected a JSON answer");
    };
    assert!(matches!(message, JsonRpcMessage::Response(_)));
    assert_eq!(session.as_deref(), Some("s-2"));
    let seen = seen.lock().unwrap();
    let header = |name: &str| {
        seen[0]
            .headers
            .get(name)
            .unwrap()
            .to_str()
            .unwrap()
            .to_owned()
    };
    assert_eq!(header("authorization"), "Bearer secret-token");
    assert_eq!(header("mcp-session-id"), "s-1");
    assert_eq!(header("x-api-key"), "k");
    assert_eq!(header("content-type"), "application/json");
    assert_eq!(header("accept"), "text/event-stream, application/json");
    let body: serde_json::Value = serde_json::from_slice(&seen[0].body).unwrap();
    assert_eq!(body["method"], "ping");
}

#[tokio::test]
async fn an_sse_answer_streams_its_events_and_fails_an_event_over_the_cap() {
    let (base, _) = serve(|_| {
        answer(
            200,
            &[("content-type", "text/event-stream")],
            "data: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}\n\ndata: this event is over the sixty-four byte cap of the test, by a good margin\n\n",
        )
    })
    .await;
    let response = post(&base, None, HashMap::new()).await.unwrap();
    let StreamableHttpPostResponse::Sse(stream, _) = response else {
        panic!("expected an SSE answer");
    };
    let events: Vec<_> = stream.collect().await;
    assert_eq!(events.len(), 2, "{events:?}");
    assert!(
        events[0]
            .as_ref()
            .unwrap()
            .data
            .as_deref()
            .unwrap()
            .contains("\"id\":7")
    );
    let error = events[1].as_ref().unwrap_err().to_string();
    assert!(
        error.contains("SSE event exceeded the maximum size of 64 bytes"),
        "{error}"
    );
}

#[tokio::test]
async fn refusals_are_told_apart_as_rmcps_transport_expects() {
    let (base, _) = serve(|request| {
        match request
            .headers
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
        {
            Some("expired") => answer(404, &[], "no such session"),
            Some("busy") => answer(429, &[("retry-after", "3")], ""),
            Some("scope") => answer(
                403,
                &[(
                    "www-authenticate",
                    "Bearer error=\"insufficient_scope\", scope=\"a b\"",
                )],
                "",
            ),
            Some("broken") => answer(
                500,
                &[("content-type", "application/json")],
                r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32603,"message":"boom"}}"#,
            ),
            _ => answer(
                401,
                &[("www-authenticate", "Bearer resource_metadata=\"x\"")],
                "",
            ),
        }
    })
    .await;
    let error = post(&base, None, HashMap::new()).await.unwrap_err();
    let StreamableHttpError::AuthRequired(challenge) = error else {
        panic!("expected AuthRequired, got {error:?}");
    };
    assert_eq!(
        challenge.www_authenticate_header,
        "Bearer resource_metadata=\"x\""
    );
    let error = post(&base, Some("scope"), HashMap::new())
        .await
        .unwrap_err();
    let StreamableHttpError::InsufficientScope(scope) = error else {
        panic!("expected InsufficientScope, got {error:?}");
    };
    assert_eq!(scope.required_scope.as_deref(), Some("a b"));
    let error = post(&base, Some("expired"), HashMap::new())
        .await
        .unwrap_err();
    assert!(
        matches!(error, StreamableHttpError::SessionExpired),
        "{error:?}"
    );
    let error = post(&base, Some("busy"), HashMap::new()).await.unwrap_err();
    let StreamableHttpError::HttpStatus(status) = error else {
        panic!("expected HttpStatus, got {error:?}");
    };
    assert_eq!(
        (status.status, status.retry_after.as_deref()),
        (429, Some("3"))
    );
    // A failed answer carrying a JSON-RPC error is that error, for the caller to see.
    let response = post(&base, Some("broken"), HashMap::new()).await.unwrap();
    assert!(matches!(
        response,
        StreamableHttpPostResponse::Json(JsonRpcMessage::Error(_), _)
    ));
}

#[tokio::test]
async fn a_configured_header_may_not_replace_the_transports_own() {
    let (base, seen) = serve(|_| answer(202, &[], "")).await;
    let mut headers = HashMap::new();
    headers.insert(
        HeaderName::from_static("mcp-session-id"),
        HeaderValue::from_static("forged"),
    );
    let error = post(&base, None, headers).await.unwrap_err();
    assert!(
        matches!(&error, StreamableHttpError::ReservedHeaderConflict(name) if name == "mcp-session-id"),
        "{error:?}"
    );
    assert!(seen.lock().unwrap().is_empty(), "nothing is sent");
}

/// The JSON answer to the ping, for the redirect tests' final hop.
fn pong() -> Response<Full<Bytes>> {
    answer(
        200,
        &[("content-type", "application/json")],
        r#"{"jsonrpc":"2.0","id":7,"result":{}}"#,
    )
}

fn api_key() -> HashMap<HeaderName, HeaderValue> {
    HashMap::from([(
        HeaderName::from_static("x-api-key"),
        HeaderValue::from_static("k"),
    )])
}

#[tokio::test]
async fn an_mcp_post_follows_a_307_with_its_body_and_credentials_on_the_same_origin() {
    // Starlette (FastMCP) answers `/mcp` with a 307 to `/mcp/`.
    let (base, seen) = serve(|request| match request.path.as_str() {
        "/mcp" => answer(307, &[("location", "/mcp/")], ""),
        _ => pong(),
    })
    .await;
    let answer = post(&base, None, api_key()).await.unwrap();
    assert!(
        matches!(answer, StreamableHttpPostResponse::Json(..)),
        "{answer:?}"
    );
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 2);
    assert_eq!(
        (seen[1].method.as_str(), seen[1].path.as_str()),
        ("POST", "/mcp/")
    );
    assert_eq!(seen[1].body, seen[0].body);
    assert!(!seen[1].body.is_empty());
    assert_eq!(seen[1].headers["authorization"], "Bearer secret-token");
    assert_eq!(seen[1].headers["x-api-key"], "k");
}

/// Where the cross-origin test's first server sends its client.
static MOVED_TO: std::sync::OnceLock<String> = std::sync::OnceLock::new();

#[tokio::test]
async fn an_mcp_redirect_to_another_origin_carries_no_credentials() {
    let (other, seen_by_other) = serve(|_| pong()).await;
    MOVED_TO.set(format!("{other}/moved")).unwrap();
    let (base, seen) = serve(|_| {
        let location = MOVED_TO.get().unwrap().as_str();
        let mut response = answer(308, &[], "");
        response
            .headers_mut()
            .insert("location", HeaderValue::from_str(location).unwrap());
        response
    })
    .await;
    post(&base, None, api_key()).await.unwrap();
    assert_eq!(seen.lock().unwrap().len(), 1);
    let seen_by_other = seen_by_other.lock().unwrap();
    assert_eq!(seen_by_other.len(), 1);
    let request = &seen_by_other[0];
    assert_eq!(
        (request.method.as_str(), request.path.as_str()),
        ("POST", "/moved")
    );
    assert!(!request.body.is_empty());
    assert!(request.headers.get("authorization").is_none());
    assert!(request.headers.get("x-api-key").is_none());
}

#[tokio::test]
async fn an_mcp_post_answered_with_302_is_reported_not_turned_into_a_get() {
    let (base, seen) = serve(|request| match request.path.as_str() {
        "/mcp" => answer(302, &[("location", "/elsewhere")], ""),
        _ => pong(),
    })
    .await;
    let error = post(&base, None, HashMap::new()).await.unwrap_err();
    assert!(error.to_string().contains("302"), "{error}");
    assert_eq!(seen.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn an_mcp_redirect_loop_ends_after_ten() {
    let (base, seen) = serve(|_| answer(307, &[("location", "/mcp")], "")).await;
    let error = post(&base, None, HashMap::new()).await.unwrap_err();
    assert!(
        matches!(
            error,
            StreamableHttpError::Client(HttpError::TooManyRedirects(10))
        ),
        "{error}"
    );
    assert_eq!(seen.lock().unwrap().len(), 11);
}

#[test]
fn which_mcp_redirects_are_followed() {
    use super::streamable::mcp_redirect;
    let https: Uri = "https://mcp.example.test/mcp".parse().unwrap();
    let follow = |method: Method, status: u16, location: &str| {
        mcp_redirect(
            &method,
            StatusCode::from_u16(status).unwrap(),
            &https,
            Some(location),
        )
        .map(|uri| uri.to_string())
    };
    assert_eq!(
        follow(Method::POST, 308, "/v2/mcp").as_deref(),
        Some("https://mcp.example.test/v2/mcp")
    );
    assert_eq!(
        follow(Method::DELETE, 307, "/x").as_deref(),
        Some("https://mcp.example.test/x")
    );
    assert_eq!(
        follow(Method::GET, 302, "/x").as_deref(),
        Some("https://mcp.example.test/x")
    );
    assert_eq!(follow(Method::POST, 301, "/x"), None);
    assert_eq!(follow(Method::POST, 303, "/x"), None);
    // Never from https down to plain http.
    assert_eq!(
        follow(Method::POST, 307, "http://mcp.example.test/mcp"),
        None
    );
    assert_eq!(follow(Method::POST, 304, "/x"), None);
    assert_eq!(
        mcp_redirect(&Method::POST, StatusCode::TEMPORARY_REDIRECT, &https, None),
        None
    );
}

#[test]
fn a_send_error_names_the_url_without_its_secrets() {
    let uri: Uri = "https://user:pw@mcp.example.test:8443/mcp?key=s3cret"
        .parse()
        .unwrap();
    assert_eq!(
        url_without_secrets(&uri),
        "https://mcp.example.test:8443/mcp"
    );
}
