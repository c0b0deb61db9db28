//! What OpenTelemetry export adds to one call, in process: the daemon's per-`callTool` work of
//! reading the caller's `traceparent`, choosing the span identities, injecting the upstream
//! context into the request's `_meta`, and building and enqueueing the SERVER and CLIENT spans
//! (and recording both histograms). Issue 28's target is ≤ 10 µs per call with export on.
//!
//! Rows, interleaved in rounds so machine noise hits all alike:
//! - (t0) export off (`Telemetry::disabled`): the pass-through the daemon does by default;
//! - (t1) export on, to a real OTLP receiver on loopback, content capture off;
//! - (t2) as (t1), with content capture on (arguments and a result, redacted).
//!
//! Each round records fewer spans than the queue holds and then waits for the exporter (not
//! timed), so the rows measure recording, never the cheaper drop path; the bench prints the
//! drops to prove it. It also prints the encoded size of a typical call's spans (protobuf, and
//! gzip), the figures docs/scale.md uses.
//!
//! Run with `cargo bench -p tool-cli-telemetry --bench record`.
//! `TOOL_CLI_BENCH_CALLS` sets the timed calls per row (default 100000).

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use prost::Message as _;
use serde_json::{Value, json};
use tool_cli_telemetry::context::inject_into_params;
use tool_cli_telemetry::redact::NoRedaction;
use tool_cli_telemetry::settings::TelemetrySettings;
use tool_cli_telemetry::span::Timing;
use tool_cli_telemetry::spans::{
    CallExtras, Content, DaemonRequest, Listener, McpClientCall, Outcome, Target, Transport,
    Upstream,
};
use tool_cli_telemetry::testing::OtlpReceiver;
use tool_cli_telemetry::{RetryPolicy, Telemetry};

const CALLER: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
/// Calls per round: two spans each, under the default queue of 2,048.
const CALLS_PER_ROUND: usize = 1000;

#[derive(Clone, Copy)]
enum Row {
    Off,
    On,
    OnWithContent,
}

const ROWS: [Row; 3] = [Row::Off, Row::On, Row::OnWithContent];

impl Row {
    fn label(self) -> &'static str {
        match self {
            Row::Off => "(t0) export off",
            Row::On => "(t1) export on",
            Row::OnWithContent => "(t2) export on, content captured",
        }
    }
}

/// One `callTool` as the daemon will record it.
fn one_call(telemetry: &Telemetry, arguments: &Value, result: &Value, capture: bool) {
    let caller = telemetry.extract_from_headers([CALLER], []);
    let request = telemetry.begin(caller.as_ref());
    let upstream = request.child();
    let mut params = json!({"name": "echo", "arguments": arguments})
        .as_object()
        .cloned()
        .unwrap_or_default();
    if let Some(context) = upstream.upstream_context() {
        inject_into_params(context, &mut params);
    }
    let content = if capture {
        Content {
            arguments: Some(arguments),
            result: Some(result),
        }
    } else {
        Content::default()
    };
    let now = SystemTime::now();
    telemetry.mcp_client_call(
        &upstream,
        &McpClientCall {
            upstream: Upstream {
                method: "tools/call",
                target: Target::Tool("echo"),
                request_id: Some("17"),
                protocol_version: Some("2025-06-18"),
                mcp_session_id: None,
                transport: Transport::Stdio,
                server_address: None,
                server_port: None,
            },
            outcome: Outcome::Ok,
            timing: Timing::ending_at(now, Duration::from_micros(800)),
            extras: CallExtras {
                server: Some("everything"),
                attempts: Some(1),
                ..CallExtras::default()
            },
            content,
        },
    );
    telemetry.daemon_request(
        &request,
        &DaemonRequest {
            method: "callTool",
            request_id: Some("42"),
            target: Target::Tool("echo"),
            listener: Listener::Tcp,
            outcome: Outcome::Ok,
            timing: Timing::ending_at(now, Duration::from_micros(900)),
            extras: CallExtras {
                server: Some("everything"),
                session_id: Some("bench-session"),
                selection_rule: Some("named"),
                attempts: Some(1),
                call_id: Some("c-17"),
                ..CallExtras::default()
            },
            content,
        },
    );
    std::hint::black_box(params);
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn micros(duration: Duration) -> String {
    format!("{:.2} µs", duration.as_secs_f64() * 1e6)
}

fn start(receiver: &OtlpReceiver, capture: bool) -> Telemetry {
    let endpoint = receiver.endpoint();
    let lookup = move |name: &str| match name {
        "OTEL_EXPORTER_OTLP_ENDPOINT" => Some(endpoint.clone()),
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT" => Some(capture.to_string()),
        _ => None,
    };
    let settings = TelemetrySettings::resolve(None, &lookup, "bench")
        .expect("valid settings")
        .expect("export on");
    Telemetry::start_with(settings, Arc::new(NoRedaction), RetryPolicy::default())
        .expect("the exporter starts")
}

fn main() {
    let calls: usize = std::env::var("TOOL_CLI_BENCH_CALLS")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(100_000);
    let rounds = (calls / CALLS_PER_ROUND).max(1);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let receiver = OtlpReceiver::start();
    let off = Telemetry::disabled();
    let on = start(&receiver, false);
    let on_with_content = start(&receiver, true);
    let arguments = json!({"text": "hello from the benchmark", "count": 3});
    let result = json!({"content": [{"type": "text", "text": "Echo: hello from the benchmark"}]});

    let mut samples: Vec<Vec<Duration>> = vec![Vec::with_capacity(calls); ROWS.len()];
    for round in 0..rounds + 1 {
        for offset in 0..ROWS.len() {
            let index = (round + offset) % ROWS.len();
            let (telemetry, capture) = match ROWS[index] {
                Row::Off => (&off, false),
                Row::On => (&on, false),
                Row::OnWithContent => (&on_with_content, true),
            };
            for _ in 0..CALLS_PER_ROUND {
                let started = Instant::now();
                one_call(telemetry, &arguments, &result, capture);
                let elapsed = started.elapsed();
                // Round 0 warms up.
                if round > 0 {
                    samples[index].push(elapsed);
                }
            }
            if telemetry.is_enabled() {
                assert!(runtime.block_on(telemetry.flush(Duration::from_secs(60))));
            }
        }
    }

    let medians: Vec<Duration> = samples
        .iter_mut()
        .map(|row| {
            row.sort();
            percentile(row, 50.0)
        })
        .collect();
    println!("| measurement | calls | median | p90 | p99 | median − (t0) |");
    println!("|---|--:|--:|--:|--:|--:|");
    for (index, row) in ROWS.iter().enumerate() {
        let sorted = &samples[index];
        println!(
            "| {} | {} | {} | {} | {} | {:+.2} µs |",
            row.label(),
            sorted.len(),
            micros(medians[index]),
            micros(percentile(sorted, 90.0)),
            micros(percentile(sorted, 99.0)),
            (medians[index].as_secs_f64() - medians[0].as_secs_f64()) * 1e6
        );
    }
    for (telemetry, label) in [(&on, "(t1)"), (&on_with_content, "(t2)")] {
        let health = telemetry.health();
        println!(
            "\n{label}: spans exported {}, dropped {} (a drop would mean the row measured less \
             than the real work).",
            health.spans_exported,
            health.spans_dropped()
        );
    }
    let added = medians[1].as_secs_f64() - medians[0].as_secs_f64();
    println!(
        "Export adds {:.2} µs per call at the median (target ≤ 10 µs: {}).",
        added * 1e6,
        if added * 1e6 <= 10.0 { "met" } else { "missed" }
    );

    // Encoded sizes, from what the receiver decoded: protobuf bytes per span and gzip's ratio.
    let arrivals = receiver.arrivals();
    let (mut spans, mut bytes) = (0usize, 0usize);
    for arrival in arrivals
        .iter()
        .filter(|arrival| arrival.path == "/v1/traces")
    {
        if let Some(request) = &arrival.traces {
            let count: usize = request
                .resource_spans
                .iter()
                .flat_map(|resource| &resource.scope_spans)
                .map(|scope| scope.spans.len())
                .sum();
            // Only the rows without content: (t2)'s spans are larger by design.
            let has_content = format!(
                "{:?}",
                request.resource_spans.first().map(|r| &r.scope_spans)
            )
            .contains("gen_ai.tool.call.arguments");
            if !has_content {
                spans += count;
                bytes += request.encoded_len();
            }
        }
    }
    if spans > 0 {
        let sample = arrivals
            .iter()
            .filter_map(|arrival| arrival.traces.as_ref())
            .find(|request| !format!("{request:?}").contains("gen_ai.tool.call.arguments"))
            .expect("a batch without content");
        let plain = sample.encode_to_vec();
        let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut gzip, &plain).expect("gzip into memory");
        let compressed = gzip.finish().expect("gzip into memory");
        println!(
            "\nEncoded spans (callTool SERVER + upstream CLIENT, batches of ≤ 512): {:.0} bytes \
             per span in protobuf; gzip (fast) makes a batch {:.1}× smaller ({} → {} bytes).",
            bytes as f64 / spans as f64,
            plain.len() as f64 / compressed.len() as f64,
            plain.len(),
            compressed.len()
        );
    }
}
