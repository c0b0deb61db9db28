//! The call stream to hosts of the stateless revision 2026-07-28
//! (`daemon/src/edge/gateway/stateless_stream.rs`): a 2026 host has no session and no
//! standalone stream, so what the upstream server says while its call runs comes on the SSE
//! answer to the call's POST, before the result, through the same pipeline as a 2025
//! session's streamed call. Raw HTTP against the conformance upstream
//! (`tests/fixtures/conformance_server.py`, the official Python SDK), so the order of the
//! stream's events is read as sent.
//!
//! Input → test:
//! - a call with a `progressToken`: each progress step under the host's token, in order,
//!   before the result (`resultType: "complete"`); a call naming
//!   `io.modelcontextprotocol/logLevel`: the server's log messages at or above it, before the
//!   result; the same call naming no level gets none (SEP-2575), a level above the messages'
//!   gets none, and a level MCP does not have is `-32602` naming the levels; a host that does
//!   not accept SSE gets the plain JSON result:
//!   `a_2026_host_gets_progress_and_asked_for_logs_on_its_calls_stream`
//! - a host that drops the stream mid-call: the call is cancelled, one cancelled trace line:
//!   `a_2026_host_dropping_its_calls_stream_cancels_the_call`

use std::io::{BufRead as _, BufReader};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::{Value, json};
use tool_cli_tests::{
    Daemon, count_recorded, eventually_some, fault_server_recording, http_request_bytes,
    open_http_stream, repo_root,
};

/// Longest wait for any one event.
const WAIT: Duration = Duration::from_secs(30);

/// A daemon with the conformance upstream, tracing to a file in its dir, once it is ready.
fn conformance_daemon() -> Daemon {
    let daemon = Daemon::start_with_dir(|dir| {
        json!({
            "mcpServers": {"conformance": {
                "command": tool_cli_tests::peer_python(),
                "args": [repo_root().join("tests/fixtures/conformance_server.py")],
            }},
            "traces": {"path": dir.join("traces.jsonl")},
        })
    });
    eventually_some(WAIT, || {
        let servers = daemon.call("listServers", Value::Null);
        servers["servers"]
            .as_array()
            .and_then(|servers| {
                servers
                    .iter()
                    .find(|server| server["name"] == "conformance")
            })
            .filter(|server| server["state"] == "ready")
            .map(|_| ())
    })
    .expect("the conformance server became ready");
    daemon
}

/// A 2026-07-28 `tools/call` of `tool` with `extra` added to its `_meta`.
fn call_2026(id: u64, tool: &str, extra: Value) -> Value {
    let mut meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    for (key, value) in extra.as_object().expect("an object") {
        meta[key] = value.clone();
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": tool, "arguments": {}, "_meta": meta}})
}

/// POSTs `body` as a 2026 host does (no session; `accept` as given); the open answer,
/// positioned at its body, and whether it is an event stream.
fn post_2026(daemon: &Daemon, accept: &str, body: &Value) -> (BufReader<TcpStream>, bool) {
    let bearer = format!("Bearer {}", daemon.token);
    let host = format!("127.0.0.1:{}", daemon.port);
    let method = body["method"].as_str().unwrap().to_owned();
    let headers = [
        ("Host", host.as_str()),
        ("Content-Type", "application/json"),
        ("Accept", accept),
        ("Authorization", bearer.as_str()),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", method.as_str()),
    ];
    let request = http_request_bytes("POST", "/mcp", &headers, body.to_string().as_bytes());
    open_http_stream(daemon.port, &request, WAIT)
}

/// The JSON-RPC messages of an SSE answer, in order, up to and including the response.
fn stream_messages(mut reader: BufReader<TcpStream>) -> Vec<Value> {
    let mut messages = Vec::new();
    loop {
        let mut line = String::new();
        let read = reader.read_line(&mut line).expect("read the stream");
        assert!(
            read > 0,
            "the stream ended before the answer: {messages:#?}"
        );
        let Some(data) = line.trim_end().strip_prefix("data:") else {
            continue;
        };
        let message: Value = serde_json::from_str(data.trim()).expect("a JSON event");
        let answered = message.get("id").is_some() && message.get("method").is_none();
        messages.push(message);
        if answered {
            return messages;
        }
    }
}

/// The messages of a streamed 2026 call, checked to end with its one answer.
fn streamed_call(daemon: &Daemon, body: &Value) -> Vec<Value> {
    let (reader, event_stream) = post_2026(daemon, "application/json, text/event-stream", body);
    assert!(
        event_stream,
        "a 2026 call accepting SSE is answered with a stream"
    );
    let messages = stream_messages(reader);
    assert_eq!(messages.last().unwrap()["id"], body["id"], "{messages:#?}");
    messages
}

fn of_method<'a>(messages: &'a [Value], method: &str) -> Vec<&'a Value> {
    messages
        .iter()
        .filter(|message| message["method"] == method)
        .map(|message| &message["params"])
        .collect()
}

#[test]
fn a_2026_host_gets_progress_and_asked_for_logs_on_its_calls_stream() {
    let daemon = conformance_daemon();

    // Progress, under the host's own token, every step in order, then the result.
    let messages = streamed_call(
        &daemon,
        &call_2026(
            1,
            "conformance__test_tool_with_progress",
            json!({"progressToken": "host-7"}),
        ),
    );
    let progress = of_method(&messages, "notifications/progress");
    let steps: Vec<f64> = progress
        .iter()
        .map(|params| {
            assert_eq!(params["progressToken"], "host-7", "{messages:#?}");
            params["progress"].as_f64().unwrap()
        })
        .collect();
    assert_eq!(steps, [0.0, 50.0, 100.0], "{messages:#?}");
    let answer = messages.last().unwrap();
    assert_eq!(answer["result"]["resultType"], "complete", "{answer}");
    assert!(
        answer["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("progress executed successfully"),
        "{answer}"
    );

    // Log messages, only for a request that names its least level (SEP-2575).
    let logging = |id: u64, extra: Value| {
        streamed_call(
            &daemon,
            &call_2026(id, "conformance__test_tool_with_logging", extra),
        )
    };
    let messages = logging(2, json!({"io.modelcontextprotocol/logLevel": "info"}));
    let logs: Vec<&str> = of_method(&messages, "notifications/message")
        .iter()
        .map(|params| {
            assert_eq!(params["level"], "info", "{messages:#?}");
            params["data"].as_str().unwrap()
        })
        .collect();
    assert_eq!(
        logs,
        [
            "Tool execution started",
            "Tool processing data",
            "Tool execution completed"
        ],
        "{messages:#?}"
    );
    assert_eq!(messages.last().unwrap()["result"]["resultType"], "complete");
    for (id, extra) in [
        (3, json!({})),
        (4, json!({"io.modelcontextprotocol/logLevel": "error"})),
    ] {
        let messages = logging(id, extra);
        assert_eq!(messages.len(), 1, "no log messages: {messages:#?}");
        assert_eq!(messages[0]["result"]["resultType"], "complete");
    }
    let (reader, _) = post_2026(
        &daemon,
        "application/json, text/event-stream",
        &call_2026(
            5,
            "conformance__test_tool_with_logging",
            json!({"io.modelcontextprotocol/logLevel": "verbose"}),
        ),
    );
    let refused = tool_cli_tests::mcp_answer(&read_rest(reader));
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("debug, info"),
        "{refused}"
    );

    // A host that takes JSON only gets the plain result.
    let (reader, event_stream) = post_2026(
        &daemon,
        "application/json",
        &call_2026(
            6,
            "conformance__test_tool_with_progress",
            json!({"progressToken": 6}),
        ),
    );
    assert!(!event_stream);
    let answer: Value = serde_json::from_slice(&read_rest(reader)).expect("a JSON answer");
    assert_eq!(answer["id"], 6);
    assert_eq!(answer["result"]["resultType"], "complete", "{answer}");
}

/// The rest of an answer's body (the connection closes after it).
fn read_rest(mut reader: BufReader<TcpStream>) -> Vec<u8> {
    let mut body = Vec::new();
    std::io::Read::read_to_end(&mut reader, &mut body).expect("read the answer");
    body
}

#[test]
fn a_2026_host_dropping_its_calls_stream_cancels_the_call() {
    let daemon = Daemon::start_with_dir(|dir| {
        json!({
            "mcpServers": {"fault": fault_server_recording(&dir.join("record.jsonl"), &[])},
            "traces": {"path": dir.join("traces.jsonl")},
        })
    });
    let record = daemon.dir().join("record.jsonl");
    let mut sleep = call_2026(1, "fault__sleep", json!({"progressToken": 1}));
    sleep["params"]["arguments"] = json!({"ms": 600_000});
    let (reader, event_stream) = post_2026(&daemon, "application/json, text/event-stream", &sleep);
    assert!(event_stream);
    eventually_some(WAIT, || {
        (count_recorded(&record, "tools/call", Some("sleep")) == 1).then_some(())
    })
    .expect("the server received the call");
    drop(reader);
    eventually_some(WAIT, || {
        (count_recorded(&record, "notifications/cancelled", None) == 1).then_some(())
    })
    .expect("the upstream call was cancelled");
    let line = eventually_some(WAIT, || {
        let traces = std::fs::read_to_string(daemon.dir().join("traces.jsonl")).ok()?;
        traces
            .lines()
            .map(|line| serde_json::from_str::<Value>(line).expect("a JSON line"))
            .find(|line| line["tool"] == "sleep")
    })
    .expect("the dropped call was traced");
    assert_eq!(line["error"]["kind"], "cancelled", "{line}");
}
