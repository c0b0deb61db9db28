//! Merging imported servers into our config file's text. Pure: new names are added, a name
//! already there with the same entry is left alone, a name already there with a different entry
//! is a conflict, reported and never overwritten. Everything else in the file is kept as it is.

use serde_json::{Map, Value};

use super::FoundServer;

/// What a merge did.
#[derive(Debug, Clone, PartialEq)]
pub struct MergeOutcome {
    /// Servers added.
    pub added: Vec<String>,
    /// Servers already there with the same entry.
    pub unchanged: Vec<String>,
    /// Servers already there with a different entry: left as they are.
    pub conflicts: Vec<String>,
    /// The new text of our config file (pretty JSON), when anything was added.
    pub text: Option<String>,
}

/// Why our config file cannot take the imported servers; each says what to fix first.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MergeError {
    /// The file is JSON but not an object.
    #[error("expected a JSON object with an \"mcpServers\" object")]
    NotAnObject,
    /// The file is not JSON.
    #[error(
        "invalid JSON at line {line} column {column}: {message}; fix it before importing into it"
    )]
    InvalidJson {
        /// Where the parser stopped.
        line: usize,
        /// Where the parser stopped.
        column: usize,
        /// What the parser said.
        message: String,
    },
    /// The servers member is not an object.
    #[error("\"{0}\" is not an object; expected an object mapping server names to their settings")]
    ServersNotAnObject(&'static str),
    /// The merged config could not be written as JSON.
    #[error("cannot encode the config: {0}")]
    Encode(String),
}

/// Merges `found` into `ours` (the text of our config file; `None` when there is none yet).
pub fn merge(ours: Option<&str>, found: &[FoundServer]) -> Result<MergeOutcome, MergeError> {
    let mut root = match ours {
        None => Map::new(),
        Some(text) if text.trim().is_empty() => Map::new(),
        Some(text) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(root)) => root,
            Ok(_) => return Err(MergeError::NotAnObject),
            Err(error) => {
                return Err(MergeError::InvalidJson {
                    line: error.line(),
                    column: error.column(),
                    message: error.to_string(),
                });
            }
        },
    };
    let key = if root.contains_key("mcpServers") || !root.contains_key("servers") {
        "mcpServers"
    } else {
        "servers"
    };
    let servers = root.entry(key).or_insert_with(|| Value::Object(Map::new()));
    let Some(servers) = servers.as_object_mut() else {
        return Err(MergeError::ServersNotAnObject(key));
    };
    let mut outcome = MergeOutcome {
        added: Vec::new(),
        unchanged: Vec::new(),
        conflicts: Vec::new(),
        text: None,
    };
    for server in found {
        let entry = Value::Object(server.entry.clone());
        match servers.get(&server.name) {
            None => {
                servers.insert(server.name.clone(), entry);
                outcome.added.push(server.name.clone());
            }
            Some(existing) if *existing == entry => outcome.unchanged.push(server.name.clone()),
            Some(_) => outcome.conflicts.push(server.name.clone()),
        }
    }
    if !outcome.added.is_empty() {
        let mut text = serde_json::to_string_pretty(&Value::Object(root))
            .map_err(|error| MergeError::Encode(error.to_string()))?;
        text.push('\n');
        outcome.text = Some(text);
    }
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn server(name: &str, entry: Value) -> FoundServer {
        FoundServer {
            name: name.to_owned(),
            entry: entry.as_object().unwrap().clone(),
            notes: Vec::new(),
        }
    }

    #[test]
    fn new_names_are_added_and_conflicts_are_never_overwritten() {
        let ours = r#"{"mcpServers": {"fs": {"command": "mine"}, "same": {"command": "x"}}, "traces": {"enabled": false}}"#;
        let outcome = merge(
            Some(ours),
            &[
                server("fs", json!({"command": "theirs"})),
                server("same", json!({"command": "x"})),
                server("new", json!({"url": "http://127.0.0.1:1/mcp"})),
            ],
        )
        .unwrap();
        assert_eq!(outcome.added, ["new"]);
        assert_eq!(outcome.unchanged, ["same"]);
        assert_eq!(outcome.conflicts, ["fs"]);
        let written: Value = serde_json::from_str(outcome.text.as_deref().unwrap()).unwrap();
        assert_eq!(written["mcpServers"]["fs"]["command"], "mine");
        assert_eq!(
            written["mcpServers"]["new"]["url"],
            "http://127.0.0.1:1/mcp"
        );
        assert_eq!(
            written["traces"]["enabled"], false,
            "other sections are kept"
        );
    }

    #[test]
    fn nothing_to_add_writes_nothing_and_a_broken_file_is_refused() {
        let outcome = merge(
            Some(r#"{"mcpServers": {"a": {"command": "x"}}}"#),
            &[server("a", json!({"command": "x"}))],
        )
        .unwrap();
        assert_eq!(outcome.text, None);
        let fresh = merge(None, &[server("a", json!({"command": "x"}))]).unwrap();
        assert!(fresh.text.unwrap().contains("\"mcpServers\""));
        assert!(
            merge(Some("{oops"), &[])
                .unwrap_err()
                .to_string()
                .contains("invalid JSON at line 1 column 2")
        );
        assert!(
            merge(Some(r#"{"mcpServers": []}"#), &[])
                .unwrap_err()
                .to_string()
                .contains("not an object")
        );
    }
}
