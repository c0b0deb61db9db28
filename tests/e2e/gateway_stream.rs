//! What an upstream server says to the host while a call runs, through the MCP gateway's SSE
//! answers (`daemon/src/edge/gateway/stream.rs`) and `tool-cli mcp`, driven by the official MCP
//! Python SDK client with its own handlers (`tests/fixtures/mcp_gateway_stream_client.py`)
//! against `@modelcontextprotocol/server-everything` and the conformance upstream
//! (`tests/fixtures/conformance_server.py`), and by raw HTTP.
//!
//! Input → test:
//! - progress (everything's long-running operation), log messages at and above the host's
//!   level, a question answered (accept) and one declined by the host, a tool name that is not
//!   ours, over HTTP: `the_python_sdk_gets_progress_logs_and_questions_over_the_stream`
//! - a server's sampling request answered by the host's own handler, and declined (with the
//!   daemon's reason) when the host does not sample:
//!   `the_host_answers_a_servers_sampling_request`
//! - `completion/complete` for a prompt's and a template's argument, `resources/subscribe` and
//!   `unsubscribe`, passed to the server that has them; an unknown prompt, template or URI and
//!   a bad `ref`: `completions_and_subscriptions_reach_the_server`
//! - the same through `tool-cli mcp` over stdio:
//!   `tool_cli_mcp_relays_progress_and_questions_over_stdio`
//! - a stream the host drops mid-call, and a call the host cancels with
//!   `notifications/cancelled`: each leaves one cancelled trace line and the upstream call
//!   cancelled; a host answer on an unknown session is 404:
//!   `a_dropped_stream_or_a_cancelled_call_cancels_the_upstream_call`

use std::io::{BufRead as _, BufReader};
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tool_cli_tests::{
    Daemon, HttpPeer, client_bin, count_recorded, everything_stdio, fault_server_recording,
    http_request_bytes, open_http_stream, raw_http_exchange, repo_root,
};

/// How long one SDK run may take.
const SCENARIO_TIMEOUT: Duration = Duration::from_secs(120);

/// Longest wait for any one event.
const WAIT: Duration = Duration::from_secs(30);

fn python() -> String {
    tool_cli_tests::peer_python()
}

/// everything and the conformance upstream, both allowed to ask the caller.
fn asking_servers(dir: &Path) -> Value {
    let mut everything = everything_stdio();
    everything["elicitation"] = json!("ask");
    everything["allowSampling"] = json!(true);
    json!({
        "mcpServers": {
            "everything": everything,
            "conformance": {
                "command": python(),
                "args": [repo_root().join("tests/fixtures/conformance_server.py")],
                "elicitation": "ask",
            },
        },
        "traces": {"path": dir.join("traces.jsonl")},
    })
}

fn stream_client(args: &[String], env: &[(&str, String)]) -> Value {
    tool_cli_tests::python_driver_report(
        "mcp_gateway_stream_client.py",
        args,
        env,
        SCENARIO_TIMEOUT,
    )
}

fn over_http(daemon: &Daemon, extra: &[&str], calls: &Value) -> Value {
    let mut args = vec![
        "--url".to_owned(),
        format!("http://127.0.0.1:{}/mcp", daemon.port),
        "--token".to_owned(),
        daemon.token.clone(),
        "--calls".to_owned(),
        calls.to_string(),
    ];
    args.extend(extra.iter().map(|arg| (*arg).to_owned()));
    stream_client(&args, &[])
}

fn text_of(call: &Value) -> String {
    call["result"]["content"]
        .as_array()
        .unwrap_or_else(|| panic!("no content: {call}"))
        .iter()
        .filter_map(|item| item["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Over a Streamable HTTP upstream the server's notifications come on the response stream of
/// its call, before the answer, as over stdio: the host gets every step, the last one too.
#[test]
fn every_progress_step_of_an_http_upstream_reaches_the_host() {
    let upstream = HttpPeer::everything();
    let daemon = Daemon::start(json!({"mcpServers": {"remote": upstream.server_config()}}));
    let calls = json!([
        {"name": "remote__trigger-long-running-operation", "arguments": {"duration": 1, "steps": 3}},
        {"name": "remote__trigger-long-running-operation", "arguments": {"duration": 0.3, "steps": 3}},
    ]);
    let report = over_http(&daemon, &[], &calls);
    for call in report["calls"].as_array().unwrap() {
        let progress: Vec<f64> = call["progress"]
            .as_array()
            .unwrap_or_else(|| panic!("no progress: {report}"))
            .iter()
            .map(|value| value.as_f64().unwrap())
            .collect();
        assert_eq!(progress, [1.0, 2.0, 3.0], "{report}");
        assert!(text_of(call).contains("completed"), "{report}");
    }
}

#[test]
fn the_python_sdk_gets_progress_logs_and_questions_over_the_stream() {
    let daemon = Daemon::start_with_dir(asking_servers);
    let calls = json!([
        {"name": "everything__trigger-long-running-operation", "arguments": {"duration": 1, "steps": 3}},
        {"name": "conformance__test_tool_with_logging"},
        {"name": "conformance__test_elicitation", "arguments": {"message": "who are you?"}},
        {"name": "nobody__nothing"},
    ]);
    let report = over_http(
        &daemon,
        &["--log-level", "info", "--elicit", "accept"],
        &calls,
    );
    let calls = report["calls"].as_array().unwrap();
    // Progress under the SDK's own token, in order, before the answer: every step, the last
    // one too, sent just before the answer (the call's watch ends only once each notification
    // the server sent before its answer is relayed: `pool/notification_order.rs`).
    let progress: Vec<f64> = calls[0]["progress"]
        .as_array()
        .unwrap()
        .iter()
        .map(|value| value.as_f64().unwrap())
        .collect();
    assert_eq!(progress, [1.0, 2.0, 3.0], "{report}");
    assert!(text_of(&calls[0]).contains("completed"), "{report}");
    // The server's log messages, at info, in order, every one.
    let logs: Vec<&str> = report["logs"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|log| log["data"].as_str())
        .collect();
    let sent = [
        "Tool execution started",
        "Tool processing data",
        "Tool execution completed",
    ];
    assert_eq!(logs, sent, "{report}");
    // The question reached the SDK's handler, and its answer the server.
    assert_eq!(
        report["questions"][0]["message"], "who are you?",
        "{report}"
    );
    assert_eq!(
        report["questions"][0]["fields"],
        json!(["email", "username"])
    );
    let answered = text_of(&calls[2]);
    assert!(
        answered.contains("action=accept") && answered.contains("\"username\": \"Ada\""),
        "{answered}"
    );
    // A name that is not ours: an MCP error, on the stream like any answer.
    assert_eq!(calls[3]["error"]["code"], -32602, "{report}");

    // A host that declines, at a log level above the server's messages.
    let calls = json!([
        {"name": "everything__trigger-elicitation-request"},
        {"name": "conformance__test_tool_with_logging"},
    ]);
    let report = over_http(
        &daemon,
        &["--log-level", "error", "--elicit", "decline"],
        &calls,
    );
    assert_eq!(report["questions"].as_array().unwrap().len(), 1, "{report}");
    let declined = text_of(&report["calls"][0]);
    assert!(declined.contains("declined"), "{declined}");
    assert_eq!(
        report["logs"],
        json!([]),
        "below the host's level: {report}"
    );
    assert!(
        text_of(&report["calls"][1]).contains("executed"),
        "{report}"
    );
}

#[test]
fn the_host_answers_a_servers_sampling_request() {
    let daemon = Daemon::start_with_dir(asking_servers);
    let calls = json!([{"name": "everything__trigger-sampling-request",
                        "arguments": {"prompt": "say hi", "maxTokens": 20}}]);
    let report = over_http(&daemon, &["--sample", "hello from the host"], &calls);
    let asked = report["sampled"][0][0].as_str().unwrap_or_default();
    assert!(asked.contains("say hi"), "{report}");
    let answered = text_of(&report["calls"][0]);
    assert!(answered.contains("hello from the host"), "{answered}");
    assert!(answered.contains("scripted-host"), "{answered}");
    // A host that does not sample: the daemon has no backend either, so the server is told why.
    let report = over_http(&daemon, &[], &calls);
    let call = &report["calls"][0];
    let said = call.to_string();
    assert!(
        call["result"]["isError"] == json!(true) || call.get("error").is_some(),
        "{report}"
    );
    assert!(said.contains("no LLM backend"), "{report}");
}

#[test]
fn tool_cli_mcp_relays_progress_and_questions_over_stdio() {
    let daemon = Daemon::start_with_dir(asking_servers);
    let env = [
        ("TOOL_CLI_PORT", daemon.port.to_string()),
        ("TOOL_CLI_TOKEN", daemon.token.clone()),
        (
            "TOOL_CLI_RUNTIME_DIR",
            daemon.runtime_dir.to_string_lossy().into_owned(),
        ),
    ];
    let calls = json!([
        {"name": "conformance__test_tool_with_progress"},
        {"name": "conformance__test_elicitation", "arguments": {"message": "over stdio?"}},
    ]);
    let args = vec![
        "--command".to_owned(),
        client_bin().to_string_lossy().into_owned(),
        "--arg".to_owned(),
        "mcp".to_owned(),
        "--calls".to_owned(),
        calls.to_string(),
    ];
    let report = stream_client(&args, &env);
    let progress = report["calls"][0]["progress"].as_array().unwrap().clone();
    assert_eq!(
        progress,
        [json!(0.0), json!(50.0), json!(100.0)],
        "every step, the last one too: {report}"
    );
    assert_eq!(report["questions"][0]["message"], "over stdio?", "{report}");
    assert!(
        text_of(&report["calls"][1]).contains("action=accept"),
        "{report}"
    );
}

/// Opens a session on the gateway over raw HTTP; its id.
fn open_session(daemon: &Daemon) -> String {
    let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}});
    let answer = post(daemon, &[], &initialize);
    answer
        .header("mcp-session-id")
        .unwrap_or_else(|| panic!("no session: {answer:?}"))
        .to_owned()
}

fn post(daemon: &Daemon, headers: &[(&str, &str)], body: &Value) -> tool_cli_tests::HttpResponse {
    let host = format!("127.0.0.1:{}", daemon.port);
    let bearer = format!("Bearer {}", daemon.token);
    let mut all = vec![
        ("Host", host.as_str()),
        ("Content-Type", "application/json"),
        ("Authorization", bearer.as_str()),
    ];
    all.extend_from_slice(headers);
    raw_http_exchange(
        daemon.port,
        &http_request_bytes("POST", "/mcp", &all, body.to_string().as_bytes()),
    )
    .expect("an HTTP answer")
}

/// Starts a streamed `fault__sleep` call; the open connection, its headers read.
fn start_streamed_sleep(daemon: &Daemon, session: &str, id: u64) -> BufReader<TcpStream> {
    let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                      "params": {"name": "fault__sleep", "arguments": {"ms": 600000}}})
    .to_string();
    let host = format!("127.0.0.1:{}", daemon.port);
    let bearer = format!("Bearer {}", daemon.token);
    let headers = [
        ("Host", host.as_str()),
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("Authorization", bearer.as_str()),
        ("Mcp-Session-Id", session),
    ];
    let request = http_request_bytes("POST", "/mcp", &headers, call.as_bytes());
    let (reader, event_stream) = open_http_stream(daemon.port, &request, WAIT);
    assert!(event_stream, "a streamed answer");
    reader
}

fn wait_for(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !check() {
        assert!(Instant::now() < deadline, "never happened: {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The trace lines once `count` were written.
fn trace_lines(daemon: &Daemon, count: u64) -> Vec<Value> {
    wait_for("the trace writer wrote the lines", || {
        daemon.call("health", Value::Null)["traces"]["written"] == count
    });
    std::fs::read_to_string(daemon.dir().join("traces.jsonl"))
        .expect("read the trace file")
        .lines()
        .map(|line| serde_json::from_str(line).expect("a JSON line"))
        .collect()
}

#[test]
fn a_dropped_stream_or_a_cancelled_call_cancels_the_upstream_call() {
    let daemon = Daemon::start_with_dir(|dir| {
        json!({
            "mcpServers": {"fault": fault_server_recording(&dir.join("record.jsonl"), &[])},
            "traces": {"path": dir.join("traces.jsonl")},
        })
    });
    let record = daemon.dir().join("record.jsonl");
    let session = open_session(&daemon);

    // The host goes away mid-call.
    let dropped = start_streamed_sleep(&daemon, &session, 1);
    wait_for("the server received the call", || {
        count_recorded(&record, "tools/call", Some("sleep")) == 1
    });
    drop(dropped);
    wait_for("the upstream call was cancelled", || {
        count_recorded(&record, "notifications/cancelled", None) == 1
    });
    let lines = trace_lines(&daemon, 1);
    assert_eq!(lines[0]["error"]["kind"], "cancelled", "{lines:?}");

    // The host cancels its request: the stream ends with no answer, the call is cancelled.
    let mut cancelled = start_streamed_sleep(&daemon, &session, 2);
    wait_for("the server received the second call", || {
        count_recorded(&record, "tools/call", Some("sleep")) == 2
    });
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                        "params": {"requestId": 2, "reason": "the user pressed stop"}});
    assert_eq!(
        post(&daemon, &[("Mcp-Session-Id", &session)], &cancel).status,
        202
    );
    // The chunked body ends with its last chunk; the connection itself stays open.
    let mut rest = String::new();
    loop {
        let mut line = String::new();
        cancelled.read_line(&mut line).expect("the stream ends");
        if line == "0\r\n" || line.is_empty() {
            break;
        }
        rest.push_str(&line);
    }
    assert!(
        !rest.contains("\"result\""),
        "no answer to a cancelled request: {rest}"
    );
    wait_for("the second upstream call was cancelled", || {
        count_recorded(&record, "notifications/cancelled", None) == 2
    });
    let lines = trace_lines(&daemon, 2);
    assert_eq!(lines.len(), 2, "one line per call: {lines:?}");
    assert_eq!(lines[1]["error"]["kind"], "cancelled", "{lines:?}");

    // A host's answer on a session the gateway does not know.
    let answer = json!({"jsonrpc": "2.0", "id": "tool-cli/1/e1", "result": {"action": "accept"}});
    let unknown = post(
        &daemon,
        &[("Mcp-Session-Id", "0123456789abcdef0123456789abcdef")],
        &answer,
    );
    assert_eq!(unknown.status, 404);
}

#[test]
fn completions_and_subscriptions_reach_the_server() {
    let daemon = Daemon::start_with_dir(asking_servers);
    let session = open_session(&daemon);
    let with_session = [("Mcp-Session-Id", session.as_str())];
    let ask = |method: &str, params: Value| -> Value {
        let body = json!({"jsonrpc": "2.0", "id": 9, "method": method, "params": params});
        let answer = post(&daemon, &with_session, &body);
        serde_json::from_slice(&answer.body).unwrap_or_else(|_| panic!("{answer:?}"))
    };
    // A prompt's argument, by the prompt's gateway name: the server gets its own name back.
    let completed = ask(
        "completion/complete",
        json!({"ref": {"type": "ref/prompt", "name": "conformance__test_prompt_with_arguments"},
               "argument": {"name": "arg1", "value": "par"}}),
    );
    assert_eq!(
        completed["result"]["completion"]["values"],
        json!(["paris", "park", "party"]),
        "{completed}"
    );
    // A resource template's argument.
    let completed = ask(
        "completion/complete",
        json!({"ref": {"type": "ref/resource", "uri": "test://template/{id}/data"},
               "argument": {"name": "id", "value": "l"}}),
    );
    assert_eq!(
        completed["result"]["completion"]["values"],
        json!(["london", "lisbon"]),
        "{completed}"
    );
    for bad in [
        json!({"ref": {"type": "ref/prompt", "name": "nobody__nothing"},
               "argument": {"name": "a", "value": ""}}),
        json!({"ref": {"type": "ref/resource", "uri": "test://no/{such}"},
               "argument": {"name": "such", "value": ""}}),
        json!({"ref": {"type": "ref/tool", "name": "x"}, "argument": {"name": "a", "value": ""}}),
    ] {
        let refused = ask("completion/complete", bad);
        assert_eq!(refused["error"]["code"], -32602, "{refused}");
    }
    // Subscriptions go to the server of the URI.
    let subscribed = ask(
        "resources/subscribe",
        json!({"uri": "test://watched-resource"}),
    );
    assert_eq!(subscribed["result"], json!({}), "{subscribed}");
    let unsubscribed = ask(
        "resources/unsubscribe",
        json!({"uri": "test://watched-resource"}),
    );
    assert_eq!(unsubscribed["result"], json!({}), "{unsubscribed}");
    let unknown = ask("resources/subscribe", json!({"uri": "test://nothing-here"}));
    assert_eq!(unknown["error"]["code"], -32002, "{unknown}");
}
