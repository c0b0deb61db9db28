//! Traces: one JSON line per call (and per dry-run and refusal) appended to `traces.jsonl`, and
//! the report over them.
//!
//! [`Traces`] is a [`CallObserver`]: the pipeline hands it every finished [`CallRecord`], it
//! turns the record into a [`TraceLine`] ([`trace_line`]) and `try_send`s it into a bounded
//! queue. A thread of its own (`writer`) redacts verbose payloads (`redact`), appends the line
//! and rotates the file by size. A call never waits for any of this and never fails because of
//! it: a full queue or a failed write drops the line, counts it, and `health` shows the count
//! and the last error. the config's `traces` section is read by `config/traces.rs`, and
//! `tracesReport`, over the files, is the admin service's. `budget` holds each
//! token's share of the trace for its refused calls: over it, they are counted into summary
//! lines rather than written one by one, so one token's flood of refusals cannot rotate
//! everyone's history away.
//!
//! Invariant: nothing here blocks or errors on a call's path; `observe` only converts and
//! `try_send`s.

mod budget;
mod line;
mod redact;
mod writer;

use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use tokio::sync::{mpsc, oneshot};
use tool_cli_protocol::trace::{TraceLine, TracesHealth};

pub use line::trace_line;
pub use writer::WriteError;

use crate::config::traces::TraceSettings;
use crate::pipeline::{CallObserver, CallRecord};
use budget::{RefusalBudget, Verdict};
use redact::Redactor;
use writer::{Counters, FileSink, Message, Sink};

/// Lines waiting for the writer before new ones are dropped: a burst of four thousand calls
/// faster than the disk is absorbed, a stalled disk costs at most this many lines of memory (a few MB).
pub const QUEUE_CAPACITY: usize = 4096;

/// The trace writer: a handle to its queue and its counters.
pub struct Traces {
    settings: TraceSettings,
    sender: mpsc::Sender<Message>,
    counters: Arc<Counters>,
    // A std mutex: held only to decide on one refused call, never across an await or a write.
    refusals: Mutex<RefusalBudget>,
}

impl Traces {
    /// Starts writing to `settings.path`; `secrets` (values substituted into servers' `env`
    /// and `headers`) are redacted from verbose payloads. Never fails: a file that cannot be
    /// written shows in [`Traces::health`].
    pub fn start(settings: TraceSettings, secrets: Vec<String>) -> Arc<Traces> {
        let sink = FileSink::new(&settings);
        Traces::start_with(
            settings,
            Redactor::new(secrets),
            Box::new(sink),
            QUEUE_CAPACITY,
        )
    }

    fn start_with(
        settings: TraceSettings,
        redactor: Redactor,
        sink: Box<dyn Sink>,
        capacity: usize,
    ) -> Arc<Traces> {
        let (sender, receiver) = mpsc::channel(capacity);
        let counters = Arc::new(Counters::default());
        let spawned = std::thread::Builder::new()
            .name("tool-cli-traces".to_owned())
            .spawn({
                let counters = Arc::clone(&counters);
                move || writer::run(receiver, sink, &redactor, &counters)
            });
        if let Err(error) = spawned {
            // The receiver went with the failed thread: every line will count as dropped.
            *counters.last_error.lock().unwrap() =
                Some(format!("cannot start the trace writer thread: {error}"));
        }
        let history = settings
            .max_bytes
            .saturating_mul(u64::from(settings.keep) + 1);
        Arc::new(Traces {
            settings,
            sender,
            counters,
            refusals: Mutex::new(RefusalBudget::for_history(history)),
        })
    }

    /// The current trace file.
    pub fn path(&self) -> &Path {
        &self.settings.path
    }

    /// What `health` shows.
    pub fn health(&self) -> TracesHealth {
        TracesHealth {
            path: self.settings.path.to_string_lossy().into_owned(),
            written: self.counters.written.load(Ordering::Relaxed),
            dropped: self.counters.dropped.load(Ordering::Relaxed),
            summarized: self.counters.summarized.load(Ordering::Relaxed),
            last_error: self.counters.last_error.lock().unwrap().clone(),
        }
    }

    /// Waits (at most `timeout`) until every line queued before now has been written or
    /// dropped; `false` when the writer did not get there in time.
    pub async fn flush(&self, timeout: Duration) -> bool {
        // Refusals counted but not yet summarized are said now: a report or a shutdown must not
        // miss them.
        let summaries = {
            let mut refusals = self.refusals.lock().unwrap();
            let capacity = refusals.capacity();
            refusals
                .drain(Instant::now())
                .into_iter()
                .map(|summary| line::summary_line(&summary, capacity, SystemTime::now()))
                .collect::<Vec<_>>()
        };
        for summary in summaries {
            self.send(summary);
        }
        let (done, written) = oneshot::channel();
        let flushed = async {
            self.sender.send(Message::Flush(done)).await.ok()?;
            written.await.ok()
        };
        matches!(tokio::time::timeout(timeout, flushed).await, Ok(Some(())))
    }
}

impl CallObserver for Traces {
    fn wants_payloads(&self) -> bool {
        self.settings.verbose
    }

    fn observe(&self, record: &CallRecord) {
        let mut line: TraceLine = trace_line(record);
        if self.settings.verbose {
            line.arguments = record.arguments.clone();
            line.result = record.result.clone();
        }
        if is_refusal(record) {
            // Measured as written (before redaction, which only shortens it).
            let bytes = serde_json::to_vec(&line).map_or(0, |encoded| encoded.len() as u64 + 1);
            let (kind, code) = record
                .error
                .as_ref()
                .map_or(("refused", 0), |error| (error.kind, error.code));
            let (verdict, summary) = {
                let mut refusals = self.refusals.lock().unwrap();
                let capacity = refusals.capacity();
                let (verdict, summary) =
                    refusals.admit(&record.token_id, bytes, kind, code, Instant::now());
                let summary = summary
                    .map(|summary| line::summary_line(&summary, capacity, SystemTime::now()));
                (verdict, summary)
            };
            if let Some(summary) = summary {
                self.send(summary);
            }
            if verdict == Verdict::Summarize {
                self.counters.summarized.fetch_add(1, Ordering::Relaxed);
                return;
            }
        }
        self.send(line);
    }
}

impl Traces {
    /// Queues `line` for the writer, or counts it as dropped.
    fn send(&self, line: TraceLine) {
        if let Err(error) = self.sender.try_send(Message::Line(Box::new(line))) {
            let reason = match error {
                mpsc::error::TrySendError::Full(_) => format!(
                    "the trace writer fell behind ({} lines waiting); the disk may be slow",
                    self.sender.max_capacity()
                ),
                mpsc::error::TrySendError::Closed(_) => "the trace writer has stopped".to_owned(),
            };
            self.counters.drop_line(reason);
        }
    }
}

/// Whether `record` is a call refused before anything was sent (not a dry-run, which asks a
/// question, nor an agent's LLM step).
fn is_refusal(record: &CallRecord) -> bool {
    !record.executed && !record.dry_run
}

#[cfg(test)]
mod tests;
