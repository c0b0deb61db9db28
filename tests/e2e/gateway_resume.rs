//! Resuming the MCP gateway's standalone stream with `Last-Event-ID`
//! (`daemon/src/edge/gateway/replay.rs`, `notices.rs`), over raw HTTP. The upstream that changes
//! is the fault server's `change_tools`, which edits its list and sends
//! `notifications/tools/list_changed`; each change the host is told of is one event `n-K`.
//!
//! Input → test:
//! - a reconnect naming an earlier event gets the events after it, then the live ones; it takes
//!   the session's stream over (the one it replaces ends); a change made while no stream was
//!   open is told on reconnect: `a_reconnect_gets_what_it_missed`
//! - a `Last-Event-ID` that is not ours, one never sent, and one whose followers are no longer
//!   held (past the 64 held events) are refused with 400 saying why; the oldest resumable one
//!   gets all 64 held events in order:
//!   `a_last_event_id_that_cannot_be_resumed_is_refused_with_the_reason`

use std::io::{BufRead as _, BufReader, Read as _};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::{Value, json};
use tool_cli_tests::{
    Daemon, HttpResponse, eventually, fault_server, http_request_bytes, open_http_stream,
    raw_http_exchange,
};

/// Longest wait for any one event.
const WAIT: Duration = Duration::from_secs(30);

/// What the daemon logs when a standalone stream opens.
const OPENED: &str = "gateway standalone stream opened";

fn streams_opened(daemon: &Daemon) -> usize {
    daemon.stderr().matches(OPENED).count()
}

fn headers<'a>(host: &'a str, bearer: &'a str) -> Vec<(&'a str, &'a str)> {
    vec![
        ("Host", host),
        ("Content-Type", "application/json"),
        ("Authorization", bearer),
    ]
}

fn open_session(daemon: &Daemon) -> String {
    let host = format!("127.0.0.1:{}", daemon.port);
    let bearer = format!("Bearer {}", daemon.token);
    let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}});
    let answer = raw_http_exchange(
        daemon.port,
        &http_request_bytes(
            "POST",
            "/mcp",
            &headers(&host, &bearer),
            initialize.to_string().as_bytes(),
        ),
    )
    .expect("an HTTP answer");
    answer
        .header("mcp-session-id")
        .unwrap_or_else(|| panic!("no session: {answer:?}"))
        .to_owned()
}

/// A `GET /mcp` of `session` with `extra` headers, answered in full (for refusals).
fn get(daemon: &Daemon, session: &str, extra: &[(&str, &str)]) -> HttpResponse {
    let host = format!("127.0.0.1:{}", daemon.port);
    let bearer = format!("Bearer {}", daemon.token);
    let mut all = headers(&host, &bearer);
    all.push(("Accept", "text/event-stream"));
    all.push(("Mcp-Session-Id", session));
    all.extend_from_slice(extra);
    raw_http_exchange(daemon.port, &http_request_bytes("GET", "/mcp", &all, b""))
        .expect("an HTTP answer")
}

/// Opens `session`'s standalone stream (resuming after `last_event_id`, if given) and waits
/// until the daemon opened it; the connection, its head read (asserted 200).
fn open_stream(
    daemon: &Daemon,
    session: &str,
    last_event_id: Option<&str>,
) -> BufReader<TcpStream> {
    let opened_before = streams_opened(daemon);
    let host = format!("127.0.0.1:{}", daemon.port);
    let bearer = format!("Bearer {}", daemon.token);
    let mut all = headers(&host, &bearer);
    all.push(("Accept", "text/event-stream"));
    all.push(("Mcp-Session-Id", session));
    if let Some(last_event_id) = last_event_id {
        all.push(("Last-Event-ID", last_event_id));
    }
    let request = http_request_bytes("GET", "/mcp", &all, b"");
    let (reader, _) = open_http_stream(daemon.port, &request, WAIT);
    assert!(
        eventually(WAIT, || streams_opened(daemon) > opened_before),
        "the daemon opened the stream"
    );
    reader
}

/// The next event of a stream: its id and its message (keep-alive comments skipped, but they do
/// not extend the wait: a stream that only keeps alive fails the test).
fn next_event(stream: &mut BufReader<TcpStream>) -> (String, Value) {
    let deadline = std::time::Instant::now() + WAIT;
    let mut id = None;
    loop {
        assert!(
            std::time::Instant::now() < deadline,
            "no event within {WAIT:?}, only keep-alives"
        );
        let mut line = String::new();
        let read = stream
            .read_line(&mut line)
            .expect("an event within the wait");
        assert!(read > 0 && line != "0\r\n", "the stream ended early");
        if let Some(value) = line.strip_prefix("id: ") {
            id = Some(value.trim().to_owned());
        } else if let Some(data) = line.strip_prefix("data: ") {
            let message = serde_json::from_str(data.trim()).expect("a JSON message");
            return (id.expect("every event has an id"), message);
        }
    }
}

/// Changes alpha's tools (adds `tool`) and reads the list_changed it causes on `stream`; its id.
fn change_and_hear(daemon: &Daemon, stream: &mut BufReader<TcpStream>, tool: &str) -> String {
    daemon.call_tool("alpha", "change_tools", json!({"add": tool}));
    let (id, message) = next_event(stream);
    assert_eq!(message["method"], "notifications/tools/list_changed");
    id
}

fn alpha_daemon() -> Daemon {
    Daemon::start(json!({"mcpServers": {"alpha": fault_server(&[])}}))
}

#[test]
fn a_reconnect_gets_what_it_missed() {
    let daemon = alpha_daemon();
    let session = open_session(&daemon);
    let mut first = open_stream(&daemon, &session, None);
    assert_eq!(change_and_hear(&daemon, &mut first, "one"), "n-1");
    assert_eq!(change_and_hear(&daemon, &mut first, "two"), "n-2");

    // The host got n-1 only (say): its reconnect gets n-2 again, and takes the stream over
    // from the connection it replaces, which ends.
    let mut second = open_stream(&daemon, &session, Some("n-1"));
    let (id, message) = next_event(&mut second);
    assert_eq!(id, "n-2");
    assert_eq!(message["method"], "notifications/tools/list_changed");
    let mut rest = String::new();
    first
        .read_to_string(&mut rest)
        .expect("the replaced stream closes rather than stalls");
    // Then it goes on live.
    assert_eq!(change_and_hear(&daemon, &mut second, "three"), "n-3");

    // The host loses the stream and the list changes meanwhile: its reconnect is told, once.
    drop(second);
    daemon.call_tool("alpha", "change_tools", json!({"add": "four"}));
    let mut third = open_stream(&daemon, &session, Some("n-3"));
    let (id, message) = next_event(&mut third);
    assert_eq!(id, "n-4");
    assert_eq!(message["method"], "notifications/tools/list_changed");
    assert_eq!(change_and_hear(&daemon, &mut third, "five"), "n-5");
}

#[test]
fn a_last_event_id_that_cannot_be_resumed_is_refused_with_the_reason() {
    let daemon = alpha_daemon();
    let session = open_session(&daemon);
    let refused = |last_event_id: &str, says: &str| {
        let answer = get(&daemon, &session, &[("Last-Event-ID", last_event_id)]);
        assert_eq!(answer.status, 400, "{last_event_id}: {answer:?}");
        let body = String::from_utf8_lossy(&answer.body);
        assert!(body.contains(says), "{last_event_id}: {body}");
        assert!(body.contains("without Last-Event-ID"), "{body}");
    };
    refused("42", "is not an event id of this session's stream");
    refused("n-7", "was never sent");

    // Past the events held: a change per event until n-1 is gone.
    let mut stream = open_stream(&daemon, &session, None);
    let mut last = String::new();
    for number in 1..=66 {
        last = change_and_hear(&daemon, &mut stream, &format!("tool_{number}"));
    }
    assert_eq!(last, "n-66");
    refused(
        "n-1",
        "the events after n-1 are no longer held (the oldest held is n-3)",
    );
    // After n-2, every later one is held: that reconnect is served all 64, in order (more than
    // the stream's queue holds at once, so none may be dropped for want of room).
    drop(stream);
    let mut resumed = open_stream(&daemon, &session, Some("n-2"));
    for number in 3..=66 {
        let (id, message) = next_event(&mut resumed);
        assert_eq!(id, format!("n-{number}"));
        assert_eq!(message["method"], "notifications/tools/list_changed");
    }
}
