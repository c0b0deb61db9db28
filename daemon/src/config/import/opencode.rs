//! OpenCode's `opencode.json` (a project's, or `~/.config/opencode/opencode.json`): an `mcp`
//! object whose entries are `{"type": "local", "command": [PROGRAM, ARGS…], "environment":
//! {…}}` or `{"type": "remote", "url": …, "headers": {…}}`, each with an optional `enabled`.
//! Pure: the text in, our `mcpServers` entries out, with a note for everything translated or
//! left out. OpenCode writes variables as `{env:NAME}` (ours: `${NAME}`) and `{file:PATH}` (a
//! file's contents, which we do not read: such a server is imported with a note to fill it in).

use serde_json::{Map, Value};

use super::formats::{FormatError, collect, object_root, strip_jsonc};
use super::{ClientKind, Found};

/// OpenCode: `{"mcp": {NAME: {"type": "local" | "remote", …}}}` (JSON with comments allowed).
pub(super) fn opencode(text: &str) -> Result<Found, FormatError> {
    let root = object_root(&strip_jsonc(text))?;
    let servers = match root.get("mcp") {
        Some(Value::Object(servers)) => servers,
        Some(other) => {
            return Err(FormatError::ServersNotAnObject {
                key: "mcp".to_owned(),
                kind: tool_cli_protocol::json::kind(other),
            });
        }
        None => return Err(FormatError::NoMcp),
    };
    let mut found = Found::default();
    let mut translated = Map::new();
    let mut notes_of: Vec<(String, Vec<String>)> = Vec::new();
    for (name, raw) in servers {
        match opencode_entry(name, raw) {
            Ok((entry, notes)) => {
                translated.insert(name.clone(), Value::Object(entry));
                notes_of.push((name.clone(), notes));
            }
            Err(reason) => found.skipped.push(reason),
        }
    }
    collect(&mut found, ClientKind::OpenCode, &translated, |name, _| {
        notes_of
            .iter()
            .find(|(server, _)| server == name)
            .map(|(_, notes)| notes.clone())
            .unwrap_or_default()
    });
    Ok(found)
}

/// One OpenCode entry as ours, with what was translated; `Err` when it cannot be run at all.
fn opencode_entry(name: &str, raw: &Value) -> Result<(Map<String, Value>, Vec<String>), String> {
    let Some(raw) = raw.as_object() else {
        return Err(format!(
            "server \"{name}\": expected an object with \"type\": \"local\" or \"remote\", got {}",
            tool_cli_protocol::json::kind(raw)
        ));
    };
    let mut entry = Map::new();
    let mut notes = Vec::new();
    let kind = raw.get("type").and_then(Value::as_str);
    for (field, value) in raw {
        let value = variables(value, &mut notes);
        match (field.as_str(), kind) {
            ("type", _) => {}
            ("command", Some("local")) => {
                let words: Option<Vec<&str>> = value
                    .as_array()
                    .map(|words| words.iter().map(Value::as_str).collect())
                    .unwrap_or(None);
                match words.as_deref() {
                    Some([program, args @ ..]) => {
                        entry.insert("command".to_owned(), Value::from(*program));
                        entry.insert("args".to_owned(), Value::from(args.to_vec()));
                    }
                    _ => {
                        return Err(format!(
                            "server \"{name}\": \"command\" must be a non-empty array of strings \
                             ([\"npx\", \"-y\", \"pkg\"]), got {value}"
                        ));
                    }
                }
            }
            ("environment", Some("local")) => {
                entry.insert("env".to_owned(), value);
                notes.push("\"environment\" read as \"env\"".to_owned());
            }
            ("url" | "headers", Some("remote")) => {
                entry.insert(field.clone(), value);
            }
            ("enabled", _) => {
                if value.as_bool() == Some(false) {
                    entry.insert("disabled".to_owned(), Value::Bool(true));
                    notes.push("\"enabled\": false read as \"disabled\": true".to_owned());
                }
            }
            _ => notes.push(format!(
                "field \"{field}\" ({}) is not one tool-cli knows (OpenCode's own setting); left \
                 out",
                crate::redact::clean_text(&value.to_string(), 60)
            )),
        }
    }
    match kind {
        Some("local") if entry.contains_key("command") => Ok((entry, notes)),
        Some("local") => Err(format!(
            "server \"{name}\": a \"local\" server needs \"command\": [PROGRAM, ARGS…]"
        )),
        Some("remote") if entry.contains_key("url") => Ok((entry, notes)),
        Some("remote") => Err(format!(
            "server \"{name}\": a \"remote\" server needs \"url\""
        )),
        other => Err(format!(
            "server \"{name}\": \"type\" must be \"local\" or \"remote\", got {}",
            other.map_or_else(|| "nothing".to_owned(), |kind| format!("{kind:?}"))
        )),
    }
}

/// `{env:NAME}` as `${NAME}` in every string of `value`; a `{file:PATH}` is kept and noted.
fn variables(value: &Value, notes: &mut Vec<String>) -> Value {
    match value {
        Value::String(text) => {
            let mut out = String::new();
            let mut rest = text.as_str();
            while let Some(start) = rest.find("{env:") {
                let Some(end) = rest[start..].find('}') else {
                    break;
                };
                let variable = &rest[start + 5..start + end];
                out.push_str(&rest[..start]);
                out.push_str(&format!("${{{variable}}}"));
                notes.push(format!(
                    "\"{{env:{variable}}}\" read as \"${{{variable}}}\""
                ));
                rest = &rest[start + end + 1..];
            }
            out.push_str(rest);
            if out.contains("{file:") {
                notes.push(format!(
                    "\"{}\" reads a file, which tool-cli does not; put the value (or a ${{VAR}}) \
                     in its place",
                    crate::redact::clean_text(&out, 60)
                ));
            }
            Value::String(out)
        }
        Value::Array(items) => {
            Value::Array(items.iter().map(|item| variables(item, notes)).collect())
        }
        Value::Object(members) => Value::Object(
            members
                .iter()
                .map(|(key, value)| (key.clone(), variables(value, notes)))
                .collect(),
        ),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn local_and_remote_servers_become_ours_with_notes() {
        let text = r#"{
          // OpenCode allows comments
          "$schema": "https://opencode.ai/config.json",
          "mcp": {
            "fs": {"type": "local", "command": ["npx", "-y", "@modelcontextprotocol/server-filesystem", "/tmp"],
                   "environment": {"TOKEN": "{env:FS_TOKEN}"}, "enabled": true, "timeout": 5000},
            "docs": {"type": "remote", "url": "https://docs.example.com/mcp",
                     "headers": {"Authorization": "Bearer {env:DOCS_KEY}"}, "enabled": false},
            "broken": {"type": "local", "command": []},
            "odd": {"type": "stdio", "command": ["x"]},
          },
        }"#;
        let found = opencode(text).unwrap();
        let names: Vec<&str> = found.servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["fs", "docs"]);
        let fs = &found.servers[0];
        assert_eq!(
            Value::Object(fs.entry.clone()),
            json!({"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"],
                   "env": {"TOKEN": "${FS_TOKEN}"}})
        );
        let notes = fs.notes.join("\n");
        assert!(notes.contains("\"timeout\""), "{notes}");
        assert!(notes.contains("${FS_TOKEN}"), "{notes}");
        let docs = &found.servers[1];
        assert_eq!(docs.entry["url"], "https://docs.example.com/mcp");
        assert_eq!(docs.entry["headers"]["Authorization"], "Bearer ${DOCS_KEY}");
        assert_eq!(docs.entry["disabled"], true);
        assert_eq!(found.skipped.len(), 2, "{:?}", found.skipped);
        assert!(found.skipped.iter().any(|s| s.contains("non-empty array")));
        assert!(
            found
                .skipped
                .iter()
                .any(|s| s.contains("\"local\" or \"remote\""))
        );
    }

    #[test]
    fn a_file_without_mcp_says_what_was_expected() {
        assert!(
            opencode("{}")
                .unwrap_err()
                .to_string()
                .contains("no \"mcp\" object")
        );
        assert!(
            opencode(r#"{"mcp": []}"#)
                .unwrap_err()
                .to_string()
                .contains("expected an object")
        );
    }
}
