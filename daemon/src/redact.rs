//! Keeping the servers' secrets out of everything the daemon says: log lines, statuses and
//! errors.
//!
//! A server's config carries secrets (an API key in `env`, an `Authorization` header, a token in
//! the `url`'s query), and they come back in places nobody chose: an HTTP client's errors may print
//! the full URL, an upstream's HTTP error body may reflect the request headers, a server's stderr may print
//! its environment. Rather than hope each message is built carefully, [`Secrets`] knows every
//! configured secret and removes it from any text, and the daemon passes through it what it
//! logs (a [`tracing`] writer, [`LogWriter`]) and what it tells callers (statuses and errors of
//! the pool, and every error in `edge/rpc.rs`).
//!
//! A secret is: every value a `${VAR}` put into `env`, `headers` or `url`; every value of the
//! URL's query and its userinfo; and the value of every header whose name says credential
//! (`authorization`, `cookie`, or a name containing `key`, `token`, `secret`, `auth`,
//! `password`, `session`), with and without its `Bearer `/`Basic ` scheme. It is removed as
//! written, percent-encoded and JSON-escaped. Values shorter than [`MIN_SECRET_CHARS`] are left
//! alone: removing `1` or `on` everywhere would garble every message while protecting nothing.
//!
//! Text that comes from an upstream (an error message, a body, stderr lines) is also capped and
//! stripped of control characters ([`clean_text`]), so a hostile server can neither flood a
//! caller nor put terminal escapes in front of it.

use std::borrow::Cow;
use std::sync::{Arc, RwLock};

use serde_json::Value;
use tool_cli_protocol::ErrorData;

use crate::error::Error;

/// What a secret is replaced with.
pub const REDACTED: &str = "[redacted]";

/// Secrets shorter than this are not redacted (see the module documentation).
pub const MIN_SECRET_CHARS: usize = 4;

/// Most characters of one piece of upstream text (an error message, a reason) passed on.
pub const MAX_UPSTREAM_TEXT_CHARS: usize = 1024;

/// Most bytes of an upstream error's `data` passed on (as JSON); larger data is replaced by a
/// note saying how large it was.
pub const MAX_UPSTREAM_DATA_BYTES: usize = 8 * 1024;

/// Every configured secret, in each form it may appear in.
#[derive(Debug, Default)]
pub struct Secrets {
    /// Longest first, so a secret containing another is removed whole.
    needles: Vec<String>,
}

impl Secrets {
    /// These secrets (and their encoded forms).
    pub fn new(values: impl IntoIterator<Item = String>) -> Secrets {
        let mut needles = Vec::new();
        for value in values {
            if value.chars().count() < MIN_SECRET_CHARS {
                continue;
            }
            let escaped = format!("{value:?}");
            let escaped = escaped[1..escaped.len() - 1].to_owned();
            needles.push(percent_encode(&value));
            needles.push(escaped);
            needles.push(value);
        }
        needles.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        needles.dedup();
        Secrets { needles }
    }

    /// Whether there is nothing to redact.
    pub fn is_empty(&self) -> bool {
        self.needles.is_empty()
    }

    /// `text` with every secret replaced by [`REDACTED`].
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut text = Cow::Borrowed(text);
        for needle in &self.needles {
            if text.contains(needle.as_str()) {
                text = Cow::Owned(text.replace(needle.as_str(), REDACTED));
            }
        }
        text
    }

    /// Upstream text as it may be passed on: redacted, control characters replaced, capped.
    pub fn clean(&self, text: &str) -> String {
        clean_text(&self.redact(text), MAX_UPSTREAM_TEXT_CHARS)
    }

    /// An error as it may be passed on: every string in its data redacted, and what came from
    /// the upstream (messages, stderr, error data) cleaned and capped.
    pub fn clean_error(&self, error: Error) -> Error {
        // Alternatives are names and descriptions of configured tools, like any listing; the
        // failure they come with is cleaned as usual.
        let error = match error {
            Error::WithAlternatives {
                error,
                alternatives,
            } => {
                return Error::WithAlternatives {
                    error: Box::new(self.clean_error(*error)),
                    alternatives,
                };
            }
            error => error,
        };
        let Some(data) = error.data() else {
            // An internal fault's detail is logged (through the redacting writer), never sent.
            return error;
        };
        let cleaned = match data.clone() {
            ErrorData::Upstream {
                server,
                code,
                message,
                data,
            } => {
                let (data, note) = self.clean_data(data);
                ErrorData::Upstream {
                    server,
                    code,
                    message: format!("{}{note}", self.clean(&message)),
                    data,
                }
            }
            ErrorData::ServerExited {
                server,
                exit,
                stderr_tail,
            } => ErrorData::ServerExited {
                server,
                exit: self.clean(&exit),
                stderr_tail: stderr_tail.iter().map(|line| self.clean(line)).collect(),
            },
            ErrorData::ServerUnavailable {
                server,
                state,
                last_error,
            } => ErrorData::ServerUnavailable {
                server,
                state,
                last_error: last_error.map(|text| self.clean(&text)),
            },
            ErrorData::CircuitOpen {
                server,
                retry_after_ms,
                last_error,
            } => ErrorData::CircuitOpen {
                server,
                retry_after_ms,
                last_error: last_error.map(|text| self.clean(&text)),
            },
            ErrorData::InvalidResult {
                server,
                method,
                message,
            } => ErrorData::InvalidResult {
                server,
                method,
                message: self.clean(&message),
            },
            // The rest is the daemon's own words about the caller's request; a secret could
            // only be there if the caller sent it. Redact every string anyway.
            other => match serde_json::to_value(&other) {
                Ok(mut value) => {
                    self.redact_value(&mut value);
                    serde_json::from_value(value).unwrap_or(other)
                }
                Err(_) => other,
            },
        };
        cleaned.into()
    }

    /// Redacts every string in `value`, keys included.
    pub fn redact_value(&self, value: &mut Value) {
        match value {
            Value::String(text) => {
                if let Cow::Owned(redacted) = self.redact(text) {
                    *text = redacted;
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|item| self.redact_value(item)),
            Value::Object(object) => {
                let entries = std::mem::take(object);
                for (key, mut item) in entries {
                    self.redact_value(&mut item);
                    object.insert(self.redact(&key).into_owned(), item);
                }
            }
            _ => {}
        }
    }

    /// An upstream's error data, redacted, or left out with a note when it is too large.
    fn clean_data(&self, data: Option<Value>) -> (Option<Value>, String) {
        let Some(mut data) = data else {
            return (None, String::new());
        };
        self.redact_value(&mut data);
        let size = serde_json::to_string(&data).map_or(0, |text| text.len());
        if size > MAX_UPSTREAM_DATA_BYTES {
            let note = format!(" (its error data, {size} bytes, was left out)");
            return (None, note);
        }
        (Some(data), String::new())
    }
}

/// Text from elsewhere made safe to show: control characters (escape sequences, NUL, newlines),
/// the bidirectional formatting characters (which reorder what a reader sees: U+202E makes
/// `fdp.exe` read `exe.pdf`) and the Unicode line and paragraph separators become spaces, and
/// anything past `max_chars` is cut with a note of how much was cut.
pub fn clean_text(text: &str, max_chars: usize) -> String {
    let mut cleaned = String::with_capacity(text.len().min(max_chars * 4));
    for (kept, (index, character)) in text.char_indices().enumerate() {
        if kept == max_chars {
            let cut = text.len() - index;
            cleaned.push_str(&format!("… ({cut} more bytes)"));
            return cleaned;
        }
        cleaned.push(if is_hidden_control(character) {
            ' '
        } else {
            character
        });
    }
    cleaned
}

/// Whether `character` changes how text around it is shown rather than showing itself.
fn is_hidden_control(character: char) -> bool {
    character.is_control()
        || matches!(
            character,
            '\u{061c}'
                | '\u{200e}'
                | '\u{200f}'
                | '\u{202a}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}'
                | '\u{2028}'
                | '\u{2029}'
        )
}

/// Percent-encodes everything but RFC 3986's unreserved characters.
fn percent_encode(text: &str) -> String {
    let mut encoded = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            encoded.push(byte as char);
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    encoded
}

/// Decodes `%XX` escapes (and `+` as a space, as in a query); `None` when nothing changes or
/// the result is not UTF-8.
pub(crate) fn percent_decode(text: &str) -> Option<String> {
    if !text.contains(['%', '+']) {
        return None;
    }
    let bytes = text.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        let hex = bytes
            .get(index + 1..index + 3)
            .and_then(|pair| std::str::from_utf8(pair).ok())
            .and_then(|pair| u8::from_str_radix(pair, 16).ok());
        match (bytes[index], hex) {
            (b'%', Some(byte)) => {
                decoded.push(byte);
                index += 3;
                continue;
            }
            (b'+', _) => decoded.push(b' '),
            (byte, _) => decoded.push(byte),
        }
        index += 1;
    }
    String::from_utf8(decoded).ok()
}

/// Words that make a member name a credential, compared against the name lowercased with
/// everything but letters and digits removed (so `apiKey`, `API-KEY` and `x_api_key` all match
/// `apikey`).
const SECRET_WORDS: &[&str] = &[
    "token",
    "secret",
    "password",
    "passwd",
    "authorization",
    "apikey",
    "accesskey",
    "privatekey",
    "cookie",
];

/// Whether a member's name says its value is a credential.
pub(crate) fn is_secret_name(name: &str) -> bool {
    let normalized: String = name
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect();
    SECRET_WORDS.iter().any(|word| normalized.contains(word))
}

/// The secrets the daemon runs with now, once its config is loaded: one handle, cloned to
/// whoever cleans text of them (the [`LogWriter`], the edge for every error) and to the server
/// manager, which replaces them when the servers change (a reload sets the union of the old and
/// new servers' secrets while the old ones drain: a draining server may still log). No
/// process-wide state: a daemon embedded twice in one process keeps two sets.
#[derive(Debug, Clone, Default)]
pub struct SharedSecrets(Arc<RwLock<Option<Arc<Secrets>>>>);

impl SharedSecrets {
    /// Makes `secrets` the ones every holder of this handle cleans of.
    pub fn set(&self, secrets: Arc<Secrets>) {
        *self.0.write().unwrap_or_else(|poison| poison.into_inner()) = Some(secrets);
    }

    /// The secrets set last; `None` before any was set (nothing is cleaned then).
    pub fn current(&self) -> Option<Arc<Secrets>> {
        self.0
            .read()
            .unwrap_or_else(|poison| poison.into_inner())
            .clone()
    }
}

/// A [`tracing_subscriber`] writer to stderr that redacts the daemon's secrets from each log
/// line, and escapes the control characters in it (`log_text.rs`) so that text a client
/// or a server chose can neither forge a log line nor drive the terminal. The formatter hands
/// over one whole event per `write`, so a secret is never split.
#[derive(Debug, Clone, Default)]
pub struct LogWriter {
    secrets: SharedSecrets,
}

impl LogWriter {
    /// A writer redacting whatever `secrets` holds when each line is written.
    pub fn new(secrets: SharedSecrets) -> LogWriter {
        LogWriter { secrets }
    }
}

/// Whether the log goes to a terminal, where the formatter writes colour codes (`main.rs` turns
/// colour on exactly then); asked once.
fn log_in_colour() -> bool {
    static IN_COLOUR: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *IN_COLOUR.get_or_init(|| std::io::IsTerminal::is_terminal(&std::io::stderr()))
}

impl std::io::Write for LogWriter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        let text = String::from_utf8_lossy(bytes);
        let text = match self.secrets.current() {
            Some(secrets) if !secrets.is_empty() => Cow::Owned(secrets.redact(&text).into_owned()),
            _ => text,
        };
        let line = crate::log_text::neutralize(&text, log_in_colour());
        std::io::stderr().lock().write_all(line.as_bytes())?;
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for LogWriter {
    type Writer = LogWriter;

    fn make_writer(&'a self) -> LogWriter {
        self.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credential_names_are_recognised_in_any_spelling() {
        for name in [
            "token",
            "accessToken",
            "GITHUB_TOKEN",
            "client_secret",
            "Password",
            "Authorization",
            "api_key",
            "apiKey",
            "X-API-Key",
            "apikey",
            "aws_access_key_id",
            "private-key",
            "Cookie",
        ] {
            assert!(is_secret_name(name), "{name}");
        }
        for name in ["sql", "query", "path", "author", "keys", "api", "pass"] {
            assert!(!is_secret_name(name), "{name}");
        }
    }

    #[test]
    fn encoded_forms_are_redacted_and_longer_secrets_first() {
        let secrets = Secrets::new([
            "a b\"c/d".to_owned(),
            "abcd".to_owned(),
            "abcdef".to_owned(),
        ]);
        assert_eq!(secrets.redact("x=a%20b%22c%2Fd"), "x=[redacted]");
        assert_eq!(
            secrets.redact(r#"{"k":"a b\"c/d"}"#),
            r#"{"k":"[redacted]"}"#
        );
        assert_eq!(secrets.redact("abcdef abcd"), "[redacted] [redacted]");
        assert_eq!(
            secrets.redact("nothing here"),
            Cow::Borrowed("nothing here")
        );
    }

    /// The issue: upstream error text kept U+202E and the other bidi controls, which make a
    /// message read differently from what it says wherever it is shown.
    #[test]
    fn upstream_text_loses_its_bidi_controls() {
        let hostile = "invoice\u{202e}fdp.exe \u{2066}x\u{2069} \u{200f}y\u{061c}z\u{2028}w";
        let cleaned = clean_text(hostile, 100);
        assert_eq!(cleaned, "invoice fdp.exe  x   y z w");
        let error = Secrets::default().clean_error(
            ErrorData::Upstream {
                server: "s".into(),
                code: -1,
                message: hostile.into(),
                data: None,
            }
            .into(),
        );
        let message = error.wire_message();
        assert!(
            !message
                .chars()
                .any(|c| ('\u{2000}'..='\u{206f}').contains(&c) && c != ' '),
            "{message:?}"
        );
    }

    #[test]
    fn upstream_text_is_capped_and_loses_its_control_characters() {
        assert_eq!(clean_text("a\u{1b}[2Jb\0c\nd", 100), "a [2Jb c d");
        let long = "é".repeat(10);
        assert_eq!(clean_text(&long, 4), "éééé… (12 more bytes)");
        assert_eq!(clean_text("short", 5), "short");
    }

    #[test]
    fn errors_are_redacted_in_message_and_data_and_upstream_data_is_capped() {
        let secrets = Secrets::new(["s3cr3t-value".to_owned()]);
        let error: Error = ErrorData::Upstream {
            server: "remote".into(),
            code: -32000,
            message: "echo: Authorization: Bearer s3cr3t-value\u{1b}[31m".into(),
            data: Some(serde_json::json!({"headers": ["Bearer s3cr3t-value"], "s3cr3t-value": 1})),
        }
        .into();
        let cleaned = secrets.clean_error(error);
        let wire = serde_json::to_string(&cleaned.to_data()).unwrap();
        assert!(!wire.contains("s3cr3t"), "{wire}");
        assert!(!wire.contains('\u{1b}'), "{wire}");
        assert!(cleaned.wire_message().contains("Bearer [redacted]"));

        let huge = serde_json::json!({"blob": "x".repeat(MAX_UPSTREAM_DATA_BYTES)});
        let error: Error = ErrorData::Upstream {
            server: "remote".into(),
            code: 1,
            message: "m".into(),
            data: Some(huge),
        }
        .into();
        match secrets.clean_error(error).to_data() {
            ErrorData::Upstream { data, message, .. } => {
                assert_eq!(data, None);
                assert!(message.contains("was left out"), "{message}");
            }
            other => panic!("{other:?}"),
        }

        let error: Error = ErrorData::ServerExited {
            server: "remote".into(),
            exit: format!("HTTP 400: {}", "y".repeat(5000)),
            stderr_tail: vec!["KEY=s3cr3t-value".into()],
        }
        .into();
        match secrets.clean_error(error).to_data() {
            ErrorData::ServerExited {
                exit, stderr_tail, ..
            } => {
                assert!(
                    exit.chars().count() < MAX_UPSTREAM_TEXT_CHARS + 40,
                    "{exit}"
                );
                assert_eq!(stderr_tail, ["KEY=[redacted]"]);
            }
            other => panic!("{other:?}"),
        }
    }
}
