//! The trace file format and the trace report: what `traces.jsonl` holds, one [`TraceLine`] per
//! call, what `tracesReport` answers, and what `health` says about the trace writer.
//!
//! A trace file is read by other programs (`jq`, a spreadsheet import, a cost dashboard), so
//! its line is a promise like any method's result: members are added, never renamed or
//! removed, within [`TRACE_SCHEMA_VERSION`]. Every member of a line is always written (`null`
//! when it does not apply), except `arguments` and `result`, which appear only in verbose mode,
//! and `summarizes`, which appears only on a summary line of refused calls.
//! Reading is lenient the other way: a line lacking an optional member still parses, and unknown
//! members are ignored, so a newer daemon's lines stay readable by an older report.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::methods::LatencySummary;

/// The `schemaVersion` of the lines this crate describes.
pub const TRACE_SCHEMA_VERSION: u32 = 1;

/// The file name of the current trace file; rotated ones add `.1`, `.2`, … (`.1` the newest).
pub const TRACE_FILE_NAME: &str = "traces.jsonl";

/// What replaces a redacted value in a verbose trace.
pub const REDACTED: &str = "[redacted]";

/// One call (or dry-run, or refusal) as a line of `traces.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TraceLine {
    /// The line format's version: [`TRACE_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// When the call finished: RFC 3339 in UTC with milliseconds, e.g. `2026-05-14T09:15:04.382Z`.
    pub ts: String,
    /// The caller's session, when it named one.
    #[serde(default)]
    pub session_id: Option<String>,
    /// Its step number within its parent call (a chain's index), when it is a step.
    #[serde(default)]
    pub step: Option<u32>,
    /// The call's id (`c42`), as in the result's `_meta["tool-cli/callId"]`; unique within one
    /// daemon's lifetime.
    pub call_id: String,
    /// The call this one is a step of.
    #[serde(default)]
    pub parent_call_id: Option<String>,
    /// How deeply nested the call is (0 for a call a client made directly).
    #[serde(default)]
    pub depth: u32,
    /// The server it went to (or would have); `null` when no server could be resolved.
    #[serde(default)]
    pub server: Option<String>,
    /// The tool asked for.
    pub tool: String,
    /// 16 hex digits of SHA-256 over the arguments' canonical JSON: equal arguments hash equal
    /// in any key order, and the arguments themselves never appear.
    #[serde(default)]
    pub arguments_hash: String,
    /// From the request's arrival to its answer, in milliseconds (microsecond precision).
    pub latency_ms: f64,
    /// Whether the caller got a result that is not an error: `false` for refusals, protocol
    /// errors and results with `isError: true`; for a dry-run, whether the real call would go
    /// ahead.
    pub success: bool,
    /// Whether a request reached an upstream server (`false` for dry-runs and refusals).
    pub executed: bool,
    /// Whether the call was a dry-run.
    #[serde(default)]
    pub dry_run: bool,
    /// The routing rule that chose the server (`named`, `explicit-mention`, `argument-type`,
    /// `session-recency`, `similarity`, `priority`), when one was chosen.
    #[serde(default)]
    pub selection_rule: Option<String>,
    /// The other servers offering the tool, and the rule that rejected each.
    #[serde(default)]
    pub alternatives: Vec<TraceAlternative>,
    /// Attempts sent upstream (0 when nothing was sent).
    #[serde(default)]
    pub attempt: u32,
    /// Attempts after the first.
    #[serde(default)]
    pub retries: u32,
    /// Why the last retry happened, if any did.
    #[serde(default)]
    pub retry_reason: Option<String>,
    /// The call was sent again in its session after a validation refusal: the previous call
    /// of this tool (same server as named) in the session was refused with
    /// `invalidArguments`, and this one has other arguments (S0's `corrective_retry`).
    #[serde(default)]
    pub corrective_retry: bool,
    /// The MCP task the call created (2025-11-25 tasks), as its caller knows it: the call ran
    /// as a task, either because its caller asked (`task`) or because the tool runs only as
    /// one. The line is written once, when the call answered: for a task the daemon waited
    /// for, after its result; for one the caller asked for, at its creation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// The error the caller got, if any (a tool's own `isError` result is not one).
    #[serde(default)]
    pub error: Option<TraceError>,
    /// A cached result of a failing server was served instead of a live one.
    #[serde(default)]
    pub degraded: bool,
    /// LLM input tokens attributed to the call (an agent's step), 0 otherwise.
    #[serde(default)]
    pub tokens_in: u64,
    /// LLM output tokens attributed to the call.
    #[serde(default)]
    pub tokens_out: u64,
    /// Cost attributed to the call, in US dollars.
    #[serde(default)]
    pub cost_usd: f64,
    /// Only on a summary line: the refused calls of one token that were over its share of
    /// the trace and are counted here instead of written one by one (their error kinds are
    /// in `error.message`). Absent (0) on every other line.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub summarizes: u64,
    /// Verbose mode only: the arguments, with secrets replaced by [`REDACTED`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Value>,
    /// Verbose mode only: the result, with secrets replaced by [`REDACTED`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
}

fn is_zero(count: &u64) -> bool {
    *count == 0
}

/// A server that offered the tool and was not chosen.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TraceAlternative {
    /// The server.
    pub server: String,
    /// The routing rule that rejected it.
    pub rejected_by: String,
}

/// The error of a traced call, as the caller saw it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceError {
    /// Its JSON-RPC code.
    pub code: i32,
    /// Its `data.kind` tag (`invalidArguments`, `timeout`, …).
    #[serde(default)]
    pub kind: String,
    /// Its message.
    #[serde(default)]
    pub message: String,
}

/// The trace writer in `health` (owner token only; absent when traces are off).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TracesHealth {
    /// The current trace file.
    pub path: String,
    /// Lines written since the daemon started.
    pub written: u64,
    /// Lines lost since the daemon started: the writer's queue was full, or writing failed.
    pub dropped: u64,
    /// Refused calls not written one by one since the daemon started: over their token's share
    /// of the trace, they are counted in summary lines (`summarizes`) instead.
    #[serde(default)]
    pub summarized: u64,
    /// The most recent write failure, kept after writing recovers (then `written` grows again).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
}

/// How a report groups calls.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReportGrouping {
    /// By UTC day of `ts` (`2026-05-14`).
    #[default]
    Day,
    /// By server.
    Server,
    /// By `server/tool`.
    Tool,
    /// By session id.
    Session,
}

impl ReportGrouping {
    /// Its name on the wire and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            ReportGrouping::Day => "day",
            ReportGrouping::Server => "server",
            ReportGrouping::Tool => "tool",
            ReportGrouping::Session => "session",
        }
    }
}

/// Params of `tracesReport`; all optional.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TracesReportParams {
    /// Only calls at or after this: a duration back from now (`30m`, `24h`, `7d`) or an
    /// RFC 3339 date or time (`2026-05-01`, `2026-05-01T12:00:00Z`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<String>,
    /// How to group the calls; default `day`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<ReportGrouping>,
    /// Only calls that reached a server (no dry-runs, no refusals).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub executed_only: Option<bool>,
}

/// The answer to `tracesReport` (and the JSON of `tool-cli traces report --json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TracesReport {
    /// How the calls are grouped.
    pub by: ReportGrouping,
    /// The cutoff, as RFC 3339 UTC, when `since` was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<String>,
    /// Whether only executed calls were counted.
    pub executed_only: bool,
    /// The files read, oldest first.
    pub files: Vec<String>,
    /// Well-formed lines read (before `since` and `executedOnly` filter them).
    pub lines: u64,
    /// Lines that are not trace lines (truncated, not JSON, a bad `ts`): skipped and counted.
    pub corrupt_lines: u64,
    /// One entry per group: days in order, other groupings most calls first.
    pub groups: Vec<ReportGroup>,
    /// Every counted call together (`key` is `total`).
    pub total: ReportGroup,
}

/// The figures of one group of calls (a day, a server, a tool, a session).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReportGroup {
    /// The day, server, `server/tool` or session id.
    pub key: String,
    /// Calls counted.
    pub calls: u64,
    /// Of those, calls that did not succeed (`success: false`).
    pub errors: u64,
    /// `(calls - errors) / calls`, between 0 and 1; `null` without calls.
    pub success_rate: Option<f64>,
    /// Calls that reached a server.
    pub executed: u64,
    /// Dry-runs.
    pub dry_runs: u64,
    /// Latency percentiles over every counted call; `null` without calls.
    pub latency_ms: Option<LatencySummary>,
    /// LLM input tokens.
    pub tokens_in: u64,
    /// LLM output tokens.
    pub tokens_out: u64,
    /// Cost in US dollars.
    pub cost_usd: f64,
    /// Grouped by session only: calls per `server/tool` used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<BTreeMap<String, u64>>,
    /// Grouped by session only: how many calls each routing rule decided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selection_rules: Option<BTreeMap<String, u64>>,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_minimal_line_parses_with_defaults_and_unknown_members_are_ignored() {
        let line: TraceLine = serde_json::from_value(json!({
            "schemaVersion": 1, "ts": "2026-05-14T09:15:04.382Z", "callId": "c1",
            "tool": "q", "latencyMs": 1.5, "success": true, "executed": true,
            "someFutureMember": [1, 2]
        }))
        .unwrap();
        assert_eq!(line.server, None);
        assert_eq!(line.attempt, 0);
        assert!(line.alternatives.is_empty());
        assert!(line.arguments.is_none());
    }

    #[test]
    fn every_member_but_the_payloads_is_always_written() {
        let line: TraceLine = serde_json::from_value(json!({
            "schemaVersion": 1, "ts": "2026-05-14T09:15:04.382Z", "callId": "c1",
            "tool": "q", "latencyMs": 1.5, "success": true, "executed": true
        }))
        .unwrap();
        let written = serde_json::to_value(&line).unwrap();
        let keys: Vec<&str> = written
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(keys.len(), 25, "{keys:?}");
        assert!(written["sessionId"].is_null());
        assert!(!keys.contains(&"arguments") && !keys.contains(&"result"));
    }

    #[test]
    fn groupings_are_lowercase_words() {
        assert_eq!(
            serde_json::to_value(ReportGrouping::Session).unwrap(),
            json!("session")
        );
        let params: TracesReportParams =
            serde_json::from_value(json!({"by": "tool", "executedOnly": true})).unwrap();
        assert_eq!(params.by, Some(ReportGrouping::Tool));
        assert!(serde_json::from_value::<TracesReportParams>(json!({"by": "week"})).is_err());
    }
}
