//! Call statistics for `health` and for ranking: counts and recent latencies, per server (every
//! attempt sent to it) and per tool (every call of it, as the caller saw it).
//!
//! Latencies are kept in a fixed ring of the most recent calls, so percentiles describe the
//! server as it is now and memory stays constant however long the daemon runs. The per-tool
//! table is bounded too: a tool must be in the server's catalog to be called, and past
//! [`MAX_TOOLS_TRACKED`] the least recently used entry is forgotten.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use std::collections::HashMap;
use std::time::SystemTime;

/// How many recent latencies are kept per server.
const LATENCY_SAMPLES: usize = 512;

/// How many recent latencies are kept per tool.
const TOOL_LATENCY_SAMPLES: usize = 64;

/// Most tools whose statistics one server keeps.
pub(crate) const MAX_TOOLS_TRACKED: usize = 4096;

/// Counts and recent latencies of one server.
#[derive(Debug, Default)]
pub(crate) struct CallStats {
    pub(crate) calls: u64,
    pub(crate) errors: u64,
    /// Calls whose caller went away before the answer (counted by the pipeline's record).
    pub(crate) abandoned: u64,
    pub(crate) last_error: Option<String>,
    /// The caller key ([`crate::caller`]) of the call that failed with `last_error`.
    last_error_caller: Option<Arc<str>>,
    latencies: VecDeque<Duration>,
}

impl CallStats {
    /// Records one executed call, made for `caller` (its caller key, when it has one).
    pub(crate) fn record(
        &mut self,
        latency: Duration,
        error: Option<String>,
        caller: Option<Arc<str>>,
    ) {
        self.calls += 1;
        if let Some(error) = error {
            self.errors += 1;
            self.last_error = Some(error);
            self.last_error_caller = caller;
        }
        push_bounded(&mut self.latencies, latency, LATENCY_SAMPLES);
    }

    /// The last error, if the call that failed with it was `caller`'s own: a refusal explains
    /// itself with it to that caller only, since it names a tool and a failure another caller
    /// (another token's sub-agent, scoped away from that tool) has no business seeing.
    pub(crate) fn last_error_of(&self, caller: Option<&str>) -> Option<String> {
        match (&self.last_error_caller, caller) {
            (Some(failed), Some(caller)) if **failed == *caller => self.last_error.clone(),
            _ => None,
        }
    }

    /// `(p50, p95, samples)` in milliseconds, when there are samples.
    pub(crate) fn percentiles(&self) -> Option<(f64, f64, usize)> {
        percentiles(&self.latencies)
    }
}

/// Counts and recent latencies of one tool, as its callers saw them (retries included).
#[derive(Debug, Clone, Default)]
pub(crate) struct ToolStats {
    pub(crate) calls: u64,
    pub(crate) successes: u64,
    pub(crate) last_used: Option<SystemTime>,
    latencies: VecDeque<Duration>,
    /// For least-recently-used eviction.
    touched: u64,
}

impl ToolStats {
    /// `(p50, p95, samples)` in milliseconds, when there are samples.
    pub(crate) fn percentiles(&self) -> Option<(f64, f64, usize)> {
        percentiles(&self.latencies)
    }

    /// Smoothed success rate in `(0, 1)`: the observed calls plus a prior of two successes and
    /// one failure, so an unused tool scores 2/3 and a few calls cannot swing it to either end.
    pub(crate) fn reliability(&self) -> f64 {
        (self.successes as f64 + 2.0) / (self.calls as f64 + 3.0)
    }
}

/// The per-tool statistics of one server, bounded.
#[derive(Debug, Default)]
pub(crate) struct ToolTable {
    tools: HashMap<String, ToolStats>,
    clock: u64,
}

impl ToolTable {
    /// Records one call of `tool`.
    pub(crate) fn record(&mut self, tool: &str, latency: Duration, success: bool, now: SystemTime) {
        self.clock += 1;
        if !self.tools.contains_key(tool) && self.tools.len() >= MAX_TOOLS_TRACKED {
            self.evict_oldest();
        }
        let stats = self.tools.entry(tool.to_owned()).or_default();
        stats.calls += 1;
        if success {
            stats.successes += 1;
        }
        stats.last_used = Some(now);
        stats.touched = self.clock;
        push_bounded(&mut stats.latencies, latency, TOOL_LATENCY_SAMPLES);
    }

    /// The statistics of `tool`, if it was called.
    #[cfg(test)]
    pub(crate) fn get(&self, tool: &str) -> Option<&ToolStats> {
        self.tools.get(tool)
    }

    /// Every tracked tool, by name.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&String, &ToolStats)> {
        self.tools.iter()
    }

    fn evict_oldest(&mut self) {
        if let Some(oldest) = self
            .tools
            .iter()
            .min_by_key(|(_, stats)| stats.touched)
            .map(|(name, _)| name.clone())
        {
            self.tools.remove(&oldest);
        }
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.tools.len()
    }
}

fn push_bounded(ring: &mut VecDeque<Duration>, latency: Duration, capacity: usize) {
    if ring.len() == capacity {
        ring.pop_front();
    }
    ring.push_back(latency);
}

fn percentiles(latencies: &VecDeque<Duration>) -> Option<(f64, f64, usize)> {
    if latencies.is_empty() {
        return None;
    }
    let mut sorted: Vec<Duration> = latencies.iter().copied().collect();
    sorted.sort_unstable();
    let at = |q: f64| {
        let index = ((sorted.len() - 1) as f64 * q).round() as usize;
        sorted[index].as_secs_f64() * 1000.0
    };
    Some((at(0.5), at(0.95), sorted.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_over_a_bounded_window() {
        let mut stats = CallStats::default();
        assert_eq!(stats.percentiles(), None);
        for ms in 1..=100 {
            stats.record(Duration::from_millis(ms), None, None);
        }
        stats.record(
            Duration::from_millis(1),
            Some("boom".into()),
            Some(Arc::from("c-alice")),
        );
        let (p50, p95, samples) = stats.percentiles().unwrap();
        assert_eq!(samples, 101);
        assert!((49.0..=51.0).contains(&p50), "{p50}");
        assert!((94.0..=96.0).contains(&p95), "{p95}");
        assert_eq!((stats.calls, stats.errors), (101, 1));
        assert_eq!(stats.last_error.as_deref(), Some("boom"));
        // Only the caller whose call failed is told why.
        assert_eq!(
            stats.last_error_of(Some("c-alice")).as_deref(),
            Some("boom")
        );
        assert_eq!(stats.last_error_of(Some("c-bob")), None);
        assert_eq!(stats.last_error_of(None), None);
        for _ in 0..10_000 {
            stats.record(Duration::from_millis(5), None, None);
        }
        assert_eq!(stats.percentiles().unwrap().2, LATENCY_SAMPLES);
    }

    #[test]
    fn reliability_is_smoothed_and_bounded() {
        let unused = ToolStats::default();
        assert!((unused.reliability() - 2.0 / 3.0).abs() < 1e-9);
        let mut table = ToolTable::default();
        for _ in 0..100 {
            table.record("ok", Duration::ZERO, true, SystemTime::UNIX_EPOCH);
            table.record("bad", Duration::ZERO, false, SystemTime::UNIX_EPOCH);
        }
        assert!(table.get("ok").unwrap().reliability() > 0.97);
        assert!(table.get("bad").unwrap().reliability() < 0.03);
    }

    #[test]
    fn tool_table_is_bounded_and_forgets_the_least_recently_used() {
        let mut table = ToolTable::default();
        let now = SystemTime::UNIX_EPOCH;
        for i in 0..MAX_TOOLS_TRACKED {
            table.record(&format!("t{i}"), Duration::from_millis(1), true, now);
        }
        // Touch t0 so that t1 is now the oldest.
        table.record("t0", Duration::from_millis(1), false, now);
        table.record("new", Duration::from_millis(1), true, now);
        assert_eq!(table.len(), MAX_TOOLS_TRACKED);
        assert!(table.get("t1").is_none());
        let t0 = table.get("t0").unwrap();
        assert_eq!((t0.calls, t0.successes), (2, 1));
        assert!(table.get("new").is_some());
    }
}
