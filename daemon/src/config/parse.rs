//! Parsing the servers file: text and an environment lookup in, a validated [`Config`] out,
//! or an error naming the file, the server and the field and saying what was expected. No I/O.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Map, Value};
use tool_cli_agent::config::AgentConfig;

use super::client_fields::{self, FieldNote};
use super::recording;
use super::traces::TracesConfig;
use super::variables::substitute;
use super::{
    Config, ConfigError, ConfigNote, ConfigSource, DEFAULT_CALL_TIMEOUT, DEFAULT_MAX_QUEUED,
    ServerConfig, TransportConfig,
};
use crate::policy::ServerPolicy;

/// The JSON shape of one entry of `mcpServers`. Unknown fields are refused so that a typo
/// (`"arg"` for `"args"`) is reported instead of silently ignored.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawServer {
    #[serde(rename = "type", alias = "transport")]
    kind: Option<String>,
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    cwd: Option<PathBuf>,
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    ca_file: Option<String>,
    oauth: Option<Value>,
    description: Option<String>,
    #[serde(default)]
    tags: Vec<String>,
    enabled: Option<bool>,
    /// Alias understood for configs written for other clients.
    #[serde(alias = "disabled")]
    disabled_flag: Option<bool>,
    timeout_ms: Option<u64>,
    max_concurrent: Option<usize>,
    max_queued: Option<usize>,
    cache_ttl_ms: Option<u64>,
    priority: Option<i64>,
    /// Record the server's MCP exchange to this NDJSON file (`recording.rs`).
    record: Option<String>,
    /// Serve this recording as the server, instead of a command or a URL.
    replay: Option<String>,
    /// Which MCP lifecycle to open with it (`upstream_protocol.rs`).
    protocol: Option<String>,
    // Read by `overrides::parse`.
    #[serde(rename = "tools")]
    _tools: Option<Value>,
    // Read by `ServerPolicy::from_json`; named here so they are not refused as unknown.
    #[serde(rename = "allowTools")]
    _allow_tools: Option<Value>,
    #[serde(rename = "denyTools")]
    _deny_tools: Option<Value>,
    #[serde(rename = "destructiveTools")]
    _destructive_tools: Option<Value>,
    #[serde(rename = "confirmDestructive")]
    _confirm_destructive: Option<Value>,
}

/// Parses config text. `env` looks up variables for `${VAR}` substitution.
pub fn parse(
    text: &str,
    source: ConfigSource,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Config, ConfigError> {
    let source_name = source.to_string();
    let error = |server: Option<&str>, field: Option<&str>, message: String| ConfigError {
        source: source_name.clone(),
        server: server.map(str::to_owned),
        field: field.map(str::to_owned),
        message,
    };

    let root: Value = serde_json::from_str(text).map_err(|err| {
        error(
            None,
            None,
            format!(
                "invalid JSON at line {} column {}: {err}",
                err.line(),
                err.column()
            ),
        )
    })?;
    let Some(root) = root.as_object() else {
        return Err(error(
            None,
            None,
            "expected a JSON object with an \"mcpServers\" object".to_owned(),
        ));
    };
    let servers = match root.get("mcpServers").or_else(|| root.get("servers")) {
        Some(Value::Object(servers)) => servers,
        Some(_) => {
            return Err(error(
                None,
                Some("mcpServers"),
                "expected an object mapping server names to their settings".to_owned(),
            ));
        }
        None => {
            return Err(error(
                None,
                Some("mcpServers"),
                "missing; expected {\"mcpServers\": {\"name\": {\"command\": ...}}}".to_owned(),
            ));
        }
    };

    let mut parsed = Vec::with_capacity(servers.len());
    let mut notes = Vec::new();
    for (name, raw) in servers {
        let config_dir = match &source {
            ConfigSource::File(path) => path.parent(),
            ConfigSource::BundledDefault => None,
        };
        let (mut server, field_notes) = parse_server(name, raw, env, config_dir)
            .map_err(|(field, message)| error(Some(name), field.as_deref(), message))?;
        if let TransportConfig::Http { remote, .. } = &mut server.transport {
            let config_dir = match &source {
                ConfigSource::File(path) => path.parent(),
                ConfigSource::BundledDefault => None,
            };
            crate::config::remote::resolve_paths(remote, config_dir);
        }
        parsed.push(server);
        notes.extend(field_notes.into_iter().map(|note| ConfigNote {
            source: source_name.clone(),
            server: name.clone(),
            field: note.field,
            ignored: note.ignored,
            message: note.message,
        }));
    }
    let agent = match root.get("agent") {
        None | Some(Value::Null) => AgentConfig::default(),
        Some(value) => {
            let agent = AgentConfig::deserialize(value).map_err(|err| {
                let message = err.to_string();
                let field = message
                    .split('`')
                    .nth(1)
                    .map(|name| format!("agent.{name}"))
                    .unwrap_or_else(|| "agent".to_owned());
                error(None, Some(&field), message)
            })?;
            agent
                .validate()
                .map_err(|err| error(None, Some("agent"), err.to_string()))?;
            agent
        }
    };
    let traces = match root.get("traces") {
        None => TracesConfig::default(),
        Some(section) => {
            let config_dir = match &source {
                ConfigSource::File(path) => path.parent(),
                ConfigSource::BundledDefault => None,
            };
            crate::config::traces::parse(section, config_dir, env)
                .map_err(|(field, message)| error(None, Some(&field), message))?
        }
    };
    let search = match root.get("search") {
        None => Default::default(),
        Some(section) => {
            let config_dir = match &source {
                ConfigSource::File(path) => path.parent(),
                ConfigSource::BundledDefault => None,
            };
            crate::config::search::parse(section, config_dir, env)
                .map_err(|(field, message)| error(None, Some(&field), message))?
        }
    };
    let sessions = match root.get("sessions") {
        None | Some(Value::Null) => Default::default(),
        Some(section) => crate::config::sessions::parse(section)
            .map_err(|(field, message)| error(None, Some(&field), message))?,
    };
    let gateway_flags = parse_flags(root.get("flags"))
        .map_err(|(field, message)| error(None, Some(&field), message))?;
    let telemetry = match root.get("telemetry") {
        None | Some(Value::Null) => None,
        Some(section) => Some(
            crate::config::telemetry::parse(section, env)
                .map_err(|(field, message)| error(None, Some(&field), message))?,
        ),
    };
    Ok(Config {
        source,
        servers: parsed,
        agent,
        traces,
        search,
        gateway_flags,
        sessions,
        telemetry,
        notes,
    })
}

/// The `flags` section: `{"gateway": "hold" | "warn"}` (`catalog/flags.rs`).
fn parse_flags(
    value: Option<&Value>,
) -> Result<crate::catalog::flags::GatewayFlagPolicy, (String, String)> {
    use crate::catalog::flags::GatewayFlagPolicy;
    let Some(value) = value.filter(|value| !value.is_null()) else {
        return Ok(GatewayFlagPolicy::default());
    };
    let expected = "expected {\"gateway\": \"hold\"} (flagged tools left out of the gateway, the \
                    default) or {\"gateway\": \"warn\"} (listed, flags in listTools only)";
    let Some(section) = value.as_object() else {
        return Err(("flags".to_owned(), expected.to_owned()));
    };
    if let Some(unknown) = section.keys().find(|key| *key != "gateway") {
        return Err((
            format!("flags.{unknown}"),
            format!("unknown member; {expected}"),
        ));
    }
    match section.get("gateway") {
        None | Some(Value::Null) => Ok(GatewayFlagPolicy::default()),
        Some(word) => word
            .as_str()
            .and_then(GatewayFlagPolicy::from_word)
            .ok_or_else(|| {
                (
                    "flags.gateway".to_owned(),
                    format!("{expected}, not {word}"),
                )
            }),
    }
}

type FieldError = (Option<String>, String);

/// The first member of a server entry that cannot be read on its own: the field a type error
/// of the whole entry is about.
fn field_at_fault(entry: &Map<String, Value>) -> Option<String> {
    entry.iter().find_map(|(key, value)| {
        let alone = Map::from_iter([(key.clone(), value.clone())]);
        RawServer::deserialize(Value::Object(alone))
            .is_err()
            .then(|| key.clone())
    })
}

/// serde's message in the config's words: `expected u64` → `expected a whole number ≥ 0`,
/// `a sequence` → `an array`, `a map` → `an object`.
fn readable_serde_message(message: &str) -> String {
    message
        .replace("expected u64", "expected a whole number ≥ 0")
        .replace("expected usize", "expected a whole number ≥ 0")
        .replace("expected i64", "expected a whole number")
        .replace("a sequence", "an array")
        .replace("a map", "an object")
}

fn parse_server(
    name: &str,
    raw: &Value,
    env: &dyn Fn(&str) -> Option<String>,
    config_dir: Option<&std::path::Path>,
) -> Result<(ServerConfig, Vec<FieldNote>), FieldError> {
    if let Err(message) = check_server_name(name) {
        return Err((None, message));
    }
    let Some(entry) = raw.as_object() else {
        return Err((
            None,
            "expected an object with \"command\" or \"url\"".to_owned(),
        ));
    };
    // Other clients' fields become ours (or are dropped with a note) before anything is read.
    let (mut entry, notes) = client_fields::normalize(entry);
    let server_requests =
        crate::config::server_requests::ServerRequestSettings::take_from(&mut entry)
            .map_err(|(field, message)| (Some(field), message))?;
    let policy = ServerPolicy::from_json(&entry).map_err(|err| (None, err.to_string()))?;
    let tool_overrides = match entry.get("tools") {
        None | Some(Value::Null) => BTreeMap::new(),
        Some(tools) => crate::catalog::overrides::parse(tools)
            .map_err(|(path, message)| (Some(path), message))?,
    };
    let raw: RawServer = RawServer::deserialize(Value::Object(entry.clone())).map_err(|err| {
        let message = readable_serde_message(&err.to_string());
        // serde names an unknown field in its message; a value of the wrong type it does not
        // name (deserializing from a `Value` has no path), so it is found by reading each
        // member alone.
        let field = message
            .split('`')
            .nth(1)
            .map(str::to_owned)
            .filter(|_| message.starts_with("unknown field"))
            .or_else(|| field_at_fault(&entry));
        let hint = if message.starts_with("unknown field") {
            "; expected one of type, command, args, env, cwd, url, headers, caFile, oauth, \
             description, tags, \
             enabled, timeoutMs, maxConcurrent, maxQueued, cacheTtlMs, priority, tools, \
             allowTools, denyTools, destructiveTools, confirmDestructive, roots, elicitation, \
             elicitationTimeoutMs, allowSampling, record, replay, protocol"
        } else {
            ""
        };
        (field, format!("{message}{hint}"))
    })?;

    let kind = raw.kind.as_deref().map(str::to_ascii_lowercase);
    // Every value looked up for a `${VAR}` is remembered as a secret (a RefCell: the lookup is
    // a `Fn` shared by the transport parsers).
    let looked_up = std::cell::RefCell::new(Vec::new());
    let env = &|name: &str| {
        let value = env(name);
        if let Some(value) = &value {
            looked_up.borrow_mut().push(value.clone());
        }
        value
    };
    let transport = match (&raw.replay, &raw.command, &raw.url, &raw.record) {
        (Some(file), None, None, None) => Some(recording::replay_transport(name, file, config_dir)),
        (Some(_), _, _, _) => {
            return Err((
                Some("replay".to_owned()),
                "a replayed server is served from its recording alone; expected \"replay\" without \"command\", \"url\" or \"record\""
                    .to_owned(),
            ));
        }
        _ => None,
    };
    let transport = match (transport, kind.as_deref()) {
        (Some(transport), _) => transport,
        (None, kind) => parse_transport(&raw, kind, env)?,
    };
    let transport = match &raw.record {
        Some(file) => recording::recorded_transport(name, file, config_dir, transport),
        None => transport,
    };

    let call_timeout = match raw.timeout_ms {
        Some(0) => {
            return Err((
                Some("timeoutMs".to_owned()),
                "must be a positive number of milliseconds".to_owned(),
            ));
        }
        Some(ms) => Duration::from_millis(ms),
        None => DEFAULT_CALL_TIMEOUT,
    };
    let max_concurrent = match raw.max_concurrent {
        Some(0) => {
            return Err((
                Some("maxConcurrent".to_owned()),
                "must be at least 1".to_owned(),
            ));
        }
        Some(n) => n,
        None => transport.default_max_concurrent(),
    };
    let protocol = match raw.protocol.as_deref() {
        None => super::UpstreamProtocol::default(),
        Some(text) => super::UpstreamProtocol::parse(text)
            .map_err(|message| (Some("protocol".to_owned()), message))?,
    };
    let enabled = raw.enabled.unwrap_or(true) && !raw.disabled_flag.unwrap_or(false);
    let server = ServerConfig {
        name: name.to_owned(),
        transport,
        description: raw.description,
        tags: raw.tags,
        enabled,
        call_timeout,
        max_concurrent,
        max_queued: raw.max_queued.unwrap_or(DEFAULT_MAX_QUEUED),
        cache_ttl: raw
            .cache_ttl_ms
            .filter(|&ms| ms > 0)
            .map(Duration::from_millis),
        policy,
        priority: raw.priority.unwrap_or(0),
        tool_overrides: Arc::new(tool_overrides),
        substituted: looked_up.into_inner(),
        server_requests,
        protocol,
    };
    Ok((server, notes))
}

/// Server names become CLI words and JSON keys; keep them to a safe, typeable alphabet.
fn check_server_name(name: &str) -> Result<(), String> {
    let valid = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && !name.starts_with('-');
    if valid {
        Ok(())
    } else {
        Err(format!(
            "invalid server name \"{name}\"; expected 1-64 characters of letters, digits, \
             '-', '_' or '.', not starting with '-'"
        ))
    }
}

/// The transport an entry's `type`, `command` and `url` describe.
fn parse_transport(
    raw: &RawServer,
    kind: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<TransportConfig, FieldError> {
    Ok(match kind {
        Some("stdio") => stdio_transport(raw, env)?,
        Some("http" | "streamable-http" | "streamablehttp" | "streamable_http") => {
            http_transport(raw, env)?
        }
        Some("sse") => {
            return Err((
                Some("type".to_owned()),
                "the legacy SSE transport is not supported; expected \"stdio\" or \"http\" \
             (Streamable HTTP)"
                    .to_owned(),
            ));
        }
        Some(other) => {
            return Err((
                Some("type".to_owned()),
                format!("unknown transport \"{other}\"; expected \"stdio\" or \"http\""),
            ));
        }
        None => match (&raw.command, &raw.url) {
            (Some(_), None) => stdio_transport(raw, env)?,
            (None, Some(_)) => http_transport(raw, env)?,
            (Some(_), Some(_)) => {
                return Err((
                    None,
                    "has both \"command\" and \"url\"; expected one: \"command\" for a stdio \
                 server or \"url\" for a Streamable HTTP server"
                        .to_owned(),
                ));
            }
            (None, None) => {
                return Err((
                    None,
                    "has neither \"command\" nor \"url\"; expected \"command\" (stdio) or \
                 \"url\" (Streamable HTTP)"
                        .to_owned(),
                ));
            }
        },
    })
}

fn stdio_transport(
    raw: &RawServer,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<TransportConfig, FieldError> {
    let command = match raw.command.as_deref().map(str::trim) {
        Some(command) if !command.is_empty() => {
            substitute(command, env).map_err(|m| (Some("command".to_owned()), m.to_string()))?
        }
        Some(_) => {
            return Err((
                Some("command".to_owned()),
                "is empty; expected the program to run".to_owned(),
            ));
        }
        None => {
            return Err((
                Some("command".to_owned()),
                "missing; a stdio server needs the program to run".to_owned(),
            ));
        }
    };
    if raw.url.is_some() {
        return Err((
            Some("url".to_owned()),
            "a stdio server takes \"command\", not \"url\"".to_owned(),
        ));
    }
    if raw.ca_file.is_some() || raw.oauth.is_some() {
        let field = if raw.ca_file.is_some() {
            "caFile"
        } else {
            "oauth"
        };
        return Err((
            Some(field.to_owned()),
            "applies to remote (https://) servers only, not to a stdio server".to_owned(),
        ));
    }
    let mut child_env = BTreeMap::new();
    for (key, value) in &raw.env {
        if key.starts_with(tool_cli_protocol::env::PREFIX) {
            return Err((
                Some(format!("env.{key}")),
                "TOOL_CLI_* variables are never passed to MCP servers (they would leak the \
                 daemon's token); remove it"
                    .to_owned(),
            ));
        }
        let value =
            substitute(value, env).map_err(|m| (Some(format!("env.{key}")), m.to_string()))?;
        child_env.insert(key.clone(), value);
    }
    // As Claude Code and Cursor do: `${VAR}` in the command line too ("${HOME}/notes").
    let args = raw
        .args
        .iter()
        .enumerate()
        .map(|(index, arg)| {
            substitute(arg, env).map_err(|m| (Some(format!("args[{index}]")), m.to_string()))
        })
        .collect::<Result<Vec<String>, FieldError>>()?;
    Ok(TransportConfig::Stdio {
        command,
        args,
        env: child_env,
        cwd: raw.cwd.clone(),
    })
}

fn http_transport(
    raw: &RawServer,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<TransportConfig, FieldError> {
    let Some(url) = raw.url.as_deref() else {
        return Err((
            Some("url".to_owned()),
            "missing; a Streamable HTTP server needs its endpoint URL".to_owned(),
        ));
    };
    if raw.command.is_some() {
        return Err((
            Some("command".to_owned()),
            "an http server takes \"url\", not \"command\"".to_owned(),
        ));
    }
    let expanded = substitute(url, env).map_err(|m| (Some("url".to_owned()), m.to_string()))?;
    if !(expanded.starts_with("http://") || expanded.starts_with("https://")) {
        // The URL as written, not as expanded: a `${VAR}` in it may be a secret.
        return Err((
            Some("url".to_owned()),
            format!("\"{url}\" is not an http:// or https:// URL"),
        ));
    }
    let url = expanded;
    let mut headers = BTreeMap::new();
    for (key, value) in &raw.headers {
        let value =
            substitute(value, env).map_err(|m| (Some(format!("headers.{key}")), m.to_string()))?;
        headers.insert(key.clone(), value);
    }
    let remote =
        crate::config::remote::parse(&url, raw.ca_file.as_deref(), raw.oauth.as_ref(), env)?;
    Ok(TransportConfig::Http {
        url,
        headers,
        remote,
    })
}
