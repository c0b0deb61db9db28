//! Resumption of a session's standalone stream (`GET /mcp`) with `Last-Event-ID`, as Streamable
//! HTTP (2025-11-25) lets a server offer: every message on the stream carries an event id
//! (`n-1`, `n-2`, …, counted per session, so a reconnecting host names a point in the one
//! standalone stream of its session), the last [`HELD_EVENTS`] are kept, and a host that
//! reconnects with the id of the last event it got has the ones after it sent again before the
//! stream goes on. An id that is not one of ours, or one older than what is still held, is
//! refused with a reason ([`ReplayRefusal`]) rather than answered with a silent gap.
//!
//! [`NoticeLog`] is the session's side: the buffer, which stream currently owns the session's
//! slot (a reconnect takes it over, since the connection it replaces is most likely dead but
//! not yet noticed), and the last pass-through listing the stream stood for, so that a list that
//! changed while no stream was open is told on reconnect. The buffer and the ids are pure and
//! unit-tested here.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use tokio::sync::watch;

/// Events held per session for a reconnecting host. Notices are small (a list changed, a URI
/// updated) and a host reconnects within seconds, so a few dozen cover any real gap.
pub(crate) const HELD_EVENTS: usize = 64;

/// The prefix of the standalone stream's event ids.
const NOTICE_ID_PREFIX: &str = "n-";

/// Why a `Last-Event-ID` cannot be resumed from.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ReplayRefusal {
    /// Not an id this gateway gives the standalone stream's events.
    #[error(
        "Last-Event-ID {0:?} is not an event id of this session's stream (they look like n-12); \
         open the stream without Last-Event-ID"
    )]
    NotOurs(String),
    /// Newer than any event the stream sent.
    #[error(
        "Last-Event-ID n-{asked} was never sent on this session's stream (the last was n-{last}); \
         open the stream without Last-Event-ID"
    )]
    NeverSent { asked: u64, last: u64 },
    /// The events after it are no longer held.
    #[error(
        "the events after n-{asked} are no longer held (the oldest held is n-{oldest}); open the \
         stream without Last-Event-ID and list tools, resources and prompts again"
    )]
    NoLongerHeld { asked: u64, oldest: u64 },
}

/// The event id of the standalone stream's `sequence`th event.
pub(crate) fn notice_event_id(sequence: u64) -> String {
    format!("{NOTICE_ID_PREFIX}{sequence}")
}

/// The sequence number a `Last-Event-ID` names, if it is one of the standalone stream's ids.
fn parse_notice_event_id(text: &str) -> Result<u64, ReplayRefusal> {
    text.trim()
        .strip_prefix(NOTICE_ID_PREFIX)
        .filter(|digits| !digits.is_empty() && digits.bytes().all(|byte| byte.is_ascii_digit()))
        .and_then(|digits| digits.parse::<u64>().ok())
        .ok_or_else(|| ReplayRefusal::NotOurs(super::messages::excerpt(text)))
}

/// The last [`HELD_EVENTS`] messages of one stream, numbered from 1.
#[derive(Debug)]
pub(crate) struct ReplayBuffer {
    capacity: usize,
    /// The number of the last message recorded (0: none yet).
    last: u64,
    held: VecDeque<(u64, Arc<str>)>,
}

impl ReplayBuffer {
    pub(crate) fn new(capacity: usize) -> ReplayBuffer {
        ReplayBuffer {
            capacity: capacity.max(1),
            last: 0,
            held: VecDeque::new(),
        }
    }

    /// Records `message`; its number.
    pub(crate) fn record(&mut self, message: Arc<str>) -> u64 {
        self.last += 1;
        if self.held.len() == self.capacity {
            self.held.pop_front();
        }
        self.held.push_back((self.last, message));
        self.last
    }

    /// The messages after number `after`, oldest first; a refusal when some of them are no
    /// longer held or `after` was never given.
    pub(crate) fn after(&self, after: u64) -> Result<Vec<(u64, Arc<str>)>, ReplayRefusal> {
        if after > self.last {
            return Err(ReplayRefusal::NeverSent {
                asked: after,
                last: self.last,
            });
        }
        // The first number still held; everything after `after` must be.
        let oldest = self
            .held
            .front()
            .map_or(self.last + 1, |(number, _)| *number);
        if after + 1 < oldest {
            return Err(ReplayRefusal::NoLongerHeld {
                asked: after,
                oldest,
            });
        }
        Ok(self
            .held
            .iter()
            .filter(|(number, _)| *number > after)
            .cloned()
            .collect())
    }
}

/// A session's standalone-stream state: its replay buffer, which stream owns its slot, and the
/// listing the stream last stood for.
#[derive(Debug)]
pub(crate) struct NoticeLog {
    state: Mutex<LogState>,
    /// The generation of the stream that owns the slot; a stream whose generation is no longer
    /// this one ends.
    owner: watch::Sender<u64>,
}

#[derive(Debug)]
struct LogState {
    buffer: ReplayBuffer,
    /// Whether a stream holds the slot.
    open: bool,
    /// The generation of the last stream that took the slot.
    generation: u64,
    /// The pass-through listing the last stream stood for.
    listed: Option<Arc<str>>,
}

impl Default for NoticeLog {
    fn default() -> Self {
        NoticeLog {
            state: Mutex::new(LogState {
                buffer: ReplayBuffer::new(HELD_EVENTS),
                open: false,
                generation: 0,
                listed: None,
            }),
            owner: watch::Sender::new(0),
        }
    }
}

impl NoticeLog {
    fn state(&self) -> std::sync::MutexGuard<'_, LogState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes the slot for a new stream, its generation; `None` when a stream holds it and
    /// `take_over` is not asked (a reconnect with `Last-Event-ID` takes it over: the stream it
    /// replaces ends).
    pub(crate) fn open(&self, take_over: bool) -> Option<u64> {
        let mut state = self.state();
        if state.open && !take_over {
            return None;
        }
        state.open = true;
        state.generation += 1;
        let generation = state.generation;
        drop(state);
        self.owner.send_replace(generation);
        Some(generation)
    }

    /// Frees the slot, if stream `generation` still holds it.
    pub(crate) fn close(&self, generation: u64) {
        let mut state = self.state();
        if state.generation == generation {
            state.open = false;
        }
    }

    /// Turns when another stream takes the slot.
    pub(crate) fn owner(&self) -> watch::Receiver<u64> {
        self.owner.subscribe()
    }

    /// Records `message` sent on stream `generation`, with the pass-through `listing` it tells
    /// of if it is a `list_changed` (both at once, so a reconnect either replays the message or
    /// sees the listing it stood for as missed, never neither): its event id, or `None` when
    /// another stream owns the slot now (this one should end; the message is the new stream's
    /// to send).
    pub(crate) fn record(
        &self,
        generation: u64,
        message: Arc<str>,
        listing: Option<Arc<str>>,
    ) -> Option<String> {
        let mut state = self.state();
        if state.generation != generation {
            return None;
        }
        if listing.is_some() {
            state.listed = listing;
        }
        Some(notice_event_id(state.buffer.record(message)))
    }

    /// The messages after the event `last_event_id` names, with their ids.
    pub(crate) fn after(
        &self,
        last_event_id: &str,
    ) -> Result<Vec<(String, Arc<str>)>, ReplayRefusal> {
        let after = parse_notice_event_id(last_event_id)?;
        let missed = self.state().buffer.after(after)?;
        Ok(missed
            .into_iter()
            .map(|(number, message)| (notice_event_id(number), message))
            .collect())
    }

    /// Notes the pass-through listing the stream now stands for.
    pub(crate) fn note_listing(&self, listing: Arc<str>) {
        self.state().listed = Some(listing);
    }

    /// The listing the last stream stood for.
    pub(crate) fn last_listing(&self) -> Option<Arc<str>> {
        self.state().listed.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(message: &str) -> Arc<str> {
        Arc::from(message)
    }

    #[test]
    fn a_reconnect_gets_what_came_after_its_last_event() {
        let mut buffer = ReplayBuffer::new(3);
        assert_eq!(buffer.after(0), Ok(Vec::new()), "nothing sent yet");
        for message in ["a", "b"] {
            buffer.record(text(message));
        }
        assert_eq!(buffer.after(2), Ok(Vec::new()), "it had everything");
        assert_eq!(buffer.after(1), Ok(vec![(2, text("b"))]));
        assert_eq!(buffer.after(0), Ok(vec![(1, text("a")), (2, text("b"))]));
        assert_eq!(
            buffer.after(3),
            Err(ReplayRefusal::NeverSent { asked: 3, last: 2 })
        );
    }

    #[test]
    fn an_event_no_longer_held_is_refused_not_skipped() {
        let mut buffer = ReplayBuffer::new(3);
        for message in ["a", "b", "c", "d", "e"] {
            buffer.record(text(message));
        }
        // Held: 3, 4, 5. After 2, every later one is held; after 1, number 2 is gone.
        assert_eq!(
            buffer.after(2),
            Ok(vec![(3, text("c")), (4, text("d")), (5, text("e"))])
        );
        assert_eq!(
            buffer.after(1),
            Err(ReplayRefusal::NoLongerHeld {
                asked: 1,
                oldest: 3
            })
        );
        assert_eq!(buffer.after(5), Ok(Vec::new()));
    }

    #[test]
    fn ids_are_ours_or_refused() {
        assert_eq!(notice_event_id(7), "n-7");
        assert_eq!(parse_notice_event_id("n-7"), Ok(7));
        assert_eq!(parse_notice_event_id(" n-0 "), Ok(0));
        for foreign in [
            "",
            "n-",
            "7",
            "n-x",
            "n--1",
            "n-1.5",
            "c1-2",
            "n-99999999999999999999",
        ] {
            assert!(
                matches!(
                    parse_notice_event_id(foreign),
                    Err(ReplayRefusal::NotOurs(_))
                ),
                "{foreign:?}"
            );
        }
        let refusal = ReplayRefusal::NoLongerHeld {
            asked: 1,
            oldest: 3,
        };
        assert!(refusal.to_string().contains("no longer held"), "{refusal}");
    }

    #[test]
    fn a_reconnect_takes_the_slot_over_and_the_old_stream_stops_recording() {
        let log = NoticeLog::default();
        let first = log.open(false).expect("a free slot");
        assert_eq!(log.open(false), None, "one stream at a time");
        assert_eq!(log.record(first, text("a"), None).as_deref(), Some("n-1"));
        let second = log.open(true).expect("a reconnect takes it over");
        assert_eq!(*log.owner().borrow(), second);
        assert_eq!(
            log.record(first, text("b"), Some(text("[1]"))),
            None,
            "the old stream ends"
        );
        assert_eq!(log.last_listing(), None, "and its listing is not noted");
        assert_eq!(
            log.record(second, text("b"), Some(text("[2]"))).as_deref(),
            Some("n-2")
        );
        assert_eq!(log.last_listing(), Some(text("[2]")));
        // The old stream's end leaves the new one's slot alone.
        log.close(first);
        assert_eq!(log.open(false), None);
        log.close(second);
        assert!(log.open(false).is_some());
        assert_eq!(log.after("n-1"), Ok(vec![("n-2".to_owned(), text("b"))]));
    }
}
