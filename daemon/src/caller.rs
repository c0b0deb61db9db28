//! Who a tool call is made for, as the upstream server sees it: an opaque caller key in the
//! request's `_meta["tool-cli/sessionId"]`.
//!
//! The daemon holds one MCP connection per server, shared by every client, so a server that
//! keeps state per client (the demo server's resource handles) cannot tell two tokens, or two
//! sessions of one token, apart by the connection. Each call therefore carries a key derived
//! from the caller's token id and session id: the same for every call of one (token, session),
//! different across tokens and sessions, and telling the server neither (a SHA-256 of both, cut
//! to 128 bits). A call without a session gets its token's key, so one token's calls keep
//! sharing what they opened, as before.
//!
//! The key travels as a task-local from the calls service (set around each
//! call it hands to the pipeline) to the pool's connection, which writes it into `tools/call`:
//! nothing between them needs to know it exists.

use std::fmt::Write as _;
use std::sync::Arc;

use sha2::{Digest as _, Sha256};

/// The `_meta` member the key travels in; the demo server reads the same name.
pub const META_KEY: &str = "tool-cli/sessionId";

tokio::task_local! {
    /// The caller key of the call running in this task.
    static CURRENT: Arc<str>;
}

/// The key of the caller with `token_id`, in `session` (when the call names one).
pub fn key(token_id: &str, session: Option<&str>) -> String {
    let mut digest = Sha256::new();
    digest.update(b"tool-cli caller key v1\0");
    digest.update(token_id.as_bytes());
    match session {
        // The length keeps ("ab", "c") apart from ("a", "bc").
        Some(session) => {
            digest.update(b"\0session\0");
            digest.update((session.len() as u64).to_be_bytes());
            digest.update(session.as_bytes());
        }
        None => digest.update(b"\0token"),
    }
    let digest = digest.finalize();
    let mut text = String::with_capacity(34);
    text.push_str("c-");
    for byte in &digest[..16] {
        // Writing to a `String` cannot fail; no string per byte.
        let _ = write!(text, "{byte:02x}");
    }
    text
}

/// Runs `work` (one call through the pipeline) with `key` as its caller.
pub(crate) async fn with_caller<T>(key: String, work: impl Future<Output = T>) -> T {
    CURRENT.scope(Arc::from(key), work).await
}

/// The caller key of the call running in this task, if any.
pub(crate) fn current() -> Option<Arc<str>> {
    CURRENT.try_with(Arc::clone).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_separate_tokens_and_sessions_and_reveal_neither() {
        let owner = key("0123456789abcdef", None);
        assert_eq!(owner, key("0123456789abcdef", None), "stable");
        assert_eq!(owner.len(), 34);
        assert!(owner.starts_with("c-"));
        let keys = [
            owner.clone(),
            key("fedcba9876543210", None),
            key("0123456789abcdef", Some("s1")),
            key("0123456789abcdef", Some("s2")),
            key("fedcba9876543210", Some("s1")),
            key("0123456789abcdef", Some("")),
        ];
        for (i, a) in keys.iter().enumerate() {
            for b in &keys[i + 1..] {
                assert_ne!(a, b);
            }
            assert!(!a.contains("0123456789abcdef") && !a.contains("s1"));
        }
    }

    #[tokio::test]
    async fn the_key_is_seen_only_inside_its_call() {
        assert!(current().is_none());
        let seen = with_caller("c-1".to_owned(), async { current() }).await;
        assert_eq!(seen.as_deref(), Some("c-1"));
        assert!(current().is_none());
    }
}
