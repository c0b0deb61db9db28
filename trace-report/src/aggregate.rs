//! The aggregation: trace lines in, a [`TracesReport`] (or one [`ReportGroup`]) out, without I/O.
//!
//! An [`Aggregator`] takes lines one at a time, as text from a file ([`Aggregator::add_text`],
//! which skips and counts what is not a trace line) or already parsed
//! ([`Aggregator::add`], for records the daemon holds in memory), filters them by
//! [`ReportOptions`], and sorts them into groups. [`summarize`] is the one-group shortcut for a
//! session summary. Percentiles are computed the way the daemon's live statistics compute them
//! (the sample at rank `round((n - 1) * q)`), so a report and `health` agree on the same calls.

use std::collections::{BTreeMap, HashMap};

use tool_cli_protocol::methods::LatencySummary;
use tool_cli_protocol::trace::{ReportGroup, ReportGrouping, TraceLine, TracesReport};

use crate::time;

/// Which lines count and how they are grouped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReportOptions {
    /// The grouping.
    pub by: ReportGrouping,
    /// Only lines whose `ts` is at or after this moment (milliseconds since the epoch).
    pub since_ms: Option<i64>,
    /// Only lines with `executed: true`.
    pub executed_only: bool,
}

/// The key of the group of lines without a session (grouped by session).
pub const NO_SESSION: &str = "(none)";

/// The key of the group of lines whose server was never resolved (grouped by server or tool).
pub const NO_SERVER: &str = "(unresolved)";

/// The key of [`TracesReport::total`].
pub const TOTAL: &str = "total";

/// Collects lines into a report.
#[derive(Debug)]
pub struct Aggregator {
    options: ReportOptions,
    groups: HashMap<String, Accumulator>,
    total: Accumulator,
    lines: u64,
    corrupt_lines: u64,
}

impl Aggregator {
    /// An empty aggregation.
    pub fn new(options: ReportOptions) -> Aggregator {
        Aggregator {
            options,
            groups: HashMap::new(),
            total: Accumulator::default(),
            lines: 0,
            corrupt_lines: 0,
        }
    }

    /// One line of a trace file (without its newline). A blank line is ignored; anything that
    /// is not a trace line is counted in `corruptLines` and otherwise skipped.
    pub fn add_text(&mut self, text: &str) {
        if text.trim().is_empty() {
            return;
        }
        match serde_json::from_str::<TraceLine>(text) {
            Ok(line) => self.add(&line),
            Err(_) => self.corrupt_lines += 1,
        }
    }

    /// Counts a line that is not even text (invalid UTF-8, e.g. a write cut short).
    pub fn add_corrupt(&mut self) {
        self.corrupt_lines += 1;
    }

    /// One parsed line. A line whose `ts` is not an RFC 3339 date-time cannot be placed in
    /// time, so it is counted as corrupt.
    pub fn add(&mut self, line: &TraceLine) {
        let Some(moment) = time::parse_date_time(&line.ts) else {
            self.corrupt_lines += 1;
            return;
        };
        self.lines += 1;
        if self.options.since_ms.is_some_and(|since| moment < since)
            || (self.options.executed_only && !line.executed)
        {
            return;
        }
        let key = group_key(self.options.by, line, moment);
        self.groups.entry(key).or_default().add(line);
        self.total.add(line);
    }

    /// The report, naming `files` as the ones read.
    pub fn finish(self, files: Vec<String>) -> TracesReport {
        let sessions = self.options.by == ReportGrouping::Session;
        let mut groups: Vec<ReportGroup> = self
            .groups
            .into_iter()
            .map(|(key, accumulator)| accumulator.into_group(key, sessions))
            .collect();
        match self.options.by {
            ReportGrouping::Day => groups.sort_by(|a, b| a.key.cmp(&b.key)),
            _ => groups.sort_by(|a, b| b.calls.cmp(&a.calls).then_with(|| a.key.cmp(&b.key))),
        }
        TracesReport {
            by: self.options.by,
            since: self.options.since_ms.map(time::format_millis),
            executed_only: self.options.executed_only,
            files,
            lines: self.lines,
            corrupt_lines: self.corrupt_lines,
            groups,
            total: self.total.into_group(TOTAL.to_owned(), false),
        }
    }
}

/// The figures of `lines` as one group named `key`, with the tools used and the selection
/// rules fired: what a session summary shows. Lines are not filtered.
pub fn summarize<'a>(key: &str, lines: impl IntoIterator<Item = &'a TraceLine>) -> ReportGroup {
    let mut accumulator = Accumulator::default();
    for line in lines {
        accumulator.add(line);
    }
    accumulator.into_group(key.to_owned(), true)
}

fn group_key(by: ReportGrouping, line: &TraceLine, moment: i64) -> String {
    let server = || line.server.as_deref().unwrap_or(NO_SERVER);
    match by {
        ReportGrouping::Day => time::day_of(moment),
        ReportGrouping::Server => server().to_owned(),
        ReportGrouping::Tool => format!("{}/{}", server(), line.tool),
        ReportGrouping::Session => line.session_id.as_deref().unwrap_or(NO_SESSION).to_owned(),
    }
}

/// `server/tool`, when the server is known.
fn tool_key(line: &TraceLine) -> Option<String> {
    line.server
        .as_deref()
        .map(|server| format!("{server}/{}", line.tool))
}

/// The running figures of one group.
#[derive(Debug, Default)]
struct Accumulator {
    calls: u64,
    errors: u64,
    executed: u64,
    dry_runs: u64,
    latencies_ms: Vec<f64>,
    tokens_in: u64,
    tokens_out: u64,
    cost_usd: f64,
    tools: BTreeMap<String, u64>,
    selection_rules: BTreeMap<String, u64>,
}

impl Accumulator {
    fn add(&mut self, line: &TraceLine) {
        // A summary line stands for that many refused calls (none of them timed).
        let calls = line.summarizes.max(1);
        self.calls += calls;
        self.errors += if line.success { 0 } else { calls };
        self.executed += u64::from(line.executed);
        self.dry_runs += u64::from(line.dry_run);
        if line.latency_ms.is_finite() && line.summarizes == 0 {
            self.latencies_ms.push(line.latency_ms);
        }
        self.tokens_in = self.tokens_in.saturating_add(line.tokens_in);
        self.tokens_out = self.tokens_out.saturating_add(line.tokens_out);
        if line.cost_usd.is_finite() {
            self.cost_usd += line.cost_usd;
        }
        let tool = tool_key(line).unwrap_or_else(|| line.tool.clone());
        *self.tools.entry(tool).or_default() += calls;
        if let Some(rule) = &line.selection_rule {
            *self.selection_rules.entry(rule.clone()).or_default() += 1;
        }
    }

    fn into_group(mut self, key: String, with_session_detail: bool) -> ReportGroup {
        ReportGroup {
            key,
            calls: self.calls,
            errors: self.errors,
            success_rate: (self.calls > 0)
                .then(|| (self.calls - self.errors) as f64 / self.calls as f64),
            executed: self.executed,
            dry_runs: self.dry_runs,
            latency_ms: percentiles(&mut self.latencies_ms),
            tokens_in: self.tokens_in,
            tokens_out: self.tokens_out,
            // Sums of many small floats drift in the last digits; a millionth of a dollar is
            // finer than any price.
            cost_usd: round(self.cost_usd, 1e6),
            tools: with_session_detail.then_some(self.tools),
            selection_rules: with_session_detail.then_some(self.selection_rules),
        }
    }
}

/// p50 and p95 (rank `round((n - 1) * q)` of the sorted samples), to the microsecond.
fn percentiles(samples: &mut [f64]) -> Option<LatencySummary> {
    if samples.is_empty() {
        return None;
    }
    samples.sort_unstable_by(f64::total_cmp);
    let at = |q: f64| {
        round(
            samples[((samples.len() - 1) as f64 * q).round() as usize],
            1e3,
        )
    };
    Some(LatencySummary {
        p50: at(0.5),
        p95: at(0.95),
        samples: samples.len(),
    })
}

fn round(value: f64, scale: f64) -> f64 {
    (value * scale).round() / scale
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// A line with the given facts; everything else empty.
    fn line(
        ts: &str,
        server: Option<&str>,
        tool: &str,
        latency_ms: f64,
        success: bool,
    ) -> TraceLine {
        serde_json::from_value(json!({
            "schemaVersion": 1, "ts": ts, "callId": "c1", "server": server, "tool": tool,
            "latencyMs": latency_ms, "success": success, "executed": true,
            "selectionRule": "named"
        }))
        .unwrap()
    }

    fn options(by: ReportGrouping) -> ReportOptions {
        ReportOptions {
            by,
            ..ReportOptions::default()
        }
    }

    #[test]
    fn groups_by_day_in_order_with_counts_rates_and_percentiles() {
        let mut aggregator = Aggregator::new(options(ReportGrouping::Day));
        for ms in 1..=100 {
            let mut traced = line(
                "2026-05-14T09:00:00.000Z",
                Some("demo"),
                "q",
                ms as f64,
                ms % 10 != 0,
            );
            traced.tokens_in = 2;
            traced.tokens_out = 1;
            traced.cost_usd = 0.001;
            aggregator.add(&traced);
        }
        aggregator.add(&line(
            "2026-05-13T23:59:59.999Z",
            Some("demo"),
            "q",
            7.0,
            true,
        ));
        let report = aggregator.finish(vec!["a".into()]);
        let keys: Vec<&str> = report
            .groups
            .iter()
            .map(|group| group.key.as_str())
            .collect();
        assert_eq!(keys, ["2026-05-13", "2026-05-14"]);
        let day = &report.groups[1];
        assert_eq!((day.calls, day.errors, day.executed), (100, 10, 100));
        assert_eq!(day.success_rate, Some(0.9));
        let latency = day.latency_ms.as_ref().unwrap();
        assert_eq!(
            (latency.p50, latency.p95, latency.samples),
            (51.0, 95.0, 100)
        );
        assert_eq!((day.tokens_in, day.tokens_out), (200, 100));
        assert_eq!(day.cost_usd, 0.1);
        assert!(day.tools.is_none() && day.selection_rules.is_none());
        assert_eq!(report.total.calls, 101);
        assert_eq!(report.total.key, TOTAL);
        assert_eq!((report.lines, report.corrupt_lines), (101, 0));
    }

    #[test]
    fn corrupt_lines_are_counted_and_skipped_and_blank_ones_ignored() {
        let mut aggregator = Aggregator::new(options(ReportGrouping::Server));
        let good = serde_json::to_string(&line(
            "2026-05-14T09:00:00.000Z",
            Some("demo"),
            "q",
            1.0,
            true,
        ))
        .unwrap();
        for text in [
            good.as_str(),
            "",
            "   ",
            "not json",
            &good[..good.len() / 2],
            "{\"schemaVersion\": 1}",
            "[1, 2]",
            &good.replace("2026-05-14T09:00:00.000Z", "yesterday"),
            good.as_str(),
        ] {
            aggregator.add_text(text);
        }
        aggregator.add_corrupt();
        let report = aggregator.finish(Vec::new());
        assert_eq!(report.lines, 2);
        assert_eq!(report.corrupt_lines, 6);
        assert_eq!(report.groups.len(), 1);
        assert_eq!(report.groups[0].calls, 2);
    }

    #[test]
    fn since_and_executed_only_filter_but_lines_counts_everything_read() {
        let mut aggregator = Aggregator::new(ReportOptions {
            by: ReportGrouping::Tool,
            since_ms: time::parse_date_time("2026-05-14T00:00:00Z"),
            executed_only: true,
        });
        aggregator.add(&line(
            "2026-05-13T12:00:00.000Z",
            Some("demo"),
            "q",
            1.0,
            true,
        ));
        let mut dry = line("2026-05-14T12:00:00.000Z", Some("demo"), "q", 1.0, true);
        dry.executed = false;
        dry.dry_run = true;
        aggregator.add(&dry);
        aggregator.add(&line(
            "2026-05-14T12:00:00.000+01:00",
            Some("demo"),
            "q",
            3.0,
            false,
        ));
        aggregator.add(&line("2026-05-14T13:00:00.000Z", None, "nope", 1.0, false));
        let report = aggregator.finish(Vec::new());
        assert_eq!(report.lines, 4);
        assert_eq!(report.since.as_deref(), Some("2026-05-14T00:00:00.000Z"));
        let keys: Vec<(&str, u64)> = report
            .groups
            .iter()
            .map(|group| (group.key.as_str(), group.calls))
            .collect();
        assert_eq!(keys, [("(unresolved)/nope", 1), ("demo/q", 1)]);
        assert_eq!(report.total.dry_runs, 0);
        assert_eq!(report.total.success_rate, Some(0.0));
    }

    #[test]
    fn sessions_carry_the_tools_used_and_the_rules_fired() {
        let mut aggregator = Aggregator::new(options(ReportGrouping::Session));
        for (session, tool, rule) in [
            (Some("s1"), "q", "named"),
            (Some("s1"), "q", "priority"),
            (Some("s1"), "schema", "named"),
            (None, "q", "named"),
        ] {
            let mut traced = line("2026-05-14T09:00:00.000Z", Some("demo"), tool, 1.0, true);
            traced.session_id = session.map(str::to_owned);
            traced.selection_rule = Some(rule.to_owned());
            aggregator.add(&traced);
        }
        let report = aggregator.finish(Vec::new());
        let s1 = &report.groups[0];
        assert_eq!((s1.key.as_str(), s1.calls), ("s1", 3));
        assert_eq!(
            serde_json::to_value(&s1.tools).unwrap(),
            json!({"demo/q": 2, "demo/schema": 1})
        );
        assert_eq!(
            serde_json::to_value(&s1.selection_rules).unwrap(),
            json!({"named": 2, "priority": 1})
        );
        assert_eq!(report.groups[1].key, NO_SESSION);
        assert!(report.total.tools.is_none());
    }

    #[test]
    fn nothing_to_report_is_an_empty_report() {
        let report = Aggregator::new(ReportOptions::default()).finish(Vec::new());
        assert!(report.groups.is_empty());
        assert_eq!(report.total.calls, 0);
        assert_eq!(report.total.success_rate, None);
        assert_eq!(report.total.latency_ms, None);
    }

    #[test]
    fn summarize_is_one_group_with_session_detail() {
        let lines = [
            line("2026-05-14T09:00:00.000Z", Some("demo"), "q", 2.0, true),
            line("not even a time", Some("demo"), "q", 4.0, false),
        ];
        let group = summarize("s9", &lines);
        assert_eq!(
            (group.key.as_str(), group.calls, group.errors),
            ("s9", 2, 1)
        );
        assert_eq!(group.latency_ms.unwrap().p95, 4.0);
        assert_eq!(group.tools.unwrap()["demo/q"], 2);
    }

    #[test]
    fn a_summary_line_counts_the_refused_calls_it_stands_for() {
        let mut aggregator = Aggregator::new(options(ReportGrouping::Day));
        aggregator.add(&line(
            "2026-05-14T09:00:00.000Z",
            Some("demo"),
            "q",
            4.0,
            true,
        ));
        let mut summary = line(
            "2026-05-14T09:01:00.000Z",
            None,
            "(refused calls)",
            0.0,
            false,
        );
        summary.executed = false;
        summary.summarizes = 6996;
        aggregator.add(&summary);
        let report = aggregator.finish(Vec::new());
        assert_eq!(report.lines, 2);
        assert_eq!((report.total.calls, report.total.errors), (6997, 6996));
        assert_eq!(report.total.executed, 1);
        let latency = report.total.latency_ms.unwrap();
        assert_eq!((latency.samples, latency.p50), (1, 4.0));
    }
}
