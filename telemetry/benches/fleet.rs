//! A fleet in simulation, for docs/scale.md: N daemons (each its own `Telemetry`, exporter
//! thread and queue, as N processes would have) make `callTool`s at a steady rate against one
//! OTLP receiver on loopback, for a while; then what arrived is measured: spans and requests per
//! second, bytes per second on the wire and decoded, bytes per span, the exporter threads' CPU
//! per span, and the size of a metric export. The figures are then scaled to 1,000 daemons at
//! 50 calls per second each.
//!
//! Every call is what the daemon records for a `callTool`: a SERVER span and the upstream
//! CLIENT span, over five tools, one call in twenty failing with `isError`. One run exports
//! uncompressed, a second gzip.
//!
//! Run with `cargo bench -p tool-cli-telemetry --bench fleet`. Environment:
//! `TOOL_CLI_FLEET_DAEMONS` (default 20), `TOOL_CLI_FLEET_RATE` (calls per second per daemon,
//! default 50), `TOOL_CLI_FLEET_SECONDS` (default 10).

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use prost::Message as _;
use tool_cli_telemetry::redact::NoRedaction;
use tool_cli_telemetry::settings::TelemetrySettings;
use tool_cli_telemetry::span::Timing;
use tool_cli_telemetry::spans::{
    CallExtras, Content, DaemonRequest, Listener, McpClientCall, Outcome, Target, Transport,
    Upstream,
};
use tool_cli_telemetry::testing::OtlpReceiver;
use tool_cli_telemetry::{RetryPolicy, Telemetry};

const TOOLS: [&str; 5] = ["echo", "get-sum", "query", "list_tables", "describe_schema"];
const TARGET_DAEMONS: f64 = 1000.0;
const TARGET_RATE: f64 = 50.0;

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(default)
}

fn start(receiver: &OtlpReceiver, gzip: bool, daemon: u64) -> Telemetry {
    let endpoint = receiver.endpoint();
    let lookup = move |name: &str| match name {
        "OTEL_EXPORTER_OTLP_ENDPOINT" => Some(endpoint.clone()),
        "OTEL_EXPORTER_OTLP_COMPRESSION" => Some(if gzip { "gzip" } else { "none" }.to_owned()),
        "OTEL_RESOURCE_ATTRIBUTES" => Some(format!("host.name=laptop-{daemon:04}")),
        _ => None,
    };
    let settings = TelemetrySettings::resolve(None, &lookup, "tool-cli-daemon")
        .expect("valid settings")
        .expect("export on");
    Telemetry::start_with(settings, Arc::new(NoRedaction), RetryPolicy::default())
        .expect("the exporter starts")
}

fn call(telemetry: &Telemetry, number: u64) {
    let tool = TOOLS[(number % TOOLS.len() as u64) as usize];
    let outcome = if number % 20 == 19 {
        Outcome::ToolError
    } else {
        Outcome::Ok
    };
    let request = telemetry.begin(None);
    let upstream = request.child();
    let call_id = format!("c{number}");
    let now = SystemTime::now();
    telemetry.mcp_client_call(
        &upstream,
        &McpClientCall {
            upstream: Upstream {
                method: "tools/call",
                target: Target::Tool(tool),
                request_id: Some(&call_id),
                protocol_version: Some("2025-06-18"),
                mcp_session_id: None,
                transport: Transport::Stdio,
                server_address: None,
                server_port: None,
            },
            outcome,
            timing: Timing::ending_at(now, Duration::from_micros(700 + number % 900)),
            extras: CallExtras {
                server: Some("demo"),
                attempts: Some(1),
                ..CallExtras::default()
            },
            content: Content::default(),
        },
    );
    telemetry.daemon_request(
        &request,
        &DaemonRequest {
            method: "callTool",
            request_id: Some(&call_id),
            target: Target::Tool(tool),
            listener: Listener::Tcp,
            outcome,
            timing: Timing::ending_at(now, Duration::from_micros(900 + number % 900)),
            extras: CallExtras {
                server: Some("demo"),
                session_id: Some("agent-session-1"),
                selection_rule: Some("named"),
                attempts: Some(1),
                call_id: Some(&call_id),
                ..CallExtras::default()
            },
            content: Content::default(),
        },
    );
}

/// CPU seconds of this process's threads named `tool-cli-otlp`, from `schedstat` (nanoseconds
/// on the CPU; `stat`'s clock ticks are too coarse for threads this idle).
fn exporter_cpu_seconds() -> f64 {
    let mut nanos = 0u64;
    if let Ok(tasks) = std::fs::read_dir("/proc/self/task") {
        for task in tasks.flatten() {
            let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
            if comm.trim() != "tool-cli-otlp" {
                continue;
            }
            let schedstat =
                std::fs::read_to_string(task.path().join("schedstat")).unwrap_or_default();
            nanos += schedstat
                .split_whitespace()
                .next()
                .and_then(|value| value.parse::<u64>().ok())
                .unwrap_or(0);
        }
    }
    nanos as f64 / 1e9
}

struct Run {
    label: &'static str,
    seconds: f64,
    spans: usize,
    requests: usize,
    wire_bytes: usize,
    decoded_bytes: usize,
    dropped: u64,
    exporter_cpu: f64,
    metric_export_bytes: usize,
    metric_points: usize,
}

fn run(gzip: bool, daemons: u64, rate: u64, seconds: u64) -> Run {
    let receiver = OtlpReceiver::start();
    let fleet: Vec<Telemetry> = (0..daemons)
        .map(|daemon| start(&receiver, gzip, daemon))
        .collect();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let cpu_before = exporter_cpu_seconds();
    let started = Instant::now();
    runtime.block_on(async {
        let mut drivers = tokio::task::JoinSet::new();
        for telemetry in &fleet {
            let telemetry = telemetry.clone();
            drivers.spawn(async move {
                let mut ticker = tokio::time::interval(Duration::from_micros(1_000_000 / rate));
                ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                let deadline = tokio::time::Instant::now() + Duration::from_secs(seconds);
                let mut number = 0;
                while tokio::time::Instant::now() < deadline {
                    ticker.tick().await;
                    call(&telemetry, number);
                    number += 1;
                }
            });
        }
        while drivers.join_next().await.is_some() {}
        for telemetry in &fleet {
            telemetry.flush(Duration::from_secs(60)).await;
        }
    });
    let elapsed = started.elapsed().as_secs_f64();
    let exporter_cpu = exporter_cpu_seconds() - cpu_before;
    let dropped = fleet.iter().map(|t| t.health().spans_dropped()).sum();
    let arrivals = receiver.arrivals();
    let traces: Vec<_> = arrivals.iter().filter(|a| a.path == "/v1/traces").collect();
    let spans = receiver.spans().len();
    let metric = arrivals
        .iter()
        .rev()
        .find_map(|arrival| arrival.metrics.clone())
        .expect("a metric export");
    let metric_points: usize = metric
        .resource_metrics
        .iter()
        .flat_map(|resource| &resource.scope_metrics)
        .flat_map(|scope| &scope.metrics)
        .map(|metric| match &metric.data {
            Some(opentelemetry_proto::tonic::metrics::v1::metric::Data::Histogram(h)) => {
                h.data_points.len()
            }
            _ => 0,
        })
        .sum();
    Run {
        label: if gzip { "gzip" } else { "uncompressed" },
        seconds: elapsed,
        spans,
        requests: traces.len(),
        wire_bytes: traces.iter().map(|a| a.body_bytes).sum(),
        decoded_bytes: traces.iter().map(|a| a.decoded_bytes).sum(),
        dropped,
        exporter_cpu,
        metric_export_bytes: metric.encoded_len(),
        metric_points,
    }
}

fn main() {
    let daemons = env("TOOL_CLI_FLEET_DAEMONS", 20);
    let rate = env("TOOL_CLI_FLEET_RATE", 50);
    let seconds = env("TOOL_CLI_FLEET_SECONDS", 10);
    println!(
        "Simulated: {daemons} daemons × {rate} callTool/s × {seconds} s (2 spans per call), \
         default batching (512 spans or 5 s)."
    );
    println!(
        "\n| export | spans received | spans/s | requests/s | bytes/span on the wire | \
         bytes/span decoded | exporter CPU µs/span | dropped |"
    );
    println!("|---|--:|--:|--:|--:|--:|--:|--:|");
    let runs: Vec<Run> = [false, true]
        .into_iter()
        .map(|gzip| run(gzip, daemons, rate, seconds))
        .collect();
    for run in &runs {
        println!(
            "| {} | {} | {:.0} | {:.1} | {:.0} | {:.0} | {:.2} | {} |",
            run.label,
            run.spans,
            run.spans as f64 / run.seconds,
            run.requests as f64 / run.seconds,
            run.wire_bytes as f64 / run.spans as f64,
            run.decoded_bytes as f64 / run.spans as f64,
            run.exporter_cpu * 1e6 / run.spans as f64,
            run.dropped
        );
    }
    let metric = &runs[0];
    println!(
        "\nOne metric export: {} bytes for {} histogram points ({:.0} bytes per point).",
        metric.metric_export_bytes,
        metric.metric_points,
        metric.metric_export_bytes as f64 / metric.metric_points.max(1) as f64
    );
    let spans_per_second = TARGET_DAEMONS * TARGET_RATE * 2.0;
    println!(
        "\nAt {TARGET_DAEMONS} daemons × {TARGET_RATE} calls/s: {spans_per_second:.0} spans/s;"
    );
    // A daemon exports when 512 spans wait or every 5 s, whichever comes first.
    let requests_per_daemon = (TARGET_RATE * 2.0 / 512.0).max(1.0 / 5.0);
    for run in &runs {
        let per_span = run.wire_bytes as f64 / run.spans as f64;
        println!(
            "  {}: {:.1} MB/s ({:.0} Mbit/s) into the collector, {:.0} export requests/s \
             (one per daemon every {:.1} s), {:.2} CPU cores of exporting across the fleet",
            run.label,
            spans_per_second * per_span / 1e6,
            spans_per_second * per_span * 8.0 / 1e6,
            TARGET_DAEMONS * requests_per_daemon,
            1.0 / requests_per_daemon,
            spans_per_second * run.exporter_cpu / run.spans as f64
        );
    }
}
