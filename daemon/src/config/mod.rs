//! The config: the servers file in the `mcpServers` JSON format users already have (Claude
//! Desktop, Cursor) and every section beside the servers, each in its own file.
//!
//! Loading is split so the rules can be unit-tested without files or environment: [`parse`]
//! (`parse.rs`) turns text plus an environment lookup into a validated [`Config`], and [`load`]
//! (`load.rs`) does the I/O (finding and reading the file, the bundled default, the `imports`
//! of other clients' configs through `import/`). Every error names the file, the server and
//! the field, and says what was expected, because a daemon that will not start is only as
//! helpful as its message. Fields other clients write (Cline's `autoApprove`, Windsurf's
//! `serverUrl`, …) are translated or dropped by `client_fields` with a note, not refused.
//!
//! The sections: `remote.rs` (a remote server's `caFile` and `oauth`), `server_requests.rs`
//! (`roots`, `elicitation`, `allowSampling` and the budget of a server's requests), `search.rs`
//! (`search`), `traces.rs` (`traces`); `paths.rs` says where things live (paths in the config,
//! the state directory, which files the daemon trusts) and `secrets.rs` which values of a config
//! are secrets.

mod client_fields;
pub mod import;
mod load;
mod parse;
mod paths;
pub mod recording;
pub(crate) mod remote;
pub mod search;
mod secrets;
pub(crate) mod server_requests;
pub mod sessions;
pub mod telemetry;
pub mod traces;
mod upstream_protocol;
mod variables;

pub use load::{bundled_default, bundled_default_text, load, locate};
pub use parse::parse;
pub(crate) use paths::config_path;
pub use paths::{PrivateFileError, check_private, state_dir};
pub use remote::{OAuthSettings, RemoteOptions};
pub use secrets::{config_secrets, secrets_of};
pub use upstream_protocol::UpstreamProtocol;
pub use variables::substitute;

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tool_cli_agent::config::AgentConfig;

use crate::catalog::overrides::ToolOverride;
use crate::policy::ServerPolicy;
use traces::TracesConfig;

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
    pub search: crate::config::search::SearchConfig,
    /// `flags.gateway`: what the gateway does with a tool the detectors flag (hold by default).
    pub gateway_flags: crate::catalog::flags::GatewayFlagPolicy,
    /// The `sessions` section: the session watchdog's default caps (none when absent).
    pub sessions: crate::config::sessions::SessionsConfig,
    /// The `telemetry` section (OpenTelemetry export); `None` when the file has none.
    pub telemetry: Option<tool_cli_telemetry::settings::TelemetryConfig>,
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
    pub server_requests: crate::config::server_requests::ServerRequestSettings,
    /// Which MCP lifecycle the pool opens with it (`protocol`; `upstream_protocol.rs`).
    pub protocol: UpstreamProtocol,
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

#[cfg(test)]
mod tests;
