//! `tool-cli mcp`: a stdio MCP server a host launches as a command
//! (`{"command": "tool-cli", "args": ["mcp"]}`) that relays each message the host writes on
//! stdin to the daemon's MCP gateway (`POST /mcp`, with the token from `TOOL_CLI_TOKEN` or the
//! runtime file, after the daemon proved it holds it) and writes the gateway's answer on
//! stdout, one JSON message per line. `--progressive` asks for the progressive mode.
//!
//! The relay adds nothing of its own to what the host sees: the gateway decides every answer.
//! What it does decide is pure and tested here: which id an answer belongs to when the daemon
//! answered with an HTTP error whose body could not name it (a 413 for a body over the daemon's
//! limit is read before its id is), and what to say when the daemon answered something that is
//! not a JSON-RPC message. A `tools/call` the gateway answers with an SSE stream (the server's
//! progress, log messages and questions, then the answer) is written a line per event as each
//! arrives, so the host can answer a question while its call waits (its answer is one more
//! stdin line, relayed like any other). Once a session is open the relay also holds the
//! session's standalone stream (`GET /mcp`) on a connection of its own and writes what comes
//! on it (`notifications/tools/list_changed`, …) as lines too, reopening it for each new
//! session. When the daemon no longer knows the session (it was restarted), the
//! relay opens a new one with the host's own `initialize` and sends the message again, once. It
//! starts a daemon when none runs and none was named by hand (`autostart.rs`, called before
//! the relay); when none is reachable it exits at once with an error saying how to start one.

use std::sync::Arc;
use std::time::Duration;

use hyper::body::Bytes;
use hyper::header::HeaderMap;
use hyper::{Method, StatusCode};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _};
use tokio::sync::Mutex;

use crate::endpoint::Endpoint;
use crate::error::Error;
use crate::link::DaemonLink;

/// The gateway's path on the daemon.
const GATEWAY_PATH: &str = "/mcp";

/// How long connecting to the daemon and its identity proof may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// What the relay keeps between messages.
struct Relay {
    endpoint: Endpoint,
    require_identity: bool,
    vouched: bool,
    progressive: bool,
    /// Connections not in use (one per request in flight at most).
    idle: Mutex<Vec<DaemonLink>>,
    /// The gateway session, once `initialize` answered.
    session: Mutex<Option<String>>,
    /// The same session id, watched by the standalone stream's follower.
    sessions: tokio::sync::watch::Sender<Option<String>>,
    /// The protocol version `initialize` agreed.
    version: Mutex<Option<String>>,
    /// The host's `initialize`, to open a new session with when the daemon lost ours.
    initialize: Mutex<Option<Vec<u8>>>,
    stdout: Mutex<tokio::io::Stdout>,
}

/// Relays stdin ↔ the daemon's gateway until stdin ends.
pub(crate) async fn run(
    endpoint: Endpoint,
    progressive: bool,
    require_identity: bool,
) -> Result<(), Error> {
    let vouched = endpoint.daemon_id.as_deref().is_some_and(|id| {
        crate::vouch::vouches(id, &endpoint.target, |path| std::fs::read_to_string(path))
    });
    let relay = Arc::new(Relay {
        endpoint,
        require_identity,
        vouched,
        progressive,
        idle: Mutex::new(Vec::new()),
        session: Mutex::new(None),
        sessions: tokio::sync::watch::Sender::new(None),
        version: Mutex::new(None),
        initialize: Mutex::new(None),
        stdout: Mutex::new(tokio::io::stdout()),
    });
    // Reach the daemon before the host sends anything: no daemon is an error at once.
    let first = relay.connect().await.inspect_err(|_| say_not_running())?;
    relay.idle.lock().await.push(first);
    let notices = tokio::spawn(Arc::clone(&relay).follow_notices());
    let mut stdin = tokio::io::BufReader::new(tokio::io::stdin());
    let mut tasks = tokio::task::JoinSet::new();
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = stdin
            .read_until(b'\n', &mut line)
            .await
            .map_err(|source| Error::Io {
                action: "read the host's messages from stdin".to_owned(),
                source,
            })?;
        if read == 0 {
            break;
        }
        let message = std::mem::take(&mut line);
        if message.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let (id, method) = peek(&message);
        let relay = Arc::clone(&relay);
        if method.as_deref() == Some("initialize") {
            // Every later request carries the session `initialize` opens: wait for it.
            relay.forward(message, id).await;
        } else {
            tasks.spawn(async move { relay.forward(message, id).await });
        }
    }
    while tasks.join_next().await.is_some() {}
    notices.abort();
    relay.end_session().await;
    Ok(())
}

/// Says on stderr (the host's log; stdout is the host's protocol) that the relay needs a
/// running daemon, before the error itself is reported.
pub(crate) fn say_not_running() {
    eprintln!(
        "tool-cli mcp: the MCP gateway is served by a tool-cli daemon, and none was reachable or \
         started (tool-cli mcp starts one only when TOOL_CLI_PORT, TOOL_CLI_TOKEN and \
         TOOL_CLI_SOCKET are unset and TOOL_CLI_NO_AUTOSTART is not 1)"
    );
}

impl Relay {
    async fn connect(&self) -> Result<DaemonLink, Error> {
        DaemonLink::connect(
            &self.endpoint,
            CONNECT_TIMEOUT,
            CONNECT_TIMEOUT,
            self.require_identity,
            self.vouched,
        )
        .await
    }

    /// An idle connection (`true`: reused), or a new one.
    async fn link(&self) -> Result<(DaemonLink, bool), Error> {
        while let Some(link) = self.idle.lock().await.pop() {
            if !link.is_closed() {
                return Ok((link, true));
            }
        }
        Ok((self.connect().await?, false))
    }

    /// Sends one host message to the gateway and writes its answer, if it has one.
    async fn forward(&self, message: Vec<u8>, id: Option<Value>) {
        let initialize = peek(&message).1.as_deref() == Some("initialize");
        if initialize {
            *self.initialize.lock().await = Some(message.clone());
        }
        let mut answered = self.send(message.clone()).await;
        // The daemon no longer knows the session (it was restarted): open a new one with the
        // host's own initialize, then send the message again, once. A host launched us once
        // and would otherwise get errors until it restarts us.
        if !initialize
            && matches!(&answered, Ok((status, _, _)) if *status == StatusCode::NOT_FOUND)
            && self.reinitialize().await
        {
            answered = self.send(message).await;
        }
        let line = match answered {
            // Written event by event already.
            Ok((_, _, None)) => None,
            Ok((status, _, Some(body))) => answer_line(id.as_ref(), status, &body),
            Err(error) => id.as_ref().map(|id| {
                error_line(
                    id,
                    -32603,
                    &format!("tool-cli mcp could not reach the daemon: {error}"),
                )
            }),
        };
        if let Some(line) = line {
            self.write_line(&line).await;
        }
    }

    async fn write_line(&self, line: &str) {
        let mut stdout = self.stdout.lock().await;
        let _ = stdout.write_all(line.as_bytes()).await;
        let _ = stdout.write_all(b"\n").await;
        let _ = stdout.flush().await;
    }

    /// Writes each message of an SSE answer as a line as it arrives; whether the stream was
    /// read to its end.
    async fn relay_events(&self, mut body: hyper::body::Incoming) -> bool {
        use http_body_util::BodyExt as _;
        let mut pending = Vec::new();
        loop {
            match body.frame().await {
                None => return true,
                Some(Err(_)) => return false,
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        pending.extend_from_slice(&data);
                        for message in sse_messages(&mut pending) {
                            self.write_line(&message).await;
                        }
                    }
                }
            }
        }
    }

    /// Posts one message with the session's headers; an `initialize` answer's session id and
    /// protocol version are kept for the messages after it. An SSE answer is written as it
    /// comes, and its body is `None`.
    async fn send(
        &self,
        message: Vec<u8>,
    ) -> Result<(StatusCode, HeaderMap, Option<Bytes>), Error> {
        let mut headers = Vec::new();
        if self.progressive {
            headers.push(("tool-cli-gateway-mode", "progressive".to_owned()));
        }
        if let Some(session) = self.session.lock().await.clone() {
            headers.push(("mcp-session-id", session));
        }
        if let Some(version) = self.version.lock().await.clone() {
            headers.push(("mcp-protocol-version", version));
        }
        let (mut link, reused) = self.link().await?;
        let mut answered = link
            .exchange_streamed(Method::POST, GATEWAY_PATH, &headers, message.clone())
            .await;
        if answered.is_err() && reused {
            // A kept connection the daemon closed meanwhile (a restart): once on a new one.
            link = self.connect().await?;
            answered = link
                .exchange_streamed(Method::POST, GATEWAY_PATH, &headers, message)
                .await;
        }
        let (status, headers, body) = answered?;
        let event_stream = headers
            .get(hyper::header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|kind| kind.starts_with("text/event-stream"));
        if event_stream {
            if self.relay_events(body).await {
                self.idle.lock().await.push(link);
            }
            return Ok((status, headers, None));
        }
        let body = {
            use http_body_util::BodyExt as _;
            body.collect()
                .await
                .map_err(|error| Error::Transport(error.to_string()))?
                .to_bytes()
        };
        self.idle.lock().await.push(link);
        let answered = (status, headers, Some(body));
        let (_, headers, body) = &answered;
        let body = body.as_deref().unwrap_or_default();
        if let Some(session) = headers
            .get("mcp-session-id")
            .and_then(|value| value.to_str().ok())
        {
            *self.session.lock().await = Some(session.to_owned());
            self.sessions.send_replace(Some(session.to_owned()));
            let agreed = serde_json::from_slice::<Value>(body)
                .ok()
                .and_then(|answer| {
                    answer
                        .pointer("/result/protocolVersion")
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                });
            *self.version.lock().await = agreed;
        }
        Ok(answered)
    }

    /// Holds each session's standalone stream open and writes its messages, until the relay
    /// ends: a stream that ends (the daemon went, or refused it) is reopened only for a new
    /// session, which is when the daemon can have one for us again.
    async fn follow_notices(self: Arc<Self>) {
        let mut sessions = self.sessions.subscribe();
        loop {
            let session = sessions.borrow_and_update().clone();
            if let Some(session) = session {
                self.notice_stream(session).await;
            }
            if sessions.changed().await.is_err() {
                return;
            }
        }
    }

    /// One standalone stream of `session`, relayed until it ends.
    async fn notice_stream(&self, session: String) {
        let Ok(mut link) = self.connect().await else {
            return;
        };
        let mut headers = vec![("mcp-session-id", session)];
        if let Some(version) = self.version.lock().await.clone() {
            headers.push(("mcp-protocol-version", version));
        }
        match link
            .exchange_streamed(Method::GET, GATEWAY_PATH, &headers, Vec::new())
            .await
        {
            Ok((status, _, body)) if status == StatusCode::OK => {
                self.relay_events(body).await;
            }
            Ok((status, _, _)) => {
                eprintln!("tool-cli mcp: the daemon refused the session's event stream ({status})");
            }
            Err(error) => {
                eprintln!("tool-cli mcp: cannot open the session's event stream: {error}");
            }
        }
    }

    /// Opens a new gateway session with the host's `initialize`; whether it worked.
    async fn reinitialize(&self) -> bool {
        let Some(initialize) = self.initialize.lock().await.clone() else {
            return false;
        };
        *self.session.lock().await = None;
        *self.version.lock().await = None;
        self.sessions.send_replace(None);
        let opened = self.send(initialize).await;
        if !matches!(&opened, Ok((status, _, _)) if status.is_success())
            || self.session.lock().await.is_none()
        {
            return false;
        }
        let initialized = br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        self.send(initialized.to_vec()).await.is_ok()
    }

    /// Ends the gateway session (the host closed stdin).
    async fn end_session(&self) {
        let Some(session) = self.session.lock().await.take() else {
            return;
        };
        if let Ok((mut link, _)) = self.link().await {
            let headers = [("mcp-session-id", session)];
            let _ = link
                .exchange_raw(Method::DELETE, GATEWAY_PATH, &headers, Vec::new())
                .await;
        }
    }
}

/// Takes the complete SSE events off the front of `pending` and answers the message each
/// carries (its `data:` lines joined); events without data (comments, priming) carry none.
fn sse_messages(pending: &mut Vec<u8>) -> Vec<String> {
    let mut messages = Vec::new();
    while let Some(end) = pending.windows(2).position(|pair| pair == b"\n\n") {
        let event: Vec<u8> = pending.drain(..end + 2).collect();
        let text = String::from_utf8_lossy(&event);
        let data: Vec<&str> = text
            .lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .map(|data| data.strip_prefix(' ').unwrap_or(data))
            .collect();
        let message = data.join("\n");
        if !message.trim().is_empty() {
            messages.push(message);
        }
    }
    messages
}

/// The id and method of a host message, as far as it can be read.
fn peek(message: &[u8]) -> (Option<Value>, Option<String>) {
    #[derive(serde::Deserialize)]
    struct Head {
        id: Option<Value>,
        method: Option<String>,
    }
    match serde_json::from_slice::<Head>(message) {
        Ok(head) => (head.id.filter(|id| !id.is_null()), head.method),
        Err(_) => (None, None),
    }
}

/// The line to write for the gateway's answer to the message with `id`: the answer itself
/// (with `id` filled in when the daemon could not read it), nothing for an accepted
/// notification, or an error naming the HTTP status when the answer is not a JSON-RPC message.
fn answer_line(id: Option<&Value>, status: StatusCode, body: &[u8]) -> Option<String> {
    if body.is_empty() {
        if status.is_success() {
            return None;
        }
        return id.map(|id| {
            error_line(
                id,
                -32603,
                &format!("the daemon's MCP gateway answered HTTP {status} with no message"),
            )
        });
    }
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(mut answer)) if answer.contains_key("jsonrpc") => {
            if answer.get("id").is_none_or(Value::is_null) {
                match id {
                    Some(id) => {
                        answer.insert("id".to_owned(), id.clone());
                    }
                    // A message without an id (a malformed one) gets its error with id null.
                    None if answer.contains_key("error") => {}
                    None => return None,
                }
            }
            Some(Value::Object(answer).to_string())
        }
        _ => id.map(|id| {
            error_line(
                id,
                -32603,
                &format!("the daemon's MCP gateway answered HTTP {status} with a body that is not a JSON-RPC message"),
            )
        }),
    }
}

fn error_line(id: &Value, code: i64, message: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_the_daemon_could_not_address_gets_the_requests_id() {
        let too_large =
            br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"over the limit"}}"#;
        let line = answer_line(Some(&json!(7)), StatusCode::PAYLOAD_TOO_LARGE, too_large).unwrap();
        let answer: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(answer["id"], json!(7));
        assert_eq!(answer["error"]["message"], "over the limit");
    }

    #[test]
    fn answers_pass_unchanged_and_notifications_get_none() {
        let body = br#"{"jsonrpc":"2.0","id":"a","result":{"tools":[]}}"#;
        let line = answer_line(Some(&json!("a")), StatusCode::OK, body).unwrap();
        assert_eq!(line, r#"{"jsonrpc":"2.0","id":"a","result":{"tools":[]}}"#);
        assert_eq!(answer_line(None, StatusCode::ACCEPTED, b""), None);
    }

    #[test]
    fn what_is_not_a_message_becomes_an_error_naming_the_status() {
        let line = answer_line(Some(&json!(1)), StatusCode::FORBIDDEN, b"").unwrap();
        assert!(line.contains("HTTP 403"), "{line}");
        let line = answer_line(Some(&json!(1)), StatusCode::BAD_GATEWAY, b"<html>").unwrap();
        assert!(line.contains("HTTP 502"), "{line}");
        assert_eq!(answer_line(None, StatusCode::FORBIDDEN, b""), None);
    }

    #[test]
    fn sse_events_are_taken_whole_and_their_data_answered() {
        let mut pending =
            b"event: message\ndata: {\"a\":1}\n\nid: 1\ndata: \n\nevent: message\ndata: {\"b\""
                .to_vec();
        assert_eq!(sse_messages(&mut pending), vec![r#"{"a":1}"#.to_owned()]);
        assert_eq!(pending, b"event: message\ndata: {\"b\"".to_vec());
        pending.extend_from_slice(b":2}\n\n");
        assert_eq!(sse_messages(&mut pending), vec![r#"{"b":2}"#.to_owned()]);
        assert!(pending.is_empty());
    }

    #[test]
    fn ids_and_methods_are_read_from_what_the_host_sent() {
        assert_eq!(
            peek(br#"{"jsonrpc":"2.0","id":3,"method":"initialize"}"#),
            (Some(json!(3)), Some("initialize".to_owned()))
        );
        assert_eq!(peek(b"not json"), (None, None));
    }
}
