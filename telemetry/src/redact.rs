//! The redaction hook and the content policy: tool arguments and results reach a span only when
//! the operator opted in (`captureContent`), and then only after the daemon's redactor (the one
//! its JSONL trace uses) has taken the secrets out. An error's message goes on the span's status
//! always, so it passes through the redactor too.

use std::sync::Arc;

use serde_json::Value;

/// Takes secrets out of a JSON value, in place. The daemon passes its trace redactor.
pub trait Redact: Send + Sync {
    /// Redacts `value` in place.
    fn redact(&self, value: &mut Value);

    /// Redacts a text (an error message). By default, as a JSON string.
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

/// A redactor that changes nothing, for tests and for a daemon with no secrets configured.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoRedaction;

impl Redact for NoRedaction {
    fn redact(&self, _value: &mut Value) {}

    fn redact_text(&self, text: &str) -> String {
        text.to_owned()
    }
}

/// Longest JSON text of one captured argument or result; longer is cut (collectors refuse
/// large attributes and a span should stay a few KB).
pub const MAX_CAPTURED_BYTES: usize = 16 * 1024;

/// What the builders may put on spans.
#[derive(Clone)]
pub struct ContentPolicy {
    /// Whether arguments and results are captured at all.
    pub capture: bool,
    /// The daemon's redactor.
    pub redactor: Arc<dyn Redact>,
}

impl std::fmt::Debug for ContentPolicy {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("ContentPolicy")
            .field("capture", &self.capture)
            .finish_non_exhaustive()
    }
}

impl Default for ContentPolicy {
    /// Nothing captured; messages unchanged.
    fn default() -> ContentPolicy {
        ContentPolicy {
            capture: false,
            redactor: Arc::new(NoRedaction),
        }
    }
}

impl ContentPolicy {
    /// The redacted JSON text of `value` for a span, cut at [`MAX_CAPTURED_BYTES`]; `None` when
    /// capture is off.
    pub fn capture(&self, value: Option<&Value>) -> Option<String> {
        if !self.capture {
            return None;
        }
        let mut copy = value?.clone();
        self.redactor.redact(&mut copy);
        let mut text = copy.to_string();
        if text.len() > MAX_CAPTURED_BYTES {
            let mut cut = MAX_CAPTURED_BYTES;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            text.truncate(cut);
            text.push_str("…(truncated)");
        }
        Some(text)
    }

    /// An error message, redacted, for a span's status.
    pub fn message(&self, text: &str) -> String {
        self.redactor.redact_text(text)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn hiding(secret: &'static str) -> ContentPolicy {
        ContentPolicy {
            capture: true,
            redactor: Arc::new(move |value: &mut Value| {
                if let Value::Object(members) = value {
                    for member in members.values_mut() {
                        if member == secret {
                            *member = json!("[REDACTED]");
                        }
                    }
                }
            }),
        }
    }

    #[test]
    fn nothing_is_captured_unless_asked() {
        let policy = ContentPolicy::default();
        assert_eq!(policy.capture(Some(&json!({"a": 1}))), None);
    }

    #[test]
    fn captured_content_goes_through_the_redactor() {
        let policy = hiding("hunter2");
        let text = policy
            .capture(Some(&json!({"user": "ann", "password": "hunter2"})))
            .unwrap();
        assert!(!text.contains("hunter2"), "{text}");
        assert!(text.contains("[REDACTED]"), "{text}");
    }

    #[test]
    fn long_content_is_cut_on_a_character_boundary() {
        let policy = hiding("x");
        let long = "é".repeat(MAX_CAPTURED_BYTES);
        let text = policy.capture(Some(&json!(long))).unwrap();
        assert!(text.len() <= MAX_CAPTURED_BYTES + "…(truncated)".len());
        assert!(text.ends_with("…(truncated)"));
    }
}
