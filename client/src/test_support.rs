//! Test helpers shared by the modules' unit tests: a scripted daemon on loopback.
//!
//! The peer speaks just enough HTTP/1.1 to answer requests on one kept-alive connection with
//! canned responses, so the transport and the command flow run their production code over a real
//! socket (TCP or Unix) without needing the real daemon (its end-to-end tests live in the `tests`
//! crate). It answers the identity check (`POST /identity`) the way the daemon does, computing
//! the proof from the request it received, unless a test scripts another answer.

use std::path::Path;

use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::endpoint::{Endpoint, Target};

/// The token every scripted daemon holds.
pub(crate) const TOKEN: &str = "secret";

/// The endpoint of a fake daemon on `port`, with token [`TOKEN`].
pub(crate) fn endpoint(port: u16) -> Endpoint {
    Endpoint {
        target: Target::Tcp {
            host: "127.0.0.1".into(),
            port,
        },
        token: TOKEN.into(),
        fallback: None,
        daemon_id: None,
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

/// The `getBridgeInfo` answer of our daemon (`tool-cli-daemon-rs`).
pub(crate) fn bridge_info() -> (u16, String) {
    result(json!({
        "bridgeProtocol": {"name": "tool-cli-bridge", "major": 1, "version": "1.0"},
        "serverImplementation": {"name": tool_cli_protocol::IMPLEMENTATION_NAME, "version": "0"},
        "operations": [],
        "capabilities": {}
    }))
}

/// The handshake of the reference 1.x bridge (`@sammorrowdrums/tool-cli`), which serves only the
/// eight reference methods and enforces no `timeoutMs`.
pub(crate) fn reference_bridge_info() -> (u16, String) {
    result(json!({
        "bridgeProtocol": {"name": "tool-cli-bridge", "major": 1, "version": "1.0"},
        "serverImplementation": {"name": "@sammorrowdrums/tool-cli", "version": "0.6.0"},
        "operations": ["getBridgeInfo", "listServers", "listTools", "describeTool", "callTool",
                       "listResources", "listResourceTemplates", "readResource"],
        "capabilities": {"cancellation": {"providerAbortSignal": true}}
    }))
}

/// How the scripted peer answers `POST /identity`.
#[derive(Debug, Clone)]
pub(crate) enum IdentityScript {
    /// Like the daemon: the right proof for the nonce and `Host` received, 403 for another
    /// token id.
    Honest,
    /// This status and body, whatever was asked.
    Answer(u16, String),
    /// Close the connection without answering.
    Close,
    /// Reset the connection without answering (as a daemon at its connection cap may).
    Reset,
}

/// A scripted daemon on loopback TCP that proves its identity honestly; the task yields the
/// JSON-RPC requests it saw (the identity check is verified and left out).
pub(crate) async fn fake_daemon(
    answers: Vec<(u16, String)>,
) -> (u16, tokio::task::JoinHandle<Vec<String>>) {
    let (port, task) = fake_listener(IdentityScript::Honest, answers).await;
    (
        port,
        tokio::spawn(async move { rpc_requests(task.await.unwrap()) }),
    )
}

/// A scripted peer on loopback TCP with any identity behaviour; the task yields every request
/// it saw, the identity check included.
pub(crate) async fn fake_listener(
    identity: IdentityScript,
    answers: Vec<(u16, String)>,
) -> (u16, tokio::task::JoinHandle<Vec<String>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let task = tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        if matches!(identity, IdentityScript::Reset) {
            // Dropped with a zero linger below: the kernel answers with RST, not FIN.
            socket.set_zero_linger().unwrap();
        }
        serve(&mut socket, identity, answers).await
    });
    (port, task)
}

/// A scripted daemon on a Unix socket at `path`, proving its identity honestly; the task yields
/// the JSON-RPC requests it saw.
pub(crate) fn fake_daemon_on_socket(
    path: &Path,
    answers: Vec<(u16, String)>,
) -> tokio::task::JoinHandle<Vec<String>> {
    let listener = tokio::net::UnixListener::bind(path).unwrap();
    tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        rpc_requests(serve(&mut socket, IdentityScript::Honest, answers).await)
    })
}

/// The requests minus the identity check, which must come first and carry no token.
fn rpc_requests(mut seen: Vec<String>) -> Vec<String> {
    if let Some(first) = seen.first() {
        assert!(is_identity_request(first), "{first}");
        assert!(!first.contains(TOKEN), "{first}");
    }
    seen.retain(|request| !is_identity_request(request));
    seen
}

fn is_identity_request(request: &str) -> bool {
    request.starts_with("POST /identity ")
}

/// Answers requests on one connection: identity checks as `identity` says, every other request
/// with the next canned status and body. Returns every request seen once the client closes the
/// connection or sends a request with no answer left; the socket stays open for the caller.
pub(crate) async fn serve<S>(
    socket: &mut S,
    identity: IdentityScript,
    answers: Vec<(u16, String)>,
) -> Vec<String>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    exchange(socket, identity, answers, false).await
}

/// Like [`serve`] with an honest identity check, but returns as soon as the last answer is
/// written, so the caller can close the connection while the client is idle.
pub(crate) async fn answer_all<S>(socket: &mut S, answers: Vec<(u16, String)>) -> Vec<String>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    exchange(socket, IdentityScript::Honest, answers, true).await
}

async fn exchange<S>(
    socket: &mut S,
    identity: IdentityScript,
    answers: Vec<(u16, String)>,
    return_when_answered: bool,
) -> Vec<String>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut answers = answers.into_iter().peekable();
    let mut seen = Vec::new();
    let mut buffer = Vec::new();
    loop {
        let request = loop {
            if let Some(request) = take_request(&mut buffer) {
                break request;
            }
            let mut chunk = [0u8; 4096];
            match socket.read(&mut chunk).await {
                Ok(0) | Err(_) => return seen,
                Ok(read) => buffer.extend_from_slice(&chunk[..read]),
            }
        };
        let answer = if is_identity_request(&request) {
            match &identity {
                IdentityScript::Honest => Some(honest_identity_answer(&request)),
                IdentityScript::Answer(status, body) => Some((*status, body.clone())),
                IdentityScript::Close | IdentityScript::Reset => None,
            }
        } else {
            answers.next()
        };
        seen.push(request);
        let Some((status, body)) = answer else {
            return seen;
        };
        let response = format!(
            "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\n\
             content-length: {}\r\n\r\n{body}",
            body.len()
        );
        if socket.write_all(response.as_bytes()).await.is_err() {
            return seen;
        }
        if return_when_answered && answers.peek().is_none() {
            return seen;
        }
    }
}

/// What the daemon answers to an identity check for [`TOKEN`].
fn honest_identity_answer(request: &str) -> (u16, String) {
    use tool_cli_protocol::identity::{NONCE_HEADER, TOKEN_ID_HEADER, is_nonce};
    let nonce = header(request, NONCE_HEADER).unwrap_or_default();
    let host = header(request, "host").unwrap_or_default();
    assert!(is_nonce(&nonce), "{request}");
    assert!(header(request, "authorization").is_none(), "{request}");
    if header(request, TOKEN_ID_HEADER) != Some(crate::identity::token_id(TOKEN)) {
        return (403, String::new());
    }
    let proof = crate::identity::proof(TOKEN, &nonce, &host);
    (200, json!({ "proof": proof }).to_string())
}

/// The value of a header of a raw request, by case-insensitive name.
pub(crate) fn header(request: &str, name: &str) -> Option<String> {
    let mut headers = request.lines().skip(1).take_while(|line| !line.is_empty());
    headers.find_map(|line| {
        let (key, value) = line.split_once(':')?;
        key.eq_ignore_ascii_case(name)
            .then(|| value.trim().to_owned())
    })
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
