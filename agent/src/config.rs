//! The agent's configuration: the `agent` key of the daemon's config, and the API key it names.
//!
//! Parsing is serde (camelCase, unknown keys refused so a typo is an error, not a silent
//! default); [`AgentConfig::validate`] checks the ranges and says what would be right. A key is
//! read only from the environment variable or the file the config names, and lives in an
//! [`ApiKey`] whose `Debug` is redacted, so it cannot reach a log line, an error or a trace by
//! accident.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::cost::PriceTable;

/// Which LLM drives the loop.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum BackendKind {
    /// The deterministic rule-based planner: no key, no network.
    #[default]
    Offline,
    /// Anthropic's Messages API.
    Anthropic,
    /// An OpenAI-compatible chat-completions endpoint (OpenAI, Ollama, vLLM, llama.cpp).
    Openai,
}

impl BackendKind {
    /// Parses `offline`, `anthropic` or `openai`.
    pub fn parse(name: &str) -> Result<Self, ConfigError> {
        match name {
            "offline" => Ok(Self::Offline),
            "anthropic" => Ok(Self::Anthropic),
            "openai" => Ok(Self::Openai),
            other => Err(ConfigError::UnknownBackend(other.to_owned())),
        }
    }

    /// The name used in config and results.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Offline => "offline",
            Self::Anthropic => "anthropic",
            Self::Openai => "openai",
        }
    }

    /// The model used when the config names none.
    pub fn default_model(self) -> &'static str {
        match self {
            Self::Offline => "offline-planner",
            Self::Anthropic => "claude-haiku-4-5",
            Self::Openai => "gpt-4.1-mini",
        }
    }

    /// The endpoint used when the config names no `baseUrl`.
    pub fn default_base_url(self) -> &'static str {
        match self {
            Self::Offline => "",
            Self::Anthropic => "https://api.anthropic.com",
            Self::Openai => "https://api.openai.com/v1",
        }
    }

    /// The environment variable read for the key when the config names neither a variable nor
    /// a file.
    pub fn default_api_key_env(self) -> Option<&'static str> {
        match self {
            Self::Offline => None,
            Self::Anthropic => Some("ANTHROPIC_API_KEY"),
            Self::Openai => Some("OPENAI_API_KEY"),
        }
    }
}

/// Time limits of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Timeouts {
    /// One LLM call (all its retries included) or one tool call, in milliseconds.
    pub step_ms: u64,
    /// The whole run, in milliseconds.
    pub run_ms: u64,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            step_ms: 120_000,
            run_ms: 600_000,
        }
    }
}

impl Timeouts {
    /// The per-step limit.
    pub fn step(&self) -> Duration {
        Duration::from_millis(self.step_ms)
    }

    /// The whole-run limit.
    pub fn run(&self) -> Duration {
        Duration::from_millis(self.run_ms)
    }
}

/// The most steps a request may ask for.
pub const MAX_STEPS_LIMIT: u32 = 50;
/// Steps when neither the request nor the config says.
pub const DEFAULT_MAX_STEPS: u32 = 8;
/// Tools shown to the model when the catalog is larger.
pub const DEFAULT_TOOL_LIMIT: usize = 32;
/// The ceiling when the config says nothing, in USD.
pub const DEFAULT_COST_CEILING_USD: f64 = 0.10;

/// The `agent` key of the daemon's config.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct AgentConfig {
    /// The default backend.
    pub backend: BackendKind,
    /// The model; `None` means the backend's default.
    pub model: Option<String>,
    /// The endpoint; `None` means the backend's default (for `openai`, a base ending in `/v1`).
    pub base_url: Option<String>,
    /// The environment variable holding the key.
    pub api_key_env: Option<String>,
    /// A file holding the key (its first line, trimmed).
    pub api_key_file: Option<PathBuf>,
    /// Prices laid over the shipped defaults, by model id.
    pub prices: PriceTable,
    /// Steps per run when the request does not say (at most 50).
    pub max_steps: u32,
    /// The per-run cost ceiling in USD; `null` disables it (and allows unpriced models).
    pub cost_ceiling_usd: Option<f64>,
    /// How many tools the model sees when the catalog is larger.
    pub tool_limit: usize,
    /// `max_tokens` of each LLM call (lowered by the ceiling when needed).
    pub max_output_tokens: u64,
    /// Time limits.
    pub timeouts: Timeouts,
    /// Retries of an LLM request that failed with 429, 5xx or 529 before any answer.
    pub max_retries: u32,
    /// The most `maxTokens` an MCP server's `sampling/createMessage` gets: a larger request is
    /// lowered to this (servers with `allowSampling` only).
    pub sampling_max_tokens: u64,
}

impl Default for AgentConfig {
    fn default() -> Self {
        Self {
            backend: BackendKind::Offline,
            model: None,
            base_url: None,
            api_key_env: None,
            api_key_file: None,
            prices: PriceTable::new(),
            max_steps: DEFAULT_MAX_STEPS,
            cost_ceiling_usd: Some(DEFAULT_COST_CEILING_USD),
            tool_limit: DEFAULT_TOOL_LIMIT,
            max_output_tokens: 1_024,
            timeouts: Timeouts::default(),
            max_retries: 4,
            sampling_max_tokens: 1_024,
        }
    }
}

impl AgentConfig {
    /// Checks ranges; the error names the member and what would be right.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.max_steps == 0 || self.max_steps > MAX_STEPS_LIMIT {
            return Err(ConfigError::Invalid(format!(
                "agent.maxSteps is {}; it must be between 1 and {MAX_STEPS_LIMIT}",
                self.max_steps
            )));
        }
        if let Some(ceiling) = self.cost_ceiling_usd
            && !(ceiling.is_finite() && ceiling > 0.0)
        {
            return Err(ConfigError::Invalid(format!(
                "agent.costCeilingUsd is {ceiling}; it must be a positive number of USD, \
                 or null to disable the ceiling"
            )));
        }
        if self.tool_limit == 0 {
            return Err(ConfigError::Invalid(
                "agent.toolLimit is 0; it must be at least 1".into(),
            ));
        }
        if self.max_output_tokens == 0 {
            return Err(ConfigError::Invalid(
                "agent.maxOutputTokens is 0; it must be at least 1".into(),
            ));
        }
        if self.sampling_max_tokens == 0 {
            return Err(ConfigError::Invalid(
                "agent.samplingMaxTokens is 0; it must be at least 1".into(),
            ));
        }
        if self.timeouts.step_ms == 0 || self.timeouts.run_ms == 0 {
            return Err(ConfigError::Invalid(
                "agent.timeouts.stepMs and runMs must be positive numbers of milliseconds".into(),
            ));
        }
        for (model, price) in self.prices.models() {
            let rates = [
                price.input,
                price.output,
                price.cache_write,
                price.cache_read,
            ];
            if rates.iter().any(|rate| !(rate.is_finite() && *rate >= 0.0)) {
                return Err(ConfigError::Invalid(format!(
                    "agent.prices.{model}: every price must be a non-negative number of USD per \
                     million tokens"
                )));
            }
        }
        Ok(())
    }

    /// The shipped prices with this config's `prices` laid over them.
    pub fn price_table(&self) -> PriceTable {
        PriceTable::defaults().with_overrides(&self.prices)
    }
}

/// An API key. `Debug` and `Display` never show it; only [`ApiKey::expose`] does, at the one
/// place a request header is built.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a key.
    pub fn new(key: impl Into<String>) -> Self {
        Self(key.into())
    }

    /// The key itself, for the request header.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

/// Reads the key for `backend`: from `api_key_file` when set, else from `api_key_env` (or the
/// backend's usual variable). `lookup_env` is the environment, passed in so tests stay pure.
/// Returns `None` when nothing is configured and the usual variable is unset: local
/// OpenAI-compatible servers (Ollama, llama.cpp) need no key.
pub fn load_api_key(
    backend: BackendKind,
    api_key_env: Option<&str>,
    api_key_file: Option<&Path>,
    lookup_env: impl Fn(&str) -> Option<String>,
) -> Result<Option<ApiKey>, ConfigError> {
    if let Some(path) = api_key_file {
        let text = std::fs::read_to_string(path).map_err(|error| {
            ConfigError::KeyFile(format!(
                "cannot read agent.apiKeyFile {}: {error}; name a readable file whose first \
                 line is the key",
                path.display()
            ))
        })?;
        let key = text.lines().next().unwrap_or("").trim();
        if key.is_empty() {
            return Err(ConfigError::KeyFile(format!(
                "agent.apiKeyFile {} is empty; its first line must be the key",
                path.display()
            )));
        }
        return Ok(Some(ApiKey::new(key)));
    }
    match api_key_env {
        Some(variable) => match lookup_env(variable).filter(|v| !v.trim().is_empty()) {
            Some(key) => Ok(Some(ApiKey::new(key.trim()))),
            None => Err(ConfigError::KeyEnv(format!(
                "the environment variable {variable} named by agent.apiKeyEnv is unset or \
                 empty; set it to the {} key",
                backend.as_str()
            ))),
        },
        None => Ok(backend
            .default_api_key_env()
            .and_then(&lookup_env)
            .filter(|v| !v.trim().is_empty())
            .map(|key| ApiKey::new(key.trim()))),
    }
}

/// A configuration that cannot be used. Messages never contain a key.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// A backend name that is not `offline`, `anthropic` or `openai`.
    #[error("unknown agent backend {0:?}; use \"offline\", \"anthropic\" or \"openai\"")]
    UnknownBackend(String),
    /// A member out of range.
    #[error("{0}")]
    Invalid(String),
    /// The key file cannot be used.
    #[error("{0}")]
    KeyFile(String),
    /// The key variable cannot be used.
    #[error("{0}")]
    KeyEnv(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_config_parses_camel_case_and_refuses_typos() {
        let config: AgentConfig = serde_json::from_value(serde_json::json!({
            "backend": "anthropic", "model": "claude-sonnet-4-5", "apiKeyEnv": "MY_KEY",
            "maxSteps": 12, "costCeilingUsd": 0.5, "toolLimit": 16,
            "timeouts": {"stepMs": 1000},
            "prices": {"my-model": {"input": 1, "output": 2, "cacheWrite": 1, "cacheRead": 0.1,
                                     "effective": "2026-01-01"}}
        }))
        .expect("valid config");
        assert_eq!(config.backend, BackendKind::Anthropic);
        assert_eq!(config.timeouts.run_ms, Timeouts::default().run_ms);
        assert!(config.price_table().lookup("my-model").is_some());
        assert!(config.validate().is_ok());
        let typo = serde_json::from_value::<AgentConfig>(serde_json::json!({"maxStep": 3}));
        assert!(typo.is_err());
        let disabled: AgentConfig =
            serde_json::from_value(serde_json::json!({"costCeilingUsd": null})).expect("null");
        assert_eq!(disabled.cost_ceiling_usd, None);
    }

    #[test]
    fn validation_names_the_member_and_the_range() {
        let config = AgentConfig {
            max_steps: 51,
            ..AgentConfig::default()
        };
        let message = config.validate().expect_err("51 steps").to_string();
        assert!(message.contains("agent.maxSteps") && message.contains("between 1 and 50"));
        let config = AgentConfig {
            cost_ceiling_usd: Some(-1.0),
            ..AgentConfig::default()
        };
        assert!(config.validate().is_err());
    }

    #[test]
    fn keys_come_from_the_named_variable_or_file_and_never_show() {
        let env = |name: &str| (name == "MY_KEY").then(|| "sk-secret-123".to_owned());
        let key = load_api_key(BackendKind::Anthropic, Some("MY_KEY"), None, env)
            .expect("set")
            .expect("some");
        assert_eq!(key.expose(), "sk-secret-123");
        assert!(!format!("{key:?}").contains("secret"));
        let missing = load_api_key(BackendKind::Anthropic, Some("OTHER"), None, env)
            .expect_err("unset variable");
        assert!(missing.to_string().contains("OTHER"));
        assert_eq!(
            load_api_key(BackendKind::Openai, None, None, |_| None).expect("optional"),
            None
        );

        let dir = std::env::temp_dir().join(format!("agent-key-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let file = dir.join("key");
        std::fs::write(&file, "sk-from-file\n").expect("write key");
        let key = load_api_key(BackendKind::Openai, None, Some(&file), |_| None)
            .expect("file")
            .expect("some");
        assert_eq!(key.expose(), "sk-from-file");
        std::fs::remove_dir_all(&dir).expect("clean up");
    }
}
