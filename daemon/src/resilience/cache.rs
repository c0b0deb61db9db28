//! A degradation cache: recent results of read-only tools, served when their server is failing.
//!
//! When a server is down, busy or behind an open circuit breaker, an agent that asked a read-only
//! question (list the tables, read a file) is often better served by the answer from a few minutes
//! ago than by an error; this is the "fallback to cache" degradation of Hystrix's fallback path.
//! The cache is deliberately small and plain: entries are keyed by server, tool and the *canonical*
//! JSON of the arguments (object keys sorted at every depth, no whitespace), so `{"a":1,"b":2}` and
//! `{"b":2,"a":1}` hit the same entry even though the daemon's `serde_json` preserves key order.
//! Entries are fresh for a fixed `ttl`, and at most `max_entries` are kept, evicting the oldest
//! first.
//!
//! Only successful results (not `isError`) of tools annotated `readOnlyHint: true`
//! ([`crate::catalog::ToolHints::cacheable`]) belong here: serving a stale answer in place of a write would be a lie. The
//! cache is pure and clock-injected (`now` is a `tokio::time::Instant`); the caller shares it
//! behind a `std::sync::Mutex`, never held across an `.await`.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::time::Duration;

use serde_json::Value;
use tokio::time::Instant;

/// What a cached result is filed under.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct CacheKey {
    /// Whose call it was ([`crate::caller`]'s opaque key, empty when none is known): a server may
    /// answer each caller differently (per-session state, resource handles), so one caller's
    /// result is never served to another.
    pub caller: String,
    /// The server name.
    pub server: String,
    /// The tool name.
    pub tool: String,
    /// The canonical JSON of the arguments ([`canonical_json`]).
    pub arguments: String,
}

impl CacheKey {
    /// The key of a call of `tool` on `server` with `arguments`.
    pub(crate) fn new(caller: &str, server: &str, tool: &str, arguments: &Value) -> CacheKey {
        CacheKey {
            caller: caller.to_owned(),
            server: server.to_owned(),
            tool: tool.to_owned(),
            arguments: canonical_json(arguments),
        }
    }
}

/// `value` as compact JSON with the keys of every object sorted (by their UTF-8 bytes).
///
/// Two values that differ only in key order give the same text. Numbers are written as
/// `serde_json` writes them, so `1` and `1.0` stay distinct (a cache miss, never a wrong hit).
pub(crate) fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => {
            // Scalars have exactly one compact serialization; `Display` of a `Value` is it.
            let _ = write!(out, "{value}");
        }
        Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        Value::Object(members) => {
            let mut sorted: Vec<(&String, &Value)> = members.iter().collect();
            sorted.sort_unstable_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (index, (key, member)) in sorted.into_iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                let _ = write!(out, "{}", Value::String(key.clone()));
                out.push(':');
                write_canonical(member, out);
            }
            out.push('}');
        }
    }
}

#[derive(Debug, Clone)]
struct Entry {
    value: Value,
    stored_at: Instant,
    /// This entry's place in `ResultCache::by_age`.
    sequence: u64,
}

/// A bounded, time-limited cache of tool results (see the module docs).
#[derive(Debug, Clone)]
pub(crate) struct ResultCache {
    ttl: Duration,
    max_entries: usize,
    entries: HashMap<CacheKey, Entry>,
    /// Keys by insertion sequence, oldest first: the eviction order.
    by_age: BTreeMap<u64, CacheKey>,
    next_sequence: u64,
}

impl ResultCache {
    /// A cache whose entries are fresh for `ttl` and which holds at most `max_entries`
    /// (0 disables it: nothing is stored).
    pub(crate) fn new(ttl: Duration, max_entries: usize) -> ResultCache {
        ResultCache {
            ttl,
            max_entries,
            entries: HashMap::new(),
            by_age: BTreeMap::new(),
            next_sequence: 0,
        }
    }

    /// Stores `value` under `key` as of `now`, replacing an older value (which then counts as the
    /// newest entry). Drops expired entries, then the oldest ones beyond `max_entries`.
    pub(crate) fn put(&mut self, key: CacheKey, value: Value, now: Instant) {
        if self.max_entries == 0 {
            return;
        }
        if let Some(old) = self.entries.remove(&key) {
            self.by_age.remove(&old.sequence);
        }
        let sequence = self.next_sequence;
        self.next_sequence += 1;
        self.by_age.insert(sequence, key.clone());
        self.entries.insert(
            key,
            Entry {
                value,
                stored_at: now,
                sequence,
            },
        );
        self.evict(now);
    }

    /// The value under `key` if it was stored less than `ttl` before `now`.
    #[cfg(test)]
    pub(crate) fn get_fresh(&self, key: &CacheKey, now: Instant) -> Option<Value> {
        self.get_fresh_with_age(key, now).map(|(value, _)| value)
    }

    /// Like [`ResultCache::get_fresh`], with the value's age, so a caller serving it can say how
    /// old it is.
    pub(crate) fn get_fresh_with_age(
        &self,
        key: &CacheKey,
        now: Instant,
    ) -> Option<(Value, Duration)> {
        let entry = self.entries.get(key)?;
        let age = now.saturating_duration_since(entry.stored_at);
        (age < self.ttl).then(|| (entry.value.clone(), age))
    }

    /// How many entries are held (expired ones included until the next `put` drops them).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no entry is held.
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn evict(&mut self, now: Instant) {
        while let Some(entry) = self.by_age.first_entry() {
            let key = entry.get();
            let expired = self
                .entries
                .get(key)
                .is_none_or(|entry| now.saturating_duration_since(entry.stored_at) >= self.ttl);
            if self.entries.len() <= self.max_entries && !expired {
                break;
            }
            let key = entry.remove();
            self.entries.remove(&key);
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    fn key(tool: &str, arguments: Value) -> CacheKey {
        CacheKey::new("c-1", "shop", tool, &arguments)
    }

    #[test]
    fn canonical_json_sorts_keys_at_every_depth() {
        let a: Value =
            serde_json::from_str(r#"{"b": 1, "a": {"z": [3, {"y": 1, "x": 2}], "c": null}}"#)
                .unwrap();
        let b: Value =
            serde_json::from_str(r#"{"a": {"c": null, "z": [3, {"x": 2, "y": 1}]}, "b": 1}"#)
                .unwrap();
        // The daemon's serde_json preserves insertion order, so the plain serializations differ.
        assert_ne!(a.to_string(), b.to_string());
        assert_eq!(
            canonical_json(&a),
            r#"{"a":{"c":null,"z":[3,{"x":2,"y":1}]},"b":1}"#
        );
        assert_eq!(canonical_json(&a), canonical_json(&b));
    }

    #[test]
    fn canonical_json_escapes_and_keeps_scalars_exact() {
        assert_eq!(
            canonical_json(&json!({"q\"uote": "line\nbreak", "ü": "é"})),
            r#"{"q\"uote":"line\nbreak","ü":"é"}"#
        );
        assert_eq!(
            canonical_json(&json!([1, 1.5, -0, true, null])),
            "[1,1.5,0,true,null]"
        );
        assert_ne!(canonical_json(&json!(1)), canonical_json(&json!(1.0)));
        assert_eq!(canonical_json(&json!({})), "{}");
        assert_eq!(canonical_json(&json!([])), "[]");
        // Array order is meaningful and kept.
        assert_ne!(
            canonical_json(&json!([1, 2])),
            canonical_json(&json!([2, 1]))
        );
    }

    #[test]
    fn keys_differ_by_caller_server_tool_and_arguments() {
        let base = key("query", json!({"sql": "select 1"}));
        assert_eq!(base, key("query", json!({"sql": "select 1"})));
        assert_ne!(base, key("query", json!({"sql": "select 2"})));
        assert_ne!(base, key("describe", json!({"sql": "select 1"})));
        assert_ne!(
            base,
            CacheKey::new("c-1", "other", "query", &json!({"sql": "select 1"}))
        );
        assert_ne!(
            base,
            CacheKey::new("c-2", "shop", "query", &json!({"sql": "select 1"})),
            "another caller's result is never served"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn entries_are_fresh_until_the_ttl_then_expire() {
        let mut cache = ResultCache::new(secs(60), 10);
        let tables = key("list_tables", json!({}));
        cache.put(tables.clone(), json!(["orders"]), Instant::now());

        tokio::time::advance(secs(59)).await;
        assert_eq!(
            cache.get_fresh_with_age(&tables, Instant::now()),
            Some((json!(["orders"]), secs(59)))
        );
        tokio::time::advance(Duration::from_millis(999)).await;
        assert_eq!(
            cache.get_fresh(&tables, Instant::now()),
            Some(json!(["orders"]))
        );
        tokio::time::advance(Duration::from_millis(1)).await;
        assert_eq!(cache.get_fresh(&tables, Instant::now()), None);

        // A fresh put renews it.
        cache.put(tables.clone(), json!(["orders", "users"]), Instant::now());
        assert_eq!(
            cache.get_fresh(&tables, Instant::now()),
            Some(json!(["orders", "users"]))
        );
        assert_eq!(cache.len(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn lookups_ignore_argument_key_order() {
        let mut cache = ResultCache::new(secs(60), 10);
        let stored: Value = serde_json::from_str(r#"{"limit": 5, "table": "orders"}"#).unwrap();
        let asked: Value = serde_json::from_str(r#"{"table": "orders", "limit": 5}"#).unwrap();
        cache.put(key("read", stored), json!("rows"), Instant::now());
        assert_eq!(
            cache.get_fresh(&key("read", asked), Instant::now()),
            Some(json!("rows"))
        );
    }

    #[tokio::test(start_paused = true)]
    async fn the_oldest_entries_are_evicted_beyond_max_entries() {
        let mut cache = ResultCache::new(secs(600), 3);
        for n in 0..3 {
            cache.put(key("t", json!(n)), json!(n), Instant::now());
            tokio::time::advance(secs(1)).await;
        }
        // Re-storing entry 0 makes it the newest, so entry 1 is now the oldest.
        cache.put(key("t", json!(0)), json!("zero"), Instant::now());
        cache.put(key("t", json!(3)), json!(3), Instant::now());
        assert_eq!(cache.len(), 3);
        let now = Instant::now();
        assert_eq!(cache.get_fresh(&key("t", json!(1)), now), None);
        assert_eq!(
            cache.get_fresh(&key("t", json!(0)), now),
            Some(json!("zero"))
        );
        assert_eq!(cache.get_fresh(&key("t", json!(2)), now), Some(json!(2)));
        assert_eq!(cache.get_fresh(&key("t", json!(3)), now), Some(json!(3)));

        cache.put(key("t", json!(4)), json!(4), now);
        assert_eq!(cache.len(), 3);
        assert_eq!(cache.get_fresh(&key("t", json!(2)), now), None);
    }

    #[tokio::test(start_paused = true)]
    async fn expired_entries_are_dropped_on_put() {
        let mut cache = ResultCache::new(secs(10), 100);
        for n in 0..5 {
            cache.put(key("t", json!(n)), json!(n), Instant::now());
        }
        tokio::time::advance(secs(10)).await;
        cache.put(key("t", json!("new")), json!("new"), Instant::now());
        assert_eq!(cache.len(), 1);
    }

    #[test]
    fn zero_max_entries_disables_the_cache() {
        let mut cache = ResultCache::new(secs(60), 0);
        let now = Instant::now();
        cache.put(key("t", json!({})), json!(1), now);
        assert!(cache.is_empty());
        assert_eq!(cache.get_fresh(&key("t", json!({})), now), None);
    }
}
