//! The gateway's sessions: each `initialize` opens one, bound to the token that opened it, with
//! its mode and what the progressive mode remembers (the tools described in it), the
//! resource URIs it was shown, the host's log level and its streamed calls in flight (to
//! cancel them and to route the host's answers to their questions). Bounded: past [`MAX_SESSIONS`] the least recently used goes, and
//! a session idle for [`IDLE_TTL`] expires (MCP hosts start a new one on a 404).
//!
//! However a session ends (`DELETE`, expiry, eviction), its resource subscriptions are handed
//! to the table's release hook ([`Released`]): the pool counts subscriptions across sessions
//! (`pool/connection/subscribed.rs`), so a session that ended without unsubscribing would
//! otherwise keep its server subscribed for as long as the daemon runs.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use serde_json::Value;

use rand::RngExt as _;

use super::Mode;
use super::stream::{Answered, HostCapabilities, HostRelay};
use crate::auth::Grant;

/// Most sessions held at once.
const MAX_SESSIONS: usize = 4096;

/// How long an unused session is kept.
const IDLE_TTL: Duration = Duration::from_secs(24 * 60 * 60);

/// Most tools one session remembers as described (more than any host reads).
const MAX_DESCRIBED: usize = 10_000;

/// Most resource subscriptions one session holds; a subscribe past it is refused (not passed
/// on unrecorded, which would leave the pool subscribed past the session's end).
pub(crate) const MAX_SUBSCRIPTIONS: usize = 10_000;

/// The resource subscriptions of a session that ended, to be released at their servers.
#[derive(Debug)]
pub(crate) struct Released {
    /// The grant of the token that opened the session (the unsubscribes are its requests).
    pub(crate) grant: Grant,
    /// Each subscribed URI with its server.
    pub(crate) subscriptions: Vec<(String, String)>,
}

/// What the table calls with the subscriptions of each session that ends holding some.
pub(crate) type ReleaseHook = Arc<dyn Fn(Released) + Send + Sync>;

/// One session.
pub(crate) struct Session {
    /// The grant of the token that opened it: only that token may use it.
    grant: Grant,
    /// Its mode, for its whole life.
    pub(crate) mode: Mode,
    /// Gateway names of the tools `describe_tool` showed in this session.
    described: Mutex<HashSet<String>>,
    /// Resource URI → the server that listed it, from this session's `resources/list`.
    resource_servers: Mutex<HashMap<String, String>>,
    last_used: Mutex<Instant>,
    /// What the host declared it can do at `initialize`.
    pub(crate) host: HostCapabilities,
    /// The least severe log level the host asked for (`logging/setLevel`), as a rank.
    log_level: Mutex<Option<usize>>,
    /// The relays of its streamed calls in flight, for the host's answers to our questions.
    relays: Mutex<Vec<Weak<HostRelay>>>,
    /// Its streamed calls in flight by the host's request id (as JSON text), for
    /// `notifications/cancelled`.
    calls: Mutex<HashMap<String, tokio::task::AbortHandle>>,
    next_relay: AtomicU64,
    /// The resource URIs it subscribed to, with the server of each.
    subscribed: Mutex<HashMap<String, String>>,
    /// Its standalone stream (`GET`): one at a time, its events held for a reconnect.
    pub(crate) notices: super::replay::NoticeLog,
    /// Turns `true` when the session ends (deleted or evicted), which ends its stream.
    ended: tokio::sync::watch::Sender<bool>,
}

impl Session {
    /// Notes that `describe_tool` showed `tool`.
    pub(crate) fn note_described(&self, tool: &str) {
        let mut described = self.described.lock().unwrap_or_else(|e| e.into_inner());
        if described.len() < MAX_DESCRIBED {
            described.insert(tool.to_owned());
        }
    }

    /// Whether `describe_tool` showed `tool` in this session.
    pub(crate) fn was_described(&self, tool: &str) -> bool {
        self.described
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(tool)
    }

    /// Remembers which server listed each resource URI.
    pub(crate) fn note_resources(&self, uris: HashMap<String, String>) {
        *self
            .resource_servers
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = uris;
    }

    /// Sets the least severe log level sent to the host.
    pub(crate) fn set_log_level(&self, rank: usize) {
        *self.log_level.lock().unwrap_or_else(|e| e.into_inner()) = Some(rank);
    }

    /// A relay for one streamed call (its progress token, if the host gave one), at the
    /// session's log level.
    pub(crate) fn relay(
        &self,
        progress_token: Option<Value>,
    ) -> (Arc<HostRelay>, tokio::sync::mpsc::Receiver<Value>) {
        let level = *self.log_level.lock().unwrap_or_else(|e| e.into_inner());
        self.relay_at(progress_token, level)
    }

    /// A relay for one streamed call at log level `level` (`None`: every level): a 2026-07-28
    /// request names its own, there being no `logging/setLevel` in that revision.
    pub(crate) fn relay_at(
        &self,
        progress_token: Option<Value>,
        level: Option<usize>,
    ) -> (Arc<HostRelay>, tokio::sync::mpsc::Receiver<Value>) {
        let serial = self.next_relay.fetch_add(1, Ordering::Relaxed);
        let (relay, receiver) = HostRelay::new(serial, progress_token, self.host, level);
        let mut relays = self.relays.lock().unwrap_or_else(|e| e.into_inner());
        relays.retain(|relay| relay.strong_count() > 0);
        relays.push(Arc::downgrade(&relay));
        (relay, receiver)
    }

    /// Hands the host's answer to request `id` to the call that asked; `NotOurs` when no call
    /// of this session did (it ended, or the id is not one we sent).
    pub(crate) fn answer(&self, id: &Value, answer: &Result<Value, Value>) -> Answered {
        let relays: Vec<Arc<HostRelay>> = self
            .relays
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .filter_map(Weak::upgrade)
            .collect();
        for relay in relays {
            match relay.answer(id, answer) {
                Answered::NotOurs => continue,
                answered => return answered,
            }
        }
        Answered::NotOurs
    }

    /// Notes a streamed call in flight under the host's request id.
    pub(crate) fn call_started(&self, id: &Value, call: tokio::task::AbortHandle) {
        let mut calls = self.calls.lock().unwrap_or_else(|e| e.into_inner());
        // A call whose stream the host dropped was aborted without ending here.
        calls.retain(|_, call| !call.is_finished());
        if !call.is_finished() {
            calls.insert(id.to_string(), call);
        }
    }

    /// Forgets a streamed call that ended.
    pub(crate) fn call_ended(&self, id: &Value) {
        self.calls
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&id.to_string());
    }

    /// `notifications/cancelled`: stops the call the host named; whether one was running.
    pub(crate) fn cancel(&self, id: &Value) -> bool {
        match self
            .calls
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&id.to_string())
        {
            Some(call) => {
                call.abort();
                true
            }
            None => false,
        }
    }

    /// Notes a subscription to `uri` at `server` (`subscribe`) or its end; `false` when the
    /// session ended meanwhile (nothing noted: the caller releases a subscription itself).
    pub(crate) fn note_subscription(&self, uri: &str, server: &str, subscribe: bool) -> bool {
        let mut subscribed = self.subscribed.lock().unwrap_or_else(|e| e.into_inner());
        // Read under the lock `end` drains under, after it marks the session ended: a
        // subscription noted here is either drained by `end` or refused.
        if *self.ended.borrow() {
            return false;
        }
        if subscribe {
            subscribed.insert(uri.to_owned(), server.to_owned());
        } else {
            subscribed.remove(uri);
        }
        true
    }

    /// Whether it may subscribe to one more resource: a clear refusal past
    /// [`MAX_SUBSCRIPTIONS`].
    pub(crate) fn may_subscribe(&self) -> Result<(), String> {
        let held = self
            .subscribed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .len();
        if held >= MAX_SUBSCRIPTIONS {
            return Err(format!(
                "this session holds {held} resource subscriptions, the most one session may; \
                 send resources/unsubscribe for one it no longer needs first"
            ));
        }
        Ok(())
    }

    /// Whether it subscribed to `uri` at `server`.
    pub(crate) fn is_subscribed(&self, uri: &str, server: &str) -> bool {
        self.subscribed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(uri)
            .is_some_and(|subscribed| subscribed == server)
    }

    /// Marks the session ended, for its stream; its subscriptions, to be released.
    fn end(&self) -> Option<Released> {
        self.ended.send_replace(true);
        let subscriptions: Vec<(String, String)> = self
            .subscribed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain()
            .collect();
        (!subscriptions.is_empty()).then(|| Released {
            grant: self.grant.clone(),
            subscriptions,
        })
    }

    /// A receiver that turns `true` when the session ends.
    pub(crate) fn ended(&self) -> tokio::sync::watch::Receiver<bool> {
        self.ended.subscribe()
    }

    /// The server that listed `uri` in this session's last `resources/list`.
    pub(crate) fn resource_server(&self, uri: &str) -> Option<String> {
        self.resource_servers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(uri)
            .cloned()
    }
}

/// Every open session.
#[derive(Default)]
pub(crate) struct SessionTable {
    sessions: Mutex<HashMap<String, Arc<Session>>>,
    /// Told the subscriptions of each session that ends holding some; none: forgotten.
    release: Option<ReleaseHook>,
}

impl SessionTable {
    /// A table that hands the subscriptions of each session that ends to `release`.
    pub(crate) fn releasing(release: ReleaseHook) -> SessionTable {
        SessionTable {
            sessions: Mutex::default(),
            release: Some(release),
        }
    }

    /// Ends `session` and releases its subscriptions.
    fn end(&self, session: &Session) {
        if let Some(released) = session.end()
            && let Some(release) = &self.release
        {
            release(released);
        }
    }

    /// Opens a session for `grant`'s token and answers its id (128 random bits, hex).
    pub(crate) fn open(&self, grant: &Grant, mode: Mode, host: HostCapabilities) -> String {
        let bytes: [u8; 16] = rand::rng().random();
        let id: String = bytes.iter().map(|byte| format!("{byte:02x}")).collect();
        let now = Instant::now();
        let session = Arc::new(Session {
            grant: grant.clone(),
            mode,
            described: Mutex::default(),
            resource_servers: Mutex::default(),
            last_used: Mutex::new(now),
            host,
            log_level: Mutex::default(),
            relays: Mutex::default(),
            calls: Mutex::default(),
            next_relay: AtomicU64::new(1),
            subscribed: Mutex::default(),
            notices: super::replay::NoticeLog::default(),
            ended: tokio::sync::watch::Sender::new(false),
        });
        let mut sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        sessions.retain(|_, session| {
            let keep = now.duration_since(session.last_used()) < IDLE_TTL;
            if !keep {
                self.end(session);
            }
            keep
        });
        if sessions.len() >= MAX_SESSIONS
            && let Some(oldest) = sessions
                .iter()
                .min_by_key(|(_, session)| session.last_used())
                .map(|(id, _)| id.clone())
            && let Some(evicted) = sessions.remove(&oldest)
        {
            self.end(&evicted);
        }
        sessions.insert(id.clone(), session);
        id
    }

    /// The session `id`, if it is open and `token_id`'s; one found expired is ended.
    pub(crate) fn get(&self, id: &str, token_id: &str) -> Option<Arc<Session>> {
        self.get_at(id, token_id, Instant::now())
    }

    /// [`SessionTable::get`] at the instant `now`.
    fn get_at(&self, id: &str, token_id: &str, now: Instant) -> Option<Arc<Session>> {
        let mut sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        let session = sessions.get(id)?;
        if session.grant.token_id != token_id {
            return None;
        }
        if now.duration_since(session.last_used()) >= IDLE_TTL {
            if let Some(expired) = sessions.remove(id) {
                self.end(&expired);
            }
            return None;
        }
        *session.last_used.lock().unwrap_or_else(|e| e.into_inner()) = now;
        Some(Arc::clone(session))
    }

    /// Ends the session `id` if it is `token_id`'s; whether it did.
    pub(crate) fn remove(&self, id: &str, token_id: &str) -> bool {
        let mut sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        if sessions
            .get(id)
            .is_some_and(|session| session.grant.token_id == token_id)
        {
            if let Some(session) = sessions.remove(id) {
                self.end(&session);
            }
            true
        } else {
            false
        }
    }
}

impl Session {
    fn last_used(&self) -> Instant {
        *self.last_used.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grant(token_id: &str) -> Grant {
        Grant {
            token_id: token_id.to_owned(),
            is_owner: false,
            scope: Arc::new(crate::policy::Scope::unrestricted()),
        }
    }

    /// A table whose release hook records what it is handed.
    fn recording_table() -> (SessionTable, Arc<Mutex<Vec<Released>>>) {
        let handed: Arc<Mutex<Vec<Released>>> = Arc::default();
        let recorder = Arc::clone(&handed);
        let table = SessionTable::releasing(Arc::new(move |released| {
            recorder.lock().expect("unpoisoned").push(released);
        }));
        (table, handed)
    }

    #[test]
    fn a_session_is_its_tokens_alone() {
        let table = SessionTable::default();
        let id = table.open(
            &grant("owner"),
            Mode::Progressive,
            HostCapabilities::default(),
        );
        assert_eq!(id.len(), 32);
        assert!(table.get(&id, "other").is_none());
        let session = table.get(&id, "owner").expect("open");
        assert_eq!(session.mode, Mode::Progressive);
        session.note_described("a__b");
        assert!(session.was_described("a__b"));
        assert!(!session.was_described("a__c"));
        assert!(!table.remove(&id, "other"));
        let ended = session.ended();
        assert!(!*ended.borrow());
        assert!(table.remove(&id, "owner"));
        assert!(*ended.borrow(), "its stream is told the session ended");
        assert!(table.get(&id, "owner").is_none());
    }

    #[test]
    fn an_ended_sessions_subscriptions_are_handed_to_the_release_hook() {
        let (table, handed) = recording_table();
        let host = HostCapabilities::default();
        // Deleted holding two subscriptions (one undone): the one left is handed over, with
        // the grant of the token that opened the session.
        let id = table.open(&grant("owner"), Mode::PassThrough, host);
        let session = table.get(&id, "owner").expect("open");
        assert!(session.note_subscription("demo://a", "alpha", true));
        assert!(session.note_subscription("demo://b", "beta", true));
        assert!(session.note_subscription("demo://b", "beta", false));
        assert!(table.remove(&id, "owner"));
        {
            let handed = handed.lock().expect("unpoisoned");
            assert_eq!(handed.len(), 1);
            assert_eq!(handed[0].grant.token_id, "owner");
            assert_eq!(
                handed[0].subscriptions,
                vec![("demo://a".to_owned(), "alpha".to_owned())]
            );
        }
        // A subscription the server took after the session ended is not noted: the caller
        // releases it.
        assert!(!session.note_subscription("demo://c", "alpha", true));
        assert!(!session.is_subscribed("demo://c", "alpha"));

        // A session without subscriptions hands over nothing.
        let quiet = table.open(&grant("owner"), Mode::PassThrough, host);
        assert!(table.remove(&quiet, "owner"));
        assert_eq!(handed.lock().expect("unpoisoned").len(), 1);

        // Found expired: ended, and its subscriptions handed over.
        let idle = table.open(&grant("owner"), Mode::PassThrough, host);
        let session = table.get(&idle, "owner").expect("open");
        assert!(session.note_subscription("demo://d", "alpha", true));
        let later = Instant::now() + IDLE_TTL;
        assert!(table.get_at(&idle, "owner", later).is_none());
        assert!(*session.ended().borrow(), "the expired session ended");
        assert!(table.get(&idle, "owner").is_none(), "and is gone");
        let handed = handed.lock().expect("unpoisoned");
        assert_eq!(handed.len(), 2);
        assert_eq!(
            handed[1].subscriptions,
            vec![("demo://d".to_owned(), "alpha".to_owned())]
        );
    }

    #[test]
    fn a_subscription_past_the_cap_is_refused() {
        let table = SessionTable::default();
        let id = table.open(
            &grant("owner"),
            Mode::PassThrough,
            HostCapabilities::default(),
        );
        let session = table.get(&id, "owner").expect("open");
        for index in 0..MAX_SUBSCRIPTIONS {
            assert!(session.note_subscription(&format!("demo://{index}"), "alpha", true));
        }
        let refusal = session.may_subscribe().expect_err("past the cap");
        assert!(refusal.contains("resources/unsubscribe"), "{refusal}");
        assert!(session.note_subscription("demo://0", "alpha", false));
        assert!(
            session.may_subscribe().is_ok(),
            "room again after an unsubscribe"
        );
    }
}
