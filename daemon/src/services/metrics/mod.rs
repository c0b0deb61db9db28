//! The metrics service: `GET /metrics`, the daemon's counters in the Prometheus text
//! exposition format.
//!
//! Calls are counted by [`CallMetrics`], a [`CallObserver`] of the pipeline: every finished call
//! lands in one [`ToolCounters`] per (server, tool), a set of atomics found through a read-locked
//! map (a write lock is taken only the first time a tool is seen), so recording a call never waits
//! on another call. What is not a call — each server's state, breaker, restarts and calls in
//! flight — is read from the pipeline's slots when the page is scraped. `render.rs` turns these
//! plain values into text (pure, unit-tested); `process.rs` reads the process basics from `/proc`.
//!
//! Only tools found in a server's catalog get series of their own: the page's size follows the
//! catalogs, never the names clients send (a refused call of an unknown name counts under one
//! shared label value).

mod process;
mod render;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use tokio::time::Instant;

use crate::pipeline::{CallContext, CallObserver, CallRecord, Pipeline};
use crate::resilience::breaker::BreakerState;

pub(crate) use render::{ServerSample, render};

/// Upper bounds of the latency histogram's buckets, in seconds (`+Inf` is implied).
pub(crate) const LATENCY_BUCKETS: [f64; 12] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

/// The `tool` label of calls whose tool is in no catalog the caller may see (an unknown tool or
/// server, a name outside the token's scope): they share one series, labelled `server=""`, so
/// that the names a client sends cannot grow the page.
pub(crate) const UNRESOLVED_TOOL: &str = "(unresolved)";

/// The counters of one (server, tool).
#[derive(Debug, Default)]
pub(crate) struct ToolCounters {
    calls: AtomicU64,
    errors: AtomicU64,
    /// Calls refused before anything was sent (policy, validation, breaker, busy).
    refused: AtomicU64,
    /// Cumulative counts per bucket of [`LATENCY_BUCKETS`], then `+Inf`.
    buckets: [AtomicU64; LATENCY_BUCKETS.len() + 1],
    /// Sum of latencies in microseconds (an integer, so it can be an atomic).
    latency_micros: AtomicU64,
}

/// A copy of one tool's counters, for rendering.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ToolSample {
    pub(crate) server: String,
    pub(crate) tool: String,
    pub(crate) calls: u64,
    pub(crate) errors: u64,
    pub(crate) refused: u64,
    /// Non-cumulative counts per bucket, then `+Inf`.
    pub(crate) buckets: Vec<u64>,
    pub(crate) latency_seconds_sum: f64,
}

impl ToolCounters {
    fn record(&self, record: &CallRecord) {
        self.calls.fetch_add(1, Ordering::Relaxed);
        if !record.success {
            self.errors.fetch_add(1, Ordering::Relaxed);
        }
        if !record.executed {
            self.refused.fetch_add(1, Ordering::Relaxed);
        }
        let seconds = record.latency.as_secs_f64();
        let bucket = LATENCY_BUCKETS
            .iter()
            .position(|bound| seconds <= *bound)
            .unwrap_or(LATENCY_BUCKETS.len());
        self.buckets[bucket].fetch_add(1, Ordering::Relaxed);
        self.latency_micros
            .fetch_add(record.latency.as_micros() as u64, Ordering::Relaxed);
    }

    fn sample(&self, server: &str, tool: &str) -> ToolSample {
        ToolSample {
            server: server.to_owned(),
            tool: tool.to_owned(),
            calls: self.calls.load(Ordering::Relaxed),
            errors: self.errors.load(Ordering::Relaxed),
            refused: self.refused.load(Ordering::Relaxed),
            buckets: self
                .buckets
                .iter()
                .map(|count| count.load(Ordering::Relaxed))
                .collect(),
            latency_seconds_sum: self.latency_micros.load(Ordering::Relaxed) as f64 / 1e6,
        }
    }
}

/// Counts every finished call per (server, tool).
#[derive(Debug, Default)]
pub(crate) struct CallMetrics {
    /// Keyed by (server, tool) of tools found in a catalog; a call whose tool was not is
    /// counted under `("", UNRESOLVED_TOOL)`.
    tools: RwLock<HashMap<(String, String), Arc<ToolCounters>>>,
}

impl CallMetrics {
    fn counters(&self, server: &str, tool: &str) -> Arc<ToolCounters> {
        let key = (server.to_owned(), tool.to_owned());
        if let Some(counters) = self.tools.read().unwrap().get(&key) {
            return Arc::clone(counters);
        }
        Arc::clone(self.tools.write().unwrap().entry(key).or_default())
    }

    /// Drops the counters of a server taken out of the set (`removeServer`, a reload that
    /// removed it), so its series leave `/metrics` with it.
    pub(crate) fn forget_server(&self, server: &str) {
        self.tools
            .write()
            .unwrap()
            .retain(|(counted, _), _| counted != server);
    }

    /// A copy of every tool's counters, sorted by server and tool.
    pub(crate) fn samples(&self) -> Vec<ToolSample> {
        let mut samples: Vec<ToolSample> = self
            .tools
            .read()
            .unwrap()
            .iter()
            .map(|((server, tool), counters)| counters.sample(server, tool))
            .collect();
        samples.sort_by(|a, b| (&a.server, &a.tool).cmp(&(&b.server, &b.tool)));
        samples
    }
}

impl CallObserver for CallMetrics {
    fn observe(&self, record: &CallRecord) {
        // Dry-runs ask a question; they are not calls.
        if record.dry_run {
            return;
        }
        // A record names a server only once its tool was found in that server's catalog;
        // anything else shares one series, whatever name the client sent.
        match record.server.as_deref() {
            Some(server) => self.counters(server, &record.tool).record(record),
            None => self.counters("", UNRESOLVED_TOOL).record(record),
        }
    }
}

/// The `/metrics` page over the pipeline's servers and the calls' counters.
pub(crate) struct Metrics {
    counters: Arc<CallMetrics>,
    pipeline: Arc<Pipeline>,
}

impl Metrics {
    /// The page over `pipeline`'s servers, with `counters` (one of the pipeline's observers).
    pub(crate) fn new(counters: Arc<CallMetrics>, pipeline: Arc<Pipeline>) -> Metrics {
        Metrics { counters, pipeline }
    }

    /// Drops the series of a server taken out of the set.
    pub(crate) fn forget_server(&self, server: &str) {
        self.counters.forget_server(server);
    }

    /// The `/metrics` page (the gate serves it to the owner token only): every server's state
    /// and every tool's counters, then the process.
    pub(crate) fn page(&self, _context: &CallContext) -> String {
        let now = Instant::now();
        let servers: Vec<ServerSample> = self
            .pipeline
            .slots()
            .iter()
            .map(|slot| {
                let status = slot.upstream.status();
                let breaker = match slot.guards.breaker.lock().unwrap().state(now) {
                    BreakerState::Closed => "closed",
                    BreakerState::Open { .. } => "open",
                    BreakerState::HalfOpen { .. } => "halfOpen",
                };
                let (in_flight, queued) = slot.guards.bulkhead.snapshot();
                ServerSample {
                    name: slot.upstream.info().name.clone(),
                    state: status.state.as_str(),
                    breaker,
                    restarts: u64::from(status.restarts),
                    in_flight: in_flight as u64,
                    queued: queued as u64,
                    tools: slot.upstream.catalog().len() as u64,
                    uptime_seconds: status.uptime.map(|uptime| uptime.as_secs_f64()),
                }
            })
            .collect();
        render(&servers, &self.counters.samples(), &process::sample())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    fn record(server: Option<&str>, tool: &str) -> CallRecord {
        let context = CallContext::new(crate::auth::Grant {
            token_id: "scoped".into(),
            is_owner: false,
            scope: Arc::new(crate::policy::Scope::unrestricted()),
        });
        let mut record = CallRecord::new(&context, tool, "0123456789abcdef".into());
        record.server = server.map(str::to_owned);
        record
    }

    /// The issue: every tool name any token sent, refused calls included, became a permanent
    /// series; 4,000 refused calls made a 300 MB page.
    #[test]
    fn calls_of_tools_in_no_catalog_share_one_series() {
        let metrics = CallMetrics::default();
        metrics.observe(&record(Some("demo"), "sql_query"));
        for index in 0..4000 {
            metrics.observe(&record(
                None,
                &format!("no_such_tool_{index}_{}", "x".repeat(200)),
            ));
        }
        let samples = metrics.samples();
        assert_eq!(
            samples.len(),
            2,
            "one series per catalog tool, one for the rest"
        );
        let unresolved = samples
            .iter()
            .find(|sample| sample.tool == UNRESOLVED_TOOL)
            .expect("the shared series");
        assert_eq!((unresolved.server.as_str(), unresolved.calls), ("", 4000));
        let page = render(&[], &samples, &process::ProcessSample::default());
        assert!(page.len() < 16 * 1024, "{} bytes", page.len());
    }
}
