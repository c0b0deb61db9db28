//! The variables other clients expand in their server entries, made ours. Pure.
//!
//! Our config knows one form, `${NAME}`, read from the daemon's environment when a server starts.
//! VS Code, Cursor and Windsurf write `${env:NAME}` for the same thing, VS Code asks the user for
//! `${input:ID}`, and VS Code and Cursor expand `${workspaceFolder}` and `${userHome}`. An entry
//! imported with those left as they are would be refused by our parser ("not a valid variable
//! reference") or, worse, started with the literal text. Each is translated, and every
//! translation a user should know of is said in a note.

use std::path::Path;

use serde_json::Value;

use super::ClientKind;

/// The forms `kind` expands, translated into ours throughout `value` (strings at any depth; keys
/// are left alone). Clients that expand nothing (Claude Desktop, Codex) get `value` unchanged.
pub(super) fn translate(
    kind: ClientKind,
    value: &Value,
    project: Option<&Path>,
    notes: &mut Vec<String>,
) -> Value {
    match value {
        Value::String(text) => Value::String(translate_text(kind, text, project, notes)),
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|item| translate(kind, item, project, notes))
                .collect(),
        ),
        Value::Object(members) => Value::Object(
            members
                .iter()
                .map(|(key, item)| (key.clone(), translate(kind, item, project, notes)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The environment variable an `${input:ID}` becomes: upper case, non-alphanumerics as `_`.
pub(super) fn input_variable(id: &str) -> String {
    id.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect()
}

fn translate_text(
    kind: ClientKind,
    text: &str,
    project: Option<&Path>,
    notes: &mut Vec<String>,
) -> String {
    if !text.contains("${") {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            // Unterminated: kept, so our parser names it.
            out.push_str(&rest[start..]);
            return out;
        };
        let variable = &after[..end];
        match replacement(kind, variable, project, notes) {
            Some(replaced) => out.push_str(&replaced),
            None => {
                out.push_str("${");
                out.push_str(variable);
                out.push('}');
            }
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}

/// What `${variable}` becomes in our config, or `None` to keep it as it is.
fn replacement(
    kind: ClientKind,
    variable: &str,
    project: Option<&Path>,
    notes: &mut Vec<String>,
) -> Option<String> {
    let editor = matches!(kind, ClientKind::VsCode | ClientKind::Cursor);
    let expands_env = editor || kind == ClientKind::Windsurf;
    if let Some(name) = variable.strip_prefix("env:").filter(|_| expands_env) {
        return Some(format!("${{{name}}}"));
    }
    if let Some(id) = variable
        .strip_prefix("input:")
        .filter(|_| kind == ClientKind::VsCode)
    {
        let name = input_variable(id);
        notes.push(format!(
            "\"${{input:{id}}}\" became \"${{{name}}}\", read from the daemon's environment"
        ));
        return Some(format!("${{{name}}}"));
    }
    if !editor {
        return None;
    }
    let no_project = |notes: &mut Vec<String>| {
        notes.push(format!(
            "\"${{{variable}}}\" is kept: no project directory was named for it to become \
             (a live import names one as {{\"client\": \"{kind}\", \"project\": \"DIR\"}})"
        ));
        None
    };
    match variable {
        "workspaceFolder" | "workspaceFolderBasename" if project.is_none() => no_project(notes),
        "workspaceFolder" => {
            let project = project?;
            notes.push(format!(
                "\"${{workspaceFolder}}\" became {}",
                project.display()
            ));
            Some(project.display().to_string())
        }
        "workspaceFolderBasename" => {
            let base = project?
                .file_name()
                .map(|name| name.to_string_lossy().into_owned())
                .unwrap_or_default();
            notes.push(format!(
                "\"${{workspaceFolderBasename}}\" became \"{base}\""
            ));
            Some(base)
        }
        // The daemon's own HOME is the user's home: it runs as the user.
        "userHome" => Some("${HOME}".to_owned()),
        "pathSeparator" | "/" => Some(std::path::MAIN_SEPARATOR.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(kind: ClientKind, value: Value) -> (Value, Vec<String>) {
        let mut notes = Vec::new();
        let out = translate(kind, &value, Some(Path::new("/work/proj")), &mut notes);
        (out, notes)
    }

    #[test]
    fn cursor_env_home_and_workspace_become_ours() {
        let (out, notes) = run(
            ClientKind::Cursor,
            json!({
                "headers": {"Authorization": "Bearer ${env:API_TOKEN}"},
                "args": ["${workspaceFolder}/src", "${userHome}${/}.cache", "${workspaceFolderBasename}"],
                "env": {"KEEP": "${OTHER}", "ODD": "${unknownThing}"}
            }),
        );
        assert_eq!(
            out,
            json!({
                "headers": {"Authorization": "Bearer ${API_TOKEN}"},
                "args": ["/work/proj/src", "${HOME}/.cache", "proj"],
                "env": {"KEEP": "${OTHER}", "ODD": "${unknownThing}"}
            })
        );
        assert!(
            notes.iter().any(|note| note.contains("workspaceFolder")),
            "{notes:?}"
        );
    }

    #[test]
    fn vscode_inputs_become_upper_case_environment_variables() {
        let (out, notes) = run(
            ClientKind::VsCode,
            json!({"env": {"KEY": "${input:api-key}", "B": "x${env:B}y"}}),
        );
        assert_eq!(out, json!({"env": {"KEY": "${API_KEY}", "B": "x${B}y"}}));
        assert_eq!(
            notes,
            vec!["\"${input:api-key}\" became \"${API_KEY}\", read from the daemon's environment"]
        );
    }

    #[test]
    fn windsurf_expands_env_only_and_the_others_nothing() {
        let value = json!({"env": {"A": "${env:A}", "W": "${workspaceFolder}"}});
        let (out, _) = run(ClientKind::Windsurf, value.clone());
        assert_eq!(
            out,
            json!({"env": {"A": "${A}", "W": "${workspaceFolder}"}})
        );
        for kind in [
            ClientKind::ClaudeDesktop,
            ClientKind::Codex,
            ClientKind::ClaudeCode,
        ] {
            let (out, notes) = run(kind, value.clone());
            assert_eq!(out, value, "{kind:?}");
            assert!(notes.is_empty());
        }
    }

    #[test]
    fn unterminated_and_plain_dollars_are_kept_for_the_parser_to_name() {
        let (out, _) = run(
            ClientKind::Cursor,
            json!(["${env:A", "$HOME", "cost: $5", "${env:B}${env:C}"]),
        );
        assert_eq!(out, json!(["${env:A", "$HOME", "cost: $5", "${B}${C}"]));
    }
}
