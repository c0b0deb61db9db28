//! What of a message must match for a live request to be "the same" as a recorded one: the
//! method and the parameters, without what changes from one session to the next.
//!
//! Removed before comparing: the `id` and `jsonrpc` members, all of `params._meta` (progress
//! tokens, `traceparent`/`tracestate`, the daemon's caller key), and any member the caller names
//! by JSON Pointer (`--ignore /params/arguments/nonce`). Strings that are RFC 3339 timestamps
//! become `<timestamp>`. An `initialize` request matches any `initialize` (client versions and
//! capabilities differ between otherwise identical sessions). Objects compare whatever the order
//! of their members: the normal form is canonical JSON text (members sorted), which also makes
//! messages short to show in an error.

use serde_json::Value;

/// How volatile members are found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Normalizer {
    /// Extra JSON Pointers (into the whole message) removed before comparing.
    pub ignore: Vec<String>,
}

impl Normalizer {
    /// The canonical text a message is compared by.
    pub fn key(&self, message: &Value) -> String {
        let mut copy = message.clone();
        if let Value::Object(members) = &mut copy {
            members.remove("id");
            members.remove("jsonrpc");
            if members.get("method").and_then(Value::as_str) == Some("initialize") {
                members.remove("params");
            }
            if let Some(Value::Object(params)) = members.get_mut("params") {
                params.remove("_meta");
            }
        }
        for pointer in &self.ignore {
            remove_pointer(&mut copy, pointer);
        }
        canonical(&copy)
    }
}

/// Removes the member or item a JSON Pointer names, if present.
fn remove_pointer(value: &mut Value, pointer: &str) {
    let Some((parent, last)) = pointer.rsplit_once('/') else {
        return;
    };
    let last = last.replace("~1", "/").replace("~0", "~");
    let target = if parent.is_empty() {
        Some(value)
    } else {
        value.pointer_mut(parent)
    };
    match target {
        Some(Value::Object(members)) => {
            members.remove(&last);
        }
        Some(Value::Array(items)) => {
            if let Ok(index) = last.parse::<usize>()
                && index < items.len()
            {
                items.remove(index);
            }
        }
        _ => {}
    }
}

/// Canonical JSON text: object members sorted by name, timestamps replaced.
pub fn canonical(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(members) => {
            let mut names: Vec<&String> = members.keys().collect();
            names.sort();
            out.push('{');
            for (index, name) in names.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String((*name).clone()).to_string());
                out.push(':');
                write_canonical(&members[name.as_str()], out);
            }
            out.push('}');
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
        Value::String(text) if is_timestamp(text) => out.push_str("\"<timestamp>\""),
        other => out.push_str(&other.to_string()),
    }
}

/// Whether `text` is an RFC 3339 date-time (`2026-05-01T09:30:00Z`, fractions and offsets
/// allowed).
pub fn is_timestamp(text: &str) -> bool {
    let bytes = text.as_bytes();
    if bytes.len() < 20 {
        return false;
    }
    let digits = |range: std::ops::Range<usize>| bytes[range].iter().all(u8::is_ascii_digit);
    let date_time = digits(0..4)
        && bytes[4] == b'-'
        && digits(5..7)
        && bytes[7] == b'-'
        && digits(8..10)
        && matches!(bytes[10], b'T' | b't' | b' ')
        && digits(11..13)
        && bytes[13] == b':'
        && digits(14..16)
        && bytes[16] == b':'
        && digits(17..19);
    if !date_time {
        return false;
    }
    let mut rest = &text[19..];
    if let Some(fraction) = rest.strip_prefix('.') {
        let count = fraction.bytes().take_while(u8::is_ascii_digit).count();
        if count == 0 {
            return false;
        }
        rest = &fraction[count..];
    }
    match rest.as_bytes() {
        [b'Z' | b'z'] => true,
        [b'+' | b'-', h1, h2, b':', m1, m2] => [h1, h2, m1, m2].iter().all(|b| b.is_ascii_digit()),
        _ => false,
    }
}

/// A message cut to `max` characters for an error text.
pub fn short(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(max).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn ids_meta_and_timestamps_do_not_count() {
        let normalizer = Normalizer::default();
        let recorded = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"at": "2026-01-01T00:00:00Z", "b": 1},
                       "_meta": {"progressToken": 1, "traceparent": "00-…"}}});
        let live = json!({"method": "tools/call", "id": "abc", "jsonrpc": "2.0",
            "params": {"arguments": {"b": 1, "at": "2027-03-04T05:06:07.123+02:00"},
                       "name": "echo", "_meta": {"progressToken": 99}}});
        assert_eq!(normalizer.key(&recorded), normalizer.key(&live));
        let other =
            json!({"method": "tools/call", "params": {"name": "echo", "arguments": {"b": 2}}});
        assert_ne!(normalizer.key(&recorded), normalizer.key(&other));
    }

    #[test]
    fn initialize_matches_any_initialize() {
        let normalizer = Normalizer::default();
        let a =
            json!({"id": 0, "method": "initialize", "params": {"clientInfo": {"version": "1"}}});
        let b = json!({"id": 1, "method": "initialize", "params": {"protocolVersion": "x"}});
        assert_eq!(normalizer.key(&a), normalizer.key(&b));
    }

    #[test]
    fn named_pointers_are_ignored() {
        let normalizer = Normalizer {
            ignore: vec![
                "/params/arguments/nonce".to_owned(),
                "/params/list/0".to_owned(),
            ],
        };
        let a =
            json!({"method": "m", "params": {"arguments": {"nonce": 1, "x": 2}, "list": [1, 2]}});
        let b =
            json!({"method": "m", "params": {"arguments": {"nonce": 7, "x": 2}, "list": [9, 2]}});
        assert_eq!(normalizer.key(&a), normalizer.key(&b));
    }

    #[test]
    fn timestamps_are_recognised_strictly() {
        for yes in [
            "2026-05-01T09:30:00Z",
            "2026-05-01T09:30:00.5+01:00",
            "2026-05-01 09:30:00z",
        ] {
            assert!(is_timestamp(yes), "{yes}");
        }
        for no in [
            "2026-05-01",
            "2026-05-01T09:30:00",
            "yesterday",
            "2026-05-01T09:30:00.Z",
        ] {
            assert!(!is_timestamp(no), "{no}");
        }
    }

    #[test]
    fn canonical_text_sorts_members() {
        assert_eq!(
            canonical(&json!({"b": [1, {"d": 1, "c": 2}], "a": null})),
            r#"{"a":null,"b":[1,{"c":2,"d":1}]}"#
        );
        assert_eq!(short("abcdef", 3), "abc…");
    }
}
