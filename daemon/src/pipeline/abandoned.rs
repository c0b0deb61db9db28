//! Calls whose caller went away before the answer: a client interrupted with Ctrl-C, a closed
//! connection, a request dropped at shutdown.
//!
//! The pipeline's future is then dropped wherever it was waiting (for a connection, a slot, the
//! server's answer), and dropping the upstream request cancels it at the server. Nothing would
//! record the call, against the rule that every call produces exactly one [`CallRecord`]. A
//! [`PendingRecord`] holds the record while the call runs; if it is dropped before the call
//! answered, it finishes the record as abandoned (error kind `cancelled`, with whether anything
//! reached the server) and records it, so traces, sessions and `health` see the call.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::SystemTime;

use tokio::time::Instant;
use tool_cli_protocol::code;

use super::tasks::TaskRegistry;
use super::{CallRecord, Pipeline, RecordedError};
use crate::provider::TaskNote;

/// The `kind` of an abandoned call's recorded error.
pub(crate) const ABANDONED_KIND: &str = "cancelled";

/// The record of a call still running, recorded as abandoned if dropped unanswered.
pub(super) struct PendingRecord<'a> {
    pipeline: &'a Pipeline,
    arrived: Instant,
    /// `None` once the call answered (the pipeline records it itself then).
    record: Option<CallRecord>,
    /// What the stages note as they go, known even if the call is dropped.
    marks: CallMarks,
}

/// What the execute stage notes while a call runs, so that a call dropped mid-way is recorded
/// with it.
#[derive(Default)]
pub(super) struct CallMarks {
    /// Attempts the breakers let through so far.
    pub(super) sent: AtomicU32,
    /// The MCP task the call created, by the id its caller knows (`tasks/`).
    pub(super) task_id: std::sync::Mutex<Option<String>>,
    /// The task a 2026-07-28 server ran the call as, which the pool follows itself: noted by
    /// the pool under the server's id (`pool/connection/tasks.rs`), so a call dropped while
    /// the task works still names it.
    pub(super) ran_as_task: Arc<TaskNote>,
}

impl CallMarks {
    /// The id of the task the call is known by: the one its caller created, else the one a
    /// 2026 server ran it as on `server` (under the same public id `tasks/` would give it).
    pub(super) fn task_id(&self, server: Option<&str>) -> Option<String> {
        if let Some(created) = self.task_id.lock().unwrap().clone() {
            return Some(created);
        }
        let upstream_id = self.ran_as_task.task_id()?;
        Some(TaskRegistry::public_id(server?, &upstream_id))
    }
}

impl<'a> PendingRecord<'a> {
    pub(super) fn new(pipeline: &'a Pipeline, arrived: Instant, record: CallRecord) -> Self {
        PendingRecord {
            pipeline,
            arrived,
            record: Some(record),
            marks: CallMarks::default(),
        }
    }

    /// The record for the stages to fill in, and what the execute stage notes as it goes.
    pub(super) fn parts(&mut self) -> (&mut CallRecord, &CallMarks) {
        (
            self.record
                .as_mut()
                .expect("a pending record is answered once, after its stages"),
            &self.marks,
        )
    }

    /// The call answered: its record, for the pipeline to finish and record.
    pub(super) fn answered(mut self) -> CallRecord {
        self.record
            .take()
            .expect("a pending record is answered once, after its stages")
    }
}

impl Drop for PendingRecord<'_> {
    fn drop(&mut self) {
        let Some(mut record) = self.record.take() else {
            return;
        };
        let sent = self.marks.sent.load(Ordering::Relaxed);
        if record.task_id.is_none() {
            record.task_id = self.marks.task_id(record.server.as_deref());
        }
        record.attempts = record.attempts.max(sent);
        record.executed |= sent > 0;
        record.finished_at = SystemTime::now();
        record.latency = self.arrived.elapsed();
        record.success = false;
        record.result = None;
        record.error = Some(abandoned_error(record.executed));
        self.pipeline.record(&record);
    }
}

/// What an abandoned call's record says: no one received an answer, so no one was told this;
/// it is for traces and `health`.
fn abandoned_error(executed: bool) -> RecordedError {
    let message = if executed {
        "the caller went away before the answer (its connection closed: Ctrl-C, a killed client \
         or a dropped connection); the call was cancelled at its server"
    } else {
        "the caller went away before the answer (its connection closed: Ctrl-C, a killed client \
         or a dropped connection); nothing had been sent to a server"
    };
    RecordedError {
        code: code::CANCELLED,
        kind: ABANDONED_KIND,
        message: message.to_owned(),
    }
}

impl CallRecord {
    /// Whether the call's caller went away before its answer.
    pub fn was_abandoned(&self) -> bool {
        self.error
            .as_ref()
            .is_some_and(|error| error.kind == ABANDONED_KIND && error.code == code::CANCELLED)
    }
}
