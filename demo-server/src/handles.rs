//! Resource handles: the state behind `open_resource`, `read_resource` and `release_resource`.
//!
//! A handle is a snapshot of one resource's text taken at open time, read in byte ranges until it
//! is released or sits idle too long. The table belongs to one MCP connection (one `DemoServer`),
//! and inside it every handle also records the client session that opened it: the session named
//! by the request's `_meta["tool-cli/sessionId"]`, or the connection itself when there is none.
//! A handle is only usable by its own session, so a pooled connection shared by several clients
//! (the daemon's, which sends a key of each caller's token and session) still keeps them apart.
//! To any other session a handle is exactly as unknown as one never made: the same error,
//! whether it is open, released or expired, so no session can learn that another's exists.
//!
//! Everything here is pure bookkeeping: the clock is a parameter (`tokio::time::Instant`, so
//! tests pause and advance it), expiry is swept lazily on every operation, and the counts and
//! the bytes of the snapshots are bounded so no client can grow the table without limit. Handles are 128 random bits, so one
//! session cannot guess another's.

use std::{
    collections::{HashMap, VecDeque},
    sync::Arc,
    time::Duration,
};

use rand::RngExt as _;
use tokio::time::Instant;

/// Most handles one session may hold open at once.
pub(crate) const MAX_OPEN_PER_SESSION: usize = 1_000;
/// Most handles open on one connection across all its sessions.
pub(crate) const MAX_OPEN_PER_CONNECTION: usize = 10_000;
/// Most bytes of snapshots one session may hold open at once.
pub(crate) const MAX_BYTES_PER_SESSION: usize = 64 * 1024 * 1024;
/// Most bytes of snapshots open on one connection across all its sessions.
pub(crate) const MAX_BYTES_PER_CONNECTION: usize = 256 * 1024 * 1024;
/// How long a handle may go unused before it is released for its owner.
pub(crate) const IDLE_EXPIRY: Duration = Duration::from_secs(15 * 60);
/// Bytes returned by one read when the caller does not say.
pub(crate) const DEFAULT_READ_LENGTH: usize = 16 * 1024;
/// Most bytes one read returns, whatever the caller asks for.
pub(crate) const MAX_READ_LENGTH: usize = 64 * 1024;
/// How many closed handles we remember, to say "released" or "expired" instead of "unknown".
const REMEMBERED_CLOSED: usize = 4_096;

/// Why a handle operation failed; every message says what to do instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum HandleError {
    #[error(
        "too many open handles: this session already holds {limit}; release some with \
         release_resource before opening more"
    )]
    TooManyOpen { limit: usize },
    #[error(
        "too much open: {open} bytes of snapshots are held and this resource adds {size}, more \
         than the limit of {limit}; release handles with release_resource before opening more"
    )]
    TooManyBytes {
        open: usize,
        size: usize,
        limit: usize,
    },
    #[error("handle {handle:?} was already released; open the resource again with open_resource")]
    Released { handle: String },
    #[error(
        "handle {handle:?} expired after {idle_seconds} s without use; open the resource again \
         with open_resource"
    )]
    Expired { handle: String, idle_seconds: u64 },
    #[error(
        "no open handle {handle:?} in this session; pass a handle returned by open_resource \
         (handles are per session and end when released or idle)"
    )]
    Unknown { handle: String },
    #[error(
        "offset {offset} is past the end of the resource ({size} bytes); read from an offset \
         below {size}, or stop: the previous read said eof"
    )]
    OffsetPastEnd { offset: usize, size: usize },
    #[error(
        "offset {offset} falls inside a UTF-8 character; continue from the nextOffset of the \
         previous read"
    )]
    NotCharBoundary { offset: usize },
}

/// What `open` tells the caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Opened {
    pub(crate) handle: String,
    pub(crate) size: usize,
}

/// One chunk read through a handle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Chunk {
    pub(crate) uri: String,
    pub(crate) mime_type: String,
    pub(crate) offset: usize,
    pub(crate) data: String,
    pub(crate) size: usize,
    /// The offset to read next, `None` once the end is reached.
    pub(crate) next_offset: Option<usize>,
}

#[derive(Debug)]
struct OpenHandle {
    session: String,
    uri: String,
    mime_type: String,
    text: Arc<str>,
    last_used: Instant,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Closed {
    Released,
    Expired,
}

/// The open handles of one connection.
#[derive(Debug)]
pub(crate) struct HandleTable {
    open: HashMap<String, OpenHandle>,
    /// Recently closed handles, the session they belonged to and why, oldest first, bounded by
    /// `REMEMBERED_CLOSED`.
    closed: VecDeque<(String, String, Closed)>,
    idle_expiry: Duration,
}

impl Default for HandleTable {
    fn default() -> Self {
        Self::new(IDLE_EXPIRY)
    }
}

impl HandleTable {
    pub(crate) fn new(idle_expiry: Duration) -> Self {
        Self {
            open: HashMap::new(),
            closed: VecDeque::new(),
            idle_expiry,
        }
    }

    /// Opens a handle on `text` for `session`.
    pub(crate) fn open(
        &mut self,
        session: &str,
        uri: &str,
        mime_type: &str,
        text: Arc<str>,
        now: Instant,
    ) -> Result<Opened, HandleError> {
        self.sweep(now);
        let held = self
            .open
            .values()
            .filter(|handle| handle.session == session)
            .count();
        if held >= MAX_OPEN_PER_SESSION {
            return Err(HandleError::TooManyOpen {
                limit: MAX_OPEN_PER_SESSION,
            });
        }
        if self.open.len() >= MAX_OPEN_PER_CONNECTION {
            return Err(HandleError::TooManyOpen {
                limit: MAX_OPEN_PER_CONNECTION,
            });
        }
        let size = text.len();
        let session_bytes: usize = self
            .open
            .values()
            .filter(|handle| handle.session == session)
            .map(|handle| handle.text.len())
            .sum();
        let connection_bytes: usize = self.open.values().map(|handle| handle.text.len()).sum();
        for (open, limit) in [
            (session_bytes, MAX_BYTES_PER_SESSION),
            (connection_bytes, MAX_BYTES_PER_CONNECTION),
        ] {
            if open.saturating_add(size) > limit {
                return Err(HandleError::TooManyBytes { open, size, limit });
            }
        }
        let handle = format!("h-{:032x}", rand::rng().random::<u128>());
        self.open.insert(
            handle.clone(),
            OpenHandle {
                session: session.to_owned(),
                uri: uri.to_owned(),
                mime_type: mime_type.to_owned(),
                text,
                last_used: now,
            },
        );
        Ok(Opened { handle, size })
    }

    /// Reads up to `length` bytes (capped at [`MAX_READ_LENGTH`]) from `offset`, ending early at
    /// a character boundary so every chunk is valid UTF-8.
    pub(crate) fn read(
        &mut self,
        session: &str,
        handle: &str,
        offset: usize,
        length: Option<usize>,
        now: Instant,
    ) -> Result<Chunk, HandleError> {
        let open = self.usable(session, handle, now)?;
        open.last_used = now;
        let text = &open.text;
        let size = text.len();
        if offset > size {
            return Err(HandleError::OffsetPastEnd { offset, size });
        }
        if !text.is_char_boundary(offset) {
            return Err(HandleError::NotCharBoundary { offset });
        }
        let wanted = length
            .unwrap_or(DEFAULT_READ_LENGTH)
            .clamp(1, MAX_READ_LENGTH);
        let mut end = offset.saturating_add(wanted).min(size);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        if end == offset && offset < size {
            // A one-byte request inside a multi-byte character: return that character whole.
            end = offset + 1;
            while !text.is_char_boundary(end) {
                end += 1;
            }
        }
        Ok(Chunk {
            uri: open.uri.clone(),
            mime_type: open.mime_type.clone(),
            offset,
            data: text[offset..end].to_owned(),
            size,
            next_offset: (end < size).then_some(end),
        })
    }

    /// Releases a handle; its later use is an error that says so.
    pub(crate) fn release(
        &mut self,
        session: &str,
        handle: &str,
        now: Instant,
    ) -> Result<String, HandleError> {
        self.usable(session, handle, now)?;
        let open = self.open.remove(handle).expect("usable checked it is open");
        self.remember(handle, &open.session, Closed::Released);
        Ok(open.uri)
    }

    /// How many handles `session` holds open now.
    pub(crate) fn open_count(&mut self, session: &str, now: Instant) -> usize {
        self.sweep(now);
        self.open
            .values()
            .filter(|handle| handle.session == session)
            .count()
    }

    fn usable(
        &mut self,
        session: &str,
        handle: &str,
        now: Instant,
    ) -> Result<&mut OpenHandle, HandleError> {
        self.sweep(now);
        // Only the session that opened a handle hears that it was released or expired.
        let closed = self
            .closed
            .iter()
            .rev()
            .find(|(closed, owner, _)| closed == handle && owner == session)
            .map(|(_, _, why)| *why);
        match self.open.get_mut(handle) {
            Some(open) if open.session == session => Ok(open),
            // Another session's handle is as unknown as one never made.
            Some(_) => Err(HandleError::Unknown {
                handle: handle.to_owned(),
            }),
            None => Err(match closed {
                Some(Closed::Released) => HandleError::Released {
                    handle: handle.to_owned(),
                },
                Some(Closed::Expired) => HandleError::Expired {
                    handle: handle.to_owned(),
                    idle_seconds: self.idle_expiry.as_secs(),
                },
                None => HandleError::Unknown {
                    handle: handle.to_owned(),
                },
            }),
        }
    }

    /// Drops every handle idle for longer than the expiry.
    fn sweep(&mut self, now: Instant) {
        let expiry = self.idle_expiry;
        let expired: Vec<String> = self
            .open
            .iter()
            .filter(|(_, open)| now.saturating_duration_since(open.last_used) > expiry)
            .map(|(handle, _)| handle.clone())
            .collect();
        for handle in expired {
            if let Some(open) = self.open.remove(&handle) {
                self.remember(&handle, &open.session, Closed::Expired);
            }
        }
    }

    fn remember(&mut self, handle: &str, session: &str, why: Closed) {
        if self.closed.len() == REMEMBERED_CLOSED {
            self.closed.pop_front();
        }
        self.closed
            .push_back((handle.to_owned(), session.to_owned(), why));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SESSION: &str = "";

    fn open_text(table: &mut HandleTable, text: &str, now: Instant) -> String {
        table
            .open(SESSION, "demo://docs/x", "text/plain", Arc::from(text), now)
            .unwrap()
            .handle
    }

    #[test]
    fn reads_in_chunks_until_eof() {
        let mut table = HandleTable::default();
        let now = Instant::now();
        let handle = open_text(&mut table, "hello world", now);
        let first = table.read(SESSION, &handle, 0, Some(5), now).unwrap();
        assert_eq!(
            (first.data.as_str(), first.size, first.next_offset),
            ("hello", 11, Some(5))
        );
        let rest = table.read(SESSION, &handle, 5, None, now).unwrap();
        assert_eq!((rest.data.as_str(), rest.next_offset), (" world", None));
        let at_end = table.read(SESSION, &handle, 11, None, now).unwrap();
        assert_eq!((at_end.data.as_str(), at_end.next_offset), ("", None));
        assert_eq!(
            table.read(SESSION, &handle, 12, None, now),
            Err(HandleError::OffsetPastEnd {
                offset: 12,
                size: 11
            })
        );
    }

    #[test]
    fn reads_are_capped_and_never_split_a_character() {
        let mut table = HandleTable::default();
        let now = Instant::now();
        let big = "a".repeat(MAX_READ_LENGTH * 2);
        let handle = open_text(&mut table, &big, now);
        let chunk = table
            .read(SESSION, &handle, 0, Some(usize::MAX), now)
            .unwrap();
        assert_eq!(chunk.data.len(), MAX_READ_LENGTH);
        let chunk = table.read(SESSION, &handle, 0, Some(0), now).unwrap();
        assert_eq!(chunk.data.len(), 1, "a zero length reads one byte");

        // "é" is two bytes: a two-byte read from 1 stops before it, a one-byte read returns it.
        let handle = open_text(&mut table, "aé b", now);
        let chunk = table.read(SESSION, &handle, 0, Some(2), now).unwrap();
        assert_eq!((chunk.data.as_str(), chunk.next_offset), ("a", Some(1)));
        let chunk = table.read(SESSION, &handle, 1, Some(1), now).unwrap();
        assert_eq!((chunk.data.as_str(), chunk.next_offset), ("é", Some(3)));
        assert_eq!(
            table.read(SESSION, &handle, 2, None, now),
            Err(HandleError::NotCharBoundary { offset: 2 })
        );
    }

    #[test]
    fn a_released_handle_says_so() {
        let mut table = HandleTable::default();
        let now = Instant::now();
        let handle = open_text(&mut table, "x", now);
        assert_eq!(
            table.release(SESSION, &handle, now).unwrap(),
            "demo://docs/x"
        );
        let released = HandleError::Released {
            handle: handle.clone(),
        };
        assert_eq!(
            table.read(SESSION, &handle, 0, None, now),
            Err(released.clone())
        );
        assert_eq!(table.release(SESSION, &handle, now), Err(released));
        assert!(matches!(
            table.read(SESSION, "h-nope", 0, None, now),
            Err(HandleError::Unknown { .. })
        ));
    }

    #[test]
    fn handles_belong_to_their_session() {
        let mut table = HandleTable::default();
        let now = Instant::now();
        let mine = table
            .open("alice", "demo://docs/x", "text/plain", Arc::from("x"), now)
            .unwrap()
            .handle;
        // To bob, alice's handle is exactly a handle never made: open, released or expired.
        let unknown = |handle: &str| HandleError::Unknown {
            handle: handle.to_owned(),
        };
        assert_eq!(table.read("bob", &mine, 0, None, now), Err(unknown(&mine)));
        assert_eq!(table.release("bob", &mine, now), Err(unknown(&mine)));
        assert_eq!(
            table
                .read("bob", "h-made-up", 0, None, now)
                .unwrap_err()
                .to_string(),
            unknown("h-made-up").to_string()
        );
        assert!(table.read("alice", &mine, 0, None, now).is_ok());
        table.release("alice", &mine, now).unwrap();
        assert_eq!(table.read("bob", &mine, 0, None, now), Err(unknown(&mine)));
        assert!(matches!(
            table.read("alice", &mine, 0, None, now),
            Err(HandleError::Released { .. })
        ));
        let idle = table
            .open("alice", "demo://docs/x", "text/plain", Arc::from("x"), now)
            .unwrap()
            .handle;
        let later = now + IDLE_EXPIRY + Duration::from_secs(1);
        assert_eq!(
            table.read("bob", &idle, 0, None, later),
            Err(unknown(&idle))
        );
        assert!(matches!(
            table.read("alice", &idle, 0, None, later),
            Err(HandleError::Expired { .. })
        ));
    }

    #[test]
    fn open_bytes_are_bounded_per_session_and_connection() {
        let mut table = HandleTable::default();
        let now = Instant::now();
        let big: Arc<str> = Arc::from("x".repeat(MAX_BYTES_PER_SESSION / 2).as_str());
        for _ in 0..2 {
            table
                .open(
                    "alice",
                    "demo://docs/x",
                    "text/plain",
                    Arc::clone(&big),
                    now,
                )
                .unwrap();
        }
        let refused = table.open("alice", "demo://docs/x", "text/plain", Arc::from("y"), now);
        assert_eq!(
            refused,
            Err(HandleError::TooManyBytes {
                open: MAX_BYTES_PER_SESSION,
                size: 1,
                limit: MAX_BYTES_PER_SESSION
            })
        );
        // Other sessions still open, up to the connection's bound.
        let mut last = String::new();
        for session in ["bob", "carol", "dave"] {
            for _ in 0..2 {
                last = table
                    .open(
                        session,
                        "demo://docs/x",
                        "text/plain",
                        Arc::clone(&big),
                        now,
                    )
                    .unwrap()
                    .handle;
            }
        }
        assert!(matches!(
            table.open("erin", "demo://docs/x", "text/plain", Arc::from("y"), now),
            Err(HandleError::TooManyBytes {
                limit: MAX_BYTES_PER_CONNECTION,
                ..
            })
        ));
        // Releasing makes room again.
        table.release("dave", &last, now).unwrap();
        table
            .open("erin", "demo://docs/x", "text/plain", Arc::from("y"), now)
            .unwrap();
    }

    #[test]
    fn open_handles_are_bounded_per_session() {
        let mut table = HandleTable::default();
        let now = Instant::now();
        let handles: Vec<_> = (0..MAX_OPEN_PER_SESSION)
            .map(|_| open_text(&mut table, "x", now))
            .collect();
        let refused = table.open(SESSION, "demo://docs/x", "text/plain", Arc::from("x"), now);
        assert_eq!(
            refused,
            Err(HandleError::TooManyOpen {
                limit: MAX_OPEN_PER_SESSION
            })
        );
        // Another session is not affected, and releasing one makes room again.
        assert!(
            table
                .open("other", "demo://docs/x", "text/plain", Arc::from("x"), now)
                .is_ok()
        );
        table.release(SESSION, &handles[0], now).unwrap();
        assert!(
            table
                .open(SESSION, "demo://docs/x", "text/plain", Arc::from("x"), now)
                .is_ok()
        );
        assert_eq!(table.open_count(SESSION, now), MAX_OPEN_PER_SESSION);
    }

    #[tokio::test(start_paused = true)]
    async fn idle_handles_expire_and_use_keeps_them_alive() {
        let mut table = HandleTable::new(Duration::from_secs(60));
        let kept = open_text(&mut table, "kept", Instant::now());
        let idle = open_text(&mut table, "idle", Instant::now());
        tokio::time::advance(Duration::from_secs(45)).await;
        table.read(SESSION, &kept, 0, None, Instant::now()).unwrap();
        tokio::time::advance(Duration::from_secs(30)).await;
        assert!(table.read(SESSION, &kept, 0, None, Instant::now()).is_ok());
        assert_eq!(
            table.read(SESSION, &idle, 0, None, Instant::now()),
            Err(HandleError::Expired {
                handle: idle,
                idle_seconds: 60
            })
        );
        assert_eq!(table.open_count(SESSION, Instant::now()), 1);
    }
}
