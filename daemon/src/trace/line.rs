//! From the pipeline's [`CallRecord`] to the file format's [`TraceLine`]: the one conversion,
//! used by the trace writer and by anything else that reports on calls in the trace's terms (a
//! session summary feeds these lines to `tool_cli_trace_report::aggregate::summarize`).

use std::time::{SystemTime, UNIX_EPOCH};

use tool_cli_protocol::trace::{TRACE_SCHEMA_VERSION, TraceAlternative, TraceError, TraceLine};
use tool_cli_trace_report::time;

use super::budget::Summary;
use crate::pipeline::CallRecord;

/// The trace line of `record`, without arguments or result (the writer adds them, redacted, in
/// verbose mode).
pub fn trace_line(record: &CallRecord) -> TraceLine {
    let finished_ms = record
        .finished_at
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| {
            i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
        });
    let selection = record.selection.as_ref();
    TraceLine {
        schema_version: TRACE_SCHEMA_VERSION,
        ts: time::format_millis(finished_ms),
        session_id: record.session_id.clone(),
        step: record.step,
        call_id: record.call_id.to_string(),
        parent_call_id: record.parent_call_id.map(|id| id.to_string()),
        depth: record.depth,
        // The server it went to, else the one the caller named (a call refused before
        // resolution, an unknown tool on a named server, is still that server's).
        server: record
            .server
            .clone()
            .or_else(|| record.requested_server.clone()),
        tool: record.tool.clone(),
        arguments_hash: record.arguments_hash.clone(),
        // Microseconds are the finest a call's latency means anything at.
        latency_ms: (record.latency.as_secs_f64() * 1e6).round() / 1e3,
        success: record.success,
        executed: record.executed,
        dry_run: record.dry_run,
        selection_rule: selection.map(|selection| selection.rule.as_str().to_owned()),
        alternatives: selection
            .map(|selection| {
                selection
                    .alternatives
                    .iter()
                    .map(|rejected| TraceAlternative {
                        server: rejected.server.clone(),
                        rejected_by: rejected.rejected_by.as_str().to_owned(),
                    })
                    .collect()
            })
            .unwrap_or_default(),
        attempt: record.attempts,
        retries: record.retries(),
        retry_reason: record.retry_reason.clone(),
        corrective_retry: record.corrective_retry,
        task_id: record.task_id.clone(),
        error: record.error.as_ref().map(|error| TraceError {
            code: error.code,
            kind: error.kind.to_owned(),
            message: error.message.clone(),
        }),
        degraded: record.degraded,
        tokens_in: record.tokens_in,
        tokens_out: record.tokens_out,
        cost_usd: record.cost_usd,
        summarizes: 0,
        arguments: None,
        result: None,
    }
}

/// The line that stands for one token's refused calls over its share of the trace (see
/// `budget.rs`), written at `now`. It names no token and no session: only how many calls, of
/// which kinds.
pub(crate) fn summary_line(summary: &Summary, capacity: u64, now: SystemTime) -> TraceLine {
    let finished_ms = now.duration_since(UNIX_EPOCH).map_or(0, |since| {
        i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
    });
    TraceLine {
        schema_version: TRACE_SCHEMA_VERSION,
        ts: time::format_millis(finished_ms),
        session_id: None,
        step: None,
        call_id: SUMMARY_CALL_ID.to_owned(),
        parent_call_id: None,
        depth: 0,
        server: None,
        tool: SUMMARY_TOOL.to_owned(),
        arguments_hash: String::new(),
        latency_ms: 0.0,
        success: false,
        executed: false,
        dry_run: false,
        selection_rule: None,
        alternatives: Vec::new(),
        attempt: 0,
        retries: 0,
        retry_reason: None,
        corrective_retry: false,
        task_id: None,
        error: Some(TraceError {
            code: summary.code,
            kind: SUMMARY_KIND.to_owned(),
            message: summary.message(capacity),
        }),
        degraded: false,
        tokens_in: 0,
        tokens_out: 0,
        cost_usd: 0.0,
        summarizes: summary.calls,
        arguments: None,
        result: None,
    }
}

/// The `callId` of a summary line (no call of its own).
pub(crate) const SUMMARY_CALL_ID: &str = "summary";

/// The `tool` of a summary line.
pub(crate) const SUMMARY_TOOL: &str = "(refused calls)";

/// The `error.kind` of a summary line.
pub(crate) const SUMMARY_KIND: &str = "refusalsSummarized";

/// A record of a `sql_query` call that finished at 2026-05-14T09:15:04.382Z after 12.345678 s,
/// everything else empty: for the tests of this module and of the writer.
#[cfg(test)]
pub(crate) fn test_record() -> CallRecord {
    use std::sync::Arc;
    use std::time::Duration;

    let context = crate::pipeline::CallContext::new(crate::auth::Grant {
        token_id: "owner".into(),
        is_owner: true,
        scope: Arc::new(crate::policy::Scope::unrestricted()),
    });
    let mut record = CallRecord::new(&context, "sql_query", "0123456789abcdef".into());
    record.finished_at = UNIX_EPOCH + Duration::from_millis(1_778_750_104_382);
    record.latency = Duration::from_micros(12_345_678);
    record
}

#[cfg(test)]
mod tests {
    use std::time::SystemTime;

    use serde_json::json;

    use super::*;
    use crate::pipeline::RecordedError;
    use crate::pipeline::routing::{Rejected, Rule, Selection};

    #[test]
    fn every_fact_of_the_record_lands_in_its_member() {
        let mut record = test_record();
        record.session_id = Some("s1".into());
        record.server = Some("demo".into());
        record.selection = Some(Selection {
            server: "demo".into(),
            rule: Rule::Priority,
            alternatives: vec![Rejected {
                server: "other".into(),
                rejected_by: Rule::Priority,
            }],
        });
        record.executed = true;
        record.attempts = 3;
        record.retry_reason = Some("the server restarted".into());
        record.error = Some(RecordedError {
            code: -32002,
            kind: "timeout",
            message: "timed out".into(),
        });
        record.tokens_in = 10;
        record.cost_usd = 0.25;
        record.arguments = Some(json!({"sql": "select 1"}));

        let line = trace_line(&record);
        assert_eq!(line.ts, "2026-05-14T09:15:04.382Z");
        assert_eq!(line.latency_ms, 12_345.678);
        assert_eq!(line.call_id, record.call_id.to_string());
        assert_eq!(line.selection_rule.as_deref(), Some("priority"));
        assert_eq!(line.alternatives[0].rejected_by, "priority");
        assert_eq!((line.attempt, line.retries), (3, 2));
        let error = line.error.as_ref().unwrap();
        assert_eq!((error.code, error.kind.as_str()), (-32002, "timeout"));
        assert_eq!((line.tokens_in, line.cost_usd), (10, 0.25));
        assert!(line.arguments.is_none(), "payloads are the writer's to add");
        let text = serde_json::to_string(&line).unwrap();
        assert!(!text.contains("owner"), "the token id is never traced");
    }

    #[test]
    fn a_call_refused_before_routing_has_no_server_nor_rule() {
        let mut record = test_record();
        record.finished_at = SystemTime::UNIX_EPOCH;
        let line = trace_line(&record);
        assert_eq!(line.ts, "1970-01-01T00:00:00.000Z");
        assert_eq!((line.server, line.selection_rule), (None, None));
        assert!(line.alternatives.is_empty());
        assert_eq!((line.attempt, line.retries), (0, 0));
    }
}
