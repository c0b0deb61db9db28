//! `health`: per server, its connection (from the provider) and its protection (from the
//! pipeline's guards): state, restarts, uptime, calls, errors, load, latency and breaker; and,
//! for the owner token, the trace writer's counts.

use std::time::UNIX_EPOCH;

use tokio::time::Instant;
use tool_cli_protocol::methods::{
    BreakerHealth, HealthParams, HealthResult, LatencySummary, ServerHealth, ServerState,
    ToolHealth,
};

use super::Discovery;
use crate::auth::Grant;
use crate::pipeline::CallContext;
use crate::pipeline::{Slot, visible};
use crate::resilience::breaker::BreakerState;

impl Discovery {
    /// `health`: every server the grant may see; with `tools`, per-tool statistics of the tools
    /// the grant may see.
    pub(crate) fn health(&self, params: HealthParams, context: &CallContext) -> HealthResult {
        let (grant, tools) = (&context.grant, params.tools);
        let now = Instant::now();
        let servers = self
            .pipeline
            .slots()
            .iter()
            .filter(|slot| grant.scope.permits_server(&slot.upstream.info().name))
            .map(|slot| {
                let info = slot.upstream.info();
                let status = slot.upstream.status();
                let guards = &slot.guards;
                let (breaker_state, failing) = {
                    let breaker = guards.breaker.lock().unwrap();
                    let counts = breaker.window_counts(now);
                    // Degraded: at least half of the recent calls failed.
                    (
                        breaker.state(now),
                        counts.failures > 0 && counts.failures * 2 >= counts.calls(),
                    )
                };
                let (breaker_view, breaker) = match breaker_state {
                    BreakerState::Closed => (
                        ServerState::Degraded,
                        BreakerHealth {
                            state: "closed".to_owned(),
                            retry_after_ms: None,
                        },
                    ),
                    BreakerState::Open { until } => (
                        ServerState::CircuitOpen,
                        BreakerHealth {
                            state: "open".to_owned(),
                            retry_after_ms: Some(
                                until.saturating_duration_since(now).as_millis() as u64
                            ),
                        },
                    ),
                    BreakerState::HalfOpen { .. } => (
                        ServerState::Degraded,
                        BreakerHealth {
                            state: "halfOpen".to_owned(),
                            retry_after_ms: None,
                        },
                    ),
                };
                let state = match (status.state, breaker.state.as_str()) {
                    (ServerState::Ready, "closed") if !failing => ServerState::Ready,
                    (ServerState::Ready, _) => breaker_view,
                    (other, _) => other,
                };
                let (in_flight, queued) = guards.bulkhead.snapshot();
                let tools = tools.then(|| tool_health(slot, grant));
                let stats = guards.stats.lock().unwrap();
                ServerHealth {
                    name: info.name.clone(),
                    state,
                    transport: info.transport,
                    // The connection's error is the server's; the last call error may be
                    // another caller's (its arguments echoed by the server): the owner's only.
                    last_error: status
                        .error
                        .or_else(|| stats.last_error.clone().filter(|_| grant.is_owner)),
                    restarts: status.restarts,
                    uptime_ms: status.uptime.map(|d| d.as_millis() as u64),
                    calls: stats.calls,
                    errors: stats.errors,
                    in_flight,
                    queued,
                    latency_ms: stats
                        .percentiles()
                        .map(|(p50, p95, samples)| LatencySummary { p50, p95, samples }),
                    breaker,
                    tools,
                    sampling: status.sampling,
                }
            })
            .collect();
        // The trace file's path and its troubles are the daemon owner's business, not a
        // sub-agent's.
        let traces = self
            .traces
            .as_ref()
            .filter(|_| grant.is_owner)
            .map(|traces| traces.health());
        let search = self.search.health().filter(|_| grant.is_owner);
        HealthResult {
            servers,
            traces,
            search,
        }
    }
}

/// The statistics of every tool of `slot` the grant may see, most called first.
fn tool_health(slot: &Slot, grant: &Grant) -> Vec<ToolHealth> {
    let catalog = slot.upstream.catalog();
    let table = slot.guards.tools.lock().unwrap();
    let mut tools: Vec<ToolHealth> = table
        .iter()
        .filter(|(name, _)| {
            catalog
                .get(name)
                .is_some_and(|tool| visible(grant, slot, tool))
        })
        .map(|(name, stats)| ToolHealth {
            name: name.clone(),
            calls: stats.calls,
            successes: stats.successes,
            latency_ms: stats
                .percentiles()
                .map(|(p50, p95, samples)| LatencySummary { p50, p95, samples }),
            last_used_ms: stats
                .last_used
                .and_then(|at| at.duration_since(UNIX_EPOCH).ok())
                .map(|since| since.as_millis() as u64),
        })
        .collect();
    tools.sort_by(|a, b| b.calls.cmp(&a.calls).then_with(|| a.name.cmp(&b.name)));
    tools
}
