//! Redaction at write time: a recording outlives the session and is shared (attached to a bug
//! report, committed as a test fixture), so secrets are taken out before a line is written.
//!
//! The daemon supplies its own redactor through [`Redact`]; the recording proxy binary uses
//! [`SecretRedactor`]: the values of the environment variables it is told hold secrets
//! (`--redact-env`), replaced inside any string, and the value of any member whose name says it
//! is a credential. The name rule is narrower than a plain "contains token" so that protocol
//! counts survive: `max_tokens`, `prompt_tokens` (plural: counts) and MCP's `progressToken` are
//! not credentials, while `accessToken`, `GITHUB_TOKEN`, `api_key`, `client_secret`,
//! `Authorization` and `Cookie` are.

use serde_json::Value;

/// What replaces a secret.
pub const REDACTED: &str = "[REDACTED]";

/// Takes secrets out of a JSON value, in place.
pub trait Redact: Send + Sync {
    /// Redacts `value` in place.
    fn redact(&self, value: &mut Value);

    /// Redacts a text (an SSE chunk, a non-JSON body). By default, as a JSON string.
    fn redact_text(&self, text: &str) -> String {
        let mut value = Value::String(text.to_owned());
        self.redact(&mut value);
        match value {
            Value::String(text) => text,
            other => other.to_string(),
        }
    }
}

impl<F> Redact for F
where
    F: Fn(&mut Value) + Send + Sync,
{
    fn redact(&self, value: &mut Value) {
        self(value)
    }
}

/// Shortest secret value replaced inside strings: shorter ones (`1`, `true`) would mangle text.
pub const MIN_SECRET_CHARS: usize = 4;

/// Words that make a member name a credential wherever they appear in it (compared against the
/// name lowercased with everything but letters and digits removed).
const CREDENTIAL_WORDS: &[&str] = &[
    "secret",
    "password",
    "passwd",
    "authorization",
    "apikey",
    "accesskey",
    "privatekey",
    "cookie",
    "credential",
];

/// Protocol members that end in "token" but are not credentials.
const NOT_CREDENTIALS: &[&str] = &["progresstoken"];

/// Whether a member's name says its value is a credential.
pub fn is_credential_name(name: &str) -> bool {
    let normalized: String = name
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect();
    if NOT_CREDENTIALS.contains(&normalized.as_str()) {
        return false;
    }
    normalized.ends_with("token")
        || CREDENTIAL_WORDS
            .iter()
            .any(|word| normalized.contains(word))
}

/// Known secret values plus the credential-name rule.
#[derive(Debug, Clone, Default)]
pub struct SecretRedactor {
    /// Longest first, so a secret containing another is replaced whole.
    secrets: Vec<String>,
}

impl SecretRedactor {
    /// A redactor of these secret values (shorter than [`MIN_SECRET_CHARS`] are ignored).
    pub fn new(secrets: impl IntoIterator<Item = String>) -> SecretRedactor {
        let mut secrets: Vec<String> = secrets
            .into_iter()
            .filter(|secret| secret.chars().count() >= MIN_SECRET_CHARS)
            .collect();
        secrets.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        secrets.dedup();
        SecretRedactor { secrets }
    }

    fn redact_string(&self, text: &mut String) {
        for secret in &self.secrets {
            if text.contains(secret.as_str()) {
                *text = text.replace(secret.as_str(), REDACTED);
            }
        }
    }
}

impl Redact for SecretRedactor {
    fn redact(&self, value: &mut Value) {
        match value {
            Value::Object(members) => {
                for (name, member) in members.iter_mut() {
                    if is_credential_name(name) && !member.is_null() {
                        *member = Value::String(REDACTED.to_owned());
                    } else {
                        self.redact(member);
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|item| self.redact(item)),
            Value::String(text) => self.redact_string(text),
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }

    fn redact_text(&self, text: &str) -> String {
        let mut text = text.to_owned();
        self.redact_string(&mut text);
        text
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn credentials_are_recognised_and_counts_are_not() {
        for name in [
            "token",
            "accessToken",
            "GITHUB_TOKEN",
            "client_secret",
            "Password",
            "Authorization",
            "x-api-key",
            "apiKey",
            "aws_access_key_id",
            "Cookie",
            "private-key",
            "next_page_token",
        ] {
            assert!(is_credential_name(name), "{name}");
        }
        for name in [
            "progressToken",
            "max_tokens",
            "maxTokens",
            "prompt_tokens",
            "cache_read_input_tokens",
            "tokenizer",
            "author",
            "keys",
        ] {
            assert!(!is_credential_name(name), "{name}");
        }
    }

    #[test]
    fn secret_values_are_replaced_anywhere_and_credential_members_whole() {
        let redactor = SecretRedactor::new(["sk-live-42".to_owned(), "ab".to_owned()]);
        let mut value = json!({
            "arguments": {"query": "use sk-live-42 please", "apiKey": 12345},
            "_meta": {"progressToken": 7},
            "usage": {"prompt_tokens": 10},
            "list": ["sk-live-42", "ab"]
        });
        redactor.redact(&mut value);
        assert_eq!(value["arguments"]["query"], "use [REDACTED] please");
        assert_eq!(value["arguments"]["apiKey"], REDACTED);
        assert_eq!(value["_meta"]["progressToken"], 7);
        assert_eq!(value["usage"]["prompt_tokens"], 10);
        assert_eq!(value["list"], json!([REDACTED, "ab"]));
        assert_eq!(
            redactor.redact_text("data: sk-live-42\n\n"),
            "data: [REDACTED]\n\n"
        );
    }
}
