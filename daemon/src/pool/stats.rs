//! Call statistics of one server for `health`: counts and recent latencies.
//!
//! Latencies are kept in a fixed ring of the most recent calls, so percentiles describe the
//! server as it is now and memory stays constant however long the daemon runs.

use std::collections::VecDeque;
use std::time::Duration;

/// How many recent latencies are kept.
const LATENCY_SAMPLES: usize = 512;

/// Counts and recent latencies.
#[derive(Debug, Default)]
pub(crate) struct CallStats {
    pub(crate) calls: u64,
    pub(crate) errors: u64,
    pub(crate) last_error: Option<String>,
    latencies: VecDeque<Duration>,
}

impl CallStats {
    /// Records one executed call.
    pub(crate) fn record(&mut self, latency: Duration, error: Option<String>) {
        self.calls += 1;
        if let Some(error) = error {
            self.errors += 1;
            self.last_error = Some(error);
        }
        if self.latencies.len() == LATENCY_SAMPLES {
            self.latencies.pop_front();
        }
        self.latencies.push_back(latency);
    }

    /// `(p50, p95, samples)` in milliseconds, when there are samples.
    pub(crate) fn percentiles(&self) -> Option<(f64, f64, usize)> {
        if self.latencies.is_empty() {
            return None;
        }
        let mut sorted: Vec<Duration> = self.latencies.iter().copied().collect();
        sorted.sort_unstable();
        let at = |q: f64| {
            let index = ((sorted.len() - 1) as f64 * q).round() as usize;
            sorted[index].as_secs_f64() * 1000.0
        };
        Some((at(0.5), at(0.95), sorted.len()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_over_a_bounded_window() {
        let mut stats = CallStats::default();
        assert_eq!(stats.percentiles(), None);
        for ms in 1..=100 {
            stats.record(Duration::from_millis(ms), None);
        }
        stats.record(Duration::from_millis(1), Some("boom".into()));
        let (p50, p95, samples) = stats.percentiles().unwrap();
        assert_eq!(samples, 101);
        assert!((49.0..=51.0).contains(&p50), "{p50}");
        assert!((94.0..=96.0).contains(&p95), "{p95}");
        assert_eq!((stats.calls, stats.errors), (101, 1));
        assert_eq!(stats.last_error.as_deref(), Some("boom"));
        for _ in 0..10_000 {
            stats.record(Duration::from_millis(5), None);
        }
        assert_eq!(stats.percentiles().unwrap().2, LATENCY_SAMPLES);
    }
}
