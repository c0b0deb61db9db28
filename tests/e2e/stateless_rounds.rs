//! Retries of the stateless revision's multi-round-trip flow sent to the gateway
//! (`daemon/src/edge/gateway/input_rounds.rs`): the gateway does not yet ask a 2026-07-28 host
//! a server's question through an `input_required` result, so it holds no call a retry could
//! continue; a request carrying `inputResponses`/`requestState` is refused with what would be
//! right, and never runs the call again as if new (which would repeat its side effects).
//!
//! Input → test:
//! - a 2026 `tools/call` with `inputResponses` and a `requestState` the gateway never gave,
//!   and one with a `requestState` but no `inputResponses`: `-32602` saying why, and the
//!   upstream never receives the call; the same call without them runs once:
//!   `a_2026_retry_the_gateway_holds_no_call_for_is_refused_and_not_run`

use std::time::Duration;

use serde_json::{Value, json};
use tool_cli_tests::{Daemon, count_recorded, fault_server_recording};

/// Longest wait for any one event.
const WAIT: Duration = Duration::from_secs(30);

/// A 2026-07-28 `tools/call` of the fault server's `echo` with `extra` merged into its params.
fn echo_2026(id: u64, extra: Value) -> Value {
    let mut params = json!({"name": "fault__echo", "arguments": {"nonce": "n1"}, "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
    }});
    for (key, value) in extra.as_object().expect("an object") {
        params[key] = value.clone();
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
}

/// The JSON-RPC error of a plain JSON answer.
fn error_of(daemon: &Daemon, body: &Value) -> Value {
    let headers = [
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
    ];
    let response = daemon.post_mcp(&headers, body);
    assert_eq!(response.status, 200);
    let answer: Value = serde_json::from_slice(&response.body).expect("a JSON answer");
    assert_eq!(answer["id"], body["id"], "{answer}");
    answer["error"].clone()
}

#[test]
fn a_2026_retry_the_gateway_holds_no_call_for_is_refused_and_not_run() {
    let daemon = Daemon::start_with_dir(
        |dir| json!({"mcpServers": {"fault": fault_server_recording(&dir.join("record.jsonl"), &[])}}),
    );
    daemon.wait_servers_ready(&["fault"], WAIT);
    let record = daemon.dir().join("record.jsonl");

    let unknown = error_of(
        &daemon,
        &echo_2026(
            1,
            json!({"inputResponses": {"q": {"action": "accept", "content": {}}},
                   "requestState": "never-given"}),
        ),
    );
    assert_eq!(unknown["code"], -32602, "{unknown}");
    let message = unknown["message"].as_str().unwrap();
    assert!(
        message.contains("requestState is not one this gateway holds")
            && message.contains("without inputResponses and requestState"),
        "{unknown}"
    );
    let half = error_of(
        &daemon,
        &echo_2026(2, json!({"requestState": "never-given"})),
    );
    assert_eq!(half["code"], -32602, "{half}");
    assert!(
        half["message"]
            .as_str()
            .unwrap()
            .contains("no inputResponses"),
        "{half}"
    );
    assert_eq!(count_recorded(&record, "tools/call", Some("echo")), 0);

    // The same call as a first request runs, once.
    let headers = [
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
    ];
    let answered = daemon.post_mcp(&headers, &echo_2026(3, json!({})));
    assert_eq!(answered.status, 200);
    let body = String::from_utf8_lossy(&answered.body);
    assert!(body.contains("\"resultType\":\"complete\""), "{body}");
    assert_eq!(count_recorded(&record, "tools/call", Some("echo")), 1);
}
