//! The servers config: the `mcpServers` JSON format users already have (Claude Desktop, Cursor).
//!
//! Loading is split in two so the rules can be unit-tested without files or environment:
//! [`parse`] turns text plus an environment lookup into a validated [`Config`], and [`load`] does
//! the I/O (finding and reading the file). Every error names the file, the server and the field,
//! and says what was expected, because a daemon that will not start is only as helpful as its
//! message. Fields other clients write (Cline's `autoApprove`, Windsurf's `serverUrl`, …) are
//! translated or dropped by `client_fields` with a note, not refused.

mod variables;
pub use variables::substitute;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Map, Value};

use tool_cli_agent::config::AgentConfig;

use crate::client_fields::{self, FieldNote};
use crate::overrides::ToolOverride;
use crate::policy::ServerPolicy;
pub use crate::remote_config::{OAuthSettings, RemoteOptions};
use crate::trace::settings::TracesConfig;

/// Default per-call timeout of a server without `timeoutMs`.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// Name of the bundled demo server in the default config.
pub const DEMO_SERVER_NAME: &str = "demo";

/// A validated config: every enabled and disabled server, in file order.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Where it came from, for messages.
    pub source: ConfigSource,
    /// The servers, in the order the file lists them.
    pub servers: Vec<ServerConfig>,
    /// The `agent` key: `runAgent`'s backend, model, prices and limits.
    pub agent: AgentConfig,
    /// The `traces` section (defaults when absent).
    pub traces: TracesConfig,
    /// The `search` section: the sentence-embedding model (`config_search.rs`).
    pub search: crate::config_search::SearchConfig,
    /// Fields written for other MCP clients that were translated or ignored; the daemon logs
    /// them at start-up.
    pub notes: Vec<ConfigNote>,
}

/// A field of another MCP client's config format (Cline's `autoApprove`, Windsurf's
/// `serverUrl`, …), read as one of ours or ignored instead of refusing the whole file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigNote {
    /// The file.
    pub source: String,
    /// The server whose entry has the field.
    pub server: String,
    /// The field as written.
    pub field: String,
    /// `true` when the field was ignored (worth a warning); `false` when it was translated.
    pub ignored: bool,
    /// What it is and what was done with it.
    pub message: String,
}

impl fmt::Display for ConfigNote {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "config {}: server \"{}\": field \"{}\" {}",
            self.source, self.server, self.field, self.message
        )
    }
}

/// Where a config came from.
#[derive(Debug, Clone, PartialEq)]
pub enum ConfigSource {
    /// A file on disk.
    File(PathBuf),
    /// The bundled default (the demo server).
    BundledDefault,
}

impl fmt::Display for ConfigSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigSource::File(path) => write!(f, "{}", path.display()),
            ConfigSource::BundledDefault => f.write_str("<bundled default config>"),
        }
    }
}

/// One configured MCP server.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    /// Its name: the first word of `tool-cli SERVER`.
    pub name: String,
    /// How to reach it.
    pub transport: TransportConfig,
    /// A description shown by `listServers`.
    pub description: Option<String>,
    /// Tags shown by `listServers`.
    pub tags: Vec<String>,
    /// `false` keeps it listed but never started.
    pub enabled: bool,
    /// Default timeout of each call to it.
    pub call_timeout: Duration,
    /// Most calls executing at once.
    pub max_concurrent: usize,
    /// Most calls waiting for a slot; more are refused as busy.
    pub max_queued: usize,
    /// How long a read-only tool's last good result may be served while the server fails;
    /// `None` turns the degradation cache off.
    pub cache_ttl: Option<Duration>,
    /// Which of its tools may be seen and called, and which need confirmation.
    pub policy: ServerPolicy,
    /// Routing preference when several servers offer the same tool: higher wins; ties go to
    /// config order.
    pub priority: i64,
    /// Corrections of its tools' descriptions and arguments, by tool name.
    pub tool_overrides: Arc<BTreeMap<String, ToolOverride>>,
    /// Every value a `${VAR}` put into its `env`, `headers` or `url`: secrets, as far as the
    /// daemon can tell, kept out of logs and errors (`redact.rs`).
    pub substituted: Vec<String>,
    /// What it gets when it asks the daemon something (roots, elicitation, sampling).
    pub server_requests: crate::server_requests::ServerRequestSettings,
}

/// Default `maxConcurrent` of a Streamable HTTP server (and of an in-process provider): each
/// call is a request of its own to a service that may be shared, so the daemon stays polite.
pub const DEFAULT_MAX_CONCURRENT: usize = 16;

/// Default `maxConcurrent` of a stdio server. Its calls share one pipe, and MCP lets a server
/// answer them in any order, so the limit does not protect the child the way a connection limit
/// protects a remote service; at 16, a burst of 100 calls of 10 ms ran in 7 waves and took 7×
/// as long as sending them straight to the server (P3 of issue 13). A server that cannot take
/// this many at once still gets them queued on its own stdin; `maxConcurrent` lowers it.
pub const DEFAULT_MAX_CONCURRENT_STDIO: usize = 128;

impl TransportConfig {
    /// The `maxConcurrent` a server on this transport gets when its config names none.
    pub fn default_max_concurrent(&self) -> usize {
        match self {
            TransportConfig::Stdio { .. } => DEFAULT_MAX_CONCURRENT_STDIO,
            TransportConfig::Http { .. } => DEFAULT_MAX_CONCURRENT,
        }
    }
}

/// Default `maxQueued`: queue rather than refuse. A burst of a hundred calls to one server (an
/// agent fanning out) waits for slots instead of seeing a fifth of its calls refused as busy;
/// each queued call is still bounded by its own timeout, and a waiting call costs only a small
/// future, so a thousand is a sane bound for a local daemon.
pub const DEFAULT_MAX_QUEUED: usize = 1024;

/// How a server is reached.
#[derive(Debug, Clone, PartialEq)]
pub enum TransportConfig {
    /// A child process speaking MCP on stdin/stdout.
    Stdio {
        /// The program to run (looked up on `PATH` when it has no slash).
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables added to the child's small allow-listed environment.
        env: BTreeMap<String, String>,
        /// Its working directory.
        cwd: Option<PathBuf>,
    },
    /// A remote server speaking MCP Streamable HTTP.
    Http {
        /// The endpoint URL.
        url: String,
        /// Extra request headers (for example `Authorization`).
        headers: BTreeMap<String, String>,
        /// `caFile` and `oauth` (`remote_config.rs`).
        remote: RemoteOptions,
    },
}

/// Why a config was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// The file (or `<bundled default config>`).
    pub source: String,
    /// The server, when the error is inside one.
    pub server: Option<String>,
    /// The field, when the error is about one.
    pub field: Option<String>,
    /// What was wrong and what was expected.
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "config {}", self.source)?;
        if let Some(server) = &self.server {
            write!(f, ": server \"{server}\"")?;
        }
        if let Some(field) = &self.field {
            write!(f, ": field \"{field}\"")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for ConfigError {}

/// Finds the config file: `--config`, then `TOOL_CLI_CONFIG`, then
/// `~/.config/tool-cli/servers.json` when it exists. `None` means the bundled default.
pub fn locate(
    cli_path: Option<PathBuf>,
    env_path: Option<PathBuf>,
    home: Option<PathBuf>,
) -> Option<PathBuf> {
    if let Some(path) = cli_path.or(env_path.filter(|p| !p.as_os_str().is_empty())) {
        return Some(path);
    }
    let user_default = home?.join(".config/tool-cli/servers.json");
    user_default.is_file().then_some(user_default)
}

/// Reads and parses the config at `path`, or builds the bundled default when `path` is `None`.
/// `self_exe` is the daemon's own executable, which the default config runs as the demo server.
pub fn load(
    path: Option<&Path>,
    self_exe: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Config, ConfigError> {
    let Some(path) = path else {
        return Ok(bundled_default(self_exe));
    };
    let source = ConfigSource::File(path.to_path_buf());
    check_private(path, "config file").map_err(|message| ConfigError {
        source: source.to_string(),
        server: None,
        field: None,
        message,
    })?;
    let text = std::fs::read_to_string(path).map_err(|err| ConfigError {
        source: source.to_string(),
        server: None,
        field: None,
        message: format!("cannot read the file: {err}; expected a readable JSON file"),
    })?;
    let mut config = parse(&text, source, env)?;
    // `imports`: other clients' servers, read now (so again on every reload).
    if let Ok(root) = serde_json::from_str::<Value>(&text) {
        let imports =
            crate::import::live::imports(&root, &config.source.to_string(), path.parent(), env)?;
        if !imports.is_empty() {
            let places = crate::import::live::places(env);
            crate::import::live::apply(&mut config, &imports, places.as_ref(), env);
        }
    }
    Ok(config)
}

/// Refuses a file that anyone but its owner may write, or that a user other than the daemon's
/// (or root) owns: such a file lets another user choose which programs the daemon runs (a
/// config, another client's config it imports) or its token (a token file). A missing file is
/// left for the reader to report.
pub fn check_private(path: &Path, what: &str) -> Result<(), String> {
    use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
    let Ok(meta) = std::fs::metadata(path) else {
        return Ok(());
    };
    // SAFETY: getuid cannot fail and has no preconditions.
    let ours = unsafe { libc::getuid() };
    if meta.uid() != ours && meta.uid() != 0 {
        return Err(format!(
            "the {what} {} belongs to user id {}, not to the daemon's user ({ours}) or root; \
             refusing it (whoever owns it chooses what the daemon runs; copy it into a file of \
             your own)",
            path.display(),
            meta.uid()
        ));
    }
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o022 != 0 {
        return Err(format!(
            "the {what} {} has mode {mode:o}, writable by other users; refusing it (fix with: \
             chmod go-w {})",
            path.display(),
            path.display()
        ));
    }
    Ok(())
}

/// The config used when the user has none: the demo server, run from our own executable, so a
/// fresh machine needs neither Node nor Python.
pub fn bundled_default(self_exe: &Path) -> Config {
    Config {
        source: ConfigSource::BundledDefault,
        servers: vec![ServerConfig {
            name: DEMO_SERVER_NAME.to_owned(),
            transport: TransportConfig::Stdio {
                command: self_exe.to_string_lossy().into_owned(),
                args: vec!["demo-server".to_owned()],
                env: BTreeMap::new(),
                cwd: None,
            },
            description: Some(
                "bundled demo toolkit: read-only SQL over a sample shop database, exchange rates, \
                 sandboxed Python, resource handles"
                    .to_owned(),
            ),
            tags: vec![
                "demo".to_owned(),
                "sql".to_owned(),
                "rest".to_owned(),
                "code-execution".to_owned(),
            ],
            enabled: true,
            call_timeout: DEFAULT_CALL_TIMEOUT,
            max_concurrent: DEFAULT_MAX_CONCURRENT_STDIO,
            max_queued: DEFAULT_MAX_QUEUED,
            cache_ttl: None,
            policy: ServerPolicy::default(),
            priority: 0,
            tool_overrides: Arc::default(),
            substituted: Vec::new(),
            server_requests: Default::default(),
        }],
        agent: AgentConfig::default(),
        traces: TracesConfig::default(),
        search: Default::default(),
        notes: Vec::new(),
    }
}

/// The bundled default as the text of a config file: what a new config file starts from, so
/// that writing one (`config import --write`) keeps the demo server the daemon ran without it.
/// Parsed, it gives the same servers as [`bundled_default`] (unit test).
pub fn bundled_default_text(self_exe: &Path) -> String {
    let default = bundled_default(self_exe);
    let servers: Map<String, Value> = default
        .servers
        .iter()
        .map(|server| {
            let TransportConfig::Stdio { command, args, .. } = &server.transport else {
                unreachable!("the bundled default runs a stdio server");
            };
            let entry = serde_json::json!({
                "command": command,
                "args": args,
                "description": server.description,
                "tags": server.tags,
            });
            (server.name.clone(), entry)
        })
        .collect();
    let root = serde_json::json!({ "mcpServers": servers });
    format!("{root:#}\n")
}

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
        let (mut server, field_notes) = parse_server(name, raw, env)
            .map_err(|(field, message)| error(Some(name), field.as_deref(), message))?;
        if let TransportConfig::Http { remote, .. } = &mut server.transport {
            let config_dir = match &source {
                ConfigSource::File(path) => path.parent(),
                ConfigSource::BundledDefault => None,
            };
            crate::remote_config::resolve_paths(remote, config_dir);
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
            crate::trace::settings::parse(section, config_dir, env)
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
            crate::config_search::parse(section, config_dir, env)
                .map_err(|(field, message)| error(None, Some(&field), message))?
        }
    };
    Ok(Config {
        source,
        servers: parsed,
        agent,
        traces,
        search,
        notes,
    })
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
    let server_requests = crate::server_requests::ServerRequestSettings::take_from(&mut entry)
        .map_err(|(field, message)| (Some(field), message))?;
    let policy = ServerPolicy::from_json(&entry).map_err(|err| (None, err.to_string()))?;
    let tool_overrides = match entry.get("tools") {
        None | Some(Value::Null) => BTreeMap::new(),
        Some(tools) => {
            crate::overrides::parse(tools).map_err(|(path, message)| (Some(path), message))?
        }
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
             elicitationTimeoutMs, allowSampling"
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
    let transport = match kind.as_deref() {
        Some("stdio") => stdio_transport(&raw, env)?,
        Some("http" | "streamable-http" | "streamablehttp" | "streamable_http") => {
            http_transport(&raw, env)?
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
            (Some(_), None) => stdio_transport(&raw, env)?,
            (None, Some(_)) => http_transport(&raw, env)?,
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

fn stdio_transport(
    raw: &RawServer,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<TransportConfig, FieldError> {
    let command = match raw.command.as_deref().map(str::trim) {
        Some(command) if !command.is_empty() => {
            substitute(command, env).map_err(|m| (Some("command".to_owned()), m))?
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
        let value = substitute(value, env).map_err(|m| (Some(format!("env.{key}")), m))?;
        child_env.insert(key.clone(), value);
    }
    // As Claude Code and Cursor do: `${VAR}` in the command line too ("${HOME}/notes").
    let args = raw
        .args
        .iter()
        .enumerate()
        .map(|(index, arg)| substitute(arg, env).map_err(|m| (Some(format!("args[{index}]")), m)))
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
    let expanded = substitute(url, env).map_err(|m| (Some("url".to_owned()), m))?;
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
        let value = substitute(value, env).map_err(|m| (Some(format!("headers.{key}")), m))?;
        headers.insert(key.clone(), value);
    }
    let remote =
        crate::remote_config::parse(&url, raw.ca_file.as_deref(), raw.oauth.as_ref(), env)?;
    Ok(TransportConfig::Http {
        url,
        headers,
        remote,
    })
}

/// A path from the config: `${VAR}` substituted, `~/` expanded from `HOME`, and a relative path
/// taken relative to the config file's directory (not to wherever the daemon was started).
/// The error says what is wrong, for the caller to name the member.
pub(crate) fn config_path(
    text: &str,
    config_dir: Option<&Path>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<PathBuf, String> {
    let text = substitute(text, env)?;
    let path = match text.strip_prefix("~/") {
        Some(rest) => match env("HOME").filter(|home| !home.is_empty()) {
            Some(home) => Path::new(&home).join(rest),
            None => {
                return Err(
                    "starts with ~/ but HOME is not set; expected an absolute path".to_owned(),
                );
            }
        },
        None => PathBuf::from(text),
    };
    if path.is_absolute() {
        return Ok(path);
    }
    match config_dir {
        Some(dir) => Ok(dir.join(path)),
        None => Err(format!(
            "\"{}\" is relative; expected an absolute path",
            path.display()
        )),
    }
}

/// Reads the `mcpServers` object of an arbitrary JSON value; used by tests that build configs.
#[cfg(test)]
fn servers_of(value: &Value) -> &serde_json::Map<String, Value> {
    value["mcpServers"].as_object().unwrap()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn env(name: &str) -> Option<String> {
        match name {
            "API_KEY" => Some("secret".to_owned()),
            "PORT" => Some("8080".to_owned()),
            _ => None,
        }
    }

    #[test]
    fn the_bundled_default_as_a_file_runs_the_same_servers() {
        let self_exe = Path::new("/opt/tool-cli/bin/tool-cli-daemon");
        let text = bundled_default_text(self_exe);
        let parsed = parse(&text, ConfigSource::File("/c.json".into()), &env).unwrap();
        assert_eq!(parsed.servers, bundled_default(self_exe).servers, "{text}");
    }

    fn parse_json(value: Value) -> Result<Config, ConfigError> {
        parse(
            &value.to_string(),
            ConfigSource::File("/c.json".into()),
            &env,
        )
    }

    #[test]
    fn tool_overrides_and_priority_are_read_and_their_mistakes_named() {
        let config = parse_json(json!({"mcpServers": {"fs": {"command": "x", "priority": 3,
            "tools": {"read": {"description": "Read a file", "arguments": [
                {"name": "path", "type": "string", "description": "absolute", "required": true}]}}}}}))
        .unwrap();
        assert_eq!(config.servers[0].priority, 3);
        let read = &config.servers[0].tool_overrides["read"];
        assert_eq!(read.description.as_deref(), Some("Read a file"));
        assert_eq!(read.arguments[0].kind.as_deref(), Some("string"));

        let error = parse_json(json!({"mcpServers": {"fs": {"command": "x",
            "tools": {"read": {"arguments": [{"name": "path", "type": "str"}]}}}}}))
        .unwrap_err();
        assert_eq!(error.server.as_deref(), Some("fs"));
        assert_eq!(error.field.as_deref(), Some("tools.read.arguments[0].type"));
        assert!(
            error.to_string().contains("not a JSON Schema type"),
            "{error}"
        );
    }

    /// The issue: `${TOOL_CLI_TOKEN}` in a server's `args` or `env` put the owner token on a
    /// command line and in a child's environment.
    #[test]
    fn the_daemons_own_variables_are_never_substituted_into_a_server() {
        let env = |name: &str| match name {
            "TOOL_CLI_TOKEN" => Some("a".repeat(64)),
            "TOOL_CLI_PORT" => Some("7179".to_owned()),
            _ => None,
        };
        let refused = |entry: Value, field: &str| {
            let text = json!({"mcpServers": {"s": entry}}).to_string();
            let error = parse(&text, ConfigSource::File("/c.json".into()), &env).unwrap_err();
            assert_eq!(error.field.as_deref(), Some(field), "{error}");
            let message = error.to_string();
            assert!(message.contains("${TOOL_CLI_"), "{message}");
            assert!(message.contains("never substituted"), "{message}");
            assert!(!message.contains(&"a".repeat(64)), "{message}");
        };
        refused(
            json!({"command": "x", "args": ["--token", "${TOOL_CLI_TOKEN}"]}),
            "args[1]",
        );
        refused(
            json!({"command": "x", "env": {"AUTH": "${TOOL_CLI_TOKEN}"}}),
            "env.AUTH",
        );
        refused(
            json!({"command": "x", "env": {"AUTH": "${TOOL_CLI_TOKEN:-none}"}}),
            "env.AUTH",
        );
        refused(json!({"command": "${TOOL_CLI_PORT}"}), "command");
        refused(
            json!({"url": "http://127.0.0.1:${TOOL_CLI_PORT}/mcp"}),
            "url",
        );
        refused(
            json!({"url": "http://127.0.0.1:9/mcp",
                   "headers": {"Authorization": "Bearer ${TOOL_CLI_TOKEN}"}}),
            "headers.Authorization",
        );
        // `$$` escapes: the literal text is a server's business.
        let text = json!({"mcpServers": {"s": {"command": "x", "args": ["$${TOOL_CLI_TOKEN}"]}}});
        let config = parse(
            &text.to_string(),
            ConfigSource::File("/c.json".into()),
            &env,
        )
        .unwrap();
        let TransportConfig::Stdio { args, .. } = &config.servers[0].transport else {
            panic!("stdio");
        };
        assert_eq!(args, &["${TOOL_CLI_TOKEN}"]);
    }

    #[test]
    fn a_stdio_server_takes_more_calls_at_once_by_default_than_an_http_one() {
        let config = parse_json(json!({"mcpServers": {
            "local": {"command": "x"},
            "remote": {"url": "https://example.com/mcp"},
            "capped": {"command": "x", "maxConcurrent": 4},
        }}))
        .unwrap();
        let limits: Vec<(&str, usize, usize)> = config
            .servers
            .iter()
            .map(|server| {
                (
                    server.name.as_str(),
                    server.max_concurrent,
                    server.max_queued,
                )
            })
            .collect();
        assert_eq!(
            limits,
            [
                ("local", DEFAULT_MAX_CONCURRENT_STDIO, DEFAULT_MAX_QUEUED),
                ("remote", DEFAULT_MAX_CONCURRENT, DEFAULT_MAX_QUEUED),
                ("capped", 4, DEFAULT_MAX_QUEUED),
            ]
        );
    }

    #[test]
    fn parses_stdio_and_http_servers_in_file_order() {
        let value = json!({"mcpServers": {
            "zeta": {"command": "node", "args": ["x.js"], "env": {"KEY": "${API_KEY}"},
                     "description": "z", "tags": ["a"], "timeoutMs": 5000},
            "alpha": {"url": "http://127.0.0.1:${PORT}/mcp",
                      "headers": {"Authorization": "Bearer ${API_KEY}"}, "enabled": false}
        }});
        assert_eq!(servers_of(&value).len(), 2);
        let config = parse_json(value).unwrap();
        assert_eq!(config.servers[0].name, "zeta");
        assert_eq!(
            config.servers[0].transport,
            TransportConfig::Stdio {
                command: "node".into(),
                args: vec!["x.js".into()],
                env: BTreeMap::from([("KEY".into(), "secret".into())]),
                cwd: None,
            }
        );
        assert_eq!(config.servers[0].call_timeout, Duration::from_secs(5));
        assert_eq!(
            config.servers[1].transport,
            TransportConfig::Http {
                url: "http://127.0.0.1:8080/mcp".into(),
                headers: BTreeMap::from([("Authorization".into(), "Bearer secret".into())]),
                remote: RemoteOptions::default(),
            }
        );
        assert!(!config.servers[1].enabled);
        // What `${VAR}` put in is remembered, to be redacted from logs and errors.
        assert_eq!(config.servers[0].substituted, ["secret"]);
        assert_eq!(config.servers[1].substituted, ["8080", "secret"]);
    }

    #[test]
    fn the_command_line_takes_variables_and_defaults_too() {
        let config = parse_json(json!({"mcpServers": {"s": {
            "command": "${TOOLS:-/opt/tools}/server",
            "args": ["--port", "${PORT}", "--mode=${MODE:-fast}", "$$literal"],
        }}}))
        .unwrap();
        let TransportConfig::Stdio { command, args, .. } = &config.servers[0].transport else {
            panic!("stdio");
        };
        assert_eq!(command, "/opt/tools/server");
        assert_eq!(args, &["--port", "8080", "--mode=fast", "$literal"]);
        assert_eq!(config.servers[0].substituted, ["8080"]);
        let err =
            parse_json(json!({"mcpServers": {"s": {"command": "x", "args": ["a", "${NOPE}"]}}}))
                .unwrap_err();
        assert_eq!(err.field.as_deref(), Some("args[1]"));
    }

    #[test]
    fn a_bad_url_is_quoted_as_written_not_as_expanded() {
        let err = parse_json(json!({"mcpServers": {"x": {"url": "ftp://h/?k=${API_KEY}"}}}))
            .unwrap_err()
            .to_string();
        assert!(err.contains("ftp://h/?k=${API_KEY}"), "{err}");
        assert!(!err.contains("secret"), "{err}");
    }

    #[test]
    fn errors_name_the_file_server_and_field() {
        let err =
            parse_json(json!({"mcpServers": {"s": {"command": "x", "env": {"A": "${NOPE}"}}}}))
                .unwrap_err();
        assert_eq!(err.server.as_deref(), Some("s"));
        assert_eq!(err.field.as_deref(), Some("env.A"));
        assert!(err.to_string().contains("/c.json"), "{err}");
        assert!(err.to_string().contains("${NOPE}"), "{err}");

        let err = parse_json(json!({"mcpServers": {"s": {"type": "sse", "url": "http://x"}}}))
            .unwrap_err();
        assert_eq!(err.field.as_deref(), Some("type"));

        let err = parse_json(json!({"mcpServers": {"s": {"type": "carrier-pigeon"}}})).unwrap_err();
        assert!(err.message.contains("unknown transport"), "{err}");

        let err = parse_json(json!({"mcpServers": {"s": {"args": ["a"]}}})).unwrap_err();
        assert!(
            err.message.contains("neither \"command\" nor \"url\""),
            "{err}"
        );

        let err =
            parse_json(json!({"mcpServers": {"s": {"command": "x", "arg": []}}})).unwrap_err();
        assert_eq!(err.field.as_deref(), Some("arg"));

        let err = parse_json(json!({"mcpServers": {"s": {"command": 7}}})).unwrap_err();
        assert!(err.message.contains("invalid type"), "{err}");
        assert_eq!(err.field.as_deref(), Some("command"), "{err}");

        // A value of the wrong type names its field and the type in the config's words.
        for (entry, field, expected) in [
            (
                json!({"command": "x", "timeoutMs": "fast"}),
                "timeoutMs",
                "expected a whole number ≥ 0",
            ),
            (
                json!({"command": "x", "maxConcurrent": -1}),
                "maxConcurrent",
                "≥ 0",
            ),
            (
                json!({"command": "x", "args": "a b"}),
                "args",
                "expected an array",
            ),
            (
                json!({"command": "x", "env": ["A=1"]}),
                "env",
                "expected an object",
            ),
            (
                json!({"command": "x", "enabled": "yes"}),
                "enabled",
                "expected a boolean",
            ),
        ] {
            let err = parse_json(json!({"mcpServers": {"s": entry}})).unwrap_err();
            assert_eq!(err.field.as_deref(), Some(field), "{err}");
            assert!(err.message.contains(expected), "{err}");
        }

        let err = parse_json(json!({"mcpServers": {"s": {"url": "ftp://x"}}})).unwrap_err();
        assert_eq!(err.field.as_deref(), Some("url"));

        let err = parse_json(json!({"mcpServers": {"s": {"command": "x",
            "env": {"TOOL_CLI_TOKEN": "t"}}}}))
        .unwrap_err();
        assert_eq!(err.field.as_deref(), Some("env.TOOL_CLI_TOKEN"));

        let err = parse_json(json!({"mcpServers": {"bad name": {"command": "x"}}})).unwrap_err();
        assert!(err.message.contains("invalid server name"), "{err}");

        let err = parse_json(json!({"servers": 3})).unwrap_err();
        assert_eq!(err.field.as_deref(), Some("mcpServers"));

        let err = parse_json(json!({})).unwrap_err();
        assert_eq!(err.field.as_deref(), Some("mcpServers"));

        let err = parse(
            "{\"mcpServers\": ",
            ConfigSource::File("/c.json".into()),
            &env,
        )
        .unwrap_err();
        assert!(err.message.contains("invalid JSON at line 1"), "{err}");
    }

    #[test]
    fn fields_of_other_clients_are_read_or_noted_not_refused() {
        let config = parse_json(json!({"mcpServers": {
            "cline": {"command": "x", "autoApprove": ["a"], "disabled": true, "timeout": 30,
                      "transportType": "stdio"},
            "windsurf": {"serverUrl": "https://h/mcp", "disabledTools": ["rm"]}
        }}))
        .unwrap();
        assert!(!config.servers[0].enabled);
        assert_eq!(config.servers[0].call_timeout, Duration::from_secs(30));
        assert_eq!(
            config.servers[1].transport,
            TransportConfig::Http {
                url: "https://h/mcp".into(),
                headers: BTreeMap::new(),
                remote: RemoteOptions::default(),
            }
        );
        let ignored: Vec<String> = config
            .notes
            .iter()
            .filter(|note| note.ignored)
            .map(ToString::to_string)
            .collect();
        assert_eq!(ignored.len(), 1, "{ignored:?}");
        assert!(
            ignored[0]
                .starts_with(r#"config /c.json: server "cline": field "autoApprove" ignored"#),
            "{ignored:?}"
        );
        assert_eq!(config.notes.len(), 5, "{:?}", config.notes);
        // Unknown fields are still refused, with their path.
        let err = parse_json(json!({"mcpServers": {"s": {"command": "x", "autoApprov": []}}}))
            .unwrap_err();
        assert_eq!(err.field.as_deref(), Some("autoApprov"));
    }

    #[test]
    fn substitution_handles_escapes_and_bad_references() {
        assert_eq!(substitute("a${PORT}b", &env).unwrap(), "a8080b");
        assert_eq!(
            substitute("cost $$5 and $x", &env).unwrap(),
            "cost $5 and $x"
        );
        assert!(substitute("${", &env).unwrap_err().contains("unterminated"));
        assert!(
            substitute("${1A}", &env)
                .unwrap_err()
                .contains("not a valid")
        );
        assert!(
            substitute("${MISSING}", &env)
                .unwrap_err()
                .contains("not set")
        );
    }

    #[test]
    fn locate_prefers_cli_then_env() {
        assert_eq!(
            locate(Some("/a".into()), Some("/b".into()), None),
            Some(PathBuf::from("/a"))
        );
        assert_eq!(
            locate(None, Some("/b".into()), None),
            Some(PathBuf::from("/b"))
        );
        assert_eq!(
            locate(None, Some("".into()), Some("/nonexistent-home".into())),
            None
        );
    }

    #[test]
    fn the_traces_section_is_read_beside_the_servers_and_its_errors_name_the_path() {
        let config = parse_json(
            json!({"mcpServers": {}, "traces": {"path": "t/traces.jsonl",
            "verbose": true, "maxBytes": 2048, "keep": 3}}),
        )
        .unwrap();
        assert_eq!(config.traces.path, Some(PathBuf::from("/t/traces.jsonl")));
        assert!(config.traces.verbose && config.traces.enabled);
        assert_eq!((config.traces.max_bytes, config.traces.keep), (2048, 3));
        assert_eq!(
            parse_json(json!({"mcpServers": {}})).unwrap().traces,
            TracesConfig::default()
        );

        let err = parse_json(json!({"mcpServers": {}, "traces": {"keep": "all"}})).unwrap_err();
        assert_eq!(
            (err.server.as_deref(), err.field.as_deref()),
            (None, Some("traces.keep"))
        );
        let text = err.to_string();
        assert!(
            text.starts_with("config /c.json: field \"traces.keep\": expected"),
            "{text}"
        );
    }
}
