//! Test helpers shared by the modules' unit tests: a scripted daemon on loopback.
//!
//! The peer speaks just enough HTTP/1.1 to answer requests on one kept-alive connection with
//! canned responses, so the transport and the command flow run their production code over a real
//! socket without needing the real daemon (its end-to-end tests live in the `tests` crate).

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::connection::Endpoint;

/// The endpoint of a fake daemon on `port`, with token `secret`.
pub(crate) fn endpoint(port: u16) -> Endpoint {
    Endpoint {
        host: "127.0.0.1".into(),
        port,
        token: "secret".into(),
    }
}

/// An HTTP 200 answer carrying a JSON-RPC result.
pub(crate) fn result(value: Value) -> (u16, String) {
    (
        200,
        json!({"jsonrpc": "2.0", "id": 1, "result": value}).to_string(),
    )
}

/// An HTTP 200 answer carrying a JSON-RPC error.
pub(crate) fn rpc_error(code: i32, message: &str, data: Value) -> (u16, String) {
    let error = json!({"code": code, "message": message, "data": data});
    (
        200,
        json!({"jsonrpc": "2.0", "id": 1, "error": error}).to_string(),
    )
}

/// The `getBridgeInfo` answer of a compatible bridge.
pub(crate) fn bridge_info() -> (u16, String) {
    result(json!({
        "bridgeProtocol": {"name": "tool-cli-bridge", "major": 1, "version": "1.0"},
        "serverImplementation": {"name": "fake", "version": "0"},
        "operations": [],
        "capabilities": {}
    }))
}

/// A minimal HTTP/1.1 peer: answers each request on one connection with the next canned
/// status and body, and reports the requests it saw.
pub(crate) async fn fake_daemon(
    answers: Vec<(u16, String)>,
) -> (u16, tokio::task::JoinHandle<Vec<String>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let task = tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut seen = Vec::new();
        let mut buffer = Vec::new();
        for (status, body) in answers {
            let request = loop {
                if let Some(request) = take_request(&mut buffer) {
                    break request;
                }
                let mut chunk = [0u8; 4096];
                let read = socket.read(&mut chunk).await.unwrap();
                if read == 0 {
                    return seen;
                }
                buffer.extend_from_slice(&chunk[..read]);
            };
            seen.push(request);
            let response = format!(
                "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\n\
                 content-length: {}\r\n\r\n{body}",
                body.len()
            );
            socket.write_all(response.as_bytes()).await.unwrap();
        }
        seen
    });
    (port, task)
}

/// Splits one complete request (headers and a content-length body) off the buffer.
fn take_request(buffer: &mut Vec<u8>) -> Option<String> {
    let text = String::from_utf8_lossy(buffer).into_owned();
    let header_end = text.find("\r\n\r\n")? + 4;
    let length: usize = text[..header_end]
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse().ok())?
        })
        .unwrap_or(0);
    if buffer.len() < header_end + length {
        return None;
    }
    let request = text[..header_end + length].to_owned();
    buffer.drain(..header_end + length);
    Some(request)
}
