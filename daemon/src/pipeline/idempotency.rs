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
//!
//! The store is bounded by keys and by bytes ([`StoreLimits`]), in all and per token, and each
//! answer is kept as its JSON text so that what it is counted as is what it costs. A token over
//! its own share gives up its own oldest answers; the overall bounds take from the token holding
//! the most. So one token's flood of keyed calls (a scoped token's, say) never evicts another
//! token's key. An answer larger than a token's share is not kept: its repeat is told the call
//! ran, and is not run again.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::watch;
use tokio::time::Instant;
use tool_cli_protocol::ErrorData;

use super::answer::{CallAnswer, CallFacts, RanCall};
use crate::error::Error;

/// How long an answer is kept for repeats.
pub(crate) const DEFAULT_TTL: Duration = Duration::from_secs(600);

/// Longest key accepted.
const MAX_KEY_LEN: usize = 256;

/// What the store may hold, in keys and in bytes of stored answers, in all and per token.
///
/// The per-token bounds are what keep tokens apart: a token over its own bound gives up its
/// own oldest answers, so a scoped token's flood of keyed calls never evicts another token's
/// key. The overall bounds are met by taking from the token holding the most.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct StoreLimits {
    /// Most keys held, all tokens together (running calls included).
    pub(crate) keys: usize,
    /// Most keys one token holds.
    pub(crate) keys_per_token: usize,
    /// Most bytes of stored answers, all tokens together.
    pub(crate) bytes: usize,
    /// Most bytes one token's answers take; a single answer larger than this is not kept (its
    /// repeat is told so rather than run again).
    pub(crate) bytes_per_token: usize,
}

impl Default for StoreLimits {
    fn default() -> Self {
        StoreLimits {
            keys: 4096,
            keys_per_token: 1024,
            bytes: 128 * 1024 * 1024,
            bytes_per_token: 32 * 1024 * 1024,
        }
    }
}

/// What an entry costs besides its answer: the map's slot, the key, the token id, the
/// fingerprint and the bookkeeping, counted so that many small answers are bounded too.
const ENTRY_OVERHEAD_BYTES: usize = 128;

/// A stored answer.
#[derive(Clone, Debug)]
pub(crate) enum Stored {
    /// The tool's answer: its result as JSON text, kept as text so that what it costs is what
    /// it is counted as (a parsed value takes several times its text), and the facts of the
    /// call that ran; shared with the calls waiting on it.
    Result {
        text: Arc<str>,
        facts: Arc<CallFacts>,
    },
    Error(Box<ErrorData>),
    /// The call ran, but its answer (`bytes` long) was larger than the `limit` kept for one
    /// token: a repeat is told so, never run again.
    NotKept {
        bytes: usize,
        limit: usize,
    },
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

/// A token's (or all tokens') share of the store.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Usage {
    keys: usize,
    bytes: usize,
}

/// The map of keys and what each token holds, changed only through [`Entries::insert`] and
/// [`Entries::remove`], so that the counts are kept in one place.
#[derive(Default)]
struct Entries {
    /// Each key's entry, its size, and when it was inserted among the others (answers stored at
    /// the same instant are still told apart by age: the first inserted is the oldest).
    map: HashMap<(String, String), (Entry, usize, u64)>,
    per_token: HashMap<String, Usage>,
    total: Usage,
    inserted: u64,
}

impl Entries {
    fn insert(&mut self, key: (String, String), entry: Entry) {
        self.remove(&key);
        let bytes = entry_bytes(&key, &entry);
        let usage = self.per_token.entry(key.0.clone()).or_default();
        usage.keys += 1;
        usage.bytes += bytes;
        self.total.keys += 1;
        self.total.bytes += bytes;
        self.inserted += 1;
        self.map.insert(key, (entry, bytes, self.inserted));
    }

    fn remove(&mut self, key: &(String, String)) -> Option<Entry> {
        let (entry, bytes, _) = self.map.remove(key)?;
        if let Some(usage) = self.per_token.get_mut(&key.0) {
            usage.keys -= 1;
            usage.bytes -= bytes;
            if usage.keys == 0 {
                self.per_token.remove(&key.0);
            }
        }
        self.total.keys -= 1;
        self.total.bytes -= bytes;
        Some(entry)
    }

    fn usage(&self, token_id: &str) -> Usage {
        self.per_token.get(token_id).copied().unwrap_or_default()
    }

    /// Drops every answer older than `ttl`.
    fn expire(&mut self, now: Instant, ttl: Duration) {
        let expired: Vec<(String, String)> = self
            .map
            .iter()
            .filter(|(_, (entry, _, _))| {
                matches!(entry, Entry::Done { at, .. } if now.duration_since(*at) >= ttl)
            })
            .map(|(key, _)| key.clone())
            .collect();
        for key in expired {
            self.remove(&key);
        }
    }

    /// The oldest stored answer of `token_id` other than `keep`.
    fn oldest_done_of(&self, token_id: &str, keep: &(String, String)) -> Option<(String, String)> {
        self.map
            .iter()
            .filter(|(key, _)| key.0 == token_id && *key != keep)
            .filter_map(|(key, (entry, _, inserted))| match entry {
                Entry::Done { at, .. } => Some(((*at, *inserted), key)),
                Entry::Running { .. } => None,
            })
            .min_by_key(|(age, _)| *age)
            .map(|(_, key)| key.clone())
    }

    /// Gives up `token_id`'s oldest answers (never `keep`) while `over` says its usage is too
    /// much; `false` when it is still too much with only running calls (and `keep`) left.
    fn shrink_token(
        &mut self,
        token_id: &str,
        keep: &(String, String),
        over: impl Fn(Usage) -> bool,
    ) -> bool {
        while over(self.usage(token_id)) {
            match self.oldest_done_of(token_id, keep) {
                Some(oldest) => {
                    self.remove(&oldest);
                }
                None => return false,
            }
        }
        true
    }

    /// Meets the overall bounds by taking the oldest answers of whichever token holds the most
    /// (by `measure`), never `keep`; `false` when only running calls are left to take.
    fn shrink_total(
        &mut self,
        keep: &(String, String),
        over: impl Fn(Usage) -> bool,
        measure: impl Fn(Usage) -> usize,
    ) -> bool {
        while over(self.total) {
            // Tokens by what they hold, largest first: the first with an answer to give up.
            let mut holders: Vec<(usize, &String)> = self
                .per_token
                .iter()
                .map(|(token, usage)| (measure(*usage), token))
                .collect();
            holders.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(b.1)));
            let victim = holders
                .iter()
                .find_map(|(_, token)| self.oldest_done_of(token, keep));
            match victim {
                Some(victim) => {
                    self.remove(&victim);
                }
                None => return false,
            }
        }
        true
    }
}

/// What `entry` under `key` is counted as.
fn entry_bytes(key: &(String, String), entry: &Entry) -> usize {
    let (fingerprint, stored) = match entry {
        Entry::Running { fingerprint, .. } => (fingerprint, None),
        Entry::Done {
            fingerprint,
            stored,
            ..
        } => (fingerprint, Some(stored)),
    };
    ENTRY_OVERHEAD_BYTES
        + key.0.len()
        + key.1.len()
        + fingerprint.len()
        + stored.map_or(0, Stored::bytes)
}

/// Every key's state.
pub(crate) struct IdempotencyStore {
    entries: Mutex<Entries>,
    ttl: Duration,
    limits: StoreLimits,
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
        IdempotencyStore::with_limits(ttl, StoreLimits::default())
    }

    pub(crate) fn with_limits(ttl: Duration, limits: StoreLimits) -> Arc<IdempotencyStore> {
        Arc::new(IdempotencyStore {
            entries: Mutex::new(Entries::default()),
            ttl,
            limits,
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
        match entries.map.get(&map_key).map(|(entry, _, _)| entry) {
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
        let limits = self.limits;
        // Room for one more key of this token, and in all: expired answers go first, then the
        // token's own oldest, then (for the overall bound) the oldest of the token holding most.
        let own_full = |usage: Usage| usage.keys >= limits.keys_per_token;
        let all_full = |usage: Usage| usage.keys >= limits.keys;
        if own_full(entries.usage(token_id)) || all_full(entries.total) {
            entries.expire(now, self.ttl);
        }
        let room = entries.shrink_token(token_id, &map_key, own_full)
            && entries.shrink_total(&map_key, all_full, |usage| usage.keys);
        if !room {
            return Err(Error::invalid_params(
                "callTool",
                format!(
                    "{} calls with idempotency keys are running (at most {} for one token, {} \
                     in all); retry when some have finished",
                    entries.usage(token_id).keys,
                    limits.keys_per_token,
                    limits.keys
                ),
            ));
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

    /// Stores `stored` as the answer of `key`, within the bounds: an answer larger than a
    /// token's share is replaced by a note of its size; older answers make room for it.
    fn store(&self, key: &(String, String), stored: Stored) -> Stored {
        let limits = self.limits;
        let stored = match stored.bytes() {
            bytes if bytes > limits.bytes_per_token => Stored::NotKept {
                bytes,
                limit: limits.bytes_per_token,
            },
            _ => stored,
        };
        let mut entries = self.entries.lock().unwrap();
        let fingerprint = match entries.map.get(key).map(|(entry, _, _)| entry) {
            Some(Entry::Running { fingerprint, .. } | Entry::Done { fingerprint, .. }) => {
                fingerprint.clone()
            }
            None => String::new(),
        };
        entries.insert(
            key.clone(),
            Entry::Done {
                fingerprint,
                stored: stored.clone(),
                at: Instant::now(),
            },
        );
        let own_over = |usage: Usage| usage.bytes > limits.bytes_per_token;
        let all_over = |usage: Usage| usage.bytes > limits.bytes;
        if own_over(entries.usage(&key.0)) || all_over(entries.total) {
            entries.expire(Instant::now(), self.ttl);
        }
        // The answer itself fits a token's share (see above), and running calls cost only their
        // overhead: giving up older answers always makes room.
        entries.shrink_token(&key.0, key, own_over);
        entries.shrink_total(key, all_over, |usage| usage.bytes);
        stored
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.lock().unwrap().map.len()
    }

    /// Bytes counted for every key held, and for `token_id`'s.
    #[cfg(test)]
    fn held_bytes(&self, token_id: &str) -> (usize, usize) {
        let entries = self.entries.lock().unwrap();
        (entries.total.bytes, entries.usage(token_id).bytes)
    }
}

impl Ticket {
    /// Stores the answer when the call reached a server (`executed`), else frees the key.
    pub(crate) fn finish(mut self, answer: &Result<CallAnswer, Error>, executed: bool) {
        let stored = match answer {
            Ok(CallAnswer::Ran(ran)) => Some(Stored::Result {
                text: Arc::from(ran.result.to_string()),
                facts: Arc::new(ran.facts.clone()),
            }),
            Err(error) => Some(Stored::Error(Box::new(error.to_data()))),
            // A dry run is never keyed; were it, it would have nothing to store.
            Ok(CallAnswer::DryRun(_)) => None,
        };
        let finished = if let Some(stored) = stored.filter(|_| executed) {
            Finished::Stored(self.store.store(&self.key, stored))
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
    /// What the answer is counted as: its JSON text's length.
    fn bytes(&self) -> usize {
        match self {
            Stored::Result { text, .. } => text.len(),
            Stored::Error(data) => serde_json::to_string(data).map_or(0, |text| text.len()),
            Stored::NotKept { .. } => 0,
        }
    }

    /// The answer to give a repeat under `key`.
    pub(crate) fn replay(self, key: &str) -> Result<CallAnswer, Error> {
        match self {
            Stored::Result { text, facts } => {
                let result: Value = serde_json::from_str(&text).map_err(|error| {
                    Error::internal(format!("a stored answer does not parse: {error}"))
                })?;
                Ok(CallAnswer::Ran(RanCall {
                    result,
                    facts: CallFacts {
                        replayed: true,
                        ..(*facts).clone()
                    },
                    alternatives: None,
                }))
            }
            Stored::Error(data) => Err(Error::Reported(data)),
            Stored::NotKept { bytes, limit } => Err(Error::invalid_params(
                "callTool",
                format!(
                    "the call with idempotency key \"{}\" already ran, but its answer ({bytes} \
                     bytes) was larger than the {limit} bytes kept for a token's repeats, so it \
                     cannot be replayed and is not run again; use a new key to run the call again",
                    crate::redact::clean_text(key, 64)
                ),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// The answer of a call that ran and answered `result`.
    fn answered(result: Value) -> CallAnswer {
        CallAnswer::Ran(RanCall {
            result,
            facts: CallFacts {
                server: "s".into(),
                selection: crate::pipeline::routing::Selection::named("s"),
                attempts: 1,
                is_error: false,
                degraded: None,
                call_id: crate::pipeline::CallId::next(),
                replayed: false,
            },
            alternatives: None,
        })
    }

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
        ticket.finish(&Ok(answered(json!({"content": []}))), true);
        match store.begin("t", "k", "a\u{1f}x\u{1f}h1").unwrap() {
            Begin::Replay(stored) => {
                let CallAnswer::Ran(ran) = stored.replay("k").unwrap() else {
                    panic!("a ran call's answer");
                };
                assert!(ran.facts.replayed);
                assert_eq!(ran.result, json!({"content": []}));
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
        ticket.finish(&Ok(answered(json!({"n": 1}))), true);
        match waiter.await.unwrap() {
            Some(Stored::Result { text, .. }) => assert_eq!(&*text, r#"{"n":1}"#),
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
        run(store.begin("t", "k", "f").unwrap()).finish(&Ok(answered(json!({}))), true);
        tokio::time::advance(Duration::from_secs(61)).await;
        assert!(matches!(store.begin("t", "k", "f").unwrap(), Begin::Run(_)));
    }

    #[test]
    fn keys_are_bounded_in_length() {
        let store = IdempotencyStore::new(DEFAULT_TTL);
        assert!(store.begin("t", "", "f").is_err());
        assert!(store.begin("t", &"k".repeat(257), "f").is_err());
    }

    /// A result of about `bytes` bytes of JSON text.
    fn answer_of(bytes: usize) -> Value {
        json!({"content": [{"type": "text", "text": "x".repeat(bytes)}]})
    }

    /// Stores `answer` under `key` of `token` (the call ran).
    fn store_answer(store: &Arc<IdempotencyStore>, token: &str, key: &str, answer: Value) {
        run(store.begin(token, key, "s\u{1f}t\u{1f}h").unwrap())
            .finish(&Ok(answered(answer)), true);
    }

    /// The issue: a scoped token's 4,200 keyed calls evicted the owner's key (the oldest in the
    /// store), and the owner's repeat ran twice.
    #[tokio::test(start_paused = true)]
    async fn a_scoped_tokens_flood_of_keys_never_evicts_the_owners_key() {
        let store = IdempotencyStore::new(DEFAULT_TTL);
        store_answer(&store, "owner", "pay-invoice-7", json!({"content": []}));
        tokio::time::advance(Duration::from_millis(1)).await;
        for index in 0..4200 {
            store_answer(
                &store,
                "scoped",
                &format!("k{index}"),
                json!({"content": []}),
            );
        }
        assert!(
            matches!(
                store
                    .begin("owner", "pay-invoice-7", "s\u{1f}t\u{1f}h")
                    .unwrap(),
                Begin::Replay(_)
            ),
            "the owner's key was evicted by another token's keys"
        );
        // The flooding token gave up its own oldest keys, within its share.
        assert!(store.len() <= StoreLimits::default().keys);
        assert!(matches!(
            store.begin("scoped", "k0", "s\u{1f}t\u{1f}h").unwrap(),
            Begin::Run(_)
        ));
    }

    /// The issue: the store was bounded by count only, so 40 keyed 12 MB answers held 571 MB.
    #[test]
    fn stored_answers_are_bounded_by_bytes_per_token() {
        let store = IdempotencyStore::new(DEFAULT_TTL);
        let limits = StoreLimits::default();
        let answer_bytes = 1024 * 1024;
        let answers = limits.bytes_per_token / answer_bytes + 8;
        for index in 0..answers {
            store_answer(&store, "t", &format!("k{index}"), answer_of(answer_bytes));
        }
        let (total, token) = store.held_bytes("t");
        assert!(
            token <= limits.bytes_per_token && total <= limits.bytes,
            "{answers} answers of {answer_bytes} bytes hold {token} bytes"
        );
        // The newest answer is kept; the oldest made room for it.
        assert!(matches!(
            store
                .begin("t", &format!("k{}", answers - 1), "s\u{1f}t\u{1f}h")
                .unwrap(),
            Begin::Replay(_)
        ));
        assert!(matches!(
            store.begin("t", "k0", "s\u{1f}t\u{1f}h").unwrap(),
            Begin::Run(_)
        ));
    }

    #[tokio::test(start_paused = true)]
    async fn the_overall_byte_bound_takes_from_the_token_holding_the_most() {
        let limits = StoreLimits {
            keys: 1000,
            keys_per_token: 100,
            bytes: 20_000,
            bytes_per_token: 8_000,
        };
        let store = IdempotencyStore::with_limits(DEFAULT_TTL, limits);
        store_answer(&store, "owner", "mine", answer_of(1_000));
        tokio::time::advance(Duration::from_millis(1)).await;
        for token in ["a", "b", "c", "d"] {
            for index in 0..10 {
                store_answer(&store, token, &format!("k{index}"), answer_of(1_000));
            }
        }
        for token in ["owner", "a", "b", "c", "d"] {
            assert!(
                store.held_bytes(token).1 <= limits.bytes_per_token,
                "{token}"
            );
        }
        assert!(store.held_bytes("owner").0 <= limits.bytes);
        assert!(matches!(
            store.begin("owner", "mine", "s\u{1f}t\u{1f}h").unwrap(),
            Begin::Replay(_)
        ));
    }

    #[tokio::test]
    async fn an_answer_larger_than_a_tokens_share_is_not_kept_and_not_run_again() {
        let limits = StoreLimits {
            bytes_per_token: 4_000,
            ..StoreLimits::default()
        };
        let store = IdempotencyStore::with_limits(DEFAULT_TTL, limits);
        store_answer(&store, "t", "big", answer_of(10_000));
        assert!(
            store.held_bytes("t").1 < 1_000,
            "only a note of its size is kept"
        );
        let Begin::Replay(stored) = store.begin("t", "big", "s\u{1f}t\u{1f}h").unwrap() else {
            panic!("a repeat must not run the call again");
        };
        let error = stored.replay("big").unwrap_err().to_string();
        assert!(error.contains("already ran"), "{error}");
        assert!(error.contains("use a new key"), "{error}");
    }

    #[test]
    fn a_token_with_all_its_keys_running_is_refused_a_new_one() {
        let limits = StoreLimits {
            keys_per_token: 3,
            ..StoreLimits::default()
        };
        let store = IdempotencyStore::with_limits(DEFAULT_TTL, limits);
        let _running: Vec<Ticket> = (0..3)
            .map(|index| run(store.begin("t", &format!("k{index}"), "f").unwrap()))
            .collect();
        let error = store.begin("t", "k3", "f").err().unwrap().to_string();
        assert!(error.contains("at most 3 for one token"), "{error}");
        // Another token is not held up by it.
        assert!(matches!(
            store.begin("u", "k0", "f").unwrap(),
            Begin::Run(_)
        ));
    }
}
