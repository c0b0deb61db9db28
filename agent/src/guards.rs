//! Loop detection: the same call again without new information.
//!
//! A call is keyed by its tool (and server, when named) and its arguments in canonical form
//! (object keys sorted). Repeating the call made just before, with nothing else learnt in
//! between, is refused and the model is told the answer is already above; a call made a third
//! time, or a model that insists after two refusals, halts the run with `loop_detected`.
//! Repeating a call after other calls have brought new information is allowed once (a re-read
//! after a change is legitimate). Pure and unit-tested.

use std::collections::BTreeMap;

use serde_json::Value;

/// What to do with a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Make it.
    Proceed,
    /// Refuse it and tell the model it already has this result.
    Repeat,
    /// Halt the run.
    Loop,
}

/// The calls of one run.
#[derive(Debug, Default)]
pub(crate) struct LoopGuard {
    made: BTreeMap<String, u32>,
    last: Option<String>,
    refusals: u32,
}

/// Refusals after which the run halts.
const MAX_REFUSALS: u32 = 2;
/// How many times one call may be made in a run.
const MAX_SAME_CALL: u32 = 2;

impl LoopGuard {
    /// Judges a call and, when it may proceed, records it.
    pub(crate) fn check(&mut self, server: Option<&str>, tool: &str, arguments: &Value) -> Verdict {
        let key = call_key(server, tool, arguments);
        let made = self.made.get(&key).copied().unwrap_or(0);
        if made >= MAX_SAME_CALL {
            return Verdict::Loop;
        }
        if made > 0 && self.last.as_deref() == Some(key.as_str()) {
            self.refusals += 1;
            return if self.refusals >= MAX_REFUSALS {
                Verdict::Loop
            } else {
                Verdict::Repeat
            };
        }
        *self.made.entry(key.clone()).or_default() += 1;
        self.last = Some(key);
        Verdict::Proceed
    }
}

fn call_key(server: Option<&str>, tool: &str, arguments: &Value) -> String {
    format!("{}/{tool} {}", server.unwrap_or("*"), canonical(arguments))
}

/// JSON text with object keys sorted at every level, so key order does not make two calls differ.
pub(crate) fn canonical(value: &Value) -> String {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            let inner: Vec<String> = entries
                .into_iter()
                .map(|(key, value)| format!("{}:{}", Value::String(key.clone()), canonical(value)))
                .collect();
            format!("{{{}}}", inner.join(","))
        }
        Value::Array(items) => {
            let inner: Vec<String> = items.iter().map(canonical).collect();
            format!("[{}]", inner.join(","))
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn an_immediate_repeat_is_refused_then_halts() {
        let mut guard = LoopGuard::default();
        let args = json!({"a": 1, "b": 2});
        assert_eq!(guard.check(Some("s"), "t", &args), Verdict::Proceed);
        assert_eq!(
            guard.check(Some("s"), "t", &json!({"b": 2, "a": 1})),
            Verdict::Repeat
        );
        assert_eq!(guard.check(Some("s"), "t", &args), Verdict::Loop);
    }

    #[test]
    fn a_repeat_after_new_information_is_allowed_once() {
        let mut guard = LoopGuard::default();
        let args = json!({"path": "/x"});
        assert_eq!(guard.check(None, "read", &args), Verdict::Proceed);
        assert_eq!(
            guard.check(None, "write", &json!({"path": "/x"})),
            Verdict::Proceed
        );
        assert_eq!(guard.check(None, "read", &args), Verdict::Proceed);
        assert_eq!(guard.check(None, "other", &json!({})), Verdict::Proceed);
        assert_eq!(guard.check(None, "read", &args), Verdict::Loop);
    }

    #[test]
    fn different_arguments_or_servers_are_different_calls() {
        let mut guard = LoopGuard::default();
        assert_eq!(
            guard.check(Some("a"), "t", &json!({"n": 1})),
            Verdict::Proceed
        );
        assert_eq!(
            guard.check(Some("a"), "t", &json!({"n": 2})),
            Verdict::Proceed
        );
        assert_eq!(
            guard.check(Some("b"), "t", &json!({"n": 2})),
            Verdict::Proceed
        );
    }

    #[test]
    fn canonical_json_sorts_nested_keys() {
        assert_eq!(
            canonical(&json!({"b": [{"d": 1, "c": 2}], "a": "x"})),
            r#"{"a":"x","b":[{"c":2,"d":1}]}"#
        );
    }
}
