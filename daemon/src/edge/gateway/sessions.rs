//! The gateway's sessions: each `initialize` opens one, bound to the token that opened it, with
//! its mode and what the progressive mode remembers (the tools described in it) and the
//! resource URIs it was shown. Bounded: past [`MAX_SESSIONS`] the least recently used goes, and
//! a session idle for [`IDLE_TTL`] expires (MCP hosts start a new one on a 404).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rand::RngExt as _;

use super::Mode;

/// Most sessions held at once.
const MAX_SESSIONS: usize = 4096;

/// How long an unused session is kept.
const IDLE_TTL: Duration = Duration::from_secs(24 * 60 * 60);

/// Most tools one session remembers as described (more than any host reads).
const MAX_DESCRIBED: usize = 10_000;

/// One session.
pub(crate) struct Session {
    /// The token that opened it: only it may use it.
    token_id: String,
    /// Its mode, for its whole life.
    pub(crate) mode: Mode,
    /// Gateway names of the tools `describe_tool` showed in this session.
    described: Mutex<HashSet<String>>,
    /// Resource URI → the server that listed it, from this session's `resources/list`.
    resource_servers: Mutex<HashMap<String, String>>,
    last_used: Mutex<Instant>,
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
}

impl SessionTable {
    /// Opens a session for `token_id` and answers its id (128 random bits, hex).
    pub(crate) fn open(&self, token_id: &str, mode: Mode) -> String {
        let bytes: [u8; 16] = rand::rng().random();
        let id: String = bytes.iter().map(|byte| format!("{byte:02x}")).collect();
        let now = Instant::now();
        let session = Arc::new(Session {
            token_id: token_id.to_owned(),
            mode,
            described: Mutex::default(),
            resource_servers: Mutex::default(),
            last_used: Mutex::new(now),
        });
        let mut sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        sessions.retain(|_, session| now.duration_since(session.last_used()) < IDLE_TTL);
        if sessions.len() >= MAX_SESSIONS
            && let Some(oldest) = sessions
                .iter()
                .min_by_key(|(_, session)| session.last_used())
                .map(|(id, _)| id.clone())
        {
            sessions.remove(&oldest);
        }
        sessions.insert(id.clone(), session);
        id
    }

    /// The session `id`, if it is open and `token_id`'s.
    pub(crate) fn get(&self, id: &str, token_id: &str) -> Option<Arc<Session>> {
        let sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        let session = sessions.get(id)?;
        let now = Instant::now();
        if session.token_id != token_id || now.duration_since(session.last_used()) >= IDLE_TTL {
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
            .is_some_and(|session| session.token_id == token_id)
        {
            sessions.remove(id);
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

    #[test]
    fn a_session_is_its_tokens_alone() {
        let table = SessionTable::default();
        let id = table.open("owner", Mode::Progressive);
        assert_eq!(id.len(), 32);
        assert!(table.get(&id, "other").is_none());
        let session = table.get(&id, "owner").expect("open");
        assert_eq!(session.mode, Mode::Progressive);
        session.note_described("a__b");
        assert!(session.was_described("a__b"));
        assert!(!session.was_described("a__c"));
        assert!(!table.remove(&id, "other"));
        assert!(table.remove(&id, "owner"));
        assert!(table.get(&id, "owner").is_none());
    }
}
