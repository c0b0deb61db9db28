//! What a 2026-07-28 server does beyond answering: its changes reach the pool (a stateless
//! server notifies only on a `subscriptions/listen` stream, which the pool opens for what the
//! server announces, `daemon/src/pool/connection/listen.rs`), and its prompts and resources may
//! ask for input first (`input_required`, answered by `connection/input_rounds.rs`). The server
//! is `daemon/examples/stateless_server.rs`, whose `grow_tools` adds a tool and announces it on
//! every open stream, and whose prompt and resources ask before answering.
//!
//! Input → test:
//! - a tool added on a 2026-only server: the server had one listener to tell (the pool's
//!   stream), a 2025 host's standalone gateway stream carries `tools/list_changed`, the
//!   catalog lists the new tool, and the server was not reconnected for it:
//!   `a_stateless_servers_new_tool_reaches_the_catalog_and_the_hosts`
//! - a 2025 host subscribes to a 2026-only server's resource through the gateway: the URI joins
//!   the pool's listen stream (the server tells exactly one stream of that URI and none of
//!   another), the host's stream carries `notifications/resources/updated`, and after its
//!   unsubscribe the server has no stream to tell:
//!   `a_hosts_resource_subscription_reaches_a_stateless_server`
//! - a prompt asking for an elicitation (declined, as the config says), a resource asking for
//!   the roots (the config's), and a resource asking at every round (refused once the rounds
//!   run out, naming what it asked): `prompts_and_resources_that_ask_for_input_are_answered`

use std::io::{BufRead as _, BufReader, Write as _};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::{Value, json};
use tool_cli_tests::{Daemon, eventually, example_bin, http_request_bytes};

/// Longest wait for any one event.
const WAIT: Duration = Duration::from_secs(60);

pub(crate) fn health_of(daemon: &Daemon, name: &str) -> Value {
    daemon.call("health", Value::Null)["servers"]
        .as_array()
        .expect("a health list")
        .iter()
        .find(|server| server["name"] == name)
        .cloned()
        .unwrap_or_else(|| panic!("{name} has no health entry"))
}

/// Opens `session`'s standalone stream on `/mcp`; the connection, its head read.
pub(crate) fn open_stream(daemon: &Daemon, session: &str) -> BufReader<TcpStream> {
    let host = format!("127.0.0.1:{}", daemon.port);
    let bearer = format!("Bearer {}", daemon.token);
    let headers = [
        ("Host", host.as_str()),
        ("Authorization", bearer.as_str()),
        ("Accept", "text/event-stream"),
        ("Mcp-Session-Id", session),
    ];
    let mut stream = TcpStream::connect(("127.0.0.1", daemon.port)).expect("connect");
    stream.set_read_timeout(Some(WAIT)).expect("a read timeout");
    stream
        .write_all(&http_request_bytes("GET", "/mcp", &headers, b""))
        .expect("the GET is sent");
    let mut reader = BufReader::new(stream);
    let mut status = String::new();
    reader.read_line(&mut status).expect("a status line");
    assert!(status.contains(" 200 "), "{status}");
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).expect("a header line");
        if line == "\r\n" {
            return reader;
        }
    }
}

#[test]
fn a_stateless_servers_new_tool_reaches_the_catalog_and_the_hosts() {
    let daemon = Daemon::start(json!({"mcpServers": {
        "modern": {"command": example_bin("stateless_server")},
    }}));
    assert!(
        eventually(WAIT, || health_of(&daemon, "modern")["state"] == "ready"),
        "modern never became ready: {}",
        health_of(&daemon, "modern")
    );
    let restarts = health_of(&daemon, "modern")["restarts"].clone();
    let listed = daemon
        .call("listTools", json!({"server": "modern"}))
        .to_string();
    assert!(listed.contains("\"grow_tools\""), "{listed}");
    assert!(!listed.contains("\"sprouted\""), "{listed}");

    // A 2025 host's standalone stream, open before the change.
    let session = daemon.open_mcp_session();
    let mut stream = open_stream(&daemon, &session);
    assert!(
        eventually(WAIT, || daemon
            .stderr()
            .contains("gateway standalone stream opened")),
        "the stream never opened"
    );

    let grown = daemon.call_tool("modern", "grow_tools", json!({"name": "sprouted"}));
    // The pool's listen stream is the one the server had to tell.
    assert_eq!(grown["structuredContent"]["told"], 1, "{grown}");

    // The host is told; by then the catalog has the tool (the notice follows the catalog).
    let mut seen = String::new();
    while !seen.contains("notifications/tools/list_changed") {
        let mut line = String::new();
        let read = stream
            .read_line(&mut line)
            .expect("a notice within the wait");
        assert!(read > 0, "the stream ended early: {seen}");
        seen.push_str(&line);
    }
    let listed = daemon
        .call("listTools", json!({"server": "modern"}))
        .to_string();
    assert!(listed.contains("\"sprouted\""), "{listed}");
    // Heard on the live connection: nothing reconnected to read it.
    let health = health_of(&daemon, "modern");
    assert_eq!(health["restarts"], restarts, "{health}");
    assert_eq!(health["state"], "ready", "{health}");
}

#[test]
fn prompts_and_resources_that_ask_for_input_are_answered() {
    let daemon = Daemon::start(json!({"mcpServers": {
        "modern": {"command": example_bin("stateless_server"), "roots": ["/srv/era"]},
    }}));
    assert!(
        eventually(WAIT, || health_of(&daemon, "modern")["state"] == "ready"),
        "modern never became ready: {}",
        health_of(&daemon, "modern")
    );
    // The elicitation is declined (no `elicitation: "ask"`), and the prompt is rendered with
    // that answer in the request sent again.
    let prompt = daemon.call("getPrompt", json!({"server": "modern", "name": "ask_name"}));
    let text = prompt["messages"][0]["content"]["text"]
        .as_str()
        .unwrap_or_default();
    assert_eq!(
        text, "greet the user (asked their name: decline)",
        "{prompt}"
    );
    // The roots asked for are the config's.
    let read = daemon.call(
        "readResource",
        json!({"server": "modern", "uri": "era://roots"}),
    );
    let contents = read["contents"][0]["text"].as_str().unwrap_or_default();
    assert!(contents.contains("/srv/era"), "{read}");
    assert_eq!(read["contents"][0]["uri"], "era://roots", "{read}");
    // One that keeps asking is refused, not passed on as if it were the resource.
    let endless = daemon.call_err(
        "readResource",
        json!({"server": "modern", "uri": "era://forever"}),
    );
    assert!(endless.message.contains("still asking"), "{endless:?}");
    assert!(endless.message.contains("roots/list"), "{endless:?}");
    // The connection served on.
    let sum = daemon.call_tool("modern", "add", json!({"a": 1, "b": 2}));
    assert_eq!(sum["structuredContent"]["sum"], 3.0, "{sum}");
}

/// One JSON-RPC request to `/mcp` in `session`; its answer.
pub(crate) fn mcp_request(daemon: &Daemon, session: &str, method: &str, params: Value) -> Value {
    let answer = daemon.post_mcp(
        &[("Mcp-Session-Id", session)],
        &json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params}),
    );
    tool_cli_tests::mcp_answer(&answer.body)
}

#[test]
fn a_hosts_resource_subscription_reaches_a_stateless_server() {
    let daemon = Daemon::start(json!({"mcpServers": {
        "modern": {"command": example_bin("stateless_server"), "roots": ["/srv/era"]},
    }}));
    assert!(
        eventually(WAIT, || health_of(&daemon, "modern")["state"] == "ready"),
        "modern never became ready: {}",
        health_of(&daemon, "modern")
    );
    let touch = |uri: &str| {
        let touched = daemon.call_tool("modern", "touch_resource", json!({"uri": uri}));
        touched["structuredContent"]["told"].clone()
    };
    // Nobody has subscribed: no stream names the URI.
    assert_eq!(touch("era://roots"), 0);

    let session = daemon.open_mcp_session();
    let subscribed = mcp_request(
        &daemon,
        &session,
        "resources/subscribe",
        json!({"uri": "era://roots"}),
    );
    assert_eq!(subscribed["result"], json!({}), "{subscribed}");
    let mut stream = open_stream(&daemon, &session);
    assert!(
        eventually(WAIT, || daemon
            .stderr()
            .contains("gateway standalone stream opened")),
        "the stream never opened"
    );
    // The pool's stream now names the URI (and only it). rmcp's server acknowledges a stream
    // before it hands it to the handler that keeps it, so the server may not hold it yet.
    assert!(
        eventually(WAIT, || touch("era://roots") == 1),
        "the server never had a stream subscribed to era://roots"
    );
    assert_eq!(touch("era://forever"), 0);
    let mut seen = String::new();
    while !seen.contains("notifications/resources/updated") {
        let mut line = String::new();
        let read = stream
            .read_line(&mut line)
            .expect("a notice within the wait");
        assert!(read > 0, "the stream ended early: {seen}");
        seen.push_str(&line);
    }
    assert!(seen.contains("era://roots"), "{seen}");

    let unsubscribed = mcp_request(
        &daemon,
        &session,
        "resources/unsubscribe",
        json!({"uri": "era://roots"}),
    );
    assert_eq!(unsubscribed["result"], json!({}), "{unsubscribed}");
    // The old stream's cancellation reaches the server after the answer.
    assert!(
        eventually(WAIT, || touch("era://roots") == 0),
        "a stream subscribed to era://roots outlived the unsubscribe"
    );
    // The tool list's changes are still heard, on the stream that replaced it.
    let grown = daemon.call_tool("modern", "grow_tools", json!({"name": "later"}));
    assert_eq!(grown["structuredContent"]["told"], 1, "{grown}");
    let listed = daemon
        .call("listTools", json!({"server": "modern"}))
        .to_string();
    assert!(
        eventually(WAIT, || daemon
            .call("listTools", json!({"server": "modern"}))
            .to_string()
            .contains("\"later\"")),
        "{listed}"
    );
}
