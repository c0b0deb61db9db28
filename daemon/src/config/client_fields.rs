//! Fields that other MCP clients write into their `mcpServers` entries, so that a config copied
//! from Cline, Roo Code, Cursor, Claude Desktop, VS Code, Windsurf or Gemini CLI is read instead
//! of refused whole.
//!
//! [`normalize`] is pure: it takes one server entry and returns the entry in our own field
//! names, with a [`FieldNote`] for every foreign field it met. A field whose meaning we have is
//! translated (`transportType` → `type`, `serverUrl` → `url`, `disabledTools` → `denyTools`,
//! Cline's `timeout` in seconds → `timeoutMs`); a field we have no use for (`autoApprove`,
//! `envFile`, …) is dropped with a note that says so and what to do instead. Any other unknown
//! field stays in the entry, where the config parser refuses it with its path: a typo must not be
//! silently ignored.

use serde_json::{Map, Value};

/// What happened to one foreign field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FieldNote {
    /// The field as written.
    pub(crate) field: String,
    /// `true` when it was dropped; `false` when it was translated into one of ours.
    pub(crate) ignored: bool,
    /// Whose field it is, and what we did with it.
    pub(crate) message: String,
}

/// Fields we drop, with whose they are and what to use instead.
const IGNORED: &[(&str, &str)] = &[
    (
        "autoApprove",
        "Cline's list of tools run without asking; tool-cli never asks, except for destructive \
         tools (see destructiveTools and confirmDestructive)",
    ),
    (
        "alwaysAllow",
        "Roo Code's list of tools run without asking; tool-cli never asks, except for \
         destructive tools (see destructiveTools and confirmDestructive)",
    ),
    (
        "watchPaths",
        "Roo Code's files that restart the server when they change; restart the daemon instead",
    ),
    (
        "envFile",
        "VS Code's and Cursor's file of variables for the server; the server starts without \
         them: copy the ones it needs into \"env\" (\"${VAR}\" reads the daemon's environment)",
    ),
    ("dev", "VS Code's development mode (watch and debug)"),
    ("gallery", "VS Code's marketplace origin of the server"),
    ("version", "VS Code's version label of the server"),
    (
        "trust",
        "Gemini CLI's switch to skip confirmations; tool-cli never asks, except for destructive \
         tools (see confirmDestructive)",
    ),
];

/// Our own `oauth` object's fields; an `oauth` object with any other field is another client's.
const OUR_OAUTH_FIELDS: &[&str] = &["scope", "clientId", "clientSecret", "clientMetadataUrl"];

/// Whether `oauth` is another client's (Gemini CLI's `authorizationUrl`, `scopes`, …; Claude
/// Code's `callbackPort`) rather than ours (`true`, `false`, or scope / clientId / clientSecret).
fn foreign_oauth(value: &Value) -> bool {
    match value {
        Value::Object(fields) => fields
            .keys()
            .any(|field| !OUR_OAUTH_FIELDS.contains(&field.as_str())),
        _ => false,
    }
}

/// Renames: the foreign field is ours under another name. (`disabled` needs none: the config
/// parser reads it as `enabled: false`.)
const RENAMED: &[(&str, &str, &str)] = &[
    ("transportType", "type", "Cline's older name"),
    ("serverUrl", "url", "Windsurf's name"),
    (
        "httpUrl",
        "url",
        "Gemini CLI's name for a Streamable HTTP server",
    ),
];

/// Lists of tool names that feed our policy globs.
const TOOL_LISTS: &[(&str, &str, &str)] = &[
    ("disabledTools", "denyTools", "Roo Code's and Windsurf's"),
    ("excludeTools", "denyTools", "Gemini CLI's"),
    ("includeTools", "allowTools", "Gemini CLI's"),
];

/// The longest `timeout` Cline and Roo Code accept, in seconds.
const MAX_TIMEOUT_SECONDS: u64 = 3600;

/// `entry` in our field names, and a note for each foreign field met.
pub(crate) fn normalize(entry: &Map<String, Value>) -> (Map<String, Value>, Vec<FieldNote>) {
    let mut entry = entry.clone();
    let mut notes = Vec::new();
    let mut note = |field: &str, ignored: bool, message: String| {
        notes.push(FieldNote {
            field: field.to_owned(),
            ignored,
            message,
        });
    };

    if entry.get("oauth").is_some_and(foreign_oauth) {
        entry.remove("oauth");
        note(
            "oauth",
            true,
            "ignored: the OAuth settings of Gemini CLI or Claude Code; tool-cli's own \"oauth\" \
             takes only scope, clientId, clientSecret and clientMetadataUrl (it signs in with `tool-cli auth login`)"
                .to_owned(),
        );
    }

    for (field, why) in IGNORED {
        if entry.remove(*field).is_some() {
            note(field, true, format!("ignored: {why}"));
        }
    }

    for (field, ours, whose) in RENAMED {
        let Some(value) = entry.remove(*field) else {
            continue;
        };
        // `type` may also be spelled `transport` (an alias the parser knows).
        let taken =
            entry.contains_key(*ours) || (*ours == "type" && entry.contains_key("transport"));
        if taken {
            note(
                field,
                true,
                format!("ignored: {whose} for \"{ours}\", which is set too"),
            );
        } else {
            entry.insert((*ours).to_owned(), value);
            note(field, false, format!("read as \"{ours}\" ({whose})"));
        }
    }

    for (field, ours, whose) in TOOL_LISTS {
        let Some(value) = entry.remove(*field) else {
            continue;
        };
        let Value::Array(names) = value else {
            // Left for the parser to refuse with its path: a list was meant.
            entry.insert((*field).to_owned(), value);
            continue;
        };
        match entry.get_mut(*ours) {
            Some(Value::Array(existing)) => existing.extend(names),
            Some(_) => {
                // Our own field is malformed; the policy parser reports it.
            }
            None => {
                entry.insert((*ours).to_owned(), Value::Array(names));
            }
        }
        note(
            field,
            false,
            format!("read as \"{ours}\" ({whose} list of tool names)"),
        );
    }

    if let Some(value) = entry.remove("timeout") {
        match value.as_u64() {
            Some(seconds @ 1..=MAX_TIMEOUT_SECONDS) if !entry.contains_key("timeoutMs") => {
                entry.insert("timeoutMs".to_owned(), Value::from(seconds * 1000));
                note(
                    "timeout",
                    false,
                    format!(
                        "read as {seconds} s (Cline's and Roo Code's unit); write \
                         \"timeoutMs\": {} to say it in ours",
                        seconds * 1000
                    ),
                );
            }
            _ if entry.contains_key("timeoutMs") => note(
                "timeout",
                true,
                "ignored: \"timeoutMs\" is set too".to_owned(),
            ),
            _ => note(
                "timeout",
                true,
                format!(
                    "ignored: {value} is not a number of seconds from 1 to \
                     {MAX_TIMEOUT_SECONDS} (Cline's and Roo Code's unit); use \"timeoutMs\""
                ),
            ),
        }
    }
    (entry, notes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(value: Value) -> (Value, Vec<FieldNote>) {
        let (entry, notes) = normalize(value.as_object().unwrap());
        (Value::Object(entry), notes)
    }

    #[test]
    fn our_oauth_is_kept_and_another_clients_is_dropped_with_a_note() {
        let ours =
            json!({"url": "https://h/mcp", "oauth": {"clientId": "a", "clientSecret": "${S}"}});
        let (entry, notes) = run(ours.clone());
        assert_eq!(entry, ours);
        assert!(notes.is_empty());
        let (entry, notes) = run(json!({"url": "https://h/mcp", "oauth": false}));
        assert_eq!(entry["oauth"], json!(false));
        assert!(notes.is_empty());
        let gemini = json!({"url": "https://h/mcp",
                            "oauth": {"enabled": true, "authorizationUrl": "https://as/a"}});
        let (entry, notes) = run(gemini);
        assert!(entry.get("oauth").is_none());
        assert_eq!(notes[0].field, "oauth");
        assert!(notes[0].ignored);
    }

    fn fields(notes: &[FieldNote], ignored: bool) -> Vec<&str> {
        notes
            .iter()
            .filter(|note| note.ignored == ignored)
            .map(|note| note.field.as_str())
            .collect()
    }

    #[test]
    fn a_cline_entry_becomes_ours() {
        let (entry, notes) = run(json!({
            "command": "npx", "args": ["x"], "autoApprove": ["read"], "disabled": false,
            "timeout": 90, "transportType": "stdio"
        }));
        assert_eq!(
            entry,
            json!({"command": "npx", "args": ["x"], "disabled": false, "timeoutMs": 90_000,
                   "type": "stdio"})
        );
        assert_eq!(fields(&notes, true), ["autoApprove"]);
        assert_eq!(fields(&notes, false), ["transportType", "timeout"]);
        assert!(notes[0].message.contains("Cline"), "{notes:?}");
    }

    #[test]
    fn roo_windsurf_vscode_and_gemini_entries_become_ours() {
        let (entry, notes) = run(json!({
            "serverUrl": "https://x/mcp", "alwaysAllow": [], "watchPaths": ["a"],
            "disabledTools": ["rm"], "excludeTools": ["mv"], "denyTools": ["cp"],
            "envFile": ".env", "dev": {"watch": "*.js"}
        }));
        assert_eq!(
            entry,
            json!({"url": "https://x/mcp", "denyTools": ["cp", "rm", "mv"]})
        );
        assert_eq!(
            fields(&notes, true),
            ["alwaysAllow", "watchPaths", "envFile", "dev"]
        );
        let (entry, _) = run(json!({"httpUrl": "https://x/mcp", "includeTools": ["a"]}));
        assert_eq!(entry, json!({"url": "https://x/mcp", "allowTools": ["a"]}));
    }

    #[test]
    fn ours_wins_over_a_foreign_synonym() {
        let (entry, notes) = run(json!({
            "url": "https://ours", "serverUrl": "https://theirs",
            "type": "http", "transportType": "sse", "timeoutMs": 5, "timeout": 60
        }));
        assert_eq!(
            entry,
            json!({"url": "https://ours", "type": "http", "timeoutMs": 5})
        );
        assert_eq!(
            fields(&notes, true),
            ["transportType", "serverUrl", "timeout"]
        );
    }

    #[test]
    fn unknown_and_malformed_fields_are_left_for_the_parser() {
        let (entry, notes) = run(json!({"command": "x", "arg": [], "disabledTools": "rm"}));
        assert_eq!(
            entry,
            json!({"command": "x", "arg": [], "disabledTools": "rm"})
        );
        assert!(notes.is_empty());
        // A timeout that cannot be Cline's seconds is not guessed at.
        let (entry, notes) = run(json!({"command": "x", "timeout": 600_000}));
        assert_eq!(entry, json!({"command": "x"}));
        assert!(notes[0].ignored && notes[0].message.contains("timeoutMs"));
    }
}
