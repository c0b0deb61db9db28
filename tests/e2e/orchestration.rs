//! Orchestration end to end: routing between real servers offering the same tools (two
//! `@modelcontextprotocol/server-filesystem` instances on different roots, with config overrides
//! and priorities), sessions, dry-run, chains, fan-out, idempotency keys, per-tool health and
//! resource scopes — all through the real daemon.

use std::path::Path;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tool_cli_protocol::{ErrorObject, Request, RequestId, code};
use tool_cli_tests::{
    Daemon, count_recorded, demo_server, everything_stdio, fault_server_recording,
    filesystem_server, parse_response,
};

/// Two filesystem servers with distinct roots and descriptions of `read_text_file`, and
/// server-everything. `drive-b` has priority 1.
fn two_drives(dir: &Path) -> Value {
    let a = dir.join("garden");
    let b = dir.join("ledger");
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    std::fs::write(a.join("notes.txt"), "tomatoes\nbasil\n").unwrap();
    std::fs::write(b.join("notes.txt"), "invoice 17: 120 EUR\n").unwrap();
    let mut drive_a = filesystem_server(&a);
    drive_a["tags"] = json!(["garden"]);
    drive_a["tools"] = json!({"read_text_file": {
        "description": "Read a page of the gardening journal: planting notes, harvests and seeds."
    }});
    let mut drive_b = filesystem_server(&b);
    drive_b["tags"] = json!(["ledger"]);
    drive_b["priority"] = json!(1);
    drive_b["tools"] = json!({
        "read_text_file": {
            "description": "Read a scanned invoice or receipt from the accounting ledger archive."
        },
        // Makes the two read_file schemas differ: drive-b wants `head`.
        "read_file": {"arguments": [{"name": "head", "type": "number", "required": true}]},
    });
    json!({"mcpServers": {
        "drive-a": drive_a,
        "drive-b": drive_b,
        "everything": everything_stdio(),
    }})
}

fn selection(result: &Value) -> (String, String) {
    let selection = &result["_meta"]["tool-cli/selection"];
    (
        selection["server"].as_str().unwrap_or_default().to_owned(),
        selection["rule"].as_str().unwrap_or_default().to_owned(),
    )
}

fn text(result: &Value) -> String {
    tool_cli_tests::text_content(result)
}

#[test]
fn routing_picks_among_real_servers_by_each_rule() {
    let daemon = Daemon::start_with_dir(two_drives);
    let a = daemon.dir().join("garden/notes.txt");
    let b = daemon.dir().join("ledger/notes.txt");

    // Named: the caller decides.
    let result = daemon.call(
        "callTool",
        json!({"server": "drive-a", "tool": "read_text_file", "arguments": {"path": a}}),
    );
    assert_eq!(selection(&result), ("drive-a".into(), "named".into()));

    // Priority: both accept the arguments, nothing else separates them: drive-b has priority 1.
    let result = daemon.call(
        "callTool",
        json!({"tool": "read_text_file", "arguments": {"path": b}}),
    );
    assert_eq!(selection(&result), ("drive-b".into(), "priority".into()));
    assert_eq!(text(&result), "invoice 17: 120 EUR\n");
    let alternatives = &result["_meta"]["tool-cli/selection"]["alternatives"];
    assert_eq!(
        alternatives,
        &json!([{"server": "drive-a", "rejectedBy": "priority"}])
    );

    // Explicit mention: the hint names drive-a's tag.
    let result = daemon.call(
        "callTool",
        json!({"tool": "read_text_file", "arguments": {"path": a}, "hint": "from the garden"}),
    );
    assert_eq!(
        selection(&result),
        ("drive-a".into(), "explicit-mention".into())
    );
    assert_eq!(text(&result), "tomatoes\nbasil\n");

    // Argument type: only drive-a accepts read_file without `head` (an override requires it
    // on drive-b).
    let result = daemon.call(
        "callTool",
        json!({"server": "*", "tool": "read_file", "arguments": {"path": a}}),
    );
    assert_eq!(
        selection(&result),
        ("drive-a".into(), "argument-type".into())
    );

    // Similarity: a session whose task reads like drive-a's description.
    let session = daemon.call(
        "openSession",
        json!({"task": "what did I plant and harvest in the gardening journal"}),
    )["sessionId"]
        .clone();
    let result = daemon.call(
        "callTool",
        json!({"tool": "read_text_file", "arguments": {"path": a}, "sessionId": session}),
    );
    assert_eq!(selection(&result), ("drive-a".into(), "similarity".into()));

    // Session recency: a session without a task that used drive-a last.
    let session = daemon.call("openSession", json!({}))["sessionId"].clone();
    daemon.call(
        "callTool",
        json!({"server": "drive-a", "tool": "read_text_file", "arguments": {"path": a},
               "sessionId": session}),
    );
    let result = daemon.call(
        "callTool",
        json!({"tool": "read_text_file", "arguments": {"path": a}, "sessionId": session}),
    );
    assert_eq!(
        selection(&result),
        ("drive-a".into(), "session-recency".into())
    );

    // A tool nobody offers: -32602 with the closest names.
    let error = daemon.call_err(
        "callTool",
        json!({"tool": "read_txt_file", "arguments": {"path": a}}),
    );
    assert_eq!(error.code, code::INVALID_PARAMS);
    assert!(error.message.contains("did you mean"), "{}", error.message);
    assert!(
        error.message.contains("drive-a/read_text_file"),
        "{}",
        error.message
    );
}

#[test]
fn overrides_show_in_discovery_and_validation() {
    let daemon = Daemon::start_with_dir(two_drives);
    let tools = daemon.call("listTools", json!({"server": "drive-b"}));
    let read = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|tool| tool["name"] == "read_text_file")
        .unwrap();
    assert_eq!(read["overridden"], true);
    assert!(read["description"].as_str().unwrap().contains("ledger"));
    let described = daemon.call(
        "describeTool",
        json!({"server": "drive-b", "tool": "read_file"}),
    );
    assert_eq!(
        described["_meta"]["tool-cli/overridden"],
        json!(["arguments.head"])
    );
    assert!(
        described["inputSchema"]["required"]
            .as_array()
            .unwrap()
            .contains(&json!("head"))
    );
    // The merged schema is what validates: drive-b's read_file now needs `head`.
    let error = daemon.call_err(
        "callTool",
        json!({"server": "drive-b", "tool": "read_file",
               "arguments": {"path": daemon.dir().join("ledger/notes.txt")}}),
    );
    assert_eq!(error.code, code::INVALID_PARAMS);
    assert!(error.message.contains("head"), "{}", error.message);
}

#[test]
fn an_override_that_clashes_with_the_servers_schema_is_refused_with_both_types() {
    let daemon = Daemon::start_with_dir(|dir| {
        let mut fs = filesystem_server(dir);
        fs["tools"] =
            json!({"read_text_file": {"arguments": [{"name": "path", "type": "integer"}]}});
        json!({"mcpServers": {"fs": fs}})
    });
    let servers = daemon.call("listServers", Value::Null);
    let warnings = servers["servers"][0]["warnings"].as_array().unwrap();
    let warning = warnings[0].as_str().unwrap();
    assert!(
        warning.contains("tools.read_text_file.arguments.path.type"),
        "{warning}"
    );
    assert!(
        warning.contains("\"integer\"") && warning.contains("\"string\""),
        "{warning}"
    );
    // Not applied: the tool keeps its own schema and works.
    let path = daemon.dir().join("x.txt");
    std::fs::write(&path, "x").unwrap();
    let result = daemon.call_tool("fs", "read_text_file", json!({"path": path}));
    assert_eq!(text(&result), "x");
}

#[test]
fn a_dry_run_contacts_no_server_and_says_what_would_block() {
    let daemon = Daemon::start_with_dir(two_drives);
    let target = daemon.dir().join("garden/new.txt");
    let answer = daemon.call(
        "callTool",
        json!({"server": "drive-a", "tool": "write_file",
               "arguments": {"path": target, "content": "x"}, "dryRun": true}),
    );
    assert_eq!(answer["executed"], false);
    assert_eq!(answer["server"], "drive-a");
    assert_eq!(answer["hints"]["destructive"], true);
    assert_eq!(
        answer["wouldBlockBecause"]["data"]["kind"],
        "confirmationRequired"
    );
    assert!(!target.exists(), "a dry-run wrote nothing");
    // Confirmed, the same dry-run would go ahead; still nothing is written.
    let answer = daemon.call(
        "callTool",
        json!({"server": "drive-a", "tool": "write_file", "confirm": true, "dryRun": true,
               "arguments": {"path": target, "content": "x"}}),
    );
    assert!(answer.get("wouldBlockBecause").is_none(), "{answer}");
    assert!(!target.exists());
    // A routed dry-run explains the routing.
    let answer = daemon.call(
        "callTool",
        json!({"tool": "read_text_file", "arguments": {"path": target}, "dryRun": true}),
    );
    assert_eq!(answer["selection"]["rule"], "priority");
}

#[test]
fn a_chain_binds_earlier_results_and_stops_at_the_first_failure() {
    let daemon = Daemon::start_with_dir(
        |dir| json!({"mcpServers": {"demo": demo_server(dir), "everything": everything_stdio()}}),
    );
    let chain = daemon.call(
        "callChain",
        json!({"steps": [
            {"server": "demo", "tool": "sql_query",
             "arguments": {"sql": "SELECT name FROM customers ORDER BY id LIMIT 1"}},
            {"server": "everything", "tool": "echo",
             "arguments": {"message": {"$from": "0", "pointer": "/structuredContent/rows/0/name"}}},
        ]}),
    );
    assert_eq!(chain["completed"], true);
    let name = chain["steps"][0]["result"]["structuredContent"]["rows"][0]["name"]
        .as_str()
        .unwrap()
        .to_owned();
    let echoed = text(&chain["steps"][1]["result"]);
    assert!(echoed.contains(&name), "{echoed} should contain {name}");

    // A pointer that is not in the result stops the chain at that step, with every step so far.
    let chain = daemon.call(
        "callChain",
        json!({"steps": [
            {"server": "demo", "tool": "sql_query", "arguments": {"sql": "SELECT 1 AS one"}},
            {"server": "everything", "tool": "echo",
             "arguments": {"message": {"$from": "0", "pointer": "/structuredContent/nope"}}},
            {"server": "everything", "tool": "echo", "arguments": {"message": "never"}},
        ]}),
    );
    assert_eq!(chain["completed"], false);
    let steps = chain["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 2);
    let error = &steps[1]["error"];
    assert_eq!(error["code"], code::INVALID_PARAMS);
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("/structuredContent/nope")
    );

    // A binding to a later step (a cycle) is refused before anything runs.
    let error = daemon.call_err(
        "callChain",
        json!({"steps": [
            {"server": "everything", "tool": "echo",
             "arguments": {"message": {"$from": "1", "pointer": "/content"}}},
            {"server": "everything", "tool": "echo", "arguments": {"message": "x"}},
        ]}),
    );
    assert_eq!(error.code, code::INVALID_PARAMS);
    assert!(error.message.contains("has not run"), "{}", error.message);

    // 10,000 steps: refused by the cap, nothing run.
    let steps: Vec<Value> = (0..10_000)
        .map(|_| json!({"server": "everything", "tool": "echo", "arguments": {"message": "x"}}))
        .collect();
    let error = daemon.call_err("callChain", json!({"steps": steps}));
    assert!(error.message.contains("limit of 64"), "{}", error.message);
}

#[test]
fn a_fan_out_answers_every_call_in_order_with_per_call_errors() {
    let daemon = Daemon::start_with_dir(
        |dir| json!({"mcpServers": {"demo": demo_server(dir), "everything": everything_stdio()}}),
    );
    let calls: Vec<Value> = (0..6)
        .map(|i| match i {
            3 => json!({"server": "everything", "tool": "no_such_tool", "arguments": {}}),
            4 => json!({"server": "demo", "tool": "sql_query", "arguments": {"sql": 7}}),
            _ => json!({"server": "everything", "tool": "echo",
                        "arguments": {"message": format!("m{i}")}}),
        })
        .collect();
    let answer = daemon.call("callMany", json!({"calls": calls, "maxConcurrent": 3}));
    let results = answer["results"].as_array().unwrap();
    assert_eq!(results.len(), 6);
    for (i, result) in results.iter().enumerate() {
        assert_eq!(result["index"], i);
        match i {
            3 => assert_eq!(result["error"]["data"]["kind"], "unknownTool"),
            4 => assert_eq!(result["error"]["data"]["kind"], "invalidArguments"),
            _ => assert!(
                text(&result["result"]).contains(&format!("m{i}")),
                "{result}"
            ),
        }
    }
    let many: Vec<Value> = (0..10_000)
        .map(|_| json!({"server": "everything", "tool": "echo", "arguments": {"message": "x"}}))
        .collect();
    let error = daemon.call_err("callMany", json!({"calls": many}));
    assert!(error.message.contains("limit of 256"), "{}", error.message);
}

#[test]
fn an_idempotency_key_runs_a_call_once() {
    let daemon = Daemon::start_with_dir(two_drives);
    let target = daemon.dir().join("garden/once.txt");
    let call = json!({"server": "drive-a", "tool": "write_file", "confirm": true,
                      "idempotencyKey": "write-once-1",
                      "arguments": {"path": target, "content": "first"}});
    let first = daemon.call("callTool", call.clone());
    assert!(first["_meta"].get("tool-cli/replayed").is_none());
    std::fs::write(&target, "changed by hand").unwrap();
    let again = daemon.call("callTool", call.clone());
    assert_eq!(again["_meta"]["tool-cli/replayed"], true);
    assert_eq!(
        std::fs::read_to_string(&target).unwrap(),
        "changed by hand",
        "the repeat did not write again"
    );
    let mut different = call;
    different["arguments"]["content"] = json!("second");
    let error = daemon.call_err("callTool", different);
    assert_eq!(error.code, code::INVALID_PARAMS);
    assert_eq!(error.error_data_kind(), "idempotencyConflict");
}

/// `error_data().kind` as a string, for short assertions.
trait Kind {
    fn error_data_kind(&self) -> String;
}

impl Kind for ErrorObject {
    fn error_data_kind(&self) -> String {
        self.data
            .as_ref()
            .and_then(|data| data["kind"].as_str())
            .unwrap_or_default()
            .to_owned()
    }
}

#[test]
fn a_repeat_while_the_first_runs_waits_for_it_and_the_server_sees_one_call() {
    let record = tool_cli_tests::scratch();
    let record_file = record.path().join("record.jsonl");
    let daemon = Daemon::start(json!({"mcpServers": {
        "slow": fault_server_recording(&record_file, &[]),
    }}));
    let call = json!({"server": "slow", "tool": "sleep", "arguments": {"ms": 1500},
                      "idempotencyKey": "k-1"});
    let port = daemon.port;
    let token = daemon.token.clone();
    let first = {
        let call = call.clone();
        let token = token.clone();
        thread::spawn(move || rpc_as(port, &token, "callTool", call))
    };
    // Wait until the first call has reached the server, then repeat it.
    let deadline = Instant::now() + Duration::from_secs(30);
    while count_recorded(&record_file, "tools/call", Some("sleep")) == 0 {
        assert!(
            Instant::now() < deadline,
            "the first call never reached the server"
        );
        thread::sleep(Duration::from_millis(10));
    }
    let second = rpc_as(port, &token, "callTool", call).expect("the repeat is answered");
    let first = first.join().unwrap().expect("the first call is answered");
    assert_eq!(text(&first), text(&second));
    assert_eq!(second["_meta"]["tool-cli/replayed"], true);
    assert_eq!(count_recorded(&record_file, "tools/call", Some("sleep")), 1);
}

/// One JSON-RPC call with `token`.
fn rpc_as(port: u16, token: &str, method: &str, params: Value) -> Result<Value, ErrorObject> {
    let request = Request::new(1, method, Some(params));
    let auth = format!("Bearer {token}");
    let (status, body) = tool_cli_tests::http_post(
        port,
        "/",
        &[("Authorization", auth.as_str())],
        &serde_json::to_vec(&request).unwrap(),
    );
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    let response = parse_response(&body);
    assert_eq!(response.id, Some(RequestId::Number(1)));
    response.into_result()
}

#[test]
fn sessions_summarise_guard_loops_and_stay_with_their_token() {
    let daemon = Daemon::start_demo();
    let session = daemon.call(
        "openSession",
        json!({"task": "count the orders", "labels": ["e2e"]}),
    )["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    daemon.call(
        "callTool",
        json!({"server": "demo", "tool": "sql_query", "sessionId": session,
               "arguments": {"sql": "SELECT count(*) AS n FROM orders"}}),
    );
    // The same invalid call, three times: the fourth is refused before any work.
    let bad = json!({"server": "demo", "tool": "sql_query", "sessionId": session,
                     "arguments": {"sql": 42}});
    for _ in 0..3 {
        let error = daemon.call_err("callTool", bad.clone());
        assert_eq!(error.error_data_kind(), "invalidArguments");
    }
    let error = daemon.call_err("callTool", bad);
    assert_eq!(error.code, code::GUARD_REFUSED);
    assert_eq!(error.error_data_kind(), "loopDetected");
    assert!(
        error.message.contains("failed 3 times"),
        "{}",
        error.message
    );

    let summary = daemon.call("sessionSummary", json!({"sessionId": session}));
    assert_eq!(summary["calls"], 5);
    assert_eq!(summary["executed"], 1);
    assert_eq!(summary["errors"], 4);
    assert_eq!(summary["task"], "count the orders");
    assert_eq!(summary["toolsUsed"][0]["tool"], "sql_query");
    assert_eq!(summary["rulesFired"]["named"], 4);
    let listed = daemon.call("listSessions", Value::Null);
    assert_eq!(listed["sessions"][0]["sessionId"], session.as_str());

    // A session id never used: a clear error, not an empty summary.
    let error = daemon.call_err("sessionSummary", json!({"sessionId": "s-never"}));
    assert_eq!(error.error_data_kind(), "unknownSession");

    // Another token sees the same answer for this real session as for one that never existed.
    let scoped = daemon.call("mintToken", json!({}))["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let theirs = rpc_as(
        daemon.port,
        &scoped,
        "sessionSummary",
        json!({"sessionId": session}),
    )
    .unwrap_err();
    assert_eq!(theirs.error_data_kind(), "unknownSession");
    assert!(
        rpc_as(daemon.port, &scoped, "listSessions", json!({})).unwrap()["sessions"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    assert!(
        rpc_as(
            daemon.port,
            &scoped,
            "closeSession",
            json!({"sessionId": session})
        )
        .is_err()
    );

    daemon.call("closeSession", json!({"sessionId": session}));
    let error = daemon.call_err("sessionSummary", json!({"sessionId": session}));
    assert_eq!(error.error_data_kind(), "unknownSession");
}

#[test]
fn health_reports_per_tool_statistics_on_request() {
    let daemon = Daemon::start_demo();
    for _ in 0..3 {
        daemon.call_tool("demo", "sql_query", json!({"sql": "SELECT 1"}));
    }
    let health = daemon.call("health", json!({"tools": true}));
    let tools = health["servers"][0]["tools"].as_array().unwrap();
    assert_eq!(tools[0]["name"], "sql_query");
    assert_eq!(tools[0]["calls"], 3);
    assert_eq!(tools[0]["successes"], 3);
    assert_eq!(tools[0]["latencyMs"]["samples"], 3);
    assert!(tools[0]["lastUsedMs"].as_u64().unwrap() > 0);
    let plain = daemon.call("health", Value::Null);
    assert!(plain["servers"][0].get("tools").is_none());
}

#[test]
fn a_tool_scoped_token_sees_no_resources_without_a_resource_grant() {
    let daemon = Daemon::start_demo();
    let tools_only = daemon.call("mintToken", json!({"tools": ["demo/sql_query"]}))["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let listed = rpc_as(
        daemon.port,
        &tools_only,
        "listResources",
        json!({"server": "demo"}),
    )
    .unwrap();
    assert_eq!(listed["resources"], json!([]));
    let error = rpc_as(
        daemon.port,
        &tools_only,
        "readResource",
        json!({"server": "demo", "uri": "demo://docs/readme"}),
    )
    .unwrap_err();
    assert_eq!(error.code, code::FORBIDDEN);
    assert!(error.message.contains("--resource"), "{}", error.message);

    let granted = daemon.call(
        "mintToken",
        json!({"tools": ["demo/sql_query"], "resources": ["demo/demo://docs/*"]}),
    )["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let listed = rpc_as(
        daemon.port,
        &granted,
        "listResources",
        json!({"server": "demo"}),
    )
    .unwrap();
    let uris: Vec<&str> = listed["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|resource| resource["uri"].as_str().unwrap())
        .collect();
    assert!(!uris.is_empty());
    assert!(
        uris.iter().all(|uri| uri.starts_with("demo://docs/")),
        "{uris:?}"
    );
    let read = rpc_as(
        daemon.port,
        &granted,
        "readResource",
        json!({"server": "demo", "uri": "demo://docs/readme"}),
    )
    .unwrap();
    assert!(read["contents"].as_array().is_some());
    let error = rpc_as(
        daemon.port,
        &granted,
        "readResource",
        json!({"server": "demo", "uri": "demo://tables/orders"}),
    )
    .unwrap_err();
    assert_eq!(error.code, code::FORBIDDEN);
}
