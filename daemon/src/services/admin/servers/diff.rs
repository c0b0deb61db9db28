//! What a reload changes: the servers of the running config against those of the new file.
//! Pure: two lists in, four lists out.

use crate::config::ServerConfig;

/// The servers of a new config, sorted by what must happen to each.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct ServersDiff {
    /// In the new config only: start them.
    pub(crate) added: Vec<ServerConfig>,
    /// In both with a different entry (command, arguments, env, URL, headers, limits, policy,
    /// overrides, enabled, a `${VAR}`'s value): start the new one, drain and stop the old.
    pub(crate) changed: Vec<ServerConfig>,
    /// In the running config only: drain and stop them.
    pub(crate) removed: Vec<String>,
    /// Identical: leave them running.
    pub(crate) unchanged: Vec<String>,
}

/// Sorts `new`'s servers against `old`'s, by name.
pub(crate) fn diff(old: &[ServerConfig], new: &[ServerConfig]) -> ServersDiff {
    let mut result = ServersDiff::default();
    for server in new {
        match old.iter().find(|running| running.name == server.name) {
            None => result.added.push(server.clone()),
            Some(running) if running == server => result.unchanged.push(server.name.clone()),
            Some(_) => result.changed.push(server.clone()),
        }
    }
    result.removed = old
        .iter()
        .filter(|running| !new.iter().any(|server| server.name == running.name))
        .map(|running| running.name.clone())
        .collect();
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{ConfigSource, parse};

    fn servers(text: &str) -> Vec<ServerConfig> {
        parse(text, ConfigSource::BundledDefault, &|name| {
            (name == "TOKEN").then(|| "s3cret-value".to_owned())
        })
        .unwrap()
        .servers
    }

    #[test]
    fn each_server_lands_in_one_list() {
        let old = servers(
            r#"{"mcpServers": {
                "same": {"command": "a"},
                "args": {"command": "b", "args": ["1"]},
                "gone": {"command": "c"},
                "limits": {"command": "d"}
            }}"#,
        );
        let new = servers(
            r#"{"mcpServers": {
                "same": {"command": "a"},
                "args": {"command": "b", "args": ["2"]},
                "limits": {"command": "d", "timeoutMs": 5000},
                "fresh": {"url": "http://127.0.0.1:9/mcp"}
            }}"#,
        );
        let diff = diff(&old, &new);
        let names = |list: &[ServerConfig]| list.iter().map(|s| s.name.clone()).collect::<Vec<_>>();
        assert_eq!(names(&diff.added), ["fresh"]);
        assert_eq!(names(&diff.changed), ["args", "limits"]);
        assert_eq!(diff.removed, ["gone"]);
        assert_eq!(diff.unchanged, ["same"]);
    }

    #[test]
    fn nothing_changes_when_the_file_is_the_same_and_disabling_is_a_change() {
        let text = r#"{"mcpServers": {"a": {"command": "a", "env": {"T": "${TOKEN}"}}}}"#;
        let same = diff(&servers(text), &servers(text));
        assert!(same.added.is_empty() && same.changed.is_empty() && same.removed.is_empty());
        assert_eq!(same.unchanged, ["a"]);
        let disabled = servers(
            r#"{"mcpServers": {"a": {"command": "a", "env": {"T": "${TOKEN}"}, "disabled": true}}}"#,
        );
        assert_eq!(diff(&servers(text), &disabled).changed.len(), 1);
    }
}
