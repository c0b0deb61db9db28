//! `subscriptions/listen` at the `/mcp` gateway for hosts of the stateless revision 2026-07-28
//! (`daemon/src/edge/gateway/listen.rs`): the host is raw HTTP, reading the SSE answer line by
//! line, so nothing hides what the gateway sends. The upstream that changes is
//! `daemon/examples/stateless_server.rs`, whose `grow_tools` adds a tool and announces it to
//! the pool on its own listen stream.
//!
//! Input → test:
//! - `server/discover` advertises `listChanged`; a listen stream is acknowledged first with the
//!   categories accepted (`resourceSubscriptions` not among them) and the request's id as
//!   `subscriptionId`; an upstream's new tool is told as `notifications/tools/list_changed`
//!   carrying that id, and the host's next `tools/list` shows it; a listen without
//!   `notifications` is refused with what would be right:
//!   `a_2026_host_hears_its_tool_list_change_on_subscriptions_listen`
//! - rmcp's 2026 client as the host: another daemon's pool, holding this daemon's gateway as a
//!   `2026-07-28` upstream, opens its own listen stream on it (it does so only for a server that
//!   advertises `listChanged`) and learns the new tool from it, without reconnecting:
//!   `a_pool_of_rmcps_client_learns_a_new_tool_from_the_gateways_listen_stream`

use std::io::{BufRead as _, BufReader};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::{Value, json};
use tool_cli_tests::{
    Daemon, eventually_some, example_bin, http_request_bytes, mcp_answer, open_http_stream,
};

/// Longest wait for any one event.
const WAIT: Duration = Duration::from_secs(30);

/// A 2026-07-28 request's `_meta`.
fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "raw-2026-host", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    })
}

/// The bytes of a 2026 request `method` with `params` (plus `_meta`) and id `id`.
fn request(daemon: &Daemon, id: u32, method: &str, params: Value) -> Vec<u8> {
    let mut params = params;
    params["_meta"] = meta();
    let host = format!("127.0.0.1:{}", daemon.port);
    let auth = format!("Bearer {}", daemon.token);
    let headers = [
        ("Host", host.as_str()),
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("Authorization", auth.as_str()),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", method),
    ];
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    http_request_bytes("POST", "/mcp", &headers, body.to_string().as_bytes())
}

/// One 2026 request answered as one body.
fn post(daemon: &Daemon, method: &str, params: Value) -> Value {
    let answer =
        tool_cli_tests::raw_http_exchange(daemon.port, &request(daemon, 1, method, params))
            .expect("an answer");
    mcp_answer(&answer.body)
}

/// The next JSON-RPC message on `stream` (its next `data:` line).
fn next_message(stream: &mut BufReader<TcpStream>) -> Value {
    loop {
        let mut line = String::new();
        let read = stream
            .read_line(&mut line)
            .expect("a message within the wait");
        assert!(read > 0, "the stream ended early");
        if let Some(data) = line.trim_end().strip_prefix("data: ") {
            return serde_json::from_str(data).unwrap_or_else(|e| panic!("{e}: {data}"));
        }
    }
}

/// A daemon whose pool holds the 2026-only example server as `modern`, ready.
fn modern_daemon() -> Daemon {
    let server = example_bin("stateless_server");
    let daemon = Daemon::start(json!({"mcpServers": {"modern": {"command": server}}}));
    daemon.wait_servers_ready(&["modern"], WAIT);
    daemon
}

#[test]
fn a_2026_host_hears_its_tool_list_change_on_subscriptions_listen() {
    let daemon = modern_daemon();
    let discover = post(&daemon, "server/discover", json!({}));
    let capabilities = &discover["result"]["capabilities"];
    assert_eq!(capabilities["tools"]["listChanged"], true, "{discover:#}");
    assert_eq!(
        capabilities["resources"]["listChanged"], true,
        "{discover:#}"
    );

    let listen = request(
        &daemon,
        41,
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true, "resourcesListChanged": true,
            "resourceSubscriptions": ["era://roots"]}}),
    );
    let (mut stream, event_stream) = open_http_stream(daemon.port, &listen, WAIT);
    assert!(event_stream, "the listen answer is an event stream");
    let acknowledged = next_message(&mut stream);
    assert_eq!(
        acknowledged["method"], "notifications/subscriptions/acknowledged",
        "{acknowledged:#}"
    );
    assert_eq!(
        acknowledged["params"]["notifications"],
        json!({"toolsListChanged": true, "resourcesListChanged": true}),
        "{acknowledged:#}"
    );
    assert_eq!(
        acknowledged["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 41,
        "{acknowledged:#}"
    );

    let grown = daemon.call_tool("modern", "grow_tools", json!({"name": "sprouted"}));
    assert!(grown.get("error").is_none(), "{grown:#}");
    let told = next_message(&mut stream);
    assert_eq!(
        told["method"], "notifications/tools/list_changed",
        "{told:#}"
    );
    assert_eq!(
        told["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 41,
        "{told:#}"
    );
    let listed = post(&daemon, "tools/list", json!({}));
    assert!(
        listed["result"]["tools"]
            .as_array()
            .is_some_and(|tools| tools.iter().any(|tool| tool["name"] == "modern__sprouted")),
        "{listed:#}"
    );

    let refused = post(&daemon, "subscriptions/listen", json!({}));
    assert_eq!(refused["error"]["code"], -32602, "{refused:#}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .is_some_and(|message| message.contains("needs \"notifications\"")),
        "{refused:#}"
    );
}

#[test]
fn a_pool_of_rmcps_client_learns_a_new_tool_from_the_gateways_listen_stream() {
    let upstream = modern_daemon();
    let url = format!("http://127.0.0.1:{}/mcp", upstream.port);
    let authorization = format!("Bearer {}", upstream.token);
    let daemon = Daemon::start(json!({"mcpServers": {
        "gateway": {"url": url, "headers": {"Authorization": authorization},
                    "protocol": "2026-07-28"},
    }}));
    let tools = || {
        daemon
            .call("listTools", json!({"server": "gateway"}))
            .to_string()
    };
    eventually_some(WAIT, || tools().contains("modern__slow_sum").then_some(()))
        .unwrap_or_else(|| panic!("the gateway's tools were never listed: {}", tools()));
    // The pool opens its listen stream before its first listing; a new tool is heard on it.
    let grown = upstream.call_tool("modern", "grow_tools", json!({"name": "relayed"}));
    assert!(grown.get("error").is_none(), "{grown:#}");
    eventually_some(WAIT, || tools().contains("modern__relayed").then_some(()))
        .unwrap_or_else(|| panic!("the new tool never reached the pool: {}", tools()));
}
