//! Progress as it happens: the events of a run, and sinks that never hold the loop up.
//!
//! The loop emits an [`AgentEvent`] at each point a watcher cares about (started, every LLM call
//! with its usage, every tool call and result, the end, errors). A sink must not block: the
//! shipped [`ChannelSink`] is a bounded channel whose `try_send` drops an event when the
//! consumer is behind and counts the drop, so a stalled watcher costs a gap in its stream,
//! never a stalled run. The daemon can serve `agentEvents {runId, after}` from such a channel
//! (every event carries a sequence number for `after`).

use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::request::{HaltDetail, HaltReason, RunStatus, UsageTotals};

/// One event, tagged by `type` on the wire.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EventKind {
    /// The run began; these are the tools the model sees.
    #[serde(rename_all = "camelCase")]
    Started {
        /// The task.
        task: String,
        /// The backend.
        backend: String,
        /// The model.
        model: String,
        /// `server/tool` of every exposed tool.
        available_tools: Vec<String>,
    },
    /// One LLM call finished.
    #[serde(rename_all = "camelCase")]
    LlmCall {
        /// The step.
        step: u32,
        /// Its usage and cost.
        usage: UsageTotals,
        /// Why the model stopped (`tool_use`, `end_turn`, …, as the provider said).
        stop_reason: String,
        /// Tool calls it asked for.
        tool_calls: usize,
        /// How long it took, in milliseconds.
        latency_ms: u64,
        /// Why the call failed, when it did (its tokens were billed all the same).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        /// The model that answered, as the provider named it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        response_model: Option<String>,
        /// The provider's id of the answer.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        response_id: Option<String>,
    },
    /// A tool call is about to be made.
    #[serde(rename_all = "camelCase")]
    ToolCall {
        /// The step.
        step: u32,
        /// The server, or `null` when the daemon routes it.
        server: Option<String>,
        /// The tool.
        tool: String,
        /// The arguments.
        arguments: Value,
        /// Whether it is a dry-run.
        dry_run: bool,
    },
    /// A tool call returned (or was refused).
    #[serde(rename_all = "camelCase")]
    ToolResult {
        /// The step.
        step: u32,
        /// The server that ran it.
        server: String,
        /// The tool.
        tool: String,
        /// Whether it failed.
        is_error: bool,
        /// A short text of the result.
        result_summary: String,
        /// How long it took, in milliseconds.
        latency_ms: u64,
        /// The routing rule, when known.
        selection_rule: Option<String>,
    },
    /// The run ended.
    #[serde(rename_all = "camelCase")]
    Final {
        /// How.
        status: RunStatus,
        /// The answer.
        answer: String,
        /// Why a guard stopped it.
        halt_reason: Option<HaltReason>,
        /// Which limit fired and the setting that controls it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        halt_detail: Option<HaltDetail>,
        /// Totals.
        usage: UsageTotals,
    },
    /// Something went wrong (the run may go on: a corrective turn, a refused call).
    #[serde(rename_all = "camelCase")]
    Error {
        /// The step, when inside one.
        step: Option<u32>,
        /// What happened; never contains a key.
        message: String,
    },
}

/// An event with its place in the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentEvent {
    /// The run.
    pub run_id: String,
    /// 1, 2, 3, … in emission order, for `agentEvents {after}`.
    pub seq: u64,
    /// What happened.
    #[serde(flatten)]
    pub kind: EventKind,
}

/// Where events go. Implementations must return at once.
pub trait EventSink: Send + Sync {
    /// Takes one event, or drops it; never waits.
    fn emit(&self, event: AgentEvent);

    /// How many events were dropped so far.
    fn dropped(&self) -> u64 {
        0
    }
}

/// A sink that keeps nothing.
#[derive(Debug, Default)]
pub struct NullSink;

impl EventSink for NullSink {
    fn emit(&self, _event: AgentEvent) {}
}

/// A bounded channel: events the receiver has no room for are dropped and counted.
#[derive(Debug)]
pub struct ChannelSink {
    sender: mpsc::Sender<AgentEvent>,
    dropped: AtomicU64,
}

impl ChannelSink {
    /// A sink holding at most `capacity` unread events, and its receiver.
    pub fn new(capacity: usize) -> (Self, mpsc::Receiver<AgentEvent>) {
        let (sender, receiver) = mpsc::channel(capacity.max(1));
        (
            Self {
                sender,
                dropped: AtomicU64::new(0),
            },
            receiver,
        )
    }
}

impl EventSink for ChannelSink {
    fn emit(&self, event: AgentEvent) {
        // A closed receiver means nobody is watching: that is not a drop worth reporting.
        if let Err(mpsc::error::TrySendError::Full(_)) = self.sender.try_send(event) {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

/// Numbers and stamps events for one run.
pub(crate) struct Emitter<'a> {
    run_id: String,
    next_seq: u64,
    sink: &'a dyn EventSink,
}

impl<'a> Emitter<'a> {
    pub(crate) fn new(run_id: &str, sink: &'a dyn EventSink) -> Self {
        Self {
            run_id: run_id.to_owned(),
            next_seq: 1,
            sink,
        }
    }

    pub(crate) fn emit(&mut self, kind: EventKind) {
        let event = AgentEvent {
            run_id: self.run_id.clone(),
            seq: self.next_seq,
            kind,
        };
        self.next_seq += 1;
        self.sink.emit(event);
    }

    pub(crate) fn dropped(&self) -> u64 {
        self.sink.dropped()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_channel_drops_and_counts_instead_of_waiting() {
        let (sink, mut receiver) = ChannelSink::new(2);
        let mut emitter = Emitter::new("run-1", &sink);
        for step in 1..=5 {
            emitter.emit(EventKind::Error {
                step: Some(step),
                message: "x".into(),
            });
        }
        assert_eq!(sink.dropped(), 3);
        assert_eq!(receiver.try_recv().map(|e| e.seq).ok(), Some(1));
        assert_eq!(receiver.try_recv().map(|e| e.seq).ok(), Some(2));
        assert!(receiver.try_recv().is_err());
    }

    #[test]
    fn events_serialize_with_a_type_tag_in_camel_case() {
        let event = AgentEvent {
            run_id: "r".into(),
            seq: 7,
            kind: EventKind::ToolCall {
                step: 2,
                server: None,
                tool: "read_file".into(),
                arguments: serde_json::json!({"path": "/x"}),
                dry_run: false,
            },
        };
        let json = serde_json::to_value(&event).expect("serialize");
        assert_eq!(
            json,
            serde_json::json!({"runId": "r", "seq": 7, "type": "tool_call", "step": 2,
                "server": null, "tool": "read_file", "arguments": {"path": "/x"},
                "dryRun": false})
        );
    }
}
