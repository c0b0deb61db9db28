//! Secret redaction for verbose traces: a trace file outlives the call and is read by people and
//! programs that never should see an API key.
//!
//! Two rules, applied to the arguments and the result of a call before they are written:
//! the value of any object member whose name looks like a credential (`token`, `secret`,
//! `password`, `authorization`, `api_key`, … — case, `-` and `_` ignored, at any depth) is
//! replaced whole; and every occurrence of a configured secret (a value substituted into a
//! server's `env` or `headers` from `${VAR}`) inside any string is replaced. What neither rule
//! can see stays: a secret inside a string that is itself JSON text under a harmless name, or a
//! secret the config never mentioned.

use serde_json::Value;
use tool_cli_protocol::trace::REDACTED;

/// Shortest configured secret replaced inside strings: a shorter value (`1`, `true`, a port)
/// is not a credential, and replacing it everywhere would only mangle the trace.
pub(crate) const MIN_SECRET_CHARS: usize = 4;

/// Replaces secrets in JSON values.
#[derive(Debug, Clone, Default)]
pub(crate) struct Redactor {
    /// Longest first, so that a secret containing another is replaced whole.
    secrets: Vec<String>,
}

impl Redactor {
    /// A redactor of the member-name rule and of these configured secret values.
    pub(crate) fn new(secrets: impl IntoIterator<Item = String>) -> Redactor {
        let mut secrets: Vec<String> = secrets
            .into_iter()
            .filter(|secret| secret.chars().count() >= MIN_SECRET_CHARS)
            .collect();
        secrets.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        secrets.dedup();
        Redactor { secrets }
    }

    /// Redacts `value` in place.
    pub(crate) fn redact(&self, value: &mut Value) {
        match value {
            Value::Object(members) => {
                for (name, member) in members.iter_mut() {
                    if crate::redact::is_secret_name(name) {
                        *member = Value::String(REDACTED.to_owned());
                    } else {
                        self.redact(member);
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|item| self.redact(item)),
            Value::String(text) => self.redact_text(text),
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }
}

impl Redactor {
    /// Replaces every configured secret inside `text` (an error message, say).
    pub(crate) fn redact_text(&self, text: &mut String) {
        for secret in &self.secrets {
            if text.contains(secret.as_str()) {
                *text = text.replace(secret.as_str(), REDACTED);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn values_under_credential_names_are_replaced_at_any_depth() {
        let mut value = json!({
            "sql": "select 1",
            "auth": {"password": "hunter2", "user": "me"},
            "headers": [{"Authorization": "Bearer abc"}],
            "apiKey": {"nested": "whole object goes"},
            "token": 42
        });
        Redactor::default().redact(&mut value);
        assert_eq!(
            value,
            json!({
                "sql": "select 1",
                "auth": {"password": REDACTED, "user": "me"},
                "headers": [{"Authorization": REDACTED}],
                "apiKey": REDACTED,
                "token": REDACTED
            })
        );
    }

    #[test]
    fn configured_secrets_are_replaced_inside_every_string() {
        let redactor = Redactor::new([
            "sk-live-123456".to_owned(),
            "sk-live-123456-extended".to_owned(),
            "abc".to_owned(),
            "sk-live-123456".to_owned(),
        ]);
        let mut value = json!({
            "content": [{"type": "text", "text": "key sk-live-123456-extended and sk-live-123456"}],
            "note": "abc stays: too short to be a secret"
        });
        redactor.redact(&mut value);
        assert_eq!(
            value["content"][0]["text"],
            format!("key {REDACTED} and {REDACTED}")
        );
        assert_eq!(value["note"], "abc stays: too short to be a secret");
        assert!(!value.to_string().contains("sk-live"));
    }
}
