//! Proxies on loopback: a small forwarding proxy (a `CONNECT` tunnel or an absolute-form
//! request, spliced to the origin) between the client and a scripted origin, and the
//! variables' parsing from a map, never the process's environment.

use std::collections::HashMap;
use std::sync::Mutex;

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::http::{Method, Request, Response};
use hyper::service::service_fn;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpListener;
use tower::Service as _;

use super::*;
use crate::pool::http_client::{Exchange, HttpClient};

/// An origin on loopback answering every request with its method and path; returns its address.
async fn origin() -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let service = service_fn(|request: Request<hyper::body::Incoming>| async move {
                    let text = format!("origin saw {} {}", request.method(), request.uri());
                    Ok::<_, hyper::Error>(Response::new(Full::new(Bytes::from(text))))
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    address
}

/// A forwarding proxy on loopback: `CONNECT host:port` is answered 200 and spliced; any other
/// request must be in absolute form and is forwarded in origin form. Returns its address and
/// the heads it read (request line and headers, one string per connection).
async fn forwarding_proxy() -> (std::net::SocketAddr, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let heads = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&heads);
    tokio::spawn(async move {
        while let Ok((mut client, _)) = listener.accept().await {
            let log = Arc::clone(&log);
            tokio::spawn(async move {
                let mut read = Vec::new();
                let head_end = loop {
                    let mut chunk = [0u8; 1024];
                    let count = client.read(&mut chunk).await.unwrap();
                    assert!(count > 0, "the client closed before a whole head");
                    read.extend_from_slice(&chunk[..count]);
                    if let Some(at) = read.windows(4).position(|window| window == b"\r\n\r\n") {
                        break at + 4;
                    }
                };
                let head = String::from_utf8(read[..head_end].to_vec()).unwrap();
                log.lock().unwrap().push(head.clone());
                let request_line = head.lines().next().unwrap().to_owned();
                let mut parts = request_line.split(' ');
                let (method, target) = (parts.next().unwrap(), parts.next().unwrap());
                let mut upstream;
                if method == "CONNECT" {
                    upstream = tokio::net::TcpStream::connect(target).await.unwrap();
                    client
                        .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                        .await
                        .unwrap();
                    upstream.write_all(&read[head_end..]).await.unwrap();
                } else {
                    let target: Uri = target.parse().expect("a request in absolute form");
                    let authority = target.authority().expect("an absolute-form target");
                    upstream = tokio::net::TcpStream::connect(authority.as_str())
                        .await
                        .unwrap();
                    let origin_line =
                        format!("{method} {} HTTP/1.1", target.path_and_query().unwrap());
                    let rest = &head[request_line.len()..];
                    upstream
                        .write_all(format!("{origin_line}{rest}").as_bytes())
                        .await
                        .unwrap();
                    upstream.write_all(&read[head_end..]).await.unwrap();
                }
                let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
            });
        }
    });
    (address, heads)
}

fn proxies(variables: &[(&str, String)]) -> Result<Proxies, ProxyConfigError> {
    let map: HashMap<String, String> = variables
        .iter()
        .map(|(name, value)| ((*name).to_owned(), value.clone()))
        .collect();
    Proxies::from_variables(|name| map.get(name).cloned())
}

fn client_through(proxies: Proxies) -> HttpClient {
    HttpClient::with_parts(crate::pool::tls::client_config(None).unwrap(), proxies)
}

async fn get(client: &HttpClient, url: &str) -> String {
    let request = Exchange {
        method: Method::GET,
        url,
        headers: &[],
        body: None,
    };
    let answer = client
        .exchange(request, std::time::Duration::from_secs(30), 4096)
        .await
        .unwrap();
    String::from_utf8(answer.body).unwrap()
}

#[tokio::test]
async fn a_plain_http_request_goes_to_the_proxy_in_absolute_form_with_its_credentials() {
    let origin = origin().await;
    let (proxy, heads) = forwarding_proxy().await;
    let proxies = proxies(&[("HTTP_PROXY", format!("http://alice:s%40cret@{proxy}"))]).unwrap();
    let client = client_through(proxies);

    let body = get(&client, &format!("http://{origin}/mcp?x=1")).await;

    assert_eq!(body, "origin saw GET /mcp?x=1");
    let heads = heads.lock().unwrap();
    assert_eq!(heads.len(), 1, "{heads:?}");
    assert!(
        heads[0].starts_with(&format!("GET http://{origin}/mcp?x=1 HTTP/1.1\r\n")),
        "{}",
        heads[0]
    );
    // alice:s@cret, percent-decoded from the URL, in Basic.
    assert!(
        heads[0].contains("proxy-authorization: Basic YWxpY2U6c0BjcmV0\r\n"),
        "{}",
        heads[0]
    );
}

#[tokio::test]
async fn an_https_destination_is_tunnelled_with_connect_carrying_the_credentials() {
    let origin = origin().await;
    let (proxy, heads) = forwarding_proxy().await;
    let proxies = proxies(&[
        ("HTTPS_PROXY", format!("http://alice:secret@{proxy}")),
        // The lowercase name is not read when the uppercase one is set.
        ("https_proxy", "http://127.0.0.1:9".to_owned()),
    ])
    .unwrap();
    let mut connector = ProxyConnector::new(proxies);

    // rustls would run on this stream; the origin here speaks plain HTTP through the tunnel,
    // which shows the tunnel reaches it byte for byte.
    let destination: Uri = format!("https://{origin}/").parse().unwrap();
    let stream = connector.call(destination).await.unwrap();
    assert!(
        !stream.connected().is_proxied(),
        "requests in a tunnel are in origin form"
    );
    let (mut sender, connection) = hyper::client::conn::http1::handshake(stream).await.unwrap();
    tokio::spawn(connection);
    let request = Request::get("/through-the-tunnel")
        .header("host", origin.to_string())
        .body(Full::new(Bytes::new()))
        .unwrap();
    let answer = sender.send_request(request).await.unwrap();
    let body = answer.into_body().collect().await.unwrap().to_bytes();

    assert_eq!(body, "origin saw GET /through-the-tunnel");
    let heads = heads.lock().unwrap();
    assert_eq!(heads.len(), 1, "{heads:?}");
    assert!(
        heads[0].starts_with(&format!("CONNECT {origin} HTTP/1.1\r\n")),
        "{}",
        heads[0]
    );
    assert!(
        heads[0]
            .to_ascii_lowercase()
            .contains("proxy-authorization: basic ywxpy2u6c2vjcmv0\r\n"),
        "{}",
        heads[0]
    );
}

#[tokio::test]
async fn no_proxy_sends_a_listed_host_straight_to_the_server() {
    let origin = origin().await;
    let (proxy, heads) = forwarding_proxy().await;
    let proxies = proxies(&[
        ("all_proxy", format!("http://{proxy}")),
        ("no_proxy", "example.test, 127.0.0.0/8".to_owned()),
    ])
    .unwrap();
    let client = client_through(proxies.clone());

    let body = get(&client, &format!("http://{origin}/direct")).await;

    assert_eq!(body, "origin saw GET /direct");
    assert!(heads.lock().unwrap().is_empty(), "the proxy was used");
    // The same matcher does send another host through the proxy.
    let other: Uri = "http://api.other.test/mcp".parse().unwrap();
    assert_eq!(
        proxies
            .intercept(&other)
            .map(|route| route.proxy.to_string()),
        Some(format!("http://{proxy}/"))
    );
}

#[test]
fn no_variable_means_no_proxy() {
    let proxies = proxies(&[("NO_PROXY", "*".to_owned())]).unwrap();
    assert!(proxies.matcher.is_none());
}

#[test]
fn http_proxy_is_ignored_under_cgi() {
    let proxies = proxies(&[
        ("REQUEST_METHOD", "GET".to_owned()),
        ("HTTP_PROXY", "http://127.0.0.1:3128".to_owned()),
    ])
    .unwrap();
    assert!(proxies.matcher.is_none());
}

#[test]
fn a_malformed_proxy_url_is_named_by_its_variable_without_its_value() {
    let error = proxies(&[("https_proxy", "http://bob:hunter2@[::1".to_owned())]).unwrap_err();
    assert_eq!(
        error,
        ProxyConfigError::Malformed {
            variable: "https_proxy".to_owned()
        }
    );
    let message = error.to_string();
    assert!(message.contains("https_proxy"), "{message}");
    assert!(!message.contains("hunter2"), "{message}");
    assert!(message.contains("expected http://host:port"), "{message}");
}

#[test]
fn a_proxy_of_another_kind_is_refused_rather_than_bypassed() {
    let error = proxies(&[(
        "ALL_PROXY",
        "socks5://bob:hunter2@127.0.0.1:1080".to_owned(),
    )])
    .unwrap_err();
    let message = error.to_string();
    assert!(message.contains("ALL_PROXY"), "{message}");
    assert!(message.contains("socks5://"), "{message}");
    assert!(!message.contains("hunter2"), "{message}");
}

#[test]
fn a_proxy_without_a_scheme_is_taken_as_http() {
    let proxies = proxies(&[("HTTP_PROXY", "127.0.0.1:3128".to_owned())]).unwrap();
    let destination: Uri = "http://api.example.test/".parse().unwrap();
    assert_eq!(
        proxies
            .intercept(&destination)
            .map(|route| route.proxy.to_string()),
        Some("http://127.0.0.1:3128/".to_owned())
    );
}
