//! What the orchestration stages cost per call, in process: no HTTP, no child process, no
//! JSON-RPC. Issue 8's target is that sessions + routing + traces add ≤ 10 µs per call at the
//! median; over HTTP (rows (h) and (i) of `call_latency`) that difference drowns in the noise of
//! an 800 µs round trip on a shared machine, so this bench measures the stages themselves.
//!
//! It builds the [`Services`] over two in-memory servers that both offer `echo` (so routing
//! has a real choice to make, and the routing rules all run) and answers each call at once. The
//! measurements, interleaved in rounds so machine noise hits all alike:
//!
//! - (s0) `callTool` naming the server, no session, traces off: the pipeline's floor;
//! - (s1) as (s0), in a session: the session store's guards, routing facts and record;
//! - (s2) as (s1), routed (no server): the five routing rules;
//! - (s3) as (s2), with the trace writer on (a JSONL line per call to a temp dir).
//!
//! Run with `cargo bench -p tool-cli-daemon --bench stages` (`scripts/bench.sh` runs it too).
//! `TOOL_CLI_BENCH_CALLS` sets the timed calls per measurement (default 200000).

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio::time::Instant;
use tool_cli_daemon::auth::{Grant, Token, TokenStore};
use tool_cli_daemon::catalog::Catalog;
use tool_cli_daemon::config::traces::TraceSettings;
use tool_cli_daemon::error::Error;
use tool_cli_daemon::pipeline::CallContext;
use tool_cli_daemon::policy::Scope;
use tool_cli_daemon::provider::{
    BoxFuture, CallTicket, ServerInfo, ServerSettings, ToolProvider, Upstream,
};
use tool_cli_daemon::services::Services;
use tool_cli_daemon::trace::Traces;
use tool_cli_protocol::methods::{CallToolParams, TransportKind};

/// A server that answers `echo` with its argument, at once.
struct Echo {
    info: ServerInfo,
    catalog: Arc<Catalog>,
}

impl Echo {
    fn new(name: &str, description: &str) -> Echo {
        let tools = vec![
            json!({
                "name": "echo",
                "description": description,
                "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}},
                                "required": ["text"]},
                "annotations": {"readOnlyHint": true},
            }),
            json!({
                "name": "noise",
                "description": "an unrelated tool, so the catalog is not a single entry",
                "inputSchema": {"type": "object"},
            }),
        ];
        Echo {
            info: ServerInfo {
                name: name.to_owned(),
                description: Some(format!("the {name} echo server")),
                tags: vec![],
                transport: TransportKind::Unknown,
                settings: ServerSettings::default(),
            },
            catalog: Arc::new(Catalog::new(tools)),
        }
    }
}

impl Upstream for Echo {
    fn info(&self) -> &ServerInfo {
        &self.info
    }

    fn catalog(&self) -> Arc<Catalog> {
        Arc::clone(&self.catalog)
    }

    fn call_tool<'a>(
        &'a self,
        _tool: &'a str,
        arguments: &'a Map<String, Value>,
        _deadline: Instant,
        _ticket: &'a CallTicket,
    ) -> BoxFuture<'a, Result<Value, Error>> {
        Box::pin(async move {
            Ok(json!({"content": [{"type": "text", "text": arguments["text"].clone()}]}))
        })
    }
}

struct Servers(Vec<Arc<dyn Upstream>>);

impl ToolProvider for Servers {
    fn servers(&self) -> Vec<Arc<dyn Upstream>> {
        self.0.clone()
    }
}

#[derive(Clone, Copy)]
enum Kind {
    Named,
    Session,
    Routed,
    Traced,
}

const KINDS: [Kind; 4] = [Kind::Named, Kind::Session, Kind::Routed, Kind::Traced];

impl Kind {
    fn label(self) -> &'static str {
        match self {
            Kind::Named => "(s0) named server, no session, no traces",
            Kind::Session => "(s1) as (s0), in a session",
            Kind::Routed => "(s2) as (s1), routed: no server named",
            Kind::Traced => "(s3) as (s2), traces on",
        }
    }
}

fn services(traces: Option<Arc<Traces>>) -> Arc<Services> {
    let provider = Arc::new(Servers(vec![
        Arc::new(Echo::new("alpha", "Echo the text back, from alpha")),
        Arc::new(Echo::new("beta", "Echo the text back, from beta")),
    ]));
    let builder = Services::builder(provider, Arc::new(TokenStore::new(Token::generate())));
    match traces {
        // As the daemon does: the writer is one of the pipeline's observers.
        Some(traces) => builder.traces(traces).build(),
        None => builder.build(),
    }
}

fn params(kind: Kind) -> CallToolParams {
    let mut arguments = Map::new();
    arguments.insert("text".to_owned(), json!("hello"));
    CallToolParams {
        server: matches!(kind, Kind::Named | Kind::Session).then(|| "alpha".to_owned()),
        tool: "echo".to_owned(),
        arguments: Some(arguments),
        session_id: (!matches!(kind, Kind::Named)).then(|| "bench-session".to_owned()),
        ..CallToolParams::default()
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn micros(d: Duration) -> String {
    format!("{:.2} µs", d.as_secs_f64() * 1e6)
}

fn main() {
    let calls: usize = std::env::var("TOOL_CLI_BENCH_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200_000);
    let rounds = 20;
    let per_round = (calls / rounds).max(1);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let dir = std::env::temp_dir().join(format!("tool-cli-stages-{}", std::process::id()));
    let traces = runtime.block_on(async {
        Traces::start(
            TraceSettings {
                path: dir.join("traces.jsonl"),
                verbose: false,
                max_bytes: 64 * 1024 * 1024,
                keep: 1,
            },
            vec![],
        )
    });
    let plain = services(None);
    let traced = services(Some(Arc::clone(&traces)));
    let grant = Grant {
        token_id: "bench".to_owned(),
        is_owner: true,
        scope: Arc::new(Scope::unrestricted()),
    };
    let mut samples: Vec<Vec<Duration>> = vec![Vec::with_capacity(calls); KINDS.len()];
    runtime.block_on(async {
        // Warm-up: every path, a tenth of the count.
        for kind in KINDS {
            let services = if matches!(kind, Kind::Traced) {
                &traced
            } else {
                &plain
            };
            for _ in 0..(calls / 10).max(100) {
                let context = CallContext::new(grant.clone());
                let result = services.calls().call_tool(params(kind), &context).await;
                assert!(result.is_ok(), "{}: {result:?}", kind.label());
            }
        }
        for round in 0..rounds {
            for offset in 0..KINDS.len() {
                let index = (round + offset) % KINDS.len();
                let kind = KINDS[index];
                let services = if matches!(kind, Kind::Traced) {
                    &traced
                } else {
                    &plain
                };
                for _ in 0..per_round {
                    let request = params(kind);
                    let context = CallContext::new(grant.clone());
                    let start = std::time::Instant::now();
                    let result = services.calls().call_tool(request, &context).await;
                    samples[index].push(start.elapsed());
                    assert!(result.is_ok());
                }
            }
        }
        traces.flush(Duration::from_secs(10)).await;
    });
    let _ = std::fs::remove_dir_all(&dir);
    let medians: Vec<Duration> = samples
        .iter_mut()
        .map(|s| {
            s.sort();
            percentile(s, 50.0)
        })
        .collect();
    println!("| measurement | calls | median | p90 | p99 | median − (s0) |");
    println!("|---|--:|--:|--:|--:|--:|");
    for (index, kind) in KINDS.iter().enumerate() {
        let s = &samples[index];
        let over = medians[index].as_secs_f64() - medians[0].as_secs_f64();
        println!(
            "| {} | {} | {} | {} | {} | {:+.2} µs |",
            kind.label(),
            s.len(),
            micros(medians[index]),
            micros(percentile(s, 90.0)),
            micros(percentile(s, 99.0)),
            over * 1e6
        );
    }
    let health = traces.health();
    println!(
        "\nTrace lines written {}, dropped {} (a drop would mean (s3) measured less than the \
         writer's real work).",
        health.written, health.dropped
    );
    let added = medians[3].as_secs_f64() - medians[0].as_secs_f64();
    println!(
        "Sessions + routing + traces add {:.2} µs per call at the median (target ≤ 10 µs: {}).",
        added * 1e6,
        if added * 1e6 <= 10.0 { "met" } else { "missed" }
    );
}
