//! Finding and reading the config: `--config`, `TOOL_CLI_CONFIG` or the user's default file,
//! the bundled default when there is none, and the `imports` of other clients' configs, read
//! again on every load.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Map, Value};
use tool_cli_agent::config::AgentConfig;

use super::parse::parse;
use super::paths::check_private;
use super::traces::TracesConfig;
use super::{
    Config, ConfigError, ConfigSource, DEFAULT_CALL_TIMEOUT, DEFAULT_MAX_CONCURRENT_STDIO,
    DEFAULT_MAX_QUEUED, DEMO_SERVER_NAME, ServerConfig, TransportConfig,
};
use crate::policy::ServerPolicy;

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
        message: message.to_string(),
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
            super::import::live::imports(&root, &config.source.to_string(), path.parent(), env)?;
        if !imports.is_empty() {
            let places = super::import::live::places(env);
            super::import::live::apply(&mut config, &imports, places.as_ref(), env);
        }
    }
    Ok(config)
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
            protocol: Default::default(),
        }],
        agent: AgentConfig::default(),
        traces: TracesConfig::default(),
        search: Default::default(),
        gateway_flags: Default::default(),
        sessions: Default::default(),
        telemetry: None,
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
