//! OpenTelemetry export from the real daemon to an OTLP/HTTP receiver on loopback
//! (docs/observability.md): off by default, on with the `OTEL_*` variables or the config's
//! `telemetry` section; a bad value stops the daemon naming the variable; a request is a SERVER
//! span under the caller's `traceparent` (header or `params._meta`), its upstream call a CLIENT
//! span whose context reaches the server in `params._meta`; a malformed context is ignored and
//! counted; a collector that refuses, throttles or stalls changes nothing for calls, and what it
//! cost is counted in `health` and `/metrics`.

use std::time::Duration;

use serde_json::{Value, json};
use tool_cli_telemetry::testing::{Arrival, OtlpReceiver, Reply, int_attribute, string_attribute};
use tool_cli_tests::{Daemon, DaemonOptions, fault_server_recording, recorded_messages, scratch};

const WAIT: Duration = Duration::from_secs(30);

/// OTLP's `Span.SpanKind` values (opentelemetry-proto `trace.proto`).
const KIND_SERVER: i32 = 2;
const KIND_CLIENT: i32 = 3;

/// The caller's span: trace `4bf9…4736`, span `00f0…02b7`, sampled.
const CALLER_TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN_ID: &str = "00f067aa0ba902b7";

fn caller_traceparent() -> String {
    format!("00-{CALLER_TRACE_ID}-{CALLER_SPAN_ID}-01")
}

/// The variables that point the daemon at `receiver`, exporting often (spans every 50 ms,
/// metrics every 200 ms) so the test waits for arrivals, not for a schedule.
fn otel_env(receiver: &OtlpReceiver) -> Vec<(String, String)> {
    [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint()),
        ("OTEL_BSP_SCHEDULE_DELAY", "50".to_owned()),
        ("OTEL_METRIC_EXPORT_INTERVAL", "200".to_owned()),
        ("OTEL_SERVICE_NAME", "e2e-daemon".to_owned()),
    ]
    .into_iter()
    .map(|(name, value)| (name.to_owned(), value))
    .collect()
}

fn start(receiver: &OtlpReceiver, record: &std::path::Path) -> Daemon {
    Daemon::start_with(
        json!({"mcpServers": {"alpha": fault_server_recording(record, &[])}}),
        DaemonOptions {
            env: otel_env(receiver),
            ..DaemonOptions::default()
        },
    )
}

/// POSTs one JSON-RPC request with extra headers; the parsed answer.
fn post_with(daemon: &Daemon, headers: &[(&str, &str)], request: &Value) -> Value {
    let auth = format!("Bearer {}", daemon.token);
    let mut all = vec![("Authorization", auth.as_str())];
    all.extend_from_slice(headers);
    let (status, body) = daemon.raw_post(&all, request.to_string().as_bytes());
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    serde_json::from_slice(&body).expect("a JSON answer")
}

fn metrics_page(daemon: &Daemon) -> String {
    let host = format!("127.0.0.1:{}", daemon.port);
    let auth = format!("Bearer {}", daemon.token);
    let headers = [("Host", host.as_str()), ("Authorization", auth.as_str())];
    let response = tool_cli_tests::raw_http_exchange(
        daemon.port,
        &tool_cli_tests::http_request_bytes("GET", "/metrics", &headers, b""),
    )
    .expect("GET /metrics");
    String::from_utf8(response.body).expect("a UTF-8 page")
}

/// The names of every metric accepted so far.
fn metric_names(arrivals: &[Arrival]) -> Vec<String> {
    arrivals
        .iter()
        .filter(|arrival| arrival.accepted())
        .filter_map(|arrival| arrival.metrics.as_ref())
        .flat_map(|request| &request.resource_metrics)
        .flat_map(|resource| &resource.scope_metrics)
        .flat_map(|scope| &scope.metrics)
        .map(|metric| metric.name.clone())
        .collect()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

fn echo(nonce: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "callTool",
        "params": {"server": "alpha", "tool": "echo", "arguments": {"nonce": nonce}}})
}

/// The `tools/call` requests that reached the server, in order.
fn upstream_calls(record: &std::path::Path) -> Vec<Value> {
    recorded_messages(record)
        .into_iter()
        .filter(|message| message["method"] == "tools/call")
        .collect()
}

#[test]
fn a_bad_otel_variable_stops_the_daemon_naming_it() {
    let failure = Daemon::try_start_with(
        json!({"mcpServers": {}}),
        DaemonOptions {
            env: vec![
                (
                    "OTEL_EXPORTER_OTLP_ENDPOINT".into(),
                    "http://127.0.0.1:4318".into(),
                ),
                ("OTEL_BSP_MAX_QUEUE_SIZE".into(), "lots".into()),
            ],
            ..DaemonOptions::default()
        },
    )
    .err()
    .expect("the daemon refuses to start");
    assert!(
        failure.contains("OTEL_BSP_MAX_QUEUE_SIZE: \"lots\" is not a whole number"),
        "{failure}"
    );

    let failure = Daemon::try_start_with(
        json!({"mcpServers": {}, "telemetry": {"protocol": "grpc"}}),
        DaemonOptions::default(),
    )
    .err()
    .expect("the daemon refuses to start");
    assert!(failure.contains("http/protobuf"), "{failure}");
}

#[test]
fn a_call_is_one_trace_from_the_caller_through_the_daemon_to_the_server() {
    let receiver = OtlpReceiver::start();
    let dir = scratch();
    let record = dir.path().join("received.jsonl");
    let daemon = start(&receiver, &record);

    let traceparent = caller_traceparent();
    let answer = post_with(
        &daemon,
        &[
            ("traceparent", traceparent.as_str()),
            ("tracestate", "vendor=abc"),
        ],
        &echo("traced"),
    );
    assert_eq!(answer["result"]["structuredContent"]["nonce"], "traced");

    let spans = receiver.wait_for_spans(2, WAIT);
    let server = spans
        .iter()
        .find(|span| span.kind == KIND_SERVER)
        .expect("a SERVER span");
    let client = spans
        .iter()
        .find(|span| span.kind == KIND_CLIENT)
        .expect("a CLIENT span");

    // SERVER under the caller's span, CLIENT under SERVER, one trace.
    assert_eq!(server.name, "tools/call echo");
    assert_eq!(hex(&server.trace_id), CALLER_TRACE_ID);
    assert_eq!(hex(&server.parent_span_id), CALLER_SPAN_ID);
    assert_eq!(server.trace_state, "vendor=abc");
    assert_eq!(
        string_attribute(&server.attributes, "rpc.method"),
        Some("callTool")
    );
    assert_eq!(
        string_attribute(&server.attributes, "network.transport"),
        Some("tcp")
    );
    assert_eq!(client.name, "tools/call echo");
    assert_eq!(client.trace_id, server.trace_id);
    // The id the server received and the version it negotiated (the fault server answers the
    // version offered).
    let received = upstream_calls(&record);
    assert_eq!(
        string_attribute(&client.attributes, "jsonrpc.request.id"),
        Some(received[0]["id"].to_string().trim_matches('"'))
    );
    assert!(
        string_attribute(&client.attributes, "mcp.protocol.version")
            .is_some_and(|version| version.starts_with("20")),
        "{:?}",
        client.attributes
    );
    assert_eq!(client.parent_span_id, server.span_id);
    for (key, value) in [
        ("mcp.method.name", "tools/call"),
        ("gen_ai.tool.name", "echo"),
        ("gen_ai.operation.name", "execute_tool"),
        ("network.transport", "pipe"),
        ("tool_cli.server", "alpha"),
        ("tool_cli.selection.rule", "named"),
    ] {
        assert_eq!(
            string_attribute(&client.attributes, key),
            Some(value),
            "{key}"
        );
    }
    assert_eq!(
        int_attribute(&client.attributes, "tool_cli.attempts"),
        Some(1)
    );
    // Arguments and results stay home unless captureContent is on.
    for span in [server, client] {
        for key in ["gen_ai.tool.call.arguments", "gen_ai.tool.call.result"] {
            assert!(string_attribute(&span.attributes, key).is_none(), "{key}");
        }
        assert!(
            !format!("{:?}", span.attributes).contains("traced"),
            "no argument value on a span"
        );
    }

    // The server got the CLIENT span's context, unprefixed in `_meta`.
    let calls = upstream_calls(&record);
    assert_eq!(calls.len(), 1);
    let meta = &calls[0]["params"]["_meta"];
    assert_eq!(
        meta["traceparent"],
        format!("00-{}-{}-01", CALLER_TRACE_ID, hex(&client.span_id)),
        "{meta}"
    );
    assert_eq!(meta["tracestate"], "vendor=abc", "{meta}");

    // Both durations arrive as the conventions' histograms.
    receiver.wait_until("both MCP duration metrics", WAIT, |arrivals| {
        let names = metric_names(arrivals);
        names
            .iter()
            .any(|name| name == "mcp.client.operation.duration")
            && names
                .iter()
                .any(|name| name == "mcp.server.operation.duration")
    });
}

#[test]
fn the_context_in_params_meta_is_read_and_carried_over_rmcps_path_too() {
    let receiver = OtlpReceiver::start();
    let dir = scratch();
    let record = dir.path().join("received.jsonl");
    let daemon = start(&receiver, &record);

    // No header: the context comes in `params._meta`, as an MCP client would send it; with
    // `progress: true` the call takes rmcp's path rather than the direct one.
    let request = json!({"jsonrpc": "2.0", "id": 1, "method": "callTool", "params": {
        "server": "alpha", "tool": "echo", "arguments": {"nonce": "meta"}, "progress": true,
        "progressId": "traced-call",
        "_meta": {"traceparent": caller_traceparent()}}});
    let answer = post_with(&daemon, &[], &request);
    assert_eq!(
        answer["result"]["structuredContent"]["nonce"], "meta",
        "{answer}"
    );
    let spans = receiver.wait_for_spans(2, WAIT);
    let server = spans.iter().find(|span| span.kind == KIND_SERVER).unwrap();
    let client = spans.iter().find(|span| span.kind == KIND_CLIENT).unwrap();
    assert_eq!(hex(&server.parent_span_id), CALLER_SPAN_ID);
    let calls = upstream_calls(&record);
    assert_eq!(
        calls[0]["params"]["_meta"]["traceparent"],
        format!("00-{CALLER_TRACE_ID}-{}-01", hex(&client.span_id)),
        "{}",
        calls[0]
    );
}

#[test]
fn a_malformed_traceparent_is_ignored_and_counted() {
    let receiver = OtlpReceiver::start();
    let dir = scratch();
    let record = dir.path().join("received.jsonl");
    let daemon = start(&receiver, &record);

    for malformed in [
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01",
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
        "not a traceparent",
    ] {
        let answer = post_with(&daemon, &[("traceparent", malformed)], &echo("root"));
        assert_eq!(
            answer["result"]["structuredContent"]["nonce"], "root",
            "{answer}"
        );
    }
    let spans = receiver.wait_for_spans(6, WAIT);
    for span in spans.iter().filter(|span| span.kind == KIND_SERVER) {
        assert!(span.parent_span_id.is_empty(), "a root span: {span:?}");
        assert_ne!(hex(&span.trace_id), CALLER_TRACE_ID);
    }
    // The server still got a valid context: the daemon's own.
    for call in upstream_calls(&record) {
        let traceparent = call["params"]["_meta"]["traceparent"].as_str().unwrap();
        assert_eq!(traceparent.len(), 55, "{traceparent}");
    }
    let health = daemon.call("health", json!({}));
    assert_eq!(health["telemetry"]["malformedTraceContext"], 3, "{health}");
}

#[test]
fn export_off_passes_the_callers_context_through_and_shows_nothing() {
    let dir = scratch();
    let record = dir.path().join("received.jsonl");
    let daemon =
        Daemon::start(json!({"mcpServers": {"alpha": fault_server_recording(&record, &[])}}));
    let traceparent = caller_traceparent();
    post_with(
        &daemon,
        &[("traceparent", traceparent.as_str())],
        &echo("off"),
    );
    post_with(&daemon, &[], &echo("no context"));
    let calls = upstream_calls(&record);
    assert_eq!(calls[0]["params"]["_meta"]["traceparent"], traceparent);
    assert!(
        calls[1]["params"]["_meta"].get("traceparent").is_none(),
        "nothing to continue: {}",
        calls[1]
    );
    let health = daemon.call("health", json!({}));
    assert!(health.get("telemetry").is_none(), "{health}");
}

#[test]
fn a_failing_collector_changes_nothing_for_calls_and_drops_are_counted() {
    let receiver = OtlpReceiver::start();
    // Refused outright, then a 413, then a stall that holds the exporter while the queue
    // (8 spans) overflows.
    receiver.script([
        Reply::status(500),
        Reply::status(413),
        Reply::status(400),
        Reply::Stall,
    ]);
    let dir = scratch();
    let record = dir.path().join("received.jsonl");
    let mut env = otel_env(&receiver);
    env.push(("OTEL_BSP_MAX_QUEUE_SIZE".into(), "8".into()));
    let daemon = Daemon::start_with(
        json!({"mcpServers": {"alpha": fault_server_recording(&record, &[])}}),
        DaemonOptions {
            env,
            ..DaemonOptions::default()
        },
    );
    for index in 0..40 {
        let nonce = format!("n{index}");
        let result = daemon.call_tool("alpha", "echo", json!({"nonce": nonce}));
        assert_eq!(result["structuredContent"]["nonce"], nonce.as_str());
    }
    receiver.wait_for_requests(4, WAIT);
    let health = daemon.call("health", json!({}));
    let telemetry = &health["telemetry"];
    assert_eq!(telemetry["queueCapacity"], 8, "{health}");
    assert!(
        telemetry["spansDroppedRefused"].as_u64().unwrap() > 0,
        "{health}"
    );
    assert!(
        telemetry["spansDroppedQueueFull"].as_u64().unwrap() > 0,
        "{health}"
    );
    let page = metrics_page(&daemon);
    assert!(
        page.contains("tool_cli_telemetry_spans_dropped_total{reason=\"queue_full\"}"),
        "{page}"
    );
    // The daemon still answers at once while the collector holds its exporter.
    assert_eq!(
        daemon.call_tool("alpha", "echo", json!({"nonce": "after"}))["structuredContent"]["nonce"],
        "after"
    );
}

#[test]
fn an_agent_run_with_three_tool_calls_is_one_trace_tree() {
    use tool_cli_tests::scripted_llm::{
        LlmReply, ScriptedLlm, agent_config, final_turn, tool_call_turn,
    };

    const KIND_INTERNAL: i32 = 1;
    let receiver = OtlpReceiver::start();
    let llm = ScriptedLlm::start(vec![
        LlmReply::Stream(tool_call_turn("echo", &json!({"nonce": "one"}), 100, 10)),
        LlmReply::Stream(tool_call_turn("echo", &json!({"nonce": "two"}), 200, 20)),
        LlmReply::Stream(tool_call_turn("echo", &json!({"nonce": "three"}), 300, 30)),
        LlmReply::Stream(final_turn(
            &json!({"answer": "echoed one, two and three", "keyFacts": {"echoed": 3}}).to_string(),
            400,
            40,
        )),
    ]);
    let dir = scratch();
    let record = dir.path().join("received.jsonl");
    let mut env = otel_env(&receiver);
    env.push(("SCRIPTED_LLM_KEY".into(), "sk-scripted-otel-e2e".into()));
    let daemon = Daemon::start_with(
        json!({"mcpServers": {"alpha": fault_server_recording(&record, &[])},
               "agent": agent_config(&llm, 1.0)}),
        DaemonOptions {
            env,
            ..DaemonOptions::default()
        },
    );
    let traceparent = caller_traceparent();
    let answer = post_with(
        &daemon,
        &[("traceparent", traceparent.as_str())],
        &json!({"jsonrpc": "2.0", "id": 7, "method": "runAgent", "params": {
            "task": "Echo one, two and three", "tools": ["alpha/echo"], "runId": "otel-run"}}),
    );
    assert_eq!(answer["result"]["status"], "completed", "{answer}");
    assert_eq!(answer["result"]["toolCalls"].as_array().unwrap().len(), 3);

    // runAgent (SERVER) → invoke_agent → 4 × chat, 3 × execute_tool: nine spans, no MCP
    // CLIENT span beside an execute_tool.
    let spans = receiver.wait_for_spans(9, WAIT);
    assert_eq!(
        spans.len(),
        9,
        "{:#?}",
        spans.iter().map(|s| &s.name).collect::<Vec<_>>()
    );
    for span in &spans {
        assert_eq!(hex(&span.trace_id), CALLER_TRACE_ID, "{}", span.name);
    }
    let named = |name: &str| -> Vec<_> { spans.iter().filter(|span| span.name == name).collect() };
    let server = named("runAgent");
    assert_eq!(server.len(), 1);
    let server = server[0];
    assert_eq!(server.kind, KIND_SERVER);
    assert_eq!(hex(&server.parent_span_id), CALLER_SPAN_ID);

    let run = named("invoke_agent");
    assert_eq!(run.len(), 1);
    let run = run[0];
    assert_eq!(run.kind, KIND_INTERNAL);
    assert_eq!(run.parent_span_id, server.span_id);
    assert_eq!(
        string_attribute(&run.attributes, "gen_ai.operation.name"),
        Some("invoke_agent")
    );
    assert_eq!(
        string_attribute(&run.attributes, "gen_ai.provider.name"),
        Some("openai")
    );
    assert_eq!(
        string_attribute(&run.attributes, "gen_ai.request.model"),
        Some("scripted-model")
    );
    assert_eq!(
        int_attribute(&run.attributes, "gen_ai.usage.input_tokens"),
        Some(1000)
    );
    assert_eq!(
        int_attribute(&run.attributes, "gen_ai.usage.output_tokens"),
        Some(100)
    );
    assert_eq!(
        int_attribute(&run.attributes, "tool_cli.tool_calls"),
        Some(3)
    );
    assert_eq!(
        string_attribute(&run.attributes, "tool_cli.run.id"),
        Some("otel-run")
    );

    let chats = named("chat scripted-model");
    assert_eq!(chats.len(), 4);
    let mut inputs: Vec<i64> = chats
        .iter()
        .map(|chat| {
            assert_eq!(chat.kind, KIND_CLIENT);
            assert_eq!(chat.parent_span_id, run.span_id);
            // What the provider's answer said of itself (the scripted chunks' `model`, `id`).
            assert_eq!(
                string_attribute(&chat.attributes, "gen_ai.response.model"),
                Some("scripted-model")
            );
            assert_eq!(
                string_attribute(&chat.attributes, "gen_ai.response.id"),
                Some("chatcmpl-1")
            );
            int_attribute(&chat.attributes, "gen_ai.usage.input_tokens").expect("input tokens")
        })
        .collect();
    inputs.sort_unstable();
    assert_eq!(inputs, [100, 200, 300, 400]);

    let tools = named("execute_tool echo");
    assert_eq!(tools.len(), 3);
    for tool in &tools {
        assert_eq!(tool.kind, KIND_INTERNAL);
        assert_eq!(tool.parent_span_id, run.span_id);
        for (key, value) in [
            ("gen_ai.operation.name", "execute_tool"),
            ("gen_ai.tool.name", "echo"),
            ("mcp.method.name", "tools/call"),
            ("network.transport", "pipe"),
            ("tool_cli.server", "alpha"),
            // The model's id of the call, from its `tool_calls` entry.
            ("gen_ai.tool.call.id", "call_1"),
        ] {
            assert_eq!(
                string_attribute(&tool.attributes, key),
                Some(value),
                "{key}"
            );
        }
    }
    // Each upstream request carried its execute_tool span's context.
    let mut sent: Vec<String> = upstream_calls(&record)
        .iter()
        .map(|call| {
            call["params"]["_meta"]["traceparent"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    let mut expected: Vec<String> = tools
        .iter()
        .map(|tool| format!("00-{CALLER_TRACE_ID}-{}-01", hex(&tool.span_id)))
        .collect();
    sent.sort();
    expected.sort();
    assert_eq!(sent, expected);

    // The GenAI metrics arrive too.
    receiver.wait_until("the GenAI metrics", WAIT, |arrivals| {
        let names = metric_names(arrivals);
        names
            .iter()
            .any(|name| name == "gen_ai.client.operation.duration")
            && names.iter().any(|name| name == "gen_ai.client.token.usage")
    });
}

#[test]
fn a_streamable_http_server_gets_the_context_as_headers_too() {
    let receiver = OtlpReceiver::start();
    let peer = tool_cli_tests::HttpFaultServer::start(&[]);
    let daemon = Daemon::start_with(
        json!({"mcpServers": {"remote": {"url": peer.url("/mcp")}}}),
        DaemonOptions {
            env: otel_env(&receiver),
            ..DaemonOptions::default()
        },
    );
    // `echo_request` fails with a JSON-RPC error reflecting the HTTP request it got.
    let traceparent = caller_traceparent();
    let answer = post_with(
        &daemon,
        &[("traceparent", traceparent.as_str())],
        &json!({"jsonrpc": "2.0", "id": 1, "method": "callTool",
                "params": {"server": "remote", "tool": "echo_request", "arguments": {}}}),
    );
    let reflected = answer["error"]["message"]
        .as_str()
        .unwrap_or_else(|| panic!("an error reflecting the request: {answer}"))
        .to_ascii_lowercase();
    let spans = receiver.wait_for_spans(2, WAIT);
    let client = spans
        .iter()
        .find(|span| span.kind == KIND_CLIENT)
        .expect("a CLIENT span");
    assert_eq!(
        string_attribute(&client.attributes, "network.transport"),
        Some("tcp")
    );
    let expected = format!(
        "traceparent: 00-{CALLER_TRACE_ID}-{}-01",
        hex(&client.span_id)
    );
    assert!(reflected.contains(&expected), "{expected} in {reflected}");
}

#[test]
fn captured_content_is_redacted_as_the_trace_file_is() {
    let receiver = OtlpReceiver::start();
    let dir = scratch();
    let record = dir.path().join("received.jsonl");
    let secret = "sk-configured-secret-b71e";
    let mut env = otel_env(&receiver);
    env.push((
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT".into(),
        "true".into(),
    ));
    env.push(("ALPHA_KEY".into(), secret.into()));
    let mut server = fault_server_recording(&record, &[]);
    server["env"] = json!({"ALPHA_KEY": "${ALPHA_KEY}"});
    let daemon = Daemon::start_with(
        json!({"mcpServers": {"alpha": server}}),
        DaemonOptions {
            env,
            ..DaemonOptions::default()
        },
    );
    let result = daemon.call_tool(
        "alpha",
        "echo",
        json!({"nonce": format!("key {secret}"), "password": "hunter2"}),
    );
    assert_eq!(
        result["structuredContent"]["nonce"],
        format!("key {secret}"),
        "the caller gets the live answer"
    );
    let spans = receiver.wait_for_spans(2, WAIT);
    let client = spans.iter().find(|span| span.kind == KIND_CLIENT).unwrap();
    let arguments = string_attribute(&client.attributes, "gen_ai.tool.call.arguments")
        .expect("arguments captured when opted in");
    let result = string_attribute(&client.attributes, "gen_ai.tool.call.result")
        .expect("the result captured when opted in");
    // The JSONL trace's marker and rules: a configured secret inside a string, and the whole
    // value of a credential-named member.
    let redacted = tool_cli_protocol::trace::REDACTED;
    assert!(
        arguments.contains(&format!("key {redacted}")),
        "{arguments}"
    );
    assert!(
        arguments.contains(&format!("\"password\":\"{redacted}\"")),
        "{arguments}"
    );
    assert!(result.contains(&format!("key {redacted}")), "{result}");
    for span in &spans {
        let text = format!("{:?}", span.attributes);
        assert!(
            !text.contains(secret) && !text.contains("hunter2"),
            "{text}"
        );
    }
}

#[test]
fn a_reload_notes_that_the_telemetry_section_needs_a_restart() {
    let dir = scratch();
    let record = dir.path().join("received.jsonl");
    let daemon =
        Daemon::start(json!({"mcpServers": {"alpha": fault_server_recording(&record, &[])}}));
    let changed = json!({"mcpServers": {"alpha": fault_server_recording(&record, &[])},
                         "telemetry": {"endpoint": "http://127.0.0.1:9"}});
    std::fs::write(&daemon.config_path, changed.to_string()).expect("rewrite the config");
    let reloaded = daemon.call("reloadConfig", json!({}));
    let notes = reloaded["notes"].to_string();
    assert!(
        notes.contains(
            "the \\\"telemetry\\\" section changed; it takes effect when the daemon restarts"
        ),
        "{reloaded}"
    );
    let health = daemon.call("health", json!({}));
    assert!(health.get("telemetry").is_none(), "still off: {health}");
}
