//! The config's `imports: ["cursor", "claude-desktop", …]`: other clients' servers read live each
//! time the config loads (at start and on every reload), after the file's own servers.
//!
//! A server the file defines itself wins over an imported one of the same name, and so does the
//! first import that names it (a note says which was left out). A client whose file is missing
//! or broken does not stop the daemon: it is a warning, and its servers are not there.
//!
//! Only files the user chose are read: each client's user-wide file, and a project's own files
//! (`.mcp.json`, `.cursor/mcp.json`, `.vscode/mcp.json`, a project's entry in `~/.claude.json`)
//! only for a project the config names (`{"client": "claude-code", "project": "~/src/app"}`),
//! never the daemon's working directory: Claude Code asks before running a project's servers,
//! and a daemon started in a shared directory must not run what someone left there. Every file
//! read must pass the config file's own rules (owned by the daemon's user or root, writable by
//! no one else), and each server imported is logged with where it came from.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::{ClientKind, ImportError, Os, Places, read};
use crate::config::{Config, ConfigError, ConfigNote, ConfigSource, config_path, parse};

/// One entry of `imports`: a client, and the project whose own files are read, when named.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LiveImport {
    pub(crate) kind: ClientKind,
    pub(crate) project: Option<PathBuf>,
}

/// The `imports` member of the config's root, validated: known client names (alone, or as
/// `{"client": NAME, "project": DIR}`), no repeats. `config_dir` is where a relative project
/// directory starts.
pub(crate) fn imports(
    root: &Value,
    source: &str,
    config_dir: Option<&Path>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<LiveImport>, ConfigError> {
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
                "expected an array of client names, e.g. [\"cursor\", \"claude-desktop\"], or \
                 of {\"client\": NAME, \"project\": DIR}"
                    .to_owned(),
            ));
        }
    };
    let mut imports = Vec::new();
    for (index, item) in items.iter().enumerate() {
        let at = format!("imports[{index}]");
        let kind_of = |name: &Value| {
            name.as_str()
                .ok_or_else(|| ClientKind::from_name(&name.to_string()).unwrap_err())
                .and_then(ClientKind::from_name)
                .map_err(|problem| problem.to_string())
        };
        let import = match item {
            Value::Object(members) => {
                if let Some(unknown) = members
                    .keys()
                    .find(|key| !matches!(key.as_str(), "client" | "project"))
                {
                    return Err(error(
                        format!("{at}.{unknown}"),
                        "unknown member; expected {\"client\": NAME, \"project\": DIR}".to_owned(),
                    ));
                }
                let kind = members
                    .get("client")
                    .ok_or_else(|| "missing; expected a client name".to_owned())
                    .and_then(kind_of)
                    .map_err(|problem| error(format!("{at}.client"), problem))?;
                let project = match members.get("project") {
                    None | Some(Value::Null) => None,
                    Some(Value::String(text)) => {
                        Some(config_path(text, config_dir, env).map_err(|problem| {
                            error(format!("{at}.project"), problem.to_string())
                        })?)
                    }
                    Some(other) => {
                        return Err(error(
                            format!("{at}.project"),
                            format!(
                                "is {}; expected the project's directory as a string",
                                tool_cli_protocol::json::kind(other)
                            ),
                        ));
                    }
                };
                LiveImport { kind, project }
            }
            name => LiveImport {
                kind: kind_of(name).map_err(|problem| error(at, problem))?,
                project: None,
            },
        };
        if !imports.contains(&import) {
            imports.push(import);
        }
    }
    Ok(imports)
}

/// The places of the daemon's user: `HOME`, `XDG_CONFIG_HOME`, `APPDATA` from `env`. No project:
/// the working directory is not one the user named.
pub(crate) fn places(env: &dyn Fn(&str) -> Option<String>) -> Option<Places> {
    Some(Places {
        home: PathBuf::from(env("HOME").filter(|home| !home.is_empty())?),
        project: None,
        xdg_config_home: env("XDG_CONFIG_HOME").map(PathBuf::from),
        app_data: env("APPDATA").map(PathBuf::from),
        os: Os::current(),
    })
}

/// What the log says an imported server runs: its program, or the origin it connects to (never
/// its arguments, environment, headers or a URL's path and query, where secrets live).
fn what_it_runs(entry: &Map<String, Value>) -> String {
    if let Some(command) = entry.get("command").and_then(Value::as_str) {
        return format!("runs {}", crate::redact::clean_text(command, 200));
    }
    match entry.get("url").and_then(Value::as_str) {
        Some(url) => {
            let origin = url
                .split_once("://")
                .map(|(scheme, rest)| {
                    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
                    let host = authority.rsplit('@').next().unwrap_or_default();
                    format!("{scheme}://{host}")
                })
                .unwrap_or_default();
            format!("connects to {}", crate::redact::clean_text(&origin, 200))
        }
        None => "runs nothing the config can start".to_owned(),
    }
}

/// Adds the servers of each of `imports` to `config`, with a note for everything left out and
/// one for every server imported (logged at start and on reload).
pub(crate) fn apply(
    config: &mut Config,
    imports: &[LiveImport],
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
    let mut imported: Vec<(String, Map<String, Value>, String)> = Vec::new();
    let mut notes = Vec::new();
    for import in imports {
        let kind = import.kind;
        let places = Places {
            project: import.project.clone(),
            ..places.clone()
        };
        let found = match read(kind, None, &places) {
            Ok(found) => found,
            Err(ImportError::NotFound { .. })
                if kind == ClientKind::VsCode && import.project.is_none() =>
            {
                notes.push((
                    String::new(),
                    "vscode keeps its servers only in a project's .vscode/mcp.json, and a live \
                     import reads a project's files only when the config names the project: \
                     {\"client\": \"vscode\", \"project\": \"DIR\"}; nothing imported from it"
                        .to_owned(),
                ));
                continue;
            }
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
        for note in found.notes {
            notes.push((String::new(), format!("{kind}: {note}")));
        }
        let origin = format!("{kind}'s {}", found.path.display());
        for server in found.servers {
            if config.servers.iter().any(|ours| ours.name == server.name) {
                notes.push((
                    server.name.clone(),
                    format!("{kind}'s server of this name is not imported: the config defines it"),
                ));
            } else if imported.iter().any(|(name, _, _)| *name == server.name) {
                notes.push((
                    server.name.clone(),
                    format!(
                        "{kind}'s server of this name is not imported: an earlier import has it"
                    ),
                ));
            } else {
                imported.push((server.name.clone(), server.entry, origin.clone()));
            }
        }
    }
    for (server, message) in notes {
        warn(&server, "imports", format!("ignored: {message}"));
    }
    // Each entry was checked by the parser when it was read; variables are substituted now.
    for (name, entry, origin) in imported {
        let runs = what_it_runs(&entry);
        let mut one = Map::new();
        one.insert(name.clone(), Value::Object(entry));
        let text = serde_json::json!({ "mcpServers": one }).to_string();
        match parse(
            &text,
            ConfigSource::File(PathBuf::from(format!("{source} (imports)"))),
            env,
        ) {
            Ok(parsed) => {
                config.servers.extend(parsed.servers);
                config.notes.extend(parsed.notes);
                config.notes.push(ConfigNote {
                    source: source.clone(),
                    server: name,
                    field: "imports".to_owned(),
                    ignored: false,
                    message: format!("imported from {origin}: {runs}"),
                });
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
    use std::os::unix::fs::PermissionsExt as _;

    use serde_json::json;

    use super::*;

    fn none(_: &str) -> Option<String> {
        None
    }

    fn import(kind: ClientKind, project: Option<&str>) -> LiveImport {
        LiveImport {
            kind,
            project: project.map(PathBuf::from),
        }
    }

    #[test]
    fn imports_must_name_known_clients_and_may_name_a_project() {
        let config_dir = Path::new("/etc/tool-cli");
        let read = |value: Value| imports(&value, "c", Some(config_dir), &none);
        assert_eq!(read(json!({})).unwrap(), []);
        assert_eq!(
            read(json!({"imports": ["cursor", "codex", "cursor",
                {"client": "vscode", "project": "/src/app"},
                {"client": "claude-code", "project": "app"}]}))
            .unwrap(),
            [
                import(ClientKind::Cursor, None),
                import(ClientKind::Codex, None),
                import(ClientKind::VsCode, Some("/src/app")),
                import(ClientKind::ClaudeCode, Some("/etc/tool-cli/app")),
            ]
        );
        let error = read(json!({"imports": "cursor"})).unwrap_err();
        assert_eq!(error.field.as_deref(), Some("imports"));
        let error = read(json!({"imports": ["cursor", 3]})).unwrap_err();
        assert_eq!(error.field.as_deref(), Some("imports[1]"));
        assert!(
            error.message.contains("expected one of"),
            "{}",
            error.message
        );
        let error = read(json!({"imports": [{"client": "cursor", "dir": "/x"}]})).unwrap_err();
        assert_eq!(error.field.as_deref(), Some("imports[0].dir"));
        let error = read(json!({"imports": [{"project": "/x"}]})).unwrap_err();
        assert_eq!(error.field.as_deref(), Some("imports[0].client"));
    }

    /// A user home and a project directory in a fresh temp dir.
    fn home_and_project() -> (tempfile::TempDir, Places, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let project = dir.path().join("project");
        std::fs::create_dir_all(home.join(".cursor")).unwrap();
        std::fs::create_dir_all(&project).unwrap();
        let places = Places {
            home,
            project: None,
            xdg_config_home: None,
            app_data: None,
            os: Os::Linux,
        };
        (dir, places, project)
    }

    fn write(path: &Path, value: &Value, mode: u32) {
        std::fs::write(path, value.to_string()).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    fn config() -> Config {
        parse(
            r#"{"mcpServers": {"ours": {"command": "mine"}}}"#,
            ConfigSource::File(PathBuf::from("/c.json")),
            &none,
        )
        .unwrap()
    }

    #[test]
    fn the_file_wins_a_missing_client_is_a_warning_and_each_import_is_logged() {
        let (_dir, places, _) = home_and_project();
        write(
            &places.home.join(".cursor/mcp.json"),
            &json!({"mcpServers": {"ours": {"command": "theirs"},
                "new": {"command": "n", "env": {"K": "${KEY}"}},
                "remote": {"url": "https://user:pw@example.com/mcp?key=s3cret"}}}),
            0o600,
        );
        let mut config = config();
        let env = |name: &str| (name == "KEY").then(|| "v".to_owned());
        apply(
            &mut config,
            &[
                import(ClientKind::Cursor, None),
                import(ClientKind::Windsurf, None),
            ],
            Some(&places),
            &env,
        );
        let names: Vec<&str> = config.servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["ours", "new", "remote"]);
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
        // Each imported server is said, with where it came from and what it runs, and nothing
        // secret.
        let logged: Vec<&ConfigNote> = config.notes.iter().filter(|note| !note.ignored).collect();
        assert_eq!(logged.len(), 2, "{notes:?}");
        assert_eq!(logged[0].server, "new");
        assert!(
            logged[0].message.contains("imported from cursor's"),
            "{notes:?}"
        );
        assert!(logged[0].message.ends_with("runs n"), "{notes:?}");
        assert_eq!(
            logged[1].message.rsplit(": ").next(),
            Some("connects to https://example.com")
        );
        // The password as the URL carried it: a bare "pw" also matches a random temp dir name
        // in the note's path (a failure about one run in twenty).
        assert!(
            !notes
                .iter()
                .any(|n| n.contains("s3cret") || n.contains(":pw@") || n.contains("user:")),
            "{notes:?}"
        );
    }

    /// The issue: live `imports` ran the servers of a world-writable `./.mcp.json` in the
    /// daemon's working directory, silently.
    #[test]
    fn a_project_file_is_read_only_from_a_named_project_and_only_when_private() {
        let (_dir, places, project) = home_and_project();
        let project_file = project.join(".mcp.json");
        let planted = json!({"mcpServers": {"planted": {"command": "/tmp/evil"}}});
        write(&project_file, &planted, 0o666);
        // The daemon's places name no project, whatever its working directory.
        assert_eq!(live_places_project(), None);
        let mut config = config();
        apply(
            &mut config,
            &[import(ClientKind::ClaudeCode, None)],
            Some(&places),
            &none,
        );
        assert_eq!(config.servers.len(), 1, "nothing but the config's own");

        // Named, a project file others may write is still refused, saying why.
        let named = import(ClientKind::ClaudeCode, Some(project.to_str().unwrap()));
        let mut config = self::config();
        apply(
            &mut config,
            std::slice::from_ref(&named),
            Some(&places),
            &none,
        );
        assert_eq!(config.servers.len(), 1);
        let notes: Vec<String> = config.notes.iter().map(ToString::to_string).collect();
        assert!(
            notes
                .iter()
                .any(|n| n.contains("writable by other users") && n.contains(".mcp.json")),
            "{notes:?}"
        );

        // Named and private, it is imported, and said.
        std::fs::set_permissions(&project_file, std::fs::Permissions::from_mode(0o600)).unwrap();
        let mut config = self::config();
        apply(&mut config, &[named], Some(&places), &none);
        assert_eq!(config.servers.len(), 2);
        assert!(
            config
                .notes
                .iter()
                .any(|note| !note.ignored && note.server == "planted"),
            "{:?}",
            config.notes
        );
    }

    fn live_places_project() -> Option<PathBuf> {
        places(&|name| (name == "HOME").then(|| "/home/u".to_owned()))
            .and_then(|places| places.project)
    }

    #[test]
    fn vscode_without_a_project_says_how_to_name_one() {
        let (_dir, places, _) = home_and_project();
        let mut config = config();
        apply(
            &mut config,
            &[import(ClientKind::VsCode, None)],
            Some(&places),
            &none,
        );
        let notes: Vec<String> = config.notes.iter().map(ToString::to_string).collect();
        assert!(
            notes
                .iter()
                .any(|n| n.contains("{\"client\": \"vscode\", \"project\": \"DIR\"}")),
            "{notes:?}"
        );
    }
}
