//! Progress as it happens: the events of a run, and sinks that never hold the loop up.
//!
//! The loop emits an [`AgentEvent`] (a wire type, defined in `tool_cli_protocol::agent`) at each
//! point a watcher cares about (started, every LLM call with its usage, every tool call and
//! result, the end, errors). A sink must not block: the
//! shipped [`ChannelSink`] is a bounded channel whose `try_send` drops an event when the
//! consumer is behind and counts the drop, so a stalled watcher costs a gap in its stream,
//! never a stalled run. The daemon can serve `agentEvents {runId, after}` from such a channel
//! (every event carries a sequence number for `after`).

use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::mpsc;
use tool_cli_protocol::agent::{AgentEvent, AgentEventKind};

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

    pub(crate) fn emit(&mut self, kind: AgentEventKind) {
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
            emitter.emit(AgentEventKind::Error {
                step: Some(step),
                message: "x".into(),
            });
        }
        assert_eq!(sink.dropped(), 3);
        assert_eq!(receiver.try_recv().map(|e| e.seq).ok(), Some(1));
        assert_eq!(receiver.try_recv().map(|e| e.seq).ok(), Some(2));
        assert!(receiver.try_recv().is_err());
    }
}
