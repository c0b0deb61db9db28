//! `tracesReport`: the report over this daemon's trace file and its rotated predecessors.
//!
//! The arithmetic is the `tool-cli-trace-report` crate's, the same the client runs on a file
//! with `tool-cli traces report --file`; this only reads `since` against the daemon's clock,
//! lets the writer catch up so that the calls made just before are counted, and reads the files
//! off the runtime's workers.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tool_cli_protocol::methods::name;
use tool_cli_protocol::trace::{TracesReport, TracesReportParams};
use tool_cli_trace_report::aggregate::ReportOptions;
use tool_cli_trace_report::{files, since};

use super::Admin;
use crate::error::Error;
use crate::pipeline::CallContext;

/// Longest wait for the writer to write what is queued before the report reads the file.
const FLUSH_WAIT: Duration = Duration::from_secs(2);

impl Admin {
    /// `tracesReport` (the edge has checked the owner token).
    pub(crate) async fn traces_report(
        &self,
        params: TracesReportParams,
        _context: &CallContext,
    ) -> Result<TracesReport, Error> {
        let Some(traces) = self.traces.as_ref() else {
            return Err(Error::invalid_params(
                name::TRACES_REPORT,
                "this daemon writes no traces (the config has \"traces\": {\"enabled\": false}, \
                 or it was started with --no-traces); enable them, or run `tool-cli traces \
                 report --file PATH` on an existing trace file",
            ));
        };
        let since_ms = params
            .since
            .as_deref()
            .map(|text| since::parse_since(text, now_ms()))
            .transpose()
            .map_err(|error| Error::invalid_params(name::TRACES_REPORT, error.to_string()))?;
        let options = ReportOptions {
            by: params.by.unwrap_or_default(),
            since_ms,
            executed_only: params.executed_only.unwrap_or(false),
        };
        // A report that misses the call made a moment ago looks broken; a writer stuck on a
        // slow disk must not hold the report for long either.
        traces.flush(FLUSH_WAIT).await;
        let path = traces.path().to_path_buf();
        tokio::task::spawn_blocking(move || files::read_report(&path, options))
            .await
            .map_err(|error| Error::internal(format!("the trace report task failed: {error}")))?
            .map_err(|error| Error::internal(error.to_string()))
    }
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| {
            i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
        })
}
