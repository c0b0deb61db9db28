//! The protection the pipeline keeps for each server: breakers, bulkhead, degradation cache and
//! statistics.
//!
//! This state belongs to the pipeline, not to the provider: whatever serves the tools (the MCP
//! pool, a harness's own provider), every call is admitted, bounded and recorded the same way.
//! The locks are `std::sync::Mutex`es because each is held for a moment and never across an
//! await.
//!
//! Besides the server's breaker, each tool has a breaker of its own: a call that crashes or hangs
//! the server counts against that tool too, so one caller repeating a call that kills the server
//! is stopped at the tool, before the server's restarts run out and it is parked for everyone.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::SystemTime;

use tokio::time::Instant;

use super::stats::{CallStats, MAX_TOOLS_TRACKED, ToolTable};
use crate::provider::ServerSettings;
use crate::resilience::breaker::{Admission, BreakerConfig, CircuitBreaker, Outcome, Refusal};
use crate::resilience::bulkhead::Bulkhead;
use crate::resilience::cache::ResultCache;

/// Most entries in one server's degradation cache.
const CACHE_MAX_ENTRIES: usize = 256;

/// One server's breakers, bulkhead, cache and statistics.
pub(crate) struct ServerGuards {
    /// Refuses calls while the server is failing.
    pub(crate) breaker: Mutex<CircuitBreaker>,
    /// Refuses calls of one tool while that tool keeps failing the server.
    tool_breakers: Mutex<HashMap<String, CircuitBreaker>>,
    breaker_config: BreakerConfig,
    /// Bounds the calls in flight and waiting.
    pub(crate) bulkhead: Bulkhead,
    /// Last good results of read-only tools, served when the server fails (when configured).
    pub(crate) cache: Option<Mutex<ResultCache>>,
    /// Every attempt sent to the server, for `health`.
    pub(crate) stats: Mutex<CallStats>,
    /// Every call of each tool, for `health --tools` and ranking.
    pub(crate) tools: Mutex<ToolTable>,
}

/// Permission to send one attempt: from the server's breaker and the tool's.
pub(crate) struct Admissions {
    server: Admission,
    tool: Admission,
}

/// Why an attempt was refused before it was sent.
pub(crate) enum Refused {
    /// The server's breaker is open.
    Server(Refusal),
    /// The tool's breaker is open.
    Tool(Refusal),
}

impl ServerGuards {
    /// Fresh guards for a server with these settings.
    pub(crate) fn new(settings: &ServerSettings, breaker: BreakerConfig) -> ServerGuards {
        ServerGuards {
            breaker: Mutex::new(CircuitBreaker::new(breaker, Instant::now())),
            tool_breakers: Mutex::new(HashMap::new()),
            breaker_config: breaker,
            bulkhead: Bulkhead::new(settings.max_concurrent, settings.max_queued),
            cache: settings
                .cache_ttl
                .map(|ttl| Mutex::new(ResultCache::new(ttl, CACHE_MAX_ENTRIES))),
            stats: Mutex::new(CallStats::default()),
            tools: Mutex::new(ToolTable::default()),
        }
    }

    /// Asks the server's breaker, then the tool's; a refusal by the tool gives the server's
    /// admission back.
    pub(crate) fn admit(&self, tool: &str, now: Instant) -> Result<Admissions, Refused> {
        let server = self
            .breaker
            .lock()
            .unwrap()
            .try_acquire(now)
            .map_err(Refused::Server)?;
        let mut breakers = self.tool_breakers.lock().unwrap();
        if !breakers.contains_key(tool) && breakers.len() >= MAX_TOOLS_TRACKED {
            // Keep the table bounded: forget a closed breaker (it holds no state worth keeping).
            let closed = breakers
                .iter()
                .find(|(_, breaker)| {
                    matches!(
                        breaker.state(now),
                        crate::resilience::breaker::BreakerState::Closed
                    )
                })
                .map(|(name, _)| name.clone());
            if let Some(closed) = closed {
                breakers.remove(&closed);
            }
        }
        let breaker = breakers
            .entry(tool.to_owned())
            .or_insert_with(|| CircuitBreaker::new(self.breaker_config, now));
        match breaker.try_acquire(now) {
            Ok(tool) => Ok(Admissions { server, tool }),
            Err(refusal) => {
                drop(breakers);
                self.breaker.lock().unwrap().abandon(server);
                Err(Refused::Tool(refusal))
            }
        }
    }

    /// Records how an admitted attempt went, in both breakers.
    pub(crate) fn record(
        &self,
        tool: &str,
        admissions: Admissions,
        outcome: Outcome,
        now: Instant,
    ) {
        self.breaker
            .lock()
            .unwrap()
            .record(admissions.server, outcome, now);
        if let Some(breaker) = self.tool_breakers.lock().unwrap().get_mut(tool) {
            breaker.record(admissions.tool, outcome, now);
        }
    }

    /// Gives both admissions back: the attempt was never sent.
    pub(crate) fn abandon(&self, tool: &str, admissions: Admissions) {
        self.breaker.lock().unwrap().abandon(admissions.server);
        if let Some(breaker) = self.tool_breakers.lock().unwrap().get_mut(tool) {
            breaker.abandon(admissions.tool);
        }
    }

    /// Forgets every failure: the server's breaker and its tools' breakers start closed and
    /// empty, as after an operator's explicit restart.
    pub(crate) fn reset_breakers(&self, now: Instant) {
        *self.breaker.lock().unwrap() = CircuitBreaker::new(self.breaker_config, now);
        self.tool_breakers.lock().unwrap().clear();
    }

    /// Whether the server's or the tool's breaker would refuse a call now, without taking an
    /// admission: what a dry-run reports.
    pub(crate) fn would_refuse(&self, tool: &str, now: Instant) -> Option<Refused> {
        use crate::resilience::breaker::BreakerState;
        let open = |breaker: &CircuitBreaker| match breaker.state(now) {
            BreakerState::Open { until } => Some(Refusal::Open {
                until,
                retry_after: until.saturating_duration_since(now),
            }),
            _ => None,
        };
        if let Some(refusal) = open(&self.breaker.lock().unwrap()) {
            return Some(Refused::Server(refusal));
        }
        self.tool_breakers
            .lock()
            .unwrap()
            .get(tool)
            .and_then(open)
            .map(Refused::Tool)
    }

    /// Records one call of `tool` as its caller saw it.
    pub(crate) fn record_tool_call(
        &self,
        tool: &str,
        latency: std::time::Duration,
        success: bool,
        now: SystemTime,
    ) {
        self.tools
            .lock()
            .unwrap()
            .record(tool, latency, success, now);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn guards() -> ServerGuards {
        ServerGuards::new(
            &ServerSettings::default(),
            BreakerConfig {
                min_calls: 2,
                ..BreakerConfig::default()
            },
        )
    }

    #[tokio::test(start_paused = true)]
    async fn a_tool_that_keeps_failing_is_refused_while_others_still_run() {
        let guards = guards();
        // `bad` kills the server every time; `good` works in between, so the server's window
        // stays below its failure ratio while the tool's own window is all failures.
        for _ in 0..2 {
            for _ in 0..3 {
                let admitted = guards.admit("good", Instant::now()).ok().unwrap();
                guards.record("good", admitted, Outcome::Success, Instant::now());
            }
            let admitted = guards.admit("bad", Instant::now()).ok().unwrap();
            guards.record("bad", admitted, Outcome::Failure, Instant::now());
        }
        assert!(matches!(
            guards.admit("bad", Instant::now()),
            Err(Refused::Tool(Refusal::Open { .. }))
        ));
        assert!(guards.admit("good", Instant::now()).is_ok());
        assert!(matches!(
            guards.would_refuse("bad", Instant::now()),
            Some(Refused::Tool(_))
        ));
        assert!(guards.would_refuse("good", Instant::now()).is_none());
        // After the cooldown the tool gets its probe.
        tokio::time::advance(Duration::from_secs(120)).await;
        assert!(guards.admit("bad", Instant::now()).is_ok());
    }

    #[tokio::test(start_paused = true)]
    async fn a_reset_closes_the_server_and_tool_breakers() {
        let guards = guards();
        for _ in 0..2 {
            let admitted = guards.admit("bad", Instant::now()).ok().unwrap();
            guards.record("bad", admitted, Outcome::Failure, Instant::now());
        }
        assert!(guards.admit("bad", Instant::now()).is_err());
        guards.reset_breakers(Instant::now());
        assert!(guards.would_refuse("bad", Instant::now()).is_none());
        assert!(guards.admit("bad", Instant::now()).is_ok());
        let counts = guards.breaker.lock().unwrap().window_counts(Instant::now());
        assert_eq!(counts.failures, 0);
    }

    #[tokio::test(start_paused = true)]
    async fn abandoned_admissions_count_for_nothing() {
        let guards = guards();
        for _ in 0..10 {
            let admitted = guards.admit("t", Instant::now()).ok().unwrap();
            guards.abandon("t", admitted);
        }
        let counts = guards.breaker.lock().unwrap().window_counts(Instant::now());
        assert_eq!(counts.calls(), 0);
    }
}
