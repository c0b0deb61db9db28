//! The config's `imports: ["cursor", "claude-desktop", …]`: other clients' servers read live each
//! time the config loads (at start and on every reload), after the file's own servers.
//!
//! A server the file defines itself wins over an imported one of the same name, and so does the
//! first import that names it (a note says which was left out). A client whose file is missing
//! or broken does not stop the daemon: it is a warning, and its servers are not there.

use std::path::PathBuf;

use serde_json::{Map, Value};

use super::{ClientKind, Os, Places, read};
use crate::config::{Config, ConfigError, ConfigNote, ConfigSource, parse};

/// The `imports` member of the config's root, validated: known client names, no repeats.
pub(crate) fn kinds(root: &Value, source: &str) -> Result<Vec<ClientKind>, ConfigError> {
    let error = |field: String, message: String| ConfigError {
        source: source.to_owned(),
        server: None,
        field: Some(field),
        message,
    };
    let items = match root.get("imports") {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(_) => {
            return Err(error(
                "imports".to_owned(),
                "expected an array of client names, e.g. [\"cursor\", \"claude-desktop\"]"
                    .to_owned(),
            ));
        }
    };
    let mut kinds = Vec::new();
    for (index, item) in items.iter().enumerate() {
        let kind = item
            .as_str()
            .ok_or_else(|| ClientKind::from_name(&item.to_string()).unwrap_err())
            .and_then(ClientKind::from_name)
            .map_err(|problem| error(format!("imports[{index}]"), problem.to_string()))?;
        if !kinds.contains(&kind) {
            kinds.push(kind);
        }
    }
    Ok(kinds)
}

/// The places of the daemon's user: `HOME`, `XDG_CONFIG_HOME`, `APPDATA` from `env`, the
/// working directory.
pub(crate) fn places(env: &dyn Fn(&str) -> Option<String>) -> Option<Places> {
    Some(Places {
        home: PathBuf::from(env("HOME").filter(|home| !home.is_empty())?),
        cwd: std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
        xdg_config_home: env("XDG_CONFIG_HOME").map(PathBuf::from),
        app_data: env("APPDATA").map(PathBuf::from),
        os: Os::current(),
    })
}

/// Adds the servers of each of `kinds` to `config`, with a note for everything left out.
pub(crate) fn apply(
    config: &mut Config,
    kinds: &[ClientKind],
    places: Option<&Places>,
    env: &dyn Fn(&str) -> Option<String>,
) {
    let source = config.source.to_string();
    let mut warn = |server: &str, field: &str, message: String| {
        config.notes.push(ConfigNote {
            source: source.clone(),
            server: server.to_owned(),
            field: field.to_owned(),
            ignored: true,
            message,
        });
    };
    let Some(places) = places else {
        warn(
            "",
            "imports",
            "ignored: HOME is not set, so no client's file can be found".to_owned(),
        );
        return;
    };
    let mut imported = Map::new();
    let mut notes = Vec::new();
    for kind in kinds {
        let found = match read(*kind, None, places) {
            Ok(found) => found,
            Err(problem) => {
                notes.push((
                    String::new(),
                    format!("{kind}: {problem}; nothing imported from it"),
                ));
                continue;
            }
        };
        for skipped in found.skipped {
            notes.push((String::new(), format!("{kind}: {skipped}")));
        }
        for server in found.servers {
            if config.servers.iter().any(|ours| ours.name == server.name) {
                notes.push((
                    server.name.clone(),
                    format!("{kind}'s server of this name is not imported: the config defines it"),
                ));
            } else if imported.contains_key(&server.name) {
                notes.push((
                    server.name.clone(),
                    format!(
                        "{kind}'s server of this name is not imported: an earlier import has it"
                    ),
                ));
            } else {
                imported.insert(server.name.clone(), Value::Object(server.entry));
            }
        }
    }
    for (server, message) in notes {
        warn(&server, "imports", format!("ignored: {message}"));
    }
    if imported.is_empty() {
        return;
    }
    // Each entry was checked by the parser when it was read; variables are substituted now.
    for (name, entry) in imported {
        let mut one = Map::new();
        one.insert(name.clone(), entry);
        let text = serde_json::json!({ "mcpServers": one }).to_string();
        match parse(
            &text,
            ConfigSource::File(PathBuf::from(format!("{source} (imports)"))),
            env,
        ) {
            Ok(parsed) => {
                config.servers.extend(parsed.servers);
                config.notes.extend(parsed.notes);
            }
            Err(problem) => config.notes.push(ConfigNote {
                source: source.clone(),
                server: name,
                field: "imports".to_owned(),
                ignored: true,
                message: format!(
                    "ignored: the imported server cannot start: {}",
                    problem.message
                ),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn imports_must_name_known_clients() {
        assert_eq!(kinds(&json!({}), "c").unwrap(), []);
        assert_eq!(
            kinds(&json!({"imports": ["cursor", "codex", "cursor"]}), "c").unwrap(),
            [ClientKind::Cursor, ClientKind::Codex]
        );
        let error = kinds(&json!({"imports": "cursor"}), "c").unwrap_err();
        assert_eq!(error.field.as_deref(), Some("imports"));
        let error = kinds(&json!({"imports": ["cursor", 3]}), "c").unwrap_err();
        assert_eq!(error.field.as_deref(), Some("imports[1]"));
        assert!(
            error.message.contains("expected one of"),
            "{}",
            error.message
        );
    }

    #[test]
    fn the_file_wins_and_a_missing_client_is_a_warning() {
        let home = std::env::temp_dir().join(format!("tool-cli-live-{}", std::process::id()));
        std::fs::create_dir_all(home.join(".cursor")).unwrap();
        std::fs::write(
            home.join(".cursor/mcp.json"),
            r#"{"mcpServers": {"ours": {"command": "theirs"}, "new": {"command": "n", "env": {"K": "${KEY}"}}}}"#,
        )
        .unwrap();
        let mut config = parse(
            r#"{"mcpServers": {"ours": {"command": "mine"}}}"#,
            ConfigSource::File(PathBuf::from("/c.json")),
            &|_| None,
        )
        .unwrap();
        let places = Places {
            home: home.clone(),
            cwd: home.join("nowhere"),
            xdg_config_home: None,
            app_data: None,
            os: Os::Linux,
        };
        let env = |name: &str| (name == "KEY").then(|| "v".to_owned());
        apply(
            &mut config,
            &[ClientKind::Cursor, ClientKind::Windsurf],
            Some(&places),
            &env,
        );
        std::fs::remove_dir_all(&home).unwrap();
        let names: Vec<&str> = config.servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["ours", "new"]);
        let notes: Vec<String> = config.notes.iter().map(ToString::to_string).collect();
        assert!(
            notes
                .iter()
                .any(|n| n.contains("\"ours\"") && n.contains("the config defines it")),
            "{notes:?}"
        );
        assert!(
            notes.iter().any(|n| n.contains("no windsurf config found")),
            "{notes:?}"
        );
        assert!(config.notes.iter().all(|note| note.ignored));
    }
}
