//! Attacks on the newer surfaces, after `attacks.rs` and `security.rs`:
//!
//! - sessions: a scoped token opening sessions in a loop could evict the owner's (the store
//!   evicted the least recently used of all tokens), and a task or labels as large as a request
//!   body were kept in every one of 1024 sessions: `a_token_flooding_sessions_evicts_only_its_own`,
//!   `an_oversized_session_task_or_labels_is_refused_with_the_limit`;
//! - a hostile server (`tests/fixtures/hostile_server.py`): tool names carrying ANSI escapes,
//!   newlines, quotes and path separators (the terminal, the `/metrics` page), input schemas that
//!   are a string or an array (described without a misleading example, refused with a clear
//!   error), a self-referencing schema, replies to request ids never sent, and a flood of
//!   `notifications/tools/list_changed`: `a_hostile_server_cannot_forge_output_or_break_calls`;
//! - `answerElicitation` against a hostile server's question of 5,000 fields, with a forged
//!   elicitation id and a field name of 100 KB: each refusal quoted every field (or the whole
//!   forged text); now a bounded list and cut names:
//!   `elicitation_refusals_stay_small_whatever_the_server_asked_or_the_caller_forged`;
//! - `callChain` bindings: each `{"$from", "pointer"}` (30 bytes) copied a whole earlier result,
//!   so one request of many bindings to a 1 MB result built arguments of any size (memory
//!   exhaustion from any token); now a step's bound values are held to 16 MiB and the step is
//!   refused before it reaches the server: `chain_bindings_cannot_multiply_a_result_without_bound`.

use serde_json::{Value, json};
use tool_cli_protocol::ErrorData;
use tool_cli_protocol::methods::{MintTokenResult, name};
use tool_cli_tests::{
    Daemon, count_recorded, error_data, fault_server, fault_server_recording, hostile_fixture,
    scratch,
};

/// `openSession` requests for `count` fresh sessions of `token`, sent in batches of 100 (the
/// daemon's batch limit).
fn open_sessions(daemon: &Daemon, token: &str, count: usize) {
    let auth = format!("Bearer {token}");
    for start in (0..count).step_by(100) {
        let batch: Vec<Value> = (start..count.min(start + 100))
            .map(|n| {
                json!({"jsonrpc": "2.0", "id": n, "method": "openSession",
                    "params": {"sessionId": format!("flood-{n}")}})
            })
            .collect();
        let body = serde_json::to_vec(&batch).unwrap();
        let (status, answer) = daemon.raw_post(&[("Authorization", auth.as_str())], &body);
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&answer));
        let answers: Vec<Value> = serde_json::from_slice(&answer).unwrap();
        assert!(
            answers.iter().all(|answer| answer["result"].is_object()),
            "{answers:?}"
        );
    }
}

fn session_ids(daemon: &Daemon, token: &str) -> Vec<String> {
    let listed = daemon
        .rpc_as(token, "listSessions", None)
        .expect("listSessions");
    listed["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|session| session["sessionId"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn a_token_flooding_sessions_evicts_only_its_own() {
    let daemon = Daemon::start(json!({"mcpServers": {"alpha": fault_server(&[])}}));
    daemon.call(
        "openSession",
        json!({"sessionId": "owner-work", "task": "keep my guards"}),
    );
    let minted: MintTokenResult =
        serde_json::from_value(daemon.call(name::MINT_TOKEN, json!({"servers": ["alpha"]})))
            .unwrap();

    // More sessions than the store holds (1024), all from the scoped token.
    open_sessions(&daemon, &minted.token, 1100);

    let summary = daemon.call("sessionSummary", json!({"sessionId": "owner-work"}));
    assert_eq!(summary["task"], "keep my guards", "{summary}");
    let flooded = session_ids(&daemon, &minted.token);
    assert_eq!(flooded.len(), 1023, "the flooder's own oldest made room");
    // The 77 evicted were all of the first batch (its requests may run in any order).
    for n in 100..1100 {
        assert!(
            flooded.contains(&format!("flood-{n}")),
            "flood-{n} was evicted"
        );
    }
    assert_eq!(session_ids(&daemon, &daemon.token), ["owner-work"]);
}

#[test]
fn an_oversized_session_task_or_labels_is_refused_with_the_limit() {
    let daemon = Daemon::start(json!({"mcpServers": {"alpha": fault_server(&[])}}));
    let error = daemon.call_err(
        "openSession",
        json!({"sessionId": "big", "task": "x".repeat(3 * 1024 * 1024)}),
    );
    assert_eq!(error.code, tool_cli_protocol::code::INVALID_PARAMS);
    assert!(
        error.message.contains("task is 3145728 bytes")
            && error.message.contains("at most 16384 bytes"),
        "{}",
        error.message
    );
    let labels: Vec<String> = (0..33).map(|n| format!("l{n}")).collect();
    let error = daemon.call_err("openSession", json!({"labels": labels}));
    assert!(
        error.message.contains("at most 32 are accepted"),
        "{}",
        error.message
    );
    let error = daemon.call_err("openSession", json!({"labels": ["y".repeat(300)]}));
    assert!(
        error.message.contains("at most 256 bytes"),
        "{}",
        error.message
    );
    // Nothing was opened; within the limits it is.
    assert!(session_ids(&daemon, &daemon.token).is_empty());
    daemon.call(
        "openSession",
        json!({"sessionId": "big", "task": "x".repeat(16 * 1024), "labels": ["a"]}),
    );
    assert_eq!(session_ids(&daemon, &daemon.token), ["big"]);
}

const ANSI_TOOL: &str = "ansi_\u{1b}[31mred\u{1b}[0m";
const FORGING_TOOL: &str = "quote\"} 1\nfake_metric{server=\"x";

fn has_raw_control(text: &str) -> bool {
    text.chars().any(|c| c.is_control() && c != '\n')
}

#[test]
fn a_hostile_server_cannot_forge_output_or_break_calls() {
    let daemon = Daemon::start(json!({"mcpServers": {"hostile": hostile_fixture(&[])}}));

    // Every hostile name is callable by its exact name, and the answers come through although
    // the server first replies to ids never sent.
    for tool in [ANSI_TOOL, FORGING_TOOL, "../../etc/passwd", "back\\slash"] {
        let result = daemon.call_tool("hostile", tool, json!({}));
        assert_eq!(
            tool_cli_tests::text_content(&result),
            format!("called {tool}")
        );
    }

    // The listing on a terminal-bound pipe: no raw control character, no forged line.
    let output = daemon.run_client(&["hostile"], &[]);
    assert!(output.status.success());
    let listing = String::from_utf8(output.stdout).unwrap();
    assert!(!has_raw_control(&listing), "{listing:?}");
    assert!(listing.contains("ansi_^[[31mred^[[0m"), "{listing}");
    assert!(
        listing.contains("quote\"} 1^Jfake_metric"),
        "the newline is shown, not obeyed: {listing}"
    );
    assert!(!listing.lines().any(|line| line.starts_with("fake_metric")));

    // The metrics page: the name is one escaped label value, no sample of its own.
    let host = format!("127.0.0.1:{}", daemon.port);
    let auth = format!("Bearer {}", daemon.token);
    let page = tool_cli_tests::raw_http_exchange(
        daemon.port,
        &tool_cli_tests::http_request_bytes(
            "GET",
            "/metrics",
            &[("Host", host.as_str()), ("Authorization", auth.as_str())],
            b"",
        ),
    )
    .expect("GET /metrics");
    let page = String::from_utf8(page.body).unwrap();
    assert!(
        page.contains(
            r#"tool_cli_tool_calls_total{server="hostile",tool="quote\"} 1\nfake_metric{server=\"x"} 1"#
        ),
        "{page}"
    );
    assert!(!page.lines().any(|line| line.starts_with("fake_metric")));

    // Input schemas that are not schemas: described without an example, refused by kind.
    for (tool, kind) in [("not_an_object", "a string"), ("array_schema", "an array")] {
        let output = daemon.run_client(&["hostile", tool], &[]);
        let text = String::from_utf8_lossy(&output.stdout);
        assert!(
            text.contains(&format!(
                "Parameters: unknown: its inputSchema is {kind}, not a JSON Schema object"
            )),
            "{text}"
        );
        assert!(!text.contains("Example"), "{text}");
        let error = daemon.call_err(
            "callTool",
            json!({"server": "hostile", "tool": tool, "arguments": {}}),
        );
        assert!(
            matches!(error_data(&error), ErrorData::InvalidSchema { .. }),
            "{error:?}"
        );
        assert!(
            error.message.contains("is not a valid JSON Schema"),
            "{}",
            error.message
        );
    }
    // A schema referring to itself is followed as deep as the arguments go.
    let error = daemon.call_err(
        "callTool",
        json!({"server": "hostile", "tool": "self_ref",
            "arguments": {"node": {"node": {"node": 1}}}}),
    );
    match error_data(&error) {
        ErrorData::InvalidArguments { errors, .. } => {
            assert_eq!(errors[0].path, "/node/node/node")
        }
        other => panic!("expected invalidArguments, got {other:?}"),
    }

    // A flood of list_changed notifications: the call is answered and the server keeps serving
    // the same catalog.
    let result = daemon.call_tool("hostile", "flood", json!({"count": 5000}));
    assert_eq!(tool_cli_tests::text_content(&result), "flooded");
    let result = daemon.call_tool("hostile", "echo", json!({"text": "still here"}));
    assert_eq!(tool_cli_tests::text_content(&result), "still here");
    let tools = daemon.call("listTools", json!({"server": "hostile"}));
    assert_eq!(tools["tools"].as_array().unwrap().len(), 11, "{tools}");
}

#[test]
fn elicitation_refusals_stay_small_whatever_the_server_asked_or_the_caller_forged() {
    let mut server = hostile_fixture(&[]);
    server["elicitation"] = json!("ask");
    let daemon = Daemon::start(json!({"mcpServers": {"hostile": server}}));
    std::thread::scope(|scope| {
        let call = scope.spawn(|| {
            daemon.call(
                "callTool",
                json!({"server": "hostile", "tool": "ask", "arguments": {"fields": 5000},
                    "progressId": "asked"}),
            )
        });
        // Wait for the question.
        let mut after = 0;
        let question = loop {
            let page = daemon.call(
                "callEvents",
                json!({"progressId": "asked", "after": after, "waitMs": 20000}),
            );
            let events = page["events"].as_array().unwrap();
            if let Some(event) = events.iter().find(|event| event["type"] == "elicitation") {
                break event.clone();
            }
            if let Some(last) = events.last() {
                after = last["seq"].as_u64().unwrap();
            }
            assert_eq!(page["done"], false, "the call ended without asking");
        };
        let id = question["elicitationId"].as_str().unwrap().to_owned();
        let properties = question["requestedSchema"]["properties"]
            .as_object()
            .unwrap();
        assert_eq!(properties.len(), 5000, "the question is relayed whole");

        let answer = |elicitation_id: &str, action: &str, content: Option<Value>| {
            let mut params =
                json!({"progressId": "asked", "elicitationId": elicitation_id, "action": action});
            if let Some(content) = content {
                params["content"] = content;
            }
            daemon.rpc("answerElicitation", Some(params))
        };
        let forged = "e".repeat(100_000);
        let refused = answer(&forged, "decline", None).unwrap_err();
        assert!(
            refused.message.len() < 1_000,
            "{} bytes",
            refused.message.len()
        );
        assert!(
            refused
                .message
                .contains(&format!("its elicitations are \"{id}\"")),
            "{}",
            refused.message
        );
        // A forged progressId: notPermitted, and the id is repeated cut.
        let refused = daemon
            .rpc(
                "answerElicitation",
                Some(
                    json!({"progressId": "p".repeat(100_000), "elicitationId": forged,
                    "action": "decline"}),
                ),
            )
            .unwrap_err();
        assert!(
            refused.message.len() < 1_000 && refused.message.contains("(100000 characters)"),
            "{} bytes: {}",
            refused.message.len(),
            &refused.message[..refused.message.len().min(300)]
        );
        let not_a_field = "f".repeat(100_000);
        let refused = answer(&id, "accept", Some(json!({not_a_field: "x"}))).unwrap_err();
        assert!(
            refused.message.len() < 2_000,
            "{} bytes",
            refused.message.len()
        );
        assert!(
            refused.message.contains("and 4980 more") && refused.message.contains("still open"),
            "{}",
            refused.message
        );
        // The question is still open and takes a real answer.
        answer(&id, "accept", Some(json!({"field7": "seven"}))).expect("a valid answer");
        let result = call.join().unwrap();
        assert_eq!(tool_cli_tests::text_content(&result), "action=accept");
    });
}

#[test]
fn chain_bindings_cannot_multiply_a_result_without_bound() {
    let dir = scratch();
    let record = dir.path().join("received.jsonl");
    let daemon =
        Daemon::start(json!({"mcpServers": {"alpha": fault_server_recording(&record, &[])}}));
    let big = "x".repeat(1_000_000);
    let copies: Vec<Value> = (0..20)
        .map(|_| json!({"$from": "0", "pointer": "/structuredContent/nonce"}))
        .collect();
    let chain = daemon.call(
        "callChain",
        json!({"steps": [
            {"server": "alpha", "tool": "echo", "arguments": {"nonce": big}},
            {"server": "alpha", "tool": "echo", "arguments": {"nonce": "n", "copies": copies}},
        ]}),
    );
    assert_eq!(chain["completed"], false, "{:.300}", chain.to_string());
    let steps = chain["steps"].as_array().unwrap();
    assert!(steps[0]["result"].is_object());
    let message = steps[1]["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("arguments/copies/16: the values bound into step 1's arguments would exceed 16777216 bytes"),
        "{message:.500}"
    );
    assert_eq!(
        count_recorded(&record, "tools/call", Some("echo")),
        1,
        "the refused step never reached the server"
    );
    // Within the bound, bindings still work.
    let chain = daemon.call(
        "callChain",
        json!({"steps": [
            {"server": "alpha", "tool": "echo", "arguments": {"nonce": "small"}},
            {"server": "alpha", "tool": "echo",
             "arguments": {"nonce": {"$from": "0", "pointer": "/structuredContent/nonce"}}},
        ]}),
    );
    assert_eq!(chain["completed"], true, "{chain}");
    assert_eq!(
        chain["steps"][1]["result"]["structuredContent"]["nonce"],
        "small"
    );
}
