//! The four histograms of the conventions, aggregated in process and exported cumulatively:
//! `mcp.client.operation.duration`, `mcp.server.operation.duration`,
//! `gen_ai.client.operation.duration` and `gen_ai.client.token.usage`, each with the bucket
//! boundaries its convention recommends.
//!
//! Recording a value never waits on another call: a series (one attribute set) is found through
//! a read-locked map keyed by a hash of the borrowed attributes, so nothing is allocated once the
//! series exists, and its counters are atomics. An instrument keeps at most
//! [`CARDINALITY_LIMIT`] series; later attribute sets land in one overflow series marked
//! `otel.metric.overflow=true`, as the OpenTelemetry SDKs do, so a catalog of ten thousand tools
//! cannot grow memory without bound.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, RwLock};

use crate::semconv::metrics as names;

/// Most series one instrument keeps (the SDKs' default cardinality limit).
pub const CARDINALITY_LIMIT: usize = 2000;

/// The attribute that marks the overflow series.
pub const OVERFLOW_ATTRIBUTE: &str = "otel.metric.overflow";

/// The instruments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Instrument {
    /// `mcp.client.operation.duration` (s).
    McpClientDuration,
    /// `mcp.server.operation.duration` (s).
    McpServerDuration,
    /// `gen_ai.client.operation.duration` (s).
    GenAiDuration,
    /// `gen_ai.client.token.usage` ({token}).
    GenAiTokens,
}

impl Instrument {
    /// Every instrument, in export order.
    pub const ALL: [Instrument; 4] = [
        Instrument::McpClientDuration,
        Instrument::McpServerDuration,
        Instrument::GenAiDuration,
        Instrument::GenAiTokens,
    ];

    /// The metric's name.
    pub fn name(self) -> &'static str {
        match self {
            Instrument::McpClientDuration => names::MCP_CLIENT_OPERATION_DURATION,
            Instrument::McpServerDuration => names::MCP_SERVER_OPERATION_DURATION,
            Instrument::GenAiDuration => names::GEN_AI_CLIENT_OPERATION_DURATION,
            Instrument::GenAiTokens => names::GEN_AI_CLIENT_TOKEN_USAGE,
        }
    }

    /// Its description.
    pub fn description(self) -> &'static str {
        match self {
            Instrument::McpClientDuration => {
                "The duration of the MCP request or notification as observed on the sender from \
                 the time it was sent until the response or ack is received."
            }
            Instrument::McpServerDuration => {
                "MCP request or notification duration as observed on the receiver from the time \
                 it was received until the result or ack is sent."
            }
            Instrument::GenAiDuration => "GenAI operation duration.",
            Instrument::GenAiTokens => "Number of input and output tokens used.",
        }
    }

    /// Its unit (UCUM).
    pub fn unit(self) -> &'static str {
        match self {
            Instrument::GenAiTokens => "{token}",
            _ => "s",
        }
    }

    /// Its bucket boundaries.
    pub fn bounds(self) -> &'static [f64] {
        match self {
            Instrument::McpClientDuration | Instrument::McpServerDuration => {
                names::MCP_DURATION_BUCKETS
            }
            Instrument::GenAiDuration => names::GEN_AI_DURATION_BUCKETS,
            Instrument::GenAiTokens => names::GEN_AI_TOKEN_BUCKETS,
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// One attribute set's histogram.
#[derive(Debug)]
struct Series {
    attributes: Vec<(&'static str, String)>,
    start_unix_nanos: u64,
    /// Per bucket (not cumulative), then `+Inf`.
    buckets: Box<[AtomicU64]>,
    count: AtomicU64,
    /// `f64` bits; updated by compare-and-swap.
    sum: AtomicU64,
    min: AtomicU64,
    max: AtomicU64,
}

impl Series {
    fn new(attributes: Vec<(&'static str, String)>, bounds: usize, start: u64) -> Series {
        Series {
            attributes,
            start_unix_nanos: start,
            buckets: (0..=bounds).map(|_| AtomicU64::new(0)).collect(),
            count: AtomicU64::new(0),
            sum: AtomicU64::new(0f64.to_bits()),
            min: AtomicU64::new(f64::INFINITY.to_bits()),
            max: AtomicU64::new(f64::NEG_INFINITY.to_bits()),
        }
    }

    fn record(&self, bounds: &[f64], value: f64) {
        // Explicit bucket i holds (bounds[i-1], bounds[i]], as OTLP defines them.
        let bucket = bounds.partition_point(|bound| *bound < value);
        self.buckets[bucket].fetch_add(1, Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::Relaxed);
        update_float(&self.sum, |sum| sum + value);
        update_float(&self.min, |min| min.min(value));
        update_float(&self.max, |max| max.max(value));
    }

    fn matches(&self, attributes: &[(&'static str, &str)]) -> bool {
        self.attributes.len() == attributes.len()
            && self.attributes.iter().zip(attributes).all(
                |((key, value), (other_key, other_value))| key == other_key && value == other_value,
            )
    }
}

fn update_float(cell: &AtomicU64, change: impl Fn(f64) -> f64) {
    let mut current = cell.load(Ordering::Relaxed);
    loop {
        let next = change(f64::from_bits(current)).to_bits();
        if next == current {
            return;
        }
        match cell.compare_exchange_weak(current, next, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => return,
            Err(actual) => current = actual,
        }
    }
}

/// The series of one instrument.
#[derive(Debug, Default)]
struct Table {
    /// Keyed by a hash of the attributes; a bucket holds the series that share a hash.
    series: RwLock<HashMap<u64, Vec<Arc<Series>>>>,
    overflow: OnceLock<Arc<Series>>,
}

/// A copy of one series, for export.
#[derive(Debug, Clone, PartialEq)]
pub struct SeriesSnapshot {
    /// Its attributes, in recording order.
    pub attributes: Vec<(&'static str, String)>,
    /// When the series began (cumulative temporality).
    pub start_unix_nanos: u64,
    /// Per bucket (not cumulative), then `+Inf`.
    pub bucket_counts: Vec<u64>,
    /// Values recorded.
    pub count: u64,
    /// Their sum.
    pub sum: f64,
    /// The smallest (`None` when nothing was recorded).
    pub min: Option<f64>,
    /// The largest.
    pub max: Option<f64>,
}

/// The histograms.
#[derive(Debug)]
pub struct Metrics {
    tables: [Table; 4],
    clock: fn() -> u64,
}

impl Default for Metrics {
    fn default() -> Metrics {
        Metrics::new(unix_nanos_now)
    }
}

/// Nanoseconds since the Unix epoch, now.
pub fn unix_nanos_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|since| u64::try_from(since.as_nanos()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

impl Metrics {
    /// Empty histograms; `clock` stamps each new series' start.
    pub fn new(clock: fn() -> u64) -> Metrics {
        Metrics {
            tables: Default::default(),
            clock,
        }
    }

    /// Records `value` under `attributes` (keys from `semconv`, in a fixed order per call site).
    pub fn record(&self, instrument: Instrument, attributes: &[(&'static str, &str)], value: f64) {
        if !value.is_finite() {
            return;
        }
        let bounds = instrument.bounds();
        self.series(instrument, attributes).record(bounds, value);
    }

    fn series(&self, instrument: Instrument, attributes: &[(&'static str, &str)]) -> Arc<Series> {
        let table = &self.tables[instrument.index()];
        let hash = hash_of(attributes);
        if let Some(found) = table
            .series
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .get(&hash)
            .and_then(|bucket| bucket.iter().find(|series| series.matches(attributes)))
        {
            return Arc::clone(found);
        }
        let mut map = table
            .series
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(found) = map
            .get(&hash)
            .and_then(|bucket| bucket.iter().find(|series| series.matches(attributes)))
        {
            return Arc::clone(found);
        }
        let kept: usize = map.values().map(Vec::len).sum();
        if kept >= CARDINALITY_LIMIT {
            return Arc::clone(table.overflow.get_or_init(|| {
                Arc::new(Series::new(
                    vec![(OVERFLOW_ATTRIBUTE, "true".to_owned())],
                    instrument.bounds().len(),
                    (self.clock)(),
                ))
            }));
        }
        let series = Arc::new(Series::new(
            attributes
                .iter()
                .map(|(key, value)| (*key, (*value).to_owned()))
                .collect(),
            instrument.bounds().len(),
            (self.clock)(),
        ));
        map.entry(hash).or_default().push(Arc::clone(&series));
        series
    }

    /// Every series of `instrument`, sorted by attributes (stable output for tests and diffs).
    pub fn snapshot(&self, instrument: Instrument) -> Vec<SeriesSnapshot> {
        let table = &self.tables[instrument.index()];
        let map = table
            .series
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let mut snapshots: Vec<SeriesSnapshot> = map
            .values()
            .flatten()
            .chain(table.overflow.get())
            .map(|series| {
                let count = series.count.load(Ordering::Relaxed);
                let finite = |cell: &AtomicU64| {
                    let value = f64::from_bits(cell.load(Ordering::Relaxed));
                    (count > 0 && value.is_finite()).then_some(value)
                };
                SeriesSnapshot {
                    attributes: series.attributes.clone(),
                    start_unix_nanos: series.start_unix_nanos,
                    bucket_counts: series
                        .buckets
                        .iter()
                        .map(|bucket| bucket.load(Ordering::Relaxed))
                        .collect(),
                    count,
                    sum: f64::from_bits(series.sum.load(Ordering::Relaxed)),
                    min: finite(&series.min),
                    max: finite(&series.max),
                }
            })
            .collect();
        snapshots.sort_by(|a, b| a.attributes.cmp(&b.attributes));
        snapshots
    }

    /// Whether anything was recorded at all (an empty export is skipped).
    pub fn is_empty(&self) -> bool {
        self.tables.iter().all(|table| {
            table
                .series
                .read()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .is_empty()
        })
    }
}

fn hash_of(attributes: &[(&'static str, &str)]) -> u64 {
    let mut hasher = rustc_hash::FxHasher::default();
    for (key, value) in attributes {
        key.hash(&mut hasher);
        value.hash(&mut hasher);
    }
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clock() -> u64 {
        42
    }

    #[test]
    fn values_land_in_the_conventions_buckets_upper_bound_included() {
        let metrics = Metrics::new(clock);
        let attributes = [("mcp.method.name", "tools/call")];
        for value in [0.005, 0.01, 0.011, 299.0, 301.0] {
            metrics.record(Instrument::McpClientDuration, &attributes, value);
        }
        let series = metrics.snapshot(Instrument::McpClientDuration);
        assert_eq!(series.len(), 1);
        let counts = &series[0].bucket_counts;
        assert_eq!(counts.len(), 15);
        assert_eq!(counts[0], 2, "0.005 and 0.01 are ≤ 0.01");
        assert_eq!(counts[1], 1, "0.011 is in (0.01, 0.02]");
        assert_eq!(counts[13], 1, "299 is in (120, 300]");
        assert_eq!(counts[14], 1, "301 is past the last bound");
        assert_eq!(series[0].count, 5);
        assert!((series[0].sum - 600.026).abs() < 1e-9);
        assert_eq!(series[0].min, Some(0.005));
        assert_eq!(series[0].max, Some(301.0));
        assert_eq!(series[0].start_unix_nanos, 42);
    }

    #[test]
    fn attribute_sets_are_series_of_their_own() {
        let metrics = Metrics::new(clock);
        metrics.record(
            Instrument::GenAiTokens,
            &[("gen_ai.token.type", "input")],
            10.0,
        );
        metrics.record(
            Instrument::GenAiTokens,
            &[("gen_ai.token.type", "output")],
            3.0,
        );
        metrics.record(
            Instrument::GenAiTokens,
            &[("gen_ai.token.type", "input")],
            20.0,
        );
        let series = metrics.snapshot(Instrument::GenAiTokens);
        assert_eq!(series.len(), 2);
        assert_eq!(
            series[0].attributes,
            vec![("gen_ai.token.type", "input".to_owned())]
        );
        assert_eq!(series[0].sum, 30.0);
        assert_eq!(series[1].sum, 3.0);
        assert!(metrics.snapshot(Instrument::McpServerDuration).is_empty());
    }

    #[test]
    fn series_past_the_cardinality_limit_share_one_overflow_series() {
        let metrics = Metrics::new(clock);
        let tools: Vec<String> = (0..CARDINALITY_LIMIT + 10)
            .map(|index| format!("tool-{index}"))
            .collect();
        for tool in &tools {
            metrics.record(
                Instrument::McpClientDuration,
                &[("gen_ai.tool.name", tool)],
                0.1,
            );
        }
        let series = metrics.snapshot(Instrument::McpClientDuration);
        assert_eq!(series.len(), CARDINALITY_LIMIT + 1);
        let overflow = series
            .iter()
            .find(|series| series.attributes[0].0 == OVERFLOW_ATTRIBUTE)
            .unwrap();
        assert_eq!(overflow.count, 10);
    }

    #[test]
    fn non_finite_values_are_not_recorded() {
        let metrics = Metrics::new(clock);
        metrics.record(Instrument::GenAiDuration, &[], f64::NAN);
        assert!(metrics.is_empty());
    }
}
