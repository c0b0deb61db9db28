//! Each client's file format, read into our `mcpServers` entries. Pure: text in, [`Found`] out.
//!
//! Every entry goes through `client_fields::normalize` (the fields other clients write into
//! `mcpServers` entries), then through our own config parser, so an entry we import is one the
//! daemon will start; an entry the parser refuses is reported as skipped with the parser's
//! reason. A field we do not know is left out of the entry and reported, never dropped silently.

use std::path::Path;

use serde_json::{Map, Value};

use super::{ClientKind, Found, FoundServer, variables};
use crate::config::client_fields::normalize;
use crate::config::{ConfigSource, parse as parse_config};

/// Fields of our `mcpServers` entries.
const OUR_FIELDS: &[&str] = &[
    "type",
    "transport",
    "command",
    "args",
    "env",
    "cwd",
    "url",
    "headers",
    "description",
    "tags",
    "enabled",
    "disabled",
    "timeoutMs",
    "maxConcurrent",
    "maxQueued",
    "cacheTtlMs",
    "priority",
    "tools",
    "allowTools",
    "denyTools",
    "destructiveTools",
    "confirmDestructive",
];

/// One entry of `kind`'s, as ours: translated, unknown fields reported, checked by our parser.
pub(super) fn entry(
    kind: ClientKind,
    name: &str,
    raw: &Value,
    extra_notes: Vec<String>,
) -> Result<FoundServer, String> {
    let Some(raw) = raw.as_object() else {
        return Err(format!(
            "server \"{name}\": expected an object with \"command\" or \"url\", got {}",
            tool_cli_protocol::json::kind(raw)
        ));
    };
    let (mut entry, field_notes) = normalize(raw);
    let mut notes = extra_notes;
    notes.extend(
        field_notes
            .into_iter()
            .map(|note| format!("field \"{}\" {}", note.field, note.message)),
    );
    let unknown: Vec<String> = entry
        .keys()
        .filter(|field| !OUR_FIELDS.contains(&field.as_str()))
        .cloned()
        .collect();
    for field in unknown {
        let value = entry.remove(&field).unwrap_or(Value::Null);
        notes.push(format!(
            "field \"{field}\" ({}) is not one tool-cli knows ({kind}'s own setting); left out",
            crate::redact::clean_text(&value.to_string(), 60)
        ));
    }
    if let Some(kind_value) = entry.get("type").and_then(Value::as_str)
        && kind_value.eq_ignore_ascii_case("sse")
    {
        return Err(format!(
            "server \"{name}\" uses the legacy SSE transport, which tool-cli does not speak; if \
             the server also serves Streamable HTTP, add it with its /mcp URL"
        ));
    }
    check(name, &entry)?;
    Ok(FoundServer {
        name: name.to_owned(),
        entry,
        notes,
    })
}

/// Our parser's verdict on one entry; `${VAR}`s count as set (they are read when the daemon
/// starts).
fn check(name: &str, entry: &Map<String, Value>) -> Result<(), String> {
    let mut servers = Map::new();
    servers.insert(name.to_owned(), Value::Object(entry.clone()));
    let text = serde_json::json!({ "mcpServers": servers }).to_string();
    parse_config(&text, ConfigSource::BundledDefault, &|_| {
        Some("placeholder".to_owned())
    })
    .map(|_| ())
    .map_err(|error| {
        let mut message = error.message.clone();
        if let Some(field) = &error.field {
            message = format!("field \"{field}\" {message}");
        }
        format!("server \"{name}\" cannot be imported: {message}")
    })
}

/// Adds each server of `servers` to `found` (or to its skipped list).
pub(super) fn collect(
    found: &mut Found,
    kind: ClientKind,
    servers: &Map<String, Value>,
    notes_for: impl Fn(&str, &Value) -> Vec<String>,
) {
    for (name, raw) in servers {
        match entry(kind, name, raw, notes_for(name, raw)) {
            Ok(server) => {
                found.servers.retain(|earlier| {
                    let shadowed = earlier.name == server.name;
                    if shadowed {
                        found.notes.push(format!(
                            "server \"{name}\" is defined twice; the more specific one is imported"
                        ));
                    }
                    !shadowed
                });
                found.servers.push(server);
            }
            Err(reason) => found.skipped.push(reason),
        }
    }
}

/// [`collect`] after translating the variables `kind` expands (see [`variables`]); what a
/// translation changed in a server's entry is said in that server's notes.
fn collect_translated(
    found: &mut Found,
    kind: ClientKind,
    servers: &Map<String, Value>,
    project: Option<&Path>,
) {
    let mut translated = Map::new();
    let mut notes_of: Vec<(String, Vec<String>)> = Vec::new();
    for (name, raw) in servers {
        let mut notes = Vec::new();
        translated.insert(
            name.clone(),
            variables::translate(kind, raw, project, &mut notes),
        );
        notes_of.push((name.clone(), notes));
    }
    collect(found, kind, &translated, |name, _| {
        notes_of
            .iter()
            .find(|(server, _)| server == name)
            .map(|(_, notes)| notes.clone())
            .unwrap_or_default()
    });
}

/// Why another client's config file cannot be read as that client's format; each message says
/// what was expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub(super) enum FormatError {
    /// JSON, but not an object.
    #[error("expected a JSON object, got {0}")]
    NotAnObject(&'static str),
    /// Not JSON.
    #[error("invalid JSON at line {line} column {column}: {message}")]
    InvalidJson {
        line: usize,
        column: usize,
        message: String,
    },
    /// The servers member is not an object.
    #[error("\"{key}\" is {kind}; expected an object mapping server names to their settings")]
    ServersNotAnObject { key: String, kind: &'static str },
    /// No `mcpServers` (Claude Desktop, Cursor, Windsurf).
    #[error(
        "no \"mcpServers\" object; expected {{\"mcpServers\": {{\"name\": {{\"command\": ...}}}}}}"
    )]
    NoMcpServers,
    /// Claude Code's `projects` is not an object.
    #[error("\"projects\" is {0}; expected an object keyed by project directory")]
    ProjectsNotAnObject(&'static str),
    /// Neither of Claude Code's members.
    #[error(
        "neither \"mcpServers\" nor \"projects\"; expected Claude Code's .mcp.json or \
         ~/.claude.json"
    )]
    NotClaudeCode,
    /// No `servers` (VS Code).
    #[error(
        "no \"servers\" object; expected {{\"servers\": {{\"name\": {{\"type\": \"stdio\", \
         \"command\": ...}}}}}}"
    )]
    NoServers,
    /// A VS Code input without its id.
    #[error("an \"inputs\" item has no string \"id\"")]
    InputWithoutId,
    /// VS Code's `inputs` is not an array.
    #[error("\"inputs\" is {0}; expected an array")]
    InputsNotAnArray(&'static str),
    /// Not TOML (Codex); the parser's words on one line.
    #[error("invalid TOML: {0}")]
    InvalidToml(String),
    /// No `mcp` (OpenCode).
    #[error(
        "no \"mcp\" object; expected {{\"mcp\": {{\"name\": {{\"type\": \"local\", \
         \"command\": [\"npx\", \"-y\", \"pkg\"]}}}}}}"
    )]
    NoMcp,
    /// No `[mcp_servers.NAME]` (Codex).
    #[error("no [mcp_servers.NAME] table; expected e.g. [mcp_servers.fs] with command = \"npx\"")]
    NoMcpServersTable,
    /// `mcp_servers` is not a table (Codex).
    #[error("\"mcp_servers\" is not a table; expected [mcp_servers.NAME]")]
    McpServersNotATable,
}

pub(super) fn object_root(text: &str) -> Result<Map<String, Value>, FormatError> {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(root)) => Ok(root),
        Ok(other) => Err(FormatError::NotAnObject(tool_cli_protocol::json::kind(
            &other,
        ))),
        Err(error) => Err(FormatError::InvalidJson {
            line: error.line(),
            column: error.column(),
            message: error.to_string(),
        }),
    }
}

fn servers_member<'a>(
    root: &'a Map<String, Value>,
    key: &str,
) -> Result<Option<&'a Map<String, Value>>, FormatError> {
    match root.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(servers)) => Ok(Some(servers)),
        Some(other) => Err(FormatError::ServersNotAnObject {
            key: key.to_owned(),
            kind: tool_cli_protocol::json::kind(other),
        }),
    }
}

/// Claude Desktop, Cursor and Windsurf: `{"mcpServers": {NAME: {...}}}`; Cursor's and
/// Windsurf's `${env:NAME}` (and Cursor's `${workspaceFolder}`, `${userHome}`) become ours.
pub(super) fn mcp_servers(
    text: &str,
    kind: ClientKind,
    project: Option<&Path>,
) -> Result<Found, FormatError> {
    let root = object_root(text)?;
    let servers = servers_member(&root, "mcpServers")?.ok_or(FormatError::NoMcpServers)?;
    let mut found = Found::default();
    collect_translated(&mut found, kind, servers, project);
    Ok(found)
}

/// Claude Code: `.mcp.json` (`mcpServers`), or `~/.claude.json` (`mcpServers` for the user,
/// and `projects.PATH.mcpServers` per project: `project`'s are imported, and win; with no
/// project, none are).
pub(super) fn claude_code(text: &str, project: Option<&Path>) -> Result<Found, FormatError> {
    let root = object_root(text)?;
    let user = servers_member(&root, "mcpServers")?;
    let projects = match root.get("projects") {
        None | Some(Value::Null) => None,
        Some(Value::Object(projects)) => Some(projects),
        Some(other) => {
            return Err(FormatError::ProjectsNotAnObject(
                tool_cli_protocol::json::kind(other),
            ));
        }
    };
    if user.is_none() && projects.is_none() {
        return Err(FormatError::NotClaudeCode);
    }
    let mut found = Found::default();
    if let Some(user) = user {
        collect(&mut found, ClientKind::ClaudeCode, user, |_, _| Vec::new());
    }
    let here = project.map(|project| project.to_string_lossy());
    for (path, settings) in projects.into_iter().flatten() {
        let servers = settings.get("mcpServers").and_then(Value::as_object);
        let Some(servers) = servers.filter(|servers| !servers.is_empty()) else {
            continue;
        };
        if here
            .as_ref()
            .is_some_and(|here| path.trim_end_matches('/') == here.trim_end_matches('/'))
        {
            collect(&mut found, ClientKind::ClaudeCode, servers, |_, _| {
                vec![format!("from the project {path}")]
            });
        } else {
            found.notes.push(format!(
                "{} servers of the project {path} ({}) were not imported; run the import from \
                 that directory (or name it as a live import's project) to import them",
                servers.len(),
                servers.keys().cloned().collect::<Vec<_>>().join(", ")
            ));
        }
    }
    Ok(found)
}

/// VS Code: `.vscode/mcp.json` with `servers` and `inputs`; comments and trailing commas are
/// allowed (JSONC). `${input:ID}` becomes `${ID}` (read from the daemon's environment),
/// `${workspaceFolder}` the project directory, `${env:NAME}` `${NAME}`.
pub(super) fn vscode(text: &str, project: &Path) -> Result<Found, FormatError> {
    let root = object_root(&strip_jsonc(text))?;
    let servers = servers_member(&root, "servers")?.ok_or(FormatError::NoServers)?;
    let mut found = Found::default();
    match root.get("inputs") {
        None | Some(Value::Null) => {}
        Some(Value::Array(items)) => {
            for item in items {
                let Some(id) = item.get("id").and_then(Value::as_str) else {
                    return Err(FormatError::InputWithoutId);
                };
                let described = item
                    .get("description")
                    .and_then(Value::as_str)
                    .map(|text| format!(" ({})", crate::redact::clean_text(text, 80)))
                    .unwrap_or_default();
                found.notes.push(format!(
                    "input \"{id}\"{described} is asked for by VS Code; tool-cli reads ${{{}}} \
                     from the daemon's environment instead: set it before starting the daemon",
                    variables::input_variable(id)
                ));
            }
        }
        Some(other) => {
            return Err(FormatError::InputsNotAnArray(
                tool_cli_protocol::json::kind(other),
            ));
        }
    }
    collect_translated(&mut found, ClientKind::VsCode, servers, Some(project));
    Ok(found)
}

/// JSON with comments (`//`, `/* */`) and trailing commas, as VS Code writes it, made JSON.
pub(super) fn strip_jsonc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let mut in_string = false;
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            match c {
                '\\' => {
                    if let Some(next) = chars.next() {
                        out.push(next);
                    }
                }
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match (c, chars.peek()) {
            ('"', _) => {
                in_string = true;
                out.push(c);
            }
            ('/', Some('/')) => {
                for next in chars.by_ref() {
                    if next == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            ('/', Some('*')) => {
                chars.next();
                let mut previous = ' ';
                for next in chars.by_ref() {
                    if previous == '*' && next == '/' {
                        break;
                    }
                    if next == '\n' {
                        out.push('\n');
                    }
                    previous = next;
                }
            }
            _ => out.push(c),
        }
    }
    // Trailing commas: a comma followed (after whitespace) by `]` or `}` goes.
    let mut cleaned = String::with_capacity(out.len());
    let mut in_string = false;
    let mut escaped = false;
    let bytes: Vec<char> = out.chars().collect();
    for (index, &c) in bytes.iter().enumerate() {
        if in_string {
            cleaned.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
            continue;
        }
        if c == '"' {
            in_string = true;
        }
        if c == ',' {
            let next = bytes[index + 1..].iter().find(|c| !c.is_whitespace());
            if matches!(next, Some(']' | '}')) {
                continue;
            }
        }
        cleaned.push(c);
    }
    cleaned
}

/// Codex: `[mcp_servers.NAME]` tables in `~/.codex/config.toml`.
pub(super) fn codex(text: &str) -> Result<Found, FormatError> {
    let root: toml::Table = toml::from_str(text)
        .map_err(|error| FormatError::InvalidToml(error.to_string().trim().replace('\n', " ")))?;
    let servers = match root.get("mcp_servers") {
        None => {
            return Err(FormatError::NoMcpServersTable);
        }
        Some(toml::Value::Table(servers)) => servers,
        Some(_) => {
            return Err(FormatError::McpServersNotATable);
        }
    };
    let mut found = Found::default();
    let mut translated = Map::new();
    let mut all_notes: Vec<(String, Vec<String>)> = Vec::new();
    for (name, raw) in servers {
        let Some(table) = raw.as_table() else {
            found.skipped.push(format!(
                "server \"{name}\": expected a [mcp_servers.{name}] table"
            ));
            continue;
        };
        let (entry, notes) = codex_entry(table);
        translated.insert(name.clone(), Value::Object(entry));
        all_notes.push((name.clone(), notes));
    }
    collect(&mut found, ClientKind::Codex, &translated, |name, _| {
        all_notes
            .iter()
            .find(|(server, _)| server == name)
            .map(|(_, notes)| notes.clone())
            .unwrap_or_default()
    });
    Ok(found)
}

/// One Codex server table as our entry, with what was translated.
fn codex_entry(table: &toml::Table) -> (Map<String, Value>, Vec<String>) {
    let mut entry = Map::new();
    let mut notes = Vec::new();
    let mut headers = Map::new();
    let json = |value: &toml::Value| serde_json::to_value(value).unwrap_or(Value::Null);
    for (field, value) in table {
        match field.as_str() {
            "command" | "args" | "env" | "cwd" | "url" => {
                entry.insert(field.clone(), json(value));
            }
            "enabled" => {
                if value.as_bool() == Some(false) {
                    entry.insert("disabled".to_owned(), Value::Bool(true));
                    notes.push("\"enabled = false\" read as \"disabled\": true".to_owned());
                }
            }
            "tool_timeout_sec" => match value.as_float().or(value.as_integer().map(|v| v as f64)) {
                Some(seconds) if seconds > 0.0 => {
                    entry.insert(
                        "timeoutMs".to_owned(),
                        Value::from((seconds * 1000.0) as u64),
                    );
                    notes.push(format!(
                        "\"tool_timeout_sec\" read as \"timeoutMs\": {}",
                        (seconds * 1000.0) as u64
                    ));
                }
                _ => notes.push(format!(
                    "\"tool_timeout_sec\" = {} is not a positive number of seconds; left out",
                    json(value)
                )),
            },
            "enabled_tools" => {
                entry.insert("allowTools".to_owned(), json(value));
                notes.push("\"enabled_tools\" read as \"allowTools\"".to_owned());
            }
            "disabled_tools" => {
                entry.insert("denyTools".to_owned(), json(value));
                notes.push("\"disabled_tools\" read as \"denyTools\"".to_owned());
            }
            "bearer_token_env_var" => match value.as_str() {
                Some(variable) => {
                    headers.insert(
                        "Authorization".to_owned(),
                        Value::from(format!("Bearer ${{{variable}}}")),
                    );
                    notes.push(format!(
                        "\"bearer_token_env_var\" read as the header \"Authorization\": \"Bearer ${{{variable}}}\""
                    ));
                }
                None => notes.push("\"bearer_token_env_var\" is not a string; left out".to_owned()),
            },
            "http_headers" => {
                if let Some(table) = value.as_table() {
                    for (header, value) in table {
                        headers.insert(header.clone(), json(value));
                    }
                }
            }
            "env_http_headers" => {
                if let Some(table) = value.as_table() {
                    for (header, variable) in table {
                        if let Some(variable) = variable.as_str() {
                            headers.insert(header.clone(), Value::from(format!("${{{variable}}}")));
                        }
                    }
                    notes.push(
                        "\"env_http_headers\" read as \"headers\" with ${VAR} values".to_owned(),
                    );
                }
            }
            "env_vars" => {
                if let Some(names) = value.as_array() {
                    let env = entry
                        .entry("env")
                        .or_insert_with(|| Value::Object(Map::new()));
                    if let Some(env) = env.as_object_mut() {
                        for name in names.iter().filter_map(toml::Value::as_str) {
                            env.entry(name.to_owned())
                                .or_insert_with(|| Value::from(format!("${{{name}}}")));
                        }
                    }
                    notes.push(
                        "\"env_vars\" read as \"env\" entries passing the daemon's variables on"
                            .to_owned(),
                    );
                }
            }
            "startup_timeout_sec" | "startup_timeout_ms" => notes.push(format!(
                "\"{field}\" left out: tool-cli waits for a server's start as long as its call \
                 timeout, and restarts it if it fails"
            )),
            other => {
                // Kept for `entry` to report as unknown.
                entry.insert(other.to_owned(), json(value));
            }
        }
    }
    if !headers.is_empty() {
        entry.insert("headers".to_owned(), Value::Object(headers));
    }
    (entry, notes)
}

#[cfg(test)]
mod tests;
