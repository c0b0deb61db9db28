//! The exporter against a real OTLP/HTTP receiver on loopback (built on the official
//! `opentelemetry-proto` messages): what arrives (names, kinds, parents, attributes, metrics),
//! and what happens when the collector throttles, refuses, stalls or is down.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use opentelemetry_proto::tonic::metrics::v1::metric;
use opentelemetry_proto::tonic::trace::v1::Span;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use serde_json::{Value, json};
use tool_cli_telemetry::context::SpanIds;
use tool_cli_telemetry::redact::NoRedaction;
use tool_cli_telemetry::settings::TelemetrySettings;
use tool_cli_telemetry::span::Timing;
use tool_cli_telemetry::spans::{
    AgentRun, CallExtras, ChatCall, Content, DaemonRequest, Listener, McpClientCall, Outcome,
    Target, TokenUsage, ToolExecution, Transport, Upstream,
};
use tool_cli_telemetry::testing::{OtlpReceiver, Reply, int_attribute, string_attribute};
use tool_cli_telemetry::{RetryPolicy, Telemetry};

const WAIT: Duration = Duration::from_secs(20);

/// Retries spaced by milliseconds, so the retry path runs in a test's time.
const QUICK_RETRIES: RetryPolicy = RetryPolicy {
    initial_backoff: Duration::from_millis(5),
    max_backoff: Duration::from_millis(20),
    max_attempts: 4,
};

fn settings(receiver: &OtlpReceiver, extra: &[(&str, &str)]) -> TelemetrySettings {
    let mut pairs: Vec<(String, String)> = vec![
        ("OTEL_EXPORTER_OTLP_ENDPOINT".into(), receiver.endpoint()),
        // Spans go out on a flush (or a full batch), so tests know which request carries them.
        ("OTEL_BSP_SCHEDULE_DELAY".into(), "600000".into()),
        ("OTEL_SERVICE_NAME".into(), "otlp-test".into()),
    ];
    for (name, value) in extra {
        pairs.retain(|(existing, _)| existing != name);
        pairs.push(((*name).to_owned(), (*value).to_owned()));
    }
    let lookup = move |name: &str| {
        pairs
            .iter()
            .find(|(existing, _)| existing == name)
            .map(|(_, value)| value.clone())
    };
    TelemetrySettings::resolve(None, &lookup, "tool-cli-daemon")
        .expect("valid settings")
        .expect("export on")
}

fn start(receiver: &OtlpReceiver, extra: &[(&str, &str)]) -> Telemetry {
    Telemetry::start_with(
        settings(receiver, extra),
        Arc::new(NoRedaction),
        QUICK_RETRIES,
    )
    .expect("the exporter starts")
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn flush(telemetry: &Telemetry) {
    assert!(
        runtime().block_on(telemetry.flush(WAIT)),
        "the exporter flushed within {WAIT:?}"
    );
}

fn timing(offset_ms: u64, duration_ms: u64) -> Timing {
    Timing {
        start: SystemTime::now() + Duration::from_millis(offset_ms),
        duration: Duration::from_millis(duration_ms),
    }
}

fn upstream<'a>(tool: &'a str, id: &'static str) -> Upstream<'a> {
    Upstream {
        method: "tools/call",
        target: Target::Tool(tool),
        request_id: Some(id),
        protocol_version: Some("2025-06-18"),
        mcp_session_id: None,
        transport: Transport::Stdio,
        server_address: None,
        server_port: None,
    }
}

fn one_call(telemetry: &Telemetry, ids: &SpanIds) {
    telemetry.mcp_client_call(
        ids,
        &McpClientCall {
            upstream: upstream("echo", "1"),
            outcome: Outcome::Ok,
            timing: timing(0, 3),
            extras: CallExtras::default(),
            content: Content::default(),
        },
    );
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

fn by_name<'a>(spans: &'a [Span], name: &str) -> Vec<&'a Span> {
    spans.iter().filter(|span| span.name == name).collect()
}

fn only<'a>(spans: &'a [Span], name: &str) -> &'a Span {
    let found = by_name(spans, name);
    assert_eq!(
        found.len(),
        1,
        "one span named {name:?} in {:?}",
        names(spans)
    );
    found[0]
}

fn names(spans: &[Span]) -> Vec<&str> {
    spans.iter().map(|span| span.name.as_str()).collect()
}

/// `runAgent` with three tool calls, recorded as the daemon will: the request's SERVER span
/// under the CLI's context, `invoke_agent`, two `chat` calls, three `execute_tool` calls that
/// carry their upstream MCP facts.
#[test]
fn an_agent_run_with_three_tool_calls_arrives_as_one_trace_tree() {
    let receiver = OtlpReceiver::start();
    let telemetry = start(
        &receiver,
        &[("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer%20t0ken")],
    );
    let caller = telemetry
        .extract_from_headers(
            ["00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"],
            [],
        )
        .unwrap();
    let request = telemetry.begin(Some(&caller));
    let run = request.child();
    let tools = ["list_tables", "query", "convert"];
    for (index, tool) in tools.iter().enumerate() {
        let chat = run.child();
        telemetry.chat(
            &chat,
            &ChatCall {
                provider: "openai",
                request_model: "gpt-4o-mini",
                response_model: Some("gpt-4o-mini-2024-07-18"),
                response_id: None,
                finish_reasons: &["tool_calls"],
                usage: TokenUsage {
                    input: Some(300),
                    output: Some(20),
                    cache_read: Some(256),
                    cache_creation: None,
                },
                in_process: false,
                streaming: true,
                max_tokens: None,
                server_address: Some("127.0.0.1"),
                server_port: Some(8080),
                conversation_id: Some("run-1"),
                cost_usd: Some(0.001),
                outcome: Outcome::Ok,
                timing: timing(index as u64 * 10, 4),
            },
        );
        let execution = run.child();
        telemetry.tool_execution(
            &execution,
            &ToolExecution {
                tool,
                tool_call_id: Some("call"),
                upstream: Some(upstream(tool, "9")),
                outcome: if index == 2 {
                    Outcome::ToolError
                } else {
                    Outcome::Ok
                },
                timing: timing(index as u64 * 10 + 5, 2),
                extras: CallExtras {
                    server: Some("demo"),
                    attempts: Some(1),
                    ..CallExtras::default()
                },
                content: Content::default(),
            },
        );
    }
    telemetry.agent_run(
        &run,
        &AgentRun {
            agent_name: None,
            provider: "openai",
            request_model: Some("gpt-4o-mini"),
            conversation_id: Some("run-1"),
            run_id: Some("run-1"),
            usage: TokenUsage {
                input: Some(900),
                output: Some(60),
                cache_read: Some(768),
                cache_creation: None,
            },
            tool_calls: Some(3),
            cost_usd: Some(0.003),
            outcome: Outcome::Ok,
            timing: timing(0, 40),
        },
    );
    telemetry.daemon_request(
        &request,
        &DaemonRequest {
            method: "runAgent",
            request_id: Some("5"),
            target: Target::None,
            listener: Listener::Tcp,
            outcome: Outcome::Ok,
            timing: timing(0, 41),
            extras: CallExtras::default(),
            content: Content::default(),
        },
    );
    flush(&telemetry);
    let spans = receiver.wait_for_spans(8, WAIT);
    assert_eq!(spans.len(), 8, "{:?}", names(&spans));

    let trace_id = "0af7651916cd43dd8448eb211c80319c";
    assert!(spans.iter().all(|span| hex(&span.trace_id) == trace_id));
    let server = only(&spans, "runAgent");
    assert_eq!(server.kind, SpanKind::Server as i32);
    assert_eq!(hex(&server.parent_span_id), "b7ad6b7169203331");
    let agent = only(&spans, "invoke_agent");
    assert_eq!(agent.kind, SpanKind::Internal as i32);
    assert_eq!(agent.parent_span_id, server.span_id);
    assert_eq!(
        int_attribute(&agent.attributes, "gen_ai.usage.cache_read.input_tokens"),
        Some(768)
    );
    let chats = by_name(&spans, "chat gpt-4o-mini");
    assert_eq!(chats.len(), 3);
    for chat in &chats {
        assert_eq!(chat.kind, SpanKind::Client as i32);
        assert_eq!(chat.parent_span_id, agent.span_id);
        assert_eq!(
            string_attribute(&chat.attributes, "gen_ai.provider.name"),
            Some("openai")
        );
        assert_eq!(
            string_attribute(&chat.attributes, "gen_ai.conversation.id"),
            Some("run-1")
        );
    }
    for tool in tools {
        let execution = only(&spans, &format!("execute_tool {tool}"));
        assert_eq!(execution.kind, SpanKind::Internal as i32);
        assert_eq!(execution.parent_span_id, agent.span_id);
        assert_eq!(
            string_attribute(&execution.attributes, "mcp.method.name"),
            Some("tools/call")
        );
        assert_eq!(
            string_attribute(&execution.attributes, "network.transport"),
            Some("pipe")
        );
        assert_eq!(
            string_attribute(&execution.attributes, "tool_cli.server"),
            Some("demo")
        );
    }
    // No separate MCP span beside an execute_tool.
    assert!(by_name(&spans, "tools/call query").is_empty());
    let failed = only(&spans, "execute_tool convert");
    assert_eq!(
        string_attribute(&failed.attributes, "error.type"),
        Some("tool_error")
    );
    assert_eq!(failed.status.as_ref().unwrap().code, 2);

    let arrival = &receiver.arrivals()[0];
    assert_eq!(arrival.path, "/v1/traces");
    assert_eq!(
        arrival.header("content-type"),
        Some("application/x-protobuf")
    );
    assert_eq!(arrival.header("authorization"), Some("Bearer t0ken"));
    let resource = arrival.traces.as_ref().unwrap().resource_spans[0]
        .resource
        .as_ref()
        .unwrap();
    assert_eq!(
        string_attribute(&resource.attributes, "service.name"),
        Some("otlp-test")
    );
    assert!(string_attribute(&resource.attributes, "service.instance.id").is_some());
    let health = telemetry.health();
    assert_eq!(health.spans_exported, 8);
    assert_eq!(health.spans_dropped(), 0);
    assert!(health.traces_endpoint.unwrap().ends_with("/v1/traces"));
}

#[test]
fn a_call_tool_request_and_its_upstream_call_are_server_then_client() {
    let receiver = OtlpReceiver::start();
    let telemetry = start(&receiver, &[("OTEL_METRICS_EXPORTER", "none")]);
    let request = telemetry.begin(None);
    let upstream_ids = request.child();
    let mut params = json!({"name": "echo", "arguments": {}})
        .as_object()
        .unwrap()
        .clone();
    assert!(tool_cli_telemetry::context::inject_into_params(
        upstream_ids.upstream_context().unwrap(),
        &mut params
    ));
    // What the upstream server reads back is the CLIENT span's context.
    let seen = telemetry
        .extract_from_meta(params.get("_meta"))
        .expect("the injected context reads back");
    assert_eq!(seen.span_id, upstream_ids.context.span_id);
    telemetry.mcp_client_call(
        &upstream_ids,
        &McpClientCall {
            upstream: upstream("echo", "3"),
            outcome: Outcome::Ok,
            timing: timing(1, 2),
            extras: CallExtras::default(),
            content: Content::default(),
        },
    );
    telemetry.daemon_request(
        &request,
        &DaemonRequest {
            method: "callTool",
            request_id: Some("1"),
            target: Target::Tool("echo"),
            listener: Listener::Tcp,
            outcome: Outcome::Ok,
            timing: timing(0, 4),
            extras: CallExtras {
                server: Some("everything"),
                selection_rule: Some("named"),
                ..CallExtras::default()
            },
            content: Content::default(),
        },
    );
    flush(&telemetry);
    let spans = receiver.wait_for_spans(2, WAIT);
    assert_eq!(spans.len(), 2);
    // Both spans share one name: the MCP server span (daemon) and client span (upstream).
    let server = spans
        .iter()
        .find(|span| span.kind == SpanKind::Server as i32)
        .unwrap();
    let client = spans
        .iter()
        .find(|span| span.kind == SpanKind::Client as i32)
        .unwrap();
    assert_eq!(server.name, "tools/call echo");
    assert_eq!(client.name, "tools/call echo");
    assert!(server.parent_span_id.is_empty());
    assert_eq!(client.parent_span_id, server.span_id);
    assert_eq!(
        string_attribute(&server.attributes, "rpc.method"),
        Some("callTool")
    );
    assert_eq!(
        string_attribute(&server.attributes, "tool_cli.selection.rule"),
        Some("named")
    );
    assert_eq!(
        string_attribute(&client.attributes, "jsonrpc.request.id"),
        Some("3")
    );
    assert!(
        receiver
            .arrivals()
            .iter()
            .all(|arrival| arrival.path == "/v1/traces"),
        "metrics are off"
    );
}

#[test]
fn metrics_arrive_cumulative_with_the_conventions_buckets() {
    let receiver = OtlpReceiver::start();
    let telemetry = start(&receiver, &[("OTEL_TRACES_EXPORTER", "none")]);
    let ids = telemetry.begin(None);
    assert!(!ids.recorded, "traces are off: no span identity of ours");
    for duration in [5, 15, 400] {
        telemetry.mcp_client_call(
            &ids,
            &McpClientCall {
                upstream: upstream("echo", "1"),
                outcome: Outcome::Ok,
                timing: timing(0, duration),
                extras: CallExtras {
                    server: Some("everything"),
                    ..CallExtras::default()
                },
                content: Content::default(),
            },
        );
    }
    telemetry.mcp_client_call(
        &ids,
        &McpClientCall {
            upstream: upstream("echo", "2"),
            outcome: Outcome::RpcError {
                code: -32602,
                message: "bad arguments",
                kind: None,
            },
            timing: timing(0, 1),
            extras: CallExtras {
                server: Some("everything"),
                ..CallExtras::default()
            },
            content: Content::default(),
        },
    );
    telemetry.daemon_request(
        &ids,
        &DaemonRequest {
            method: "callTool",
            request_id: Some("1"),
            target: Target::Tool("echo"),
            listener: Listener::Tcp,
            outcome: Outcome::Ok,
            timing: timing(0, 30),
            extras: CallExtras::default(),
            content: Content::default(),
        },
    );
    telemetry.chat(
        &ids,
        &ChatCall {
            provider: "anthropic",
            request_model: "claude-sonnet-4",
            response_model: None,
            response_id: None,
            finish_reasons: &[],
            usage: TokenUsage {
                input: Some(1000),
                output: Some(50),
                cache_read: None,
                cache_creation: None,
            },
            in_process: false,
            streaming: false,
            max_tokens: None,
            server_address: None,
            server_port: None,
            conversation_id: None,
            cost_usd: None,
            outcome: Outcome::Ok,
            timing: timing(0, 700),
        },
    );
    flush(&telemetry);
    let arrivals = receiver.wait_until("a metric export", WAIT, |arrivals| {
        arrivals.iter().any(|arrival| arrival.metrics.is_some())
    });
    assert!(arrivals.iter().all(|arrival| arrival.path == "/v1/metrics"));
    let metrics = receiver.metrics();
    let histogram = |name: &str| match metrics
        .iter()
        .find(|metric| metric.name == name)
        .and_then(|metric| metric.data.clone())
    {
        Some(metric::Data::Histogram(histogram)) => histogram,
        other => panic!("{name}: {other:?}"),
    };
    let client = histogram("mcp.client.operation.duration");
    assert_eq!(client.aggregation_temporality, 2, "cumulative");
    assert_eq!(client.data_points.len(), 2, "success and the -32602 error");
    let ok = client
        .data_points
        .iter()
        .find(|point| string_attribute(&point.attributes, "error.type").is_none())
        .unwrap();
    assert_eq!(ok.count, 3);
    assert_eq!(
        ok.explicit_bounds,
        vec![
            0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0
        ]
    );
    assert_eq!(ok.bucket_counts[0], 1, "5 ms");
    assert_eq!(ok.bucket_counts[1], 1, "15 ms");
    assert_eq!(ok.bucket_counts[5], 1, "400 ms");
    assert_eq!(
        string_attribute(&ok.attributes, "tool_cli.server"),
        Some("everything")
    );
    assert_eq!(
        string_attribute(&ok.attributes, "network.transport"),
        Some("pipe")
    );
    let failed = client
        .data_points
        .iter()
        .find(|point| string_attribute(&point.attributes, "error.type") == Some("-32602"))
        .unwrap();
    assert_eq!(failed.count, 1);
    let server = histogram("mcp.server.operation.duration");
    assert_eq!(
        string_attribute(&server.data_points[0].attributes, "mcp.method.name"),
        Some("tools/call")
    );
    let duration = histogram("gen_ai.client.operation.duration");
    assert_eq!(duration.data_points[0].explicit_bounds[2], 0.04);
    let tokens = histogram("gen_ai.client.token.usage");
    assert_eq!(tokens.data_points.len(), 2);
    let input = tokens
        .data_points
        .iter()
        .find(|point| string_attribute(&point.attributes, "gen_ai.token.type") == Some("input"))
        .unwrap();
    assert_eq!(input.sum, Some(1000.0));
    assert_eq!(
        string_attribute(&input.attributes, "gen_ai.provider.name"),
        Some("anthropic")
    );
    assert!(telemetry.health().metric_exports >= 1);
}

#[test]
fn throttling_and_unavailability_are_retried_until_accepted() {
    let receiver = OtlpReceiver::start();
    receiver.script([
        Reply::Status {
            status: 429,
            retry_after: Some("0".to_owned()),
        },
        Reply::status(503),
        Reply::status(502),
    ]);
    let telemetry = start(&receiver, &[("OTEL_METRICS_EXPORTER", "none")]);
    let ids = telemetry.begin(None);
    one_call(&telemetry, &ids);
    flush(&telemetry);
    let spans = receiver.wait_for_spans(1, WAIT);
    assert_eq!(spans.len(), 1, "delivered once");
    let answers: Vec<Option<u16>> = receiver
        .arrivals()
        .iter()
        .map(|arrival| arrival.answered)
        .collect();
    assert_eq!(answers, vec![Some(429), Some(503), Some(502), Some(200)]);
    let health = telemetry.health();
    assert_eq!(health.export_retries, 3);
    assert_eq!(health.spans_exported, 1);
    assert_eq!(health.spans_dropped(), 0);
}

#[test]
fn refused_batches_are_dropped_and_counted_by_reason() {
    let receiver = OtlpReceiver::start();
    receiver.script([Reply::status(413), Reply::status(400), Reply::status(500)]);
    let telemetry = start(&receiver, &[("OTEL_METRICS_EXPORTER", "none")]);
    for expected in 1..=3 {
        let ids = telemetry.begin(None);
        one_call(&telemetry, &ids);
        one_call(&telemetry, &ids.child());
        flush(&telemetry);
        let health = telemetry.health();
        assert_eq!(health.spans_dropped_refused, expected * 2);
        assert_eq!(health.export_retries, 0, "refusals are not retried");
        if expected == 1 {
            let error = health.last_error.unwrap();
            assert!(error.contains("413"), "{error}");
            assert!(error.contains("maxExportBatchSize"), "{error}");
        }
    }
    // The collector is fine again: the next batch gets through.
    let ids = telemetry.begin(None);
    one_call(&telemetry, &ids);
    flush(&telemetry);
    assert_eq!(receiver.wait_for_spans(1, WAIT).len(), 1);
    assert_eq!(telemetry.health().spans_exported, 1);
}

#[test]
fn a_partial_success_counts_the_rejected_spans() {
    let receiver = OtlpReceiver::start();
    receiver.script([Reply::AcceptRejecting(2)]);
    let telemetry = start(&receiver, &[("OTEL_METRICS_EXPORTER", "none")]);
    let ids = telemetry.begin(None);
    for _ in 0..5 {
        one_call(&telemetry, &ids.child());
    }
    flush(&telemetry);
    let health = telemetry.health();
    assert_eq!(health.spans_exported, 3);
    assert_eq!(health.spans_dropped_refused, 2);
    assert!(health.last_error.unwrap().contains("rejected 2 of 5"));
}

#[test]
fn a_stalled_collector_never_blocks_recording_and_overflow_is_counted() {
    let receiver = OtlpReceiver::start();
    receiver.script([Reply::Stall]);
    let telemetry = start(
        &receiver,
        &[
            ("OTEL_METRICS_EXPORTER", "none"),
            ("OTEL_BSP_MAX_QUEUE_SIZE", "16"),
            ("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "4"),
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "120000"),
        ],
    );
    let ids = telemetry.begin(None);
    // The first batch goes out and stalls; the thread waits on it.
    for _ in 0..4 {
        one_call(&telemetry, &ids.child());
    }
    receiver.wait_for_requests(1, WAIT);
    // Every one of these returns at once although the collector does not answer.
    for _ in 0..200 {
        one_call(&telemetry, &ids.child());
    }
    let health = telemetry.health();
    assert_eq!(health.spans_enqueued, 204);
    assert_eq!(health.queued, 16, "the queue is full");
    assert_eq!(health.spans_dropped_queue_full, 200 - 16);
    receiver.release();
    flush(&telemetry);
    let health = telemetry.health();
    assert_eq!(health.spans_exported, 4 + 16);
    assert_eq!(health.spans_exported + health.spans_dropped(), 204);
    assert_eq!(receiver.spans().len(), 20);
}

#[test]
fn a_collector_that_is_down_costs_calls_nothing_and_is_reported() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = closed.local_addr().unwrap();
    drop(closed);
    let lookup = move |name: &str| match name {
        "OTEL_EXPORTER_OTLP_ENDPOINT" => Some(format!("http://{address}")),
        "OTEL_METRICS_EXPORTER" => Some("none".to_owned()),
        "OTEL_BSP_SCHEDULE_DELAY" => Some("600000".to_owned()),
        _ => None,
    };
    let settings = TelemetrySettings::resolve(None, &lookup, "x")
        .unwrap()
        .unwrap();
    let telemetry = Telemetry::start_with(settings, Arc::new(NoRedaction), QUICK_RETRIES).unwrap();
    let ids = telemetry.begin(None);
    for _ in 0..10 {
        one_call(&telemetry, &ids.child());
    }
    flush(&telemetry);
    let health = telemetry.health();
    assert_eq!(health.spans_dropped_failed, 10);
    assert_eq!(
        health.export_retries,
        u64::from(QUICK_RETRIES.max_attempts - 1)
    );
    let error = health.last_error.unwrap();
    assert!(error.contains("stayed unavailable"), "{error}");
    assert!(error.contains(&address.to_string()), "{error}");
}

#[test]
fn gzip_bodies_are_sent_compressed_and_decode_to_the_same_spans() {
    let receiver = OtlpReceiver::start();
    let telemetry = start(
        &receiver,
        &[
            ("OTEL_METRICS_EXPORTER", "none"),
            ("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip"),
        ],
    );
    let ids = telemetry.begin(None);
    for _ in 0..50 {
        one_call(&telemetry, &ids.child());
    }
    flush(&telemetry);
    assert_eq!(receiver.wait_for_spans(50, WAIT).len(), 50);
    let arrivals = receiver.arrivals();
    assert!(
        arrivals
            .iter()
            .all(|arrival| arrival.header("content-encoding") == Some("gzip"))
    );
    let sent: usize = arrivals.iter().map(|arrival| arrival.body_bytes).sum();
    let decoded: usize = arrivals.iter().map(|arrival| arrival.decoded_bytes).sum();
    assert!(
        sent * 2 < decoded,
        "gzip shrinks spans: {sent} of {decoded} bytes"
    );
}

#[test]
fn captured_content_reaches_the_collector_only_redacted() {
    let receiver = OtlpReceiver::start();
    let secret = "sk-live-0123456789";
    let redactor = move |value: &mut Value| {
        fn walk(value: &mut Value, secret: &str) {
            match value {
                Value::String(text) => *text = text.replace(secret, "[REDACTED]"),
                Value::Array(items) => items.iter_mut().for_each(|item| walk(item, secret)),
                Value::Object(members) => members.values_mut().for_each(|item| walk(item, secret)),
                _ => {}
            }
        }
        walk(value, secret);
    };
    let telemetry = Telemetry::start_with(
        settings(
            &receiver,
            &[
                ("OTEL_METRICS_EXPORTER", "none"),
                ("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true"),
            ],
        ),
        Arc::new(redactor),
        QUICK_RETRIES,
    )
    .unwrap();
    let arguments = json!({"query": format!("key={secret}")});
    let ids = telemetry.begin(None);
    telemetry.mcp_client_call(
        &ids,
        &McpClientCall {
            upstream: upstream("search", "1"),
            outcome: Outcome::RpcError {
                code: -32000,
                message: &format!("rejected {secret}"),
                kind: None,
            },
            timing: timing(0, 1),
            extras: CallExtras::default(),
            content: Content {
                arguments: Some(&arguments),
                result: None,
            },
        },
    );
    flush(&telemetry);
    let spans = receiver.wait_for_spans(1, WAIT);
    let arrival = &receiver.arrivals()[0];
    assert_eq!(
        string_attribute(&spans[0].attributes, "gen_ai.tool.call.arguments"),
        Some(r#"{"query":"key=[REDACTED]"}"#)
    );
    assert_eq!(
        spans[0].status.as_ref().unwrap().message,
        "rejected [REDACTED]"
    );
    let raw = format!("{:?}", arrival.traces);
    assert!(!raw.contains(secret));
}

#[test]
fn unsampled_traces_are_not_exported_but_still_propagate() {
    let receiver = OtlpReceiver::start();
    let telemetry = start(&receiver, &[("OTEL_METRICS_EXPORTER", "none")]);
    let caller = telemetry
        .extract_from_headers(
            ["00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"],
            [],
        )
        .unwrap();
    let ids = telemetry.begin(Some(&caller));
    assert!(!ids.recorded);
    assert!(
        ids.upstream_context()
            .unwrap()
            .traceparent()
            .ends_with("-00")
    );
    one_call(&telemetry, &ids);
    let sampled = telemetry.begin(None);
    one_call(&telemetry, &sampled);
    flush(&telemetry);
    let spans = receiver.wait_for_spans(1, WAIT);
    assert_eq!(spans.len(), 1);
    assert_eq!(
        spans[0].trace_id,
        sampled.context.trace_id.to_bytes().to_vec()
    );
}

#[test]
fn spans_go_out_after_the_schedule_delay_without_a_flush() {
    let receiver = OtlpReceiver::start();
    let telemetry = start(
        &receiver,
        &[
            ("OTEL_METRICS_EXPORTER", "none"),
            ("OTEL_BSP_SCHEDULE_DELAY", "20"),
        ],
    );
    let ids = telemetry.begin(None);
    one_call(&telemetry, &ids);
    assert_eq!(receiver.wait_for_spans(1, WAIT).len(), 1);
}

#[test]
fn shutdown_exports_what_is_queued_and_stops() {
    let receiver = OtlpReceiver::start();
    let telemetry = start(&receiver, &[("OTEL_METRICS_EXPORTER", "none")]);
    let ids = telemetry.begin(None);
    one_call(&telemetry, &ids);
    assert!(runtime().block_on(telemetry.shutdown(WAIT)));
    assert_eq!(receiver.spans().len(), 1);
    // After shutdown the exporter is gone: a flush says so instead of waiting.
    assert!(!runtime().block_on(telemetry.flush(Duration::from_secs(5))));
}

/// HTTPS to a collector whose certificate a private CA signed, trusted through
/// `OTEL_EXPORTER_OTLP_CERTIFICATE`; without it, the export fails (counted) and says TLS.
#[test]
fn an_https_collector_is_trusted_through_the_certificate_setting() {
    use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().unwrap()).unwrap();
    let key = KeyPair::generate().unwrap();
    let server = CertificateParams::new(vec!["127.0.0.1".to_owned()])
        .unwrap()
        .signed_by(&key, &ca)
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ca_file = dir.path().join("ca.pem");
    std::fs::write(&ca_file, ca.pem()).unwrap();
    let receiver = OtlpReceiver::start_tls(&server.pem(), &key.serialize_pem());
    assert!(receiver.endpoint().starts_with("https://127.0.0.1:"));

    let ca_path = ca_file.display().to_string();
    let trusted = start(
        &receiver,
        &[
            ("OTEL_METRICS_EXPORTER", "none"),
            ("OTEL_EXPORTER_OTLP_CERTIFICATE", &ca_path),
        ],
    );
    let ids = trusted.begin(None);
    one_call(&trusted, &ids);
    flush(&trusted);
    assert_eq!(receiver.wait_for_spans(1, WAIT).len(), 1);

    let untrusted = start(&receiver, &[("OTEL_METRICS_EXPORTER", "none")]);
    let ids = untrusted.begin(None);
    one_call(&untrusted, &ids);
    flush(&untrusted);
    let health = untrusted.health();
    assert_eq!(health.spans_dropped_failed, 1);
    let error = health.last_error.unwrap();
    assert!(error.contains("TLS"), "{error}");
    assert_eq!(
        receiver.spans().len(),
        1,
        "nothing arrived from the untrusting exporter"
    );

    // A CA file that is not PEM fails at start-up, naming the setting.
    std::fs::write(&ca_file, "not a certificate").unwrap();
    let refused = Telemetry::start(
        settings(&receiver, &[("OTEL_EXPORTER_OTLP_CERTIFICATE", &ca_path)]),
        Arc::new(NoRedaction),
    )
    .unwrap_err()
    .to_string();
    assert!(
        refused.starts_with("OTEL_EXPORTER_OTLP_CERTIFICATE"),
        "{refused}"
    );
}
