//! Idempotency keys: a call repeated with the same key is answered once.
//!
//! Keys are namespaced by token. The first call with a key runs; a repeat within the TTL gets the
//! stored answer (marked `_meta["tool-cli/replayed"]: true`) without running again; a repeat
//! while the first is still running waits for it, so a call is never run twice for one key. A
//! repeat with the same key but a different call (server, tool or arguments) is refused.
//!
//! Only answers of calls that reached a server are stored — results, tool errors, and failures
//! that may have happened after the server acted (a timeout, an exit mid-call). A call refused
//! before anything was sent (invalid arguments, policy, busy) leaves no entry, so fixing it and
//! retrying with the same key runs it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::watch;
use tokio::time::Instant;
use tool_cli_protocol::ErrorData;

use crate::error::Error;

/// How long an answer is kept for repeats.
pub(crate) const DEFAULT_TTL: Duration = Duration::from_secs(600);

/// Most keys held (all tokens together).
const MAX_KEYS: usize = 4096;

/// Longest key accepted.
const MAX_KEY_LEN: usize = 256;

/// A stored answer.
#[derive(Clone, Debug)]
pub(crate) enum Stored {
    Result(Value),
    Error(Box<ErrorData>),
}

/// How a running call ended, for those waiting on it.
#[derive(Clone, Debug)]
pub(crate) enum Finished {
    Stored(Stored),
    /// It stored nothing (refused before sending, or abandoned): the waiter runs the call.
    Nothing,
}

enum Entry {
    Running {
        fingerprint: String,
        done: watch::Receiver<Option<Finished>>,
    },
    Done {
        fingerprint: String,
        stored: Stored,
        at: Instant,
    },
}

/// Every key's state.
pub(crate) struct IdempotencyStore {
    entries: Mutex<HashMap<(String, String), Entry>>,
    ttl: Duration,
}

/// What to do with a call that carries a key.
pub(crate) enum Begin {
    /// Run it, then [`Ticket::finish`].
    Run(Ticket),
    /// Answer with what the first call stored.
    Replay(Stored),
    /// The same call is running: wait for it.
    Wait(watch::Receiver<Option<Finished>>),
}

/// The right and duty to run a keyed call and store its answer. Dropped unfinished (the caller
/// went away), it frees the key for whoever waits.
pub(crate) struct Ticket {
    store: Arc<IdempotencyStore>,
    key: (String, String),
    done: Option<watch::Sender<Option<Finished>>>,
}

impl IdempotencyStore {
    pub(crate) fn new(ttl: Duration) -> Arc<IdempotencyStore> {
        Arc::new(IdempotencyStore {
            entries: Mutex::new(HashMap::new()),
            ttl,
        })
    }

    /// Looks `key` of `token_id` up for a call described by `fingerprint`.
    pub(crate) fn begin(
        self: &Arc<Self>,
        token_id: &str,
        key: &str,
        fingerprint: &str,
    ) -> Result<Begin, Error> {
        if key.is_empty() || key.len() > MAX_KEY_LEN {
            return Err(Error::invalid_params(
                "callTool",
                format!("idempotencyKey must be 1-{MAX_KEY_LEN} bytes long"),
            ));
        }
        let now = Instant::now();
        let mut entries = self.entries.lock().unwrap();
        let map_key = (token_id.to_owned(), key.to_owned());
        let conflict = |previous: &str| -> Error {
            ErrorData::IdempotencyConflict {
                key: key.to_owned(),
                message: describe_difference(previous, fingerprint),
            }
            .into()
        };
        match entries.get(&map_key) {
            Some(Entry::Done {
                fingerprint: previous,
                stored,
                at,
            }) if now.duration_since(*at) < self.ttl => {
                return if previous == fingerprint {
                    Ok(Begin::Replay(stored.clone()))
                } else {
                    Err(conflict(previous))
                };
            }
            Some(Entry::Running {
                fingerprint: previous,
                done,
            }) => {
                return if previous == fingerprint {
                    Ok(Begin::Wait(done.clone()))
                } else {
                    Err(conflict(previous))
                };
            }
            _ => {}
        }
        if entries.len() >= MAX_KEYS {
            let ttl = self.ttl;
            entries.retain(|_, entry| match entry {
                Entry::Done { at, .. } => now.duration_since(*at) < ttl,
                Entry::Running { .. } => true,
            });
            if entries.len() >= MAX_KEYS {
                let oldest = entries
                    .iter()
                    .filter_map(|(key, entry)| match entry {
                        Entry::Done { at, .. } => Some((*at, key.clone())),
                        Entry::Running { .. } => None,
                    })
                    .min_by_key(|(at, _)| *at)
                    .map(|(_, key)| key);
                match oldest {
                    Some(oldest) => {
                        entries.remove(&oldest);
                    }
                    None => {
                        return Err(Error::invalid_params(
                            "callTool",
                            format!(
                                "{MAX_KEYS} calls with idempotency keys are running; retry when \
                                 some have finished"
                            ),
                        ));
                    }
                }
            }
        }
        let (done, receiver) = watch::channel(None);
        entries.insert(
            map_key.clone(),
            Entry::Running {
                fingerprint: fingerprint.to_owned(),
                done: receiver,
            },
        );
        Ok(Begin::Run(Ticket {
            store: Arc::clone(self),
            key: map_key,
            done: Some(done),
        }))
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.lock().unwrap().len()
    }
}

impl Ticket {
    /// Stores the answer when the call reached a server (`executed`), else frees the key.
    pub(crate) fn finish(mut self, answer: &Result<Value, Error>, executed: bool) {
        let finished = if executed {
            let stored = match answer {
                Ok(result) => Stored::Result(result.clone()),
                Err(error) => Stored::Error(Box::new(error.to_data())),
            };
            let mut entries = self.store.entries.lock().unwrap();
            let fingerprint = match entries.get(&self.key) {
                Some(Entry::Running { fingerprint, .. } | Entry::Done { fingerprint, .. }) => {
                    fingerprint.clone()
                }
                None => String::new(),
            };
            entries.insert(
                self.key.clone(),
                Entry::Done {
                    fingerprint,
                    stored: stored.clone(),
                    at: Instant::now(),
                },
            );
            drop(entries);
            Finished::Stored(stored)
        } else {
            self.store.entries.lock().unwrap().remove(&self.key);
            Finished::Nothing
        };
        if let Some(done) = self.done.take() {
            done.send_replace(Some(finished));
        }
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if let Some(done) = self.done.take() {
            self.store.entries.lock().unwrap().remove(&self.key);
            done.send_replace(Some(Finished::Nothing));
        }
    }
}

/// Waits for the running call; `Some` with its stored answer, `None` when it stored nothing
/// (then the waiter should begin again).
pub(crate) async fn wait(mut done: watch::Receiver<Option<Finished>>) -> Option<Stored> {
    let finished = match done.wait_for(Option::is_some).await {
        Ok(finished) => finished.clone(),
        // The ticket went away without a word: nothing stored.
        Err(_) => None,
    };
    match finished {
        Some(Finished::Stored(stored)) => Some(stored),
        _ => None,
    }
}

/// The fingerprint of a call: the server as named (`*` when routed), the tool, the arguments'
/// hash.
pub(crate) fn fingerprint(server: Option<&str>, tool: &str, arguments_hash: &str) -> String {
    format!(
        "{}\u{1f}{tool}\u{1f}{arguments_hash}",
        server.unwrap_or("*")
    )
}

/// Says which part of two fingerprints differs.
fn describe_difference(previous: &str, now: &str) -> String {
    let a: Vec<&str> = previous.split('\u{1f}').collect();
    let b: Vec<&str> = now.split('\u{1f}').collect();
    match (a.as_slice(), b.as_slice()) {
        ([s1, t1, _], [s2, t2, _]) if s1 != s2 || t1 != t2 => {
            format!("it was used for {s1}/{t1}, not {s2}/{t2}")
        }
        _ => "it was used with different arguments".to_owned(),
    }
}

impl Stored {
    /// The answer to give a repeat.
    pub(crate) fn replay(self) -> Result<Value, Error> {
        match self {
            Stored::Result(mut result) => {
                super::set_meta(&mut result, tool_cli_protocol::meta::REPLAYED, true.into());
                Ok(result)
            }
            Stored::Error(data) => Err(Error::Reported(data)),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn run(begin: Begin) -> Ticket {
        match begin {
            Begin::Run(ticket) => ticket,
            _ => panic!("expected to run"),
        }
    }

    #[tokio::test]
    async fn a_repeat_replays_and_a_different_call_conflicts() {
        let store = IdempotencyStore::new(DEFAULT_TTL);
        let ticket = run(store.begin("t", "k", "a\u{1f}x\u{1f}h1").unwrap());
        ticket.finish(&Ok(json!({"content": []})), true);
        match store.begin("t", "k", "a\u{1f}x\u{1f}h1").unwrap() {
            Begin::Replay(stored) => {
                let result = stored.replay().unwrap();
                assert_eq!(result["_meta"]["tool-cli/replayed"], true);
            }
            _ => panic!("expected a replay"),
        }
        let error = store.begin("t", "k", "a\u{1f}x\u{1f}h2").err().unwrap();
        assert!(error.to_string().contains("different arguments"), "{error}");
        let error = store.begin("t", "k", "b\u{1f}y\u{1f}h1").err().unwrap();
        assert!(error.to_string().contains("a/x, not b/y"), "{error}");
        // Another token's identical key is its own.
        assert!(matches!(
            store.begin("other", "k", "b\u{1f}y\u{1f}h1").unwrap(),
            Begin::Run(_)
        ));
    }

    #[tokio::test]
    async fn a_repeat_while_running_waits_for_the_first() {
        let store = IdempotencyStore::new(DEFAULT_TTL);
        let ticket = run(store.begin("t", "k", "f").unwrap());
        let Begin::Wait(done) = store.begin("t", "k", "f").unwrap() else {
            panic!("expected to wait");
        };
        let waiter = tokio::spawn(wait(done));
        ticket.finish(&Ok(json!({"n": 1})), true);
        match waiter.await.unwrap() {
            Some(Stored::Result(value)) => assert_eq!(value["n"], 1),
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn refusals_and_abandoned_calls_free_the_key() {
        let store = IdempotencyStore::new(DEFAULT_TTL);
        let ticket = run(store.begin("t", "k", "f").unwrap());
        ticket.finish(&Err(Error::invalid_params("callTool", "bad")), false);
        assert_eq!(store.len(), 0);
        let ticket = run(store.begin("t", "k", "f").unwrap());
        let Begin::Wait(done) = store.begin("t", "k", "f").unwrap() else {
            panic!("expected to wait");
        };
        drop(ticket);
        assert!(wait(done).await.is_none());
        assert!(matches!(store.begin("t", "k", "f").unwrap(), Begin::Run(_)));
    }

    #[tokio::test(start_paused = true)]
    async fn answers_expire_after_the_ttl() {
        let store = IdempotencyStore::new(Duration::from_secs(60));
        run(store.begin("t", "k", "f").unwrap()).finish(&Ok(json!({})), true);
        tokio::time::advance(Duration::from_secs(61)).await;
        assert!(matches!(store.begin("t", "k", "f").unwrap(), Begin::Run(_)));
    }

    #[test]
    fn keys_are_bounded_in_length() {
        let store = IdempotencyStore::new(DEFAULT_TTL);
        assert!(store.begin("t", "", "f").is_err());
        assert!(store.begin("t", &"k".repeat(257), "f").is_err());
    }
}
