//! What the daemon answers when a server asks *it* something (MCP server → client requests):
//! the per-server config (`roots`, `elicitation`, `elicitationTimeoutMs`, `allowSampling`),
//! parsed once here, and the bound on how often a server may ask.
//!
//! Pure: `ServerRequestSettings::take_from` reads (and removes) the fields from a server's
//! config entry, and `RequestBudget` decides from the time it is given. The pool's MCP
//! client handler (`pool/requests.rs`) applies them.

use std::time::Duration;

use serde_json::{Map, Value};
use tokio::time::Instant;

/// The config fields this module reads.
#[cfg(test)]
pub(crate) const FIELDS: &[&str] = &[
    "roots",
    "elicitation",
    "elicitationTimeoutMs",
    "allowSampling",
];

/// How long an elicitation relayed to a caller (`"elicitation": "ask"`) waits for its answer
/// when the config does not say (`elicitationTimeoutMs`).
pub(crate) const DEFAULT_ELICITATION_TIMEOUT: Duration = Duration::from_secs(120);

/// The longest `elicitationTimeoutMs` accepted: an hour.
const MAX_ELICITATION_TIMEOUT_MS: u64 = 3_600_000;

/// How many elicitation or sampling requests one server may make per [`BUDGET_WINDOW`]; more
/// are declined at once, with a reason, without being looked at.
pub(crate) const BUDGET_PER_WINDOW: u32 = 20;

/// The window of [`BUDGET_PER_WINDOW`].
pub(crate) const BUDGET_WINDOW: Duration = Duration::from_secs(60);

/// One root a server may ask for with `roots/list`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RootEntry {
    /// A URI (`file:///home/me/project`); a configured absolute path becomes a `file://` URI.
    pub uri: String,
    /// A name for it, when configured.
    pub name: Option<String>,
}

/// What the daemon does with an `elicitation/create` request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ElicitationPolicy {
    /// Decline with a reason (the default: nobody is there to answer).
    #[default]
    Decline,
    /// Relay the question to the caller watching the call that caused it (`callEvents`), and
    /// answer with what it sends back (`answerElicitation`); decline with a reason when no one
    /// watches, when it cannot be told which call asked, or when no answer comes in time.
    Ask,
}

/// A server's answers to requests it makes of the daemon.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerRequestSettings {
    /// `roots`: what `roots/list` answers (empty by default).
    pub roots: Vec<RootEntry>,
    /// `elicitation`.
    pub elicitation: ElicitationPolicy,
    /// `elicitationTimeoutMs`: how long a relayed elicitation waits for the caller's answer.
    pub elicitation_timeout: Duration,
    /// `allowSampling`: whether it may ask for LLM completions.
    pub allow_sampling: bool,
}

impl Default for ServerRequestSettings {
    fn default() -> ServerRequestSettings {
        ServerRequestSettings {
            roots: Vec::new(),
            elicitation: ElicitationPolicy::Decline,
            elicitation_timeout: DEFAULT_ELICITATION_TIMEOUT,
            allow_sampling: false,
        }
    }
}

impl ServerRequestSettings {
    /// Reads the fields from a server's config entry and removes them, so the rest of the
    /// entry is checked as before. Errors name the field and what would be right.
    pub(crate) fn take_from(
        entry: &mut Map<String, Value>,
    ) -> Result<ServerRequestSettings, (String, String)> {
        let mut settings = ServerRequestSettings::default();
        if let Some(roots) = entry.remove("roots") {
            settings.roots = parse_roots(&roots)?;
        }
        match entry.remove("elicitation") {
            None | Some(Value::Null) => {}
            Some(Value::String(policy)) if policy == "decline" => {}
            Some(Value::String(policy)) if policy == "ask" => {
                settings.elicitation = ElicitationPolicy::Ask;
            }
            Some(other) => {
                return Err((
                    "elicitation".to_owned(),
                    format!(
                        "expected \"decline\" (a server's questions are declined with a \
                         reason) or \"ask\" (relayed to the caller watching the call), got \
                         {other}"
                    ),
                ));
            }
        }
        match entry.remove("elicitationTimeoutMs") {
            None | Some(Value::Null) => {}
            Some(Value::Number(number))
                if number
                    .as_u64()
                    .is_some_and(|ms| (1..=MAX_ELICITATION_TIMEOUT_MS).contains(&ms)) =>
            {
                settings.elicitation_timeout =
                    Duration::from_millis(number.as_u64().unwrap_or_default());
            }
            Some(other) => {
                return Err((
                    "elicitationTimeoutMs".to_owned(),
                    format!(
                        "expected a whole number of milliseconds from 1 to \
                         {MAX_ELICITATION_TIMEOUT_MS} (how long a question relayed to the \
                         caller waits for its answer; default {}), got {other}",
                        DEFAULT_ELICITATION_TIMEOUT.as_millis()
                    ),
                ));
            }
        }
        match entry.remove("allowSampling") {
            None | Some(Value::Null) => {}
            Some(Value::Bool(allow)) => settings.allow_sampling = allow,
            Some(other) => {
                return Err((
                    "allowSampling".to_owned(),
                    format!("expected true or false, got {other}"),
                ));
            }
        }
        Ok(settings)
    }
}

fn parse_roots(value: &Value) -> Result<Vec<RootEntry>, (String, String)> {
    let Value::Array(items) = value else {
        return Err((
            "roots".to_owned(),
            format!(
                "expected a list of absolute paths or URIs, e.g. [\"/home/me/project\"], got {}",
                tool_cli_protocol::json::kind(value)
            ),
        ));
    };
    items
        .iter()
        .enumerate()
        .map(|(index, item)| {
            let field = format!("roots[{index}]");
            let (location, name) = match item {
                Value::String(location) => (location.as_str(), None),
                Value::Object(root) => match root.get("uri").or_else(|| root.get("path")) {
                    Some(Value::String(location)) => (
                        location.as_str(),
                        root.get("name").and_then(Value::as_str).map(str::to_owned),
                    ),
                    _ => {
                        return Err((
                            field,
                            "expected {\"uri\": \"file:///...\", \"name\"?: \"...\"} or \
                             {\"path\": \"/...\"}"
                                .to_owned(),
                        ));
                    }
                },
                other => {
                    return Err((
                        field,
                        format!(
                            "expected a path, a URI or an object, got {}",
                            tool_cli_protocol::json::kind(other)
                        ),
                    ));
                }
            };
            Ok(RootEntry {
                uri: root_uri(location).map_err(|message| (field, message))?,
                name,
            })
        })
        .collect()
}

/// An absolute path becomes a `file://` URI (spaces and other unsafe bytes percent-encoded); a
/// URI (`scheme:...`) is kept as written.
fn root_uri(location: &str) -> Result<String, String> {
    if location.starts_with('/') {
        let mut uri = String::from("file://");
        for byte in location.bytes() {
            if byte.is_ascii_alphanumeric() || b"/-._~".contains(&byte) {
                uri.push(byte as char);
            } else {
                uri.push_str(&format!("%{byte:02X}"));
            }
        }
        return Ok(uri);
    }
    let scheme = location.split_once(':').map(|(scheme, _)| scheme);
    let is_uri = scheme.is_some_and(|scheme| {
        !scheme.is_empty()
            && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    });
    if is_uri {
        Ok(location.to_owned())
    } else {
        Err(format!(
            "\"{location}\" is neither an absolute path nor a URI; expected e.g. \
             \"/home/me/project\" or \"file:///home/me/project\""
        ))
    }
}

/// At most [`BUDGET_PER_WINDOW`] requests per [`BUDGET_WINDOW`] (a fixed window), and how many
/// were refused: a server asking a thousand times costs a counter, not a thousand answers
/// worked out, and the refusals are logged as one line per window.
#[derive(Debug)]
pub(crate) struct RequestBudget {
    window_start: Option<Instant>,
    used: u32,
    refused: u64,
}

/// What the budget decided.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Admission {
    /// Within the budget.
    Admitted,
    /// Over it; `first` is true for the first refusal of the window (log it once).
    Refused { first: bool },
}

impl RequestBudget {
    pub(crate) fn new() -> RequestBudget {
        RequestBudget {
            window_start: None,
            used: 0,
            refused: 0,
        }
    }

    /// Counts a request arriving at `now`.
    pub(crate) fn admit(&mut self, now: Instant) -> Admission {
        let expired = self
            .window_start
            .is_none_or(|start| now.duration_since(start) >= BUDGET_WINDOW);
        if expired {
            self.window_start = Some(now);
            self.used = 0;
        }
        if self.used < BUDGET_PER_WINDOW {
            self.used += 1;
            return Admission::Admitted;
        }
        self.refused += 1;
        self.used += 1;
        Admission::Refused {
            first: self.used == BUDGET_PER_WINDOW + 1,
        }
    }

    /// How many requests were refused in all.
    pub(crate) fn refused(&self) -> u64 {
        self.refused
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn take(entry: Value) -> Result<ServerRequestSettings, (String, String)> {
        let Value::Object(mut entry) = entry else {
            unreachable!()
        };
        let settings = ServerRequestSettings::take_from(&mut entry);
        assert!(FIELDS.iter().all(|field| !entry.contains_key(*field)));
        settings
    }

    #[test]
    fn roots_accept_paths_uris_and_objects() {
        let settings = take(json!({"command": "x", "roots": [
            "/home/me/my project",
            "file:///srv/data",
            {"uri": "https://example.org/repo", "name": "repo"},
            {"path": "/tmp"}
        ], "allowSampling": true, "elicitation": "decline"}))
        .unwrap();
        let uris: Vec<&str> = settings.roots.iter().map(|r| r.uri.as_str()).collect();
        assert_eq!(
            uris,
            [
                "file:///home/me/my%20project",
                "file:///srv/data",
                "https://example.org/repo",
                "file:///tmp"
            ]
        );
        assert_eq!(settings.roots[2].name.as_deref(), Some("repo"));
        assert!(settings.allow_sampling);
        assert_eq!(settings.elicitation, ElicitationPolicy::Decline);
        assert_eq!(take(json!({})).unwrap(), ServerRequestSettings::default());
        let ask = take(json!({"elicitation": "ask", "elicitationTimeoutMs": 250})).unwrap();
        assert_eq!(ask.elicitation, ElicitationPolicy::Ask);
        assert_eq!(ask.elicitation_timeout, Duration::from_millis(250));
        assert_eq!(
            take(json!({"elicitation": "ask"}))
                .unwrap()
                .elicitation_timeout,
            DEFAULT_ELICITATION_TIMEOUT
        );
    }

    #[test]
    fn bad_fields_are_named_with_what_would_be_right() {
        for (entry, field, expected) in [
            (json!({"roots": "/tmp"}), "roots", "expected a list"),
            (
                json!({"roots": ["relative/dir"]}),
                "roots[0]",
                "neither an absolute path",
            ),
            (json!({"roots": [5]}), "roots[0]", "got a number"),
            (
                json!({"roots": [{"name": "x"}]}),
                "roots[0]",
                "expected {\"uri\"",
            ),
            (
                json!({"elicitation": "accept"}),
                "elicitation",
                "expected \"decline\"",
            ),
            (
                json!({"elicitationTimeoutMs": 0}),
                "elicitationTimeoutMs",
                "from 1 to 3600000",
            ),
            (
                json!({"elicitationTimeoutMs": "5s"}),
                "elicitationTimeoutMs",
                "whole number of milliseconds",
            ),
            (
                json!({"allowSampling": "yes"}),
                "allowSampling",
                "expected true or false",
            ),
        ] {
            let (got_field, message) = take(entry).unwrap_err();
            assert_eq!(got_field, field);
            assert!(message.contains(expected), "{message}");
        }
    }

    #[test]
    fn the_budget_admits_a_window_full_then_refuses_until_the_next() {
        let start = Instant::now();
        let mut budget = RequestBudget::new();
        for _ in 0..BUDGET_PER_WINDOW {
            assert_eq!(budget.admit(start), Admission::Admitted);
        }
        assert_eq!(budget.admit(start), Admission::Refused { first: true });
        for _ in 0..998 {
            assert_eq!(budget.admit(start), Admission::Refused { first: false });
        }
        assert_eq!(budget.refused(), 999);
        let later = start + BUDGET_WINDOW;
        assert_eq!(budget.admit(later), Admission::Admitted);
    }
}
