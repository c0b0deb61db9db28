//! A server's question during a 2026-07-28 host's call, asked through the stateless revision's
//! multi-round-trip results (`daemon/src/edge/gateway/input_rounds.rs`, `input_rounds/held.rs`):
//! the call's answer is `input_required`, the call is held, and the host's retry with
//! `inputResponses` and the `requestState` continues it. A retry no call is held for is refused
//! with what would be right, and never runs the call again as if new (which would repeat its
//! side effects).
//!
//! Input → test:
//! - a host declaring `elicitation` calls the asking server's `ask_many(1)`: the answer is
//!   `input_required` with the server's `elicitation/create`; the retry with the accepted answer
//!   reaches the server (`accept=1`) and the result comes on the retry's response; a host that
//!   declared no elicitation gets the old decline; the spent `requestState` is refused:
//!   `a_2026_host_answers_a_servers_question_by_retrying_its_call`
//! - a 2026 `tools/call` with `inputResponses` and a `requestState` the gateway never gave,
//!   and one with a `requestState` but no `inputResponses`: `-32602` saying why, and the
//!   upstream never receives the call; the same call without them runs once:
//!   `a_2026_retry_the_gateway_holds_no_call_for_is_refused_and_not_run`

use std::time::Duration;

use serde_json::{Value, json};
use tool_cli_tests::{Daemon, count_recorded, fault_server_recording, peer_python, repo_root};

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

/// The JSON messages of an SSE (or plain JSON) answer, in order.
fn messages_of(body: &[u8]) -> Vec<Value> {
    let text = String::from_utf8_lossy(body);
    if let Ok(one) = serde_json::from_str::<Value>(&text) {
        return vec![one];
    }
    text.lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .map(|data| serde_json::from_str(data).expect("a JSON message"))
        .collect()
}

/// A 2026-07-28 `tools/call` of the asking server's `ask_many(1)` from a host declaring
/// `capabilities`, with `extra` merged into its params; the last message of its answer.
fn ask_2026(daemon: &Daemon, id: u64, capabilities: Value, extra: Value) -> Value {
    let mut params = json!({"name": "asking__ask_many", "arguments": {"count": 1}, "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    }});
    for (key, value) in extra.as_object().expect("an object") {
        params[key] = value.clone();
    }
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params});
    let headers = [
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
    ];
    let response = daemon.post_mcp(&headers, &body);
    assert_eq!(response.status, 200);
    let last = messages_of(&response.body).pop().expect("an answer");
    assert_eq!(last["id"], id, "{last}");
    last
}

#[test]
fn a_2026_host_answers_a_servers_question_by_retrying_its_call() {
    let daemon = Daemon::start_with_dir(|_| {
        json!({"mcpServers": {"asking": {
            "command": peer_python(),
            "args": [repo_root().join("tests/fixtures/asking_server.py")],
            "elicitation": "ask",
        }}})
    });
    daemon.wait_servers_ready(&["asking"], WAIT);

    let asked = ask_2026(&daemon, 1, json!({"elicitation": {}}), json!({}));
    let result = &asked["result"];
    assert_eq!(result["resultType"], "input_required", "{asked}");
    let requests = result["inputRequests"].as_object().expect("inputRequests");
    assert_eq!(requests.len(), 1, "{asked}");
    let (key, question) = requests.iter().next().unwrap();
    assert_eq!(question["method"], "elicitation/create", "{asked}");
    assert!(
        question["params"]["message"]
            .as_str()
            .unwrap()
            .contains("your name?"),
        "{asked}"
    );
    let state = result["requestState"]
        .as_str()
        .expect("requestState")
        .to_owned();

    let retry = json!({
        "inputResponses": {key.clone(): {"action": "accept", "content": {"name": "Ada"}}},
        "requestState": state,
    });
    let answered = ask_2026(&daemon, 2, json!({"elicitation": {}}), retry.clone());
    assert_eq!(answered["result"]["resultType"], "complete", "{answered}");
    let text = answered["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert_eq!(text, "accept=1 decline=0 cancel=0", "{answered}");

    // One answer per request: the spent state is refused, not run again.
    let spent = ask_2026(&daemon, 3, json!({"elicitation": {}}), retry);
    assert_eq!(spent["error"]["code"], -32602, "{spent}");

    // A host that declared no elicitation gets the old decline.
    let declined = ask_2026(&daemon, 4, json!({}), json!({}));
    assert_eq!(declined["result"]["resultType"], "complete", "{declined}");
    let text = declined["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert_eq!(text, "accept=0 decline=1 cancel=0", "{declined}");
}
