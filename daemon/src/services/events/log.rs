//! `callEvents`: the progress and log notifications of a call made with `progress: true`,
//! buffered for the caller to long-poll from another connection.
//!
//! The caller names the call (`progressId`) before making it, so a poller may start first: an
//! unknown id is created empty and the call attaches to it. Each call's buffer holds the last
//! [`CAPACITY`] events (older ones are dropped and counted), so a flood of notifications costs a
//! bounded amount of memory and never slows the call: pushing is a short lock and a watch send.
//! A finished call's events are kept for [`KEEP_FINISHED`] so a poller can read the last of
//! them. The buffer reaches the pool as the call's [`EventRelay`] (in its context, then its
//! ticket), so a plain call carries nothing extra.
//!
//! A buffer also keeps the questions its call's server asked and the daemon relayed to the
//! caller (`"elicitation": "ask"`): each is an `elicitation` event, answered with
//! `answerElicitation` through [`CallEventLog::answer`]; the bookkeeping is
//! [`crate::elicitation::Book`]'s.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Map, Value};
use tokio::sync::{oneshot, watch};
use tokio::time::Instant;
use tool_cli_protocol::elicitation::{ELICITATION_CLOSED_EVENT, ElicitationAnswer};
use tool_cli_protocol::methods::{CallEventsResult, name};

use crate::elicitation::{Book, Refusal};
use crate::error::Error;
use crate::provider::{BoxFuture, EventRelay, RelayedAnswer};

/// Most events kept per call.
pub(crate) const CAPACITY: usize = 256;

/// How long a finished call's events stay readable.
const KEEP_FINISHED: Duration = Duration::from_secs(60);

/// Most event buffers one token may hold at once (running calls, waiting pollers, recently
/// finished calls).
const MAX_PER_TOKEN: usize = 64;

/// Longest `progressId`, in characters.
const MAX_ID_CHARS: usize = 128;

/// Default and longest wait of `callEvents`.
const DEFAULT_WAIT: Duration = Duration::from_secs(20);
const MAX_WAIT: Duration = Duration::from_secs(60);

/// Marks a call's buffer done when dropped, however the call ends (answered, failed, or
/// dropped at shutdown).
pub(crate) struct FinishOnDrop(Arc<CallEventLog>);

impl Drop for FinishOnDrop {
    fn drop(&mut self) {
        self.0.finish();
    }
}

#[derive(Default)]
struct LogState {
    events: VecDeque<Value>,
    last_seq: u64,
    dropped: u64,
    attached: bool,
    finished_at: Option<Instant>,
}

/// One call's events.
pub(crate) struct CallEventLog {
    state: Mutex<LogState>,
    /// `(last seq, done)`, for long-polls.
    progress: watch::Sender<(u64, bool)>,
    /// How many progress notifications (not log messages) have arrived, for a call whose
    /// timeout restarts on progress (`crate::pipeline::progress_timeout`).
    beats: watch::Sender<u64>,
    /// Whether a caller can read it (`progressId`), so questions may be relayed to it.
    listed: bool,
    /// The questions relayed to its caller, each with the channel its answer goes to.
    questions: Mutex<Book<oneshot::Sender<RelayedAnswer>>>,
}

impl CallEventLog {
    fn new(listed: bool) -> CallEventLog {
        CallEventLog {
            state: Mutex::new(LogState::default()),
            progress: watch::Sender::new((0, false)),
            beats: watch::Sender::new(0),
            listed,
            questions: Mutex::new(Book::default()),
        }
    }

    /// A buffer no poller can read, for a call that needs its progress counted
    /// (`resetTimeoutOnProgress`) but asked for no events.
    pub(crate) fn unlisted() -> Arc<CallEventLog> {
        Arc::new(CallEventLog::new(false))
    }

    /// A guard that marks this buffer done when the call holding it ends.
    pub(crate) fn finish_on_drop(self: &Arc<Self>) -> FinishOnDrop {
        FinishOnDrop(Arc::clone(self))
    }

    /// `answerElicitation`: checks the answer against the question and hands it to the
    /// server's waiting request; the content sent.
    pub(crate) fn answer(
        &self,
        id: &str,
        action: ElicitationAnswer,
        content: Option<&Value>,
    ) -> Result<Option<Map<String, Value>>, Refusal> {
        let mut questions = self.questions.lock().unwrap();
        let (waiter, content) = questions.answer(id, action, content)?;
        if waiter.send((action, content.clone())).is_err() {
            // The request stopped waiting (its connection ended) just before.
            let reason = "the server's request ended before the answer arrived";
            questions.mark_closed(id, reason);
            return Err(Refusal::Closed(reason.to_owned()));
        }
        Ok(content)
    }

    /// Appends an event (its `seq` is added), dropping the oldest when full.
    fn append(&self, mut event: Map<String, Value>) {
        if event.get("type").and_then(Value::as_str) == Some("progress") {
            self.beats.send_modify(|beats| *beats += 1);
        }
        let seq = {
            let mut state = self.state.lock().unwrap();
            if state.finished_at.is_some() {
                return;
            }
            state.last_seq += 1;
            let seq = state.last_seq;
            event.insert("seq".to_owned(), Value::from(seq));
            if state.events.len() == CAPACITY {
                state.events.pop_front();
                state.dropped += 1;
            }
            state.events.push_back(Value::Object(event));
            seq
        };
        self.progress.send_replace((seq, false));
    }

    fn finish(&self) {
        let seq = {
            let mut state = self.state.lock().unwrap();
            state.finished_at = Some(Instant::now());
            state.last_seq
        };
        self.progress.send_replace((seq, true));
    }

    fn is_stale(&self, now: Instant) -> bool {
        self.state
            .lock()
            .unwrap()
            .finished_at
            .is_some_and(|at| now.duration_since(at) >= KEEP_FINISHED)
    }
}

impl EventRelay for CallEventLog {
    fn is_followed(&self) -> bool {
        self.listed
    }

    fn push(&self, event: Map<String, Value>) {
        self.append(event);
    }

    /// Records the question and pushes `event` with its `elicitationId`.
    fn ask(
        &self,
        schema: Value,
        mut event: Map<String, Value>,
    ) -> (String, oneshot::Receiver<RelayedAnswer>) {
        let (sender, receiver) = oneshot::channel();
        let id = self.questions.lock().unwrap().open(schema, sender);
        event.insert("elicitationId".to_owned(), Value::from(id.clone()));
        self.append(event);
        (id, receiver)
    }

    /// Tells the caller with an `elicitationClosed` event; false when the question was
    /// answered first.
    fn close_question(&self, id: &str, reason: &str) -> bool {
        if !self.questions.lock().unwrap().close(id, reason) {
            return false;
        }
        let mut event = Map::new();
        event.insert("type".to_owned(), Value::from(ELICITATION_CLOSED_EVENT));
        event.insert("elicitationId".to_owned(), Value::from(id));
        event.insert("reason".to_owned(), Value::from(reason));
        self.append(event);
        true
    }

    fn ended(&self) -> BoxFuture<'_, ()> {
        let mut progress = self.progress.subscribe();
        Box::pin(async move {
            let _ = progress.wait_for(|&(_, done)| done).await;
        })
    }

    fn progress_beats(&self) -> watch::Receiver<u64> {
        self.beats.subscribe()
    }
}

/// Every token's event buffers, by `progressId`.
#[derive(Default)]
pub(crate) struct CallEventHub {
    logs: Mutex<HashMap<(String, String), Arc<CallEventLog>>>,
}

impl CallEventHub {
    /// The buffer for a call about to start with `progress_id`: the one a poller created, or a
    /// new one. Refused when a running call already uses the id, or the token holds too many.
    pub(crate) fn attach(
        &self,
        token_id: &str,
        progress_id: &str,
    ) -> Result<Arc<CallEventLog>, Error> {
        check_id(name::CALL_TOOL, progress_id)?;
        let mut logs = self.logs.lock().unwrap();
        let key = (token_id.to_owned(), progress_id.to_owned());
        if let Some(log) = logs.get(&key) {
            let mut state = log.state.lock().unwrap();
            if state.attached && state.finished_at.is_none() {
                return Err(Error::invalid_params(
                    name::CALL_TOOL,
                    format!(
                        "progressId \"{progress_id}\" is in use by a call still running; choose \
                         a fresh id for each call"
                    ),
                ));
            }
            if !state.attached {
                state.attached = true;
                return Ok(Arc::clone(log));
            }
        }
        let log = Arc::new(CallEventLog::new(true));
        log.state.lock().unwrap().attached = true;
        insert(&mut logs, key, Arc::clone(&log))?;
        Ok(log)
    }

    /// `callEvents`: the events after `after`, waiting up to `wait` for one when there is none.
    pub(crate) async fn events(
        &self,
        token_id: &str,
        progress_id: &str,
        after: u64,
        wait: Option<Duration>,
    ) -> Result<CallEventsResult, Error> {
        check_id(name::CALL_EVENTS, progress_id)?;
        let key = (token_id.to_owned(), progress_id.to_owned());
        let log = {
            let mut logs = self.logs.lock().unwrap();
            match logs.get(&key) {
                Some(log) => Arc::clone(log),
                None => {
                    let log = Arc::new(CallEventLog::new(true));
                    insert(&mut logs, key.clone(), Arc::clone(&log)).map_err(|_| {
                        Error::invalid_params(
                            name::CALL_EVENTS,
                            format!("this token already follows {MAX_PER_TOKEN} calls; wait for some to finish"),
                        )
                    })?;
                    log
                }
            }
        };
        let wait = wait.unwrap_or(DEFAULT_WAIT).min(MAX_WAIT);
        let mut progress = log.progress.subscribe();
        let _ = tokio::time::timeout(
            wait,
            progress.wait_for(|&(last, done)| last > after || done),
        )
        .await;
        self.forget_unused(&key, &log);
        let state = log.state.lock().unwrap();
        Ok(CallEventsResult {
            events: state
                .events
                .iter()
                .filter(|event| event["seq"].as_u64().is_some_and(|seq| seq > after))
                .cloned()
                .collect(),
            done: state.finished_at.is_some(),
            dropped: state.dropped,
        })
    }
}

impl CallEventHub {
    /// The buffer of the token's call named `progress_id`, if there is one; never makes one.
    pub(crate) fn find(&self, token_id: &str, progress_id: &str) -> Option<Arc<CallEventLog>> {
        let key = (token_id.to_owned(), progress_id.to_owned());
        self.logs.lock().unwrap().get(&key).cloned()
    }

    /// Forgets the buffer a poller made when no call has attached to it by the end of the
    /// poll and no other poller holds it: a call that was refused before it started (bad
    /// arguments, an unknown tool) never attaches, and its id must not count against the
    /// token's limit. A later poll of the same id makes a new one.
    fn forget_unused(&self, key: &(String, String), log: &Arc<CallEventLog>) {
        let mut logs = self.logs.lock().unwrap();
        let unused = logs.get(key).is_some_and(|held| {
            Arc::ptr_eq(held, log)
                // The map's reference and this poller's: no other poller waits on it.
                && Arc::strong_count(log) == 2
                && !log.state.lock().unwrap().attached
        });
        if unused {
            logs.remove(key);
        }
    }
}

/// Adds a buffer after forgetting stale ones; refuses a token's buffer over the limit.
fn insert(
    logs: &mut HashMap<(String, String), Arc<CallEventLog>>,
    key: (String, String),
    log: Arc<CallEventLog>,
) -> Result<(), Error> {
    let now = Instant::now();
    logs.retain(|_, log| !log.is_stale(now));
    let held = logs.keys().filter(|(token, _)| *token == key.0).count();
    if held >= MAX_PER_TOKEN && !logs.contains_key(&key) {
        return Err(Error::invalid_params(
            name::CALL_TOOL,
            format!(
                "this token already has {MAX_PER_TOKEN} calls with progress running or just \
                 finished; wait for some to finish"
            ),
        ));
    }
    logs.insert(key, log);
    Ok(())
}

fn check_id(method: &str, progress_id: &str) -> Result<(), Error> {
    let length = progress_id.chars().count();
    if length == 0 || length > MAX_ID_CHARS || progress_id.chars().any(char::is_control) {
        return Err(Error::invalid_params(
            method,
            format!(
                "progressId must be 1-{MAX_ID_CHARS} characters without control characters, \
                 got {length} characters"
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(n: u64) -> Map<String, Value> {
        let Value::Object(map) = json!({"type": "progress", "progress": n}) else {
            unreachable!()
        };
        map
    }

    #[tokio::test]
    async fn a_flood_keeps_the_newest_events_and_counts_the_rest() {
        let hub = CallEventHub::default();
        let log = hub.attach("t", "p1").unwrap();
        for n in 1..=10_000 {
            log.push(event(n));
        }
        let result = hub
            .events("t", "p1", 0, Some(Duration::ZERO))
            .await
            .unwrap();
        assert_eq!(result.events.len(), CAPACITY);
        assert_eq!(result.dropped, 10_000 - CAPACITY as u64);
        assert_eq!(result.events.last().unwrap()["progress"], 10_000);
        assert_eq!(result.events.last().unwrap()["seq"], 10_000);
        assert!(!result.done);
        let later = hub
            .events("t", "p1", 9_999, Some(Duration::ZERO))
            .await
            .unwrap();
        assert_eq!(later.events.len(), 1);
    }

    #[tokio::test]
    async fn a_poller_may_come_first_and_ids_are_per_token_and_single_use_while_running() {
        let hub = Arc::new(CallEventHub::default());
        let poller = {
            let hub = Arc::clone(&hub);
            tokio::spawn(async move { hub.events("t", "p", 0, Some(MAX_WAIT)).await })
        };
        // The poller creates the buffer; wait until it exists, then the call attaches to it.
        while hub.logs.lock().unwrap().is_empty() {
            tokio::task::yield_now().await;
        }
        let log = hub.attach("t", "p").unwrap();
        assert!(hub.attach("t", "p").is_err(), "in use by a running call");
        assert!(hub.attach("other-token", "p").is_ok(), "ids are per token");
        {
            let _finish = log.finish_on_drop();
            log.push(event(1));
        }
        let result = poller.await.unwrap().unwrap();
        assert_eq!(result.events.len(), 1);
        let done = hub.events("t", "p", 1, Some(MAX_WAIT)).await.unwrap();
        assert!(done.done && done.events.is_empty());
        assert!(hub.attach("t", "").is_err());
    }

    #[tokio::test]
    async fn a_buffer_no_call_attached_to_is_forgotten_after_its_poll() {
        let hub = CallEventHub::default();
        for n in 0..(MAX_PER_TOKEN * 2) {
            // A poller for a call that was refused before it started.
            let page = hub
                .events("t", &format!("refused-{n}"), 0, Some(Duration::ZERO))
                .await
                .unwrap();
            assert!(page.events.is_empty() && !page.done);
        }
        assert!(hub.logs.lock().unwrap().is_empty());
        // A call that did attach keeps its buffer.
        let log = hub.attach("t", "kept").unwrap();
        log.push(event(1));
        let page = hub
            .events("t", "kept", 0, Some(Duration::ZERO))
            .await
            .unwrap();
        assert_eq!(page.events.len(), 1);
        assert_eq!(hub.logs.lock().unwrap().len(), 1);
    }
}
