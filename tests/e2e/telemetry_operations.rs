//! OpenTelemetry export of the upstream MCP operations other than a tool call, and the MCP
//! conventions' connection attributes (docs/observability.md): `listPrompts`, `getPrompt`,
//! `listResources` and `readResource` each send a CLIENT span `{mcp.method.name} {target}` under
//! the request's SERVER span, with the trace context injected into the request; every upstream
//! span carries `jsonrpc.request.id` (the id the server received), `mcp.protocol.version` (the
//! version negotiated with that server) and, for a Streamable HTTP server, `mcp.session.id`,
//! `server.address` and `server.port`.

use std::time::Duration;

use serde_json::{Value, json};
use tool_cli_telemetry::testing::{
    OtlpReceiver, Span as ProtoSpan, int_attribute, string_attribute,
};
use tool_cli_tests::{Daemon, DaemonOptions, HttpPeer, fault_server_recording, scratch};

const WAIT: Duration = Duration::from_secs(30);
const KIND_SERVER: i32 = 2;
const KIND_CLIENT: i32 = 3;
const CALLER_TRACE_ID: &str = "0af7651916cd43dd8448eb211c80319c";

fn otel_env(receiver: &OtlpReceiver) -> Vec<(String, String)> {
    vec![
        ("OTEL_EXPORTER_OTLP_ENDPOINT".into(), receiver.endpoint()),
        ("OTEL_BSP_SCHEDULE_DELAY".into(), "50".into()),
        ("OTEL_METRIC_EXPORT_INTERVAL".into(), "200".into()),
    ]
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// POSTs one request under the caller's span; the answer's `result`.
fn call_traced(daemon: &Daemon, method: &str, params: Value) -> Value {
    let auth = format!("Bearer {}", daemon.token);
    let traceparent = format!("00-{CALLER_TRACE_ID}-b7ad6b7169203331-01");
    let request = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
    let (status, body) = daemon.raw_post(
        &[
            ("Authorization", auth.as_str()),
            ("traceparent", traceparent.as_str()),
        ],
        request.to_string().as_bytes(),
    );
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    let answer: Value = serde_json::from_slice(&body).expect("a JSON answer");
    assert!(answer["error"].is_null(), "{answer}");
    answer["result"].clone()
}

/// A daemon exporting to a local OTLP receiver, with one stdio server `alpha` (the fault server)
/// recording every message it receives to `record`.
struct TracedStdioServer {
    receiver: OtlpReceiver,
    record: std::path::PathBuf,
    daemon: Daemon,
    _dir: tempfile::TempDir,
}

impl TracedStdioServer {
    fn start() -> Self {
        let receiver = OtlpReceiver::start();
        let dir = scratch();
        let record = dir.path().join("received.jsonl");
        let daemon = Daemon::start_with(
            json!({"mcpServers": {"alpha": fault_server_recording(&record, &[])}}),
            DaemonOptions {
                env: otel_env(&receiver),
                ..DaemonOptions::default()
            },
        );
        Self {
            receiver,
            record,
            daemon,
            _dir: dir,
        }
    }
}

fn client_span<'a>(spans: &'a [ProtoSpan], name: &str) -> &'a ProtoSpan {
    spans
        .iter()
        .find(|span| span.kind == KIND_CLIENT && span.name == name)
        .unwrap_or_else(|| {
            let names: Vec<_> = spans.iter().map(|span| (&span.name, span.kind)).collect();
            panic!("no CLIENT span {name:?} among {names:?}")
        })
}

#[test]
fn every_upstream_operation_of_an_http_server_is_a_client_span_with_its_session() {
    let receiver = OtlpReceiver::start();
    let peer = HttpPeer::everything();
    let daemon = Daemon::start_with(
        json!({"mcpServers": {"everything": peer.server_config()}}),
        DaemonOptions {
            env: otel_env(&receiver),
            ..DaemonOptions::default()
        },
    );
    call_traced(&daemon, "listPrompts", json!({"server": "everything"}));
    call_traced(
        &daemon,
        "getPrompt",
        json!({"server": "everything", "name": "simple-prompt"}),
    );
    let resources = call_traced(&daemon, "listResources", json!({"server": "everything"}));
    let uri = resources["resources"][0]["uri"]
        .as_str()
        .unwrap_or_else(|| panic!("a resource: {resources}"))
        .to_owned();
    call_traced(
        &daemon,
        "readResource",
        json!({"server": "everything", "uri": uri}),
    );
    call_traced(
        &daemon,
        "callTool",
        json!({"server": "everything", "tool": "echo", "arguments": {"message": "hi"}}),
    );

    // Five requests (SERVER) and six upstream operations (CLIENT: `getPrompt` lists the
    // prompts first to check the arguments).
    let spans = receiver.wait_for_spans(11, WAIT);
    let expected = [
        ("prompts/list", "prompts/list"),
        ("prompts/get simple-prompt", "prompts/get"),
        ("resources/list", "resources/list"),
        ("resources/read", "resources/read"),
        ("tools/call echo", "tools/call"),
    ];
    let mut request_ids = Vec::new();
    for (name, method) in expected {
        let client = client_span(&spans, name);
        assert_eq!(hex(&client.trace_id), CALLER_TRACE_ID, "{name}");
        let parent = spans
            .iter()
            .find(|span| span.span_id == client.parent_span_id)
            .unwrap_or_else(|| panic!("{name}: its parent arrived"));
        assert_eq!(parent.kind, KIND_SERVER, "{name}: under the request's span");
        let text = |key| string_attribute(&client.attributes, key);
        assert_eq!(text("mcp.method.name"), Some(method), "{name}");
        assert_eq!(text("network.transport"), Some("tcp"), "{name}");
        assert_eq!(text("network.protocol.name"), Some("http"), "{name}");
        assert_eq!(text("server.address"), Some("127.0.0.1"), "{name}");
        assert_eq!(
            int_attribute(&client.attributes, "server.port"),
            Some(i64::from(peer.port())),
            "{name}"
        );
        assert_eq!(text("tool_cli.server"), Some("everything"), "{name}");
        let version = text("mcp.protocol.version").unwrap_or_else(|| panic!("{name}: version"));
        assert!(
            version.len() == 10 && version.starts_with("20"),
            "{name}: a dated MCP version, not {version}"
        );
        let session = text("mcp.session.id").unwrap_or_else(|| panic!("{name}: session"));
        assert!(!session.is_empty(), "{name}");
        request_ids.push(
            text("jsonrpc.request.id")
                .unwrap_or_else(|| panic!("{name}: request id"))
                .to_owned(),
        );
    }
    // One connection, so one session; a request id of its own for each request.
    let sessions: std::collections::BTreeSet<_> = spans
        .iter()
        .filter(|span| span.kind == KIND_CLIENT)
        .filter_map(|span| string_attribute(&span.attributes, "mcp.session.id"))
        .collect();
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    let distinct: std::collections::BTreeSet<_> = request_ids.iter().collect();
    assert_eq!(distinct.len(), request_ids.len(), "{request_ids:?}");
    assert_eq!(
        string_attribute(
            &client_span(&spans, "prompts/get simple-prompt").attributes,
            "gen_ai.prompt.name"
        ),
        Some("simple-prompt")
    );
    assert_eq!(
        string_attribute(
            &client_span(&spans, "resources/read").attributes,
            "mcp.resource.uri"
        ),
        Some(uri.as_str())
    );
}

#[test]
fn a_stdio_calls_span_names_the_request_id_the_server_received_and_the_version() {
    let traced = TracedStdioServer::start();
    let (receiver, record, daemon) = (&traced.receiver, &traced.record, &traced.daemon);
    call_traced(
        daemon,
        "callTool",
        json!({"server": "alpha", "tool": "echo", "arguments": {"nonce": "n"}}),
    );
    let spans = receiver.wait_for_spans(2, WAIT);
    let client = client_span(&spans, "tools/call echo");
    let messages = tool_cli_tests::recorded_messages(record);
    let initialize = messages
        .iter()
        .find(|message| message["method"] == "initialize")
        .expect("the server got initialize");
    let call = messages
        .iter()
        .find(|message| message["method"] == "tools/call")
        .expect("the server got the call");
    let sent_id = match &call["id"] {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    };
    let text = |key| string_attribute(&client.attributes, key);
    assert_eq!(text("jsonrpc.request.id"), Some(sent_id.as_str()));
    assert_eq!(text("network.transport"), Some("pipe"));
    // The fault server answers the version it was offered; the span names it.
    let offered = initialize["params"]["protocolVersion"].as_str().unwrap();
    assert_eq!(text("mcp.protocol.version"), Some(offered));
    // No session, no address for a child process.
    for key in ["mcp.session.id", "server.address"] {
        assert!(text(key).is_none(), "{key}");
    }
    assert!(int_attribute(&client.attributes, "server.port").is_none());
}

/// `tool-cli` under a script's trace: `TRACEPARENT`/`TRACESTATE` in its environment become the
/// request's `traceparent`/`tracestate` headers, so the daemon's SERVER span is the script's
/// span's child and the server receives the CLIENT span's context: one trace from the script
/// to the MCP server. A malformed `TRACEPARENT` is named on stderr and not sent; the call works.
#[test]
fn the_cli_continues_the_trace_in_traceparent_through_the_daemon_to_the_server() {
    let traced = TracedStdioServer::start();
    let (receiver, record, daemon) = (&traced.receiver, &traced.record, &traced.daemon);
    let script_span = "5e1f2c3d4b5a6978";
    let traceparent = format!("00-{CALLER_TRACE_ID}-{script_span}-01");
    let output = daemon.run_client(
        &["alpha", "echo", r#"{"nonce": "from-a-script"}"#],
        &[
            ("TRACEPARENT", traceparent.as_str()),
            ("TRACESTATE", "ci=build-42"),
        ],
    );
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(String::from_utf8_lossy(&output.stdout).contains("from-a-script"));

    let spans = receiver.wait_for_spans(2, WAIT);
    let client = client_span(&spans, "tools/call echo");
    let server = spans
        .iter()
        .find(|span| span.kind == KIND_SERVER && span.span_id == client.parent_span_id)
        .expect("the callTool request's span");
    // Every request the command sent is under the script's span.
    for span in spans.iter().filter(|span| span.kind == KIND_SERVER) {
        assert_eq!(hex(&span.parent_span_id), script_span, "{}", span.name);
    }
    assert_eq!(server.name, "tools/call echo");
    assert_eq!(hex(&server.trace_id), CALLER_TRACE_ID);
    assert_eq!(hex(&server.parent_span_id), script_span);
    assert_eq!(server.trace_state, "ci=build-42");
    let calls: Vec<Value> = tool_cli_tests::recorded_messages(record)
        .into_iter()
        .filter(|message| message["method"] == "tools/call")
        .collect();
    assert_eq!(
        calls[0]["params"]["_meta"]["traceparent"],
        format!("00-{CALLER_TRACE_ID}-{}-01", hex(&client.span_id))
    );
    assert_eq!(calls[0]["params"]["_meta"]["tracestate"], "ci=build-42");

    // Malformed: named on stderr, not sent (a new trace begins), and the call works.
    let output = daemon.run_client(
        &["alpha", "echo", r#"{"nonce": "second"}"#],
        &[("TRACEPARENT", "00-not-a-trace-01")],
    );
    assert!(output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("ignoring TRACEPARENT") && stderr.contains("00-not-a-trace-01"),
        "{stderr}"
    );
    let before = spans.len();
    let spans = receiver.wait_for_spans(before + 2, WAIT);
    let second = spans
        .iter()
        .filter(|span| span.kind == KIND_SERVER)
        .find(|span| hex(&span.trace_id) != CALLER_TRACE_ID)
        .expect("the second request began a trace of its own");
    assert!(second.parent_span_id.is_empty());
}
