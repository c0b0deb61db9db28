//! The agent behind `runAgent`: an LLM plan-act loop over the tools the daemon holds, bounded by
//! steps, time and a cost ceiling, with its bill and a live stream of events.
//!
//! The daemon holds an [`Agent`] built from the `agent` key of its config. For each `runAgent`
//! it calls [`Agent::prepare`] (which checks the request and builds the backend; its errors are
//! the caller's, `-32602`), then [`PreparedRun::run`] with a [`ToolHost`] over its call pipeline
//! (the caller's token, session and trace), an [`EventSink`] and a `CancellationToken` that
//! `cancelAgent` or a departing client cancels. The request, the result and the events are wire
//! types of `tool_cli_protocol::agent`.
//!
//! Backends: [`OfflinePlanner`] (the default: rules, no key, no network), Anthropic's Messages
//! API and OpenAI-compatible chat completions, both streamed over hyper + rustls. See
//! `docs/agent.md`.

pub mod answer;
pub mod backend;
pub mod catalog;
pub mod config;
pub mod cost;
pub mod events;
mod guards;
pub mod host;
pub mod planner;
pub mod request;
pub mod run;
pub mod summary;

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tool_cli_protocol::agent::{RunAgentParams, RunAgentResult};

use crate::answer::{AnswerError, AnswerSchema, default_answer_schema};
use crate::backend::{
    AnthropicBackend, HttpSettings, LlmBackend, LlmError, OpenAiBackend, RetryPolicy,
};
use crate::config::{
    AgentConfig, BackendKind, ConfigError, MAX_STEPS_LIMIT, Timeouts, load_api_key,
};
use crate::cost::{ModelPrice, PriceTable};
use crate::events::EventSink;
use crate::host::ToolHost;
use crate::planner::OfflinePlanner;
use crate::run::RunSettings;

/// The longest task accepted, in bytes.
pub const MAX_TASK_BYTES: usize = 64 * 1024;
/// The most tools a request may ask to see.
pub const MAX_TOOL_LIMIT: usize = 256;
/// The longest run a request may ask for.
pub const MAX_RUN_TIMEOUT: Duration = Duration::from_secs(3600);

/// Why a run cannot start. Every message names the member and what would be right, and never
/// contains a key.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum AgentError {
    /// A request member is missing or out of range.
    #[error("{0}")]
    InvalidRequest(String),
    /// The configuration cannot serve this request (unknown backend, missing key, no price).
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// `answerSchema` is not a JSON Schema.
    #[error(transparent)]
    Answer(#[from] AnswerError),
    /// The backend could not be set up.
    #[error(transparent)]
    Backend(#[from] LlmError),
}

/// The agent as the daemon holds it: its config and price table.
#[derive(Debug, Clone)]
pub struct Agent {
    config: AgentConfig,
    prices: PriceTable,
}

/// A checked request with its backend, ready to run.
pub struct PreparedRun {
    settings: RunSettings,
    backend: Arc<dyn LlmBackend>,
}

impl std::fmt::Debug for PreparedRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PreparedRun")
            .field("run_id", &self.settings.run_id)
            .field("backend", &self.backend.name())
            .field("model", &self.backend.model())
            .finish()
    }
}

/// A fresh run id: `run_` and 16 random hex digits.
pub fn new_run_id() -> String {
    format!("run_{:016x}", rand::random::<u64>())
}

impl Agent {
    /// Checks `config`.
    pub fn new(config: AgentConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        let prices = config.price_table();
        Ok(Self { config, prices })
    }

    /// The configuration.
    pub fn config(&self) -> &AgentConfig {
        &self.config
    }

    /// The price table in force (defaults with the config's prices laid over them).
    pub fn prices(&self) -> &PriceTable {
        &self.prices
    }

    /// Checks `request`, resolves defaults from the config, reads the key (from `lookup_env` or
    /// the configured file) and builds the backend. The run is `run_id`, the one the daemon
    /// settled on (the request's `runId`, checked, or one it chose): `request.run_id` is not read.
    pub fn prepare(
        &self,
        request: RunAgentParams,
        run_id: String,
        lookup_env: impl Fn(&str) -> Option<String>,
    ) -> Result<PreparedRun, AgentError> {
        let task = request.task.trim().to_owned();
        if task.is_empty() {
            return Err(AgentError::InvalidRequest(
                "task is empty; say in plain words what the agent should do".into(),
            ));
        }
        if task.len() > MAX_TASK_BYTES {
            return Err(AgentError::InvalidRequest(format!(
                "task is {} bytes; it must be at most {MAX_TASK_BYTES}",
                task.len()
            )));
        }
        let backend_kind = match &request.backend {
            Some(name) => BackendKind::parse(name)?,
            None => self.config.backend,
        };
        let configured = backend_kind == self.config.backend;
        // The offline planner has no models: a model asked of it would be silently ignored.
        if backend_kind == BackendKind::Offline
            && let Some(model) = &request.model
        {
            return Err(AgentError::InvalidRequest(format!(
                "model is {model:?}, but the run's backend is the offline planner, which has no \
                 models; leave model out, or choose backend \"anthropic\" or \"openai\" with it"
            )));
        }
        let model = request
            .model
            .clone()
            .or_else(|| self.config.model.clone().filter(|_| configured))
            .unwrap_or_else(|| backend_kind.default_model().to_owned());
        let max_steps = request.max_steps.unwrap_or(self.config.max_steps);
        if max_steps == 0 || max_steps > MAX_STEPS_LIMIT {
            return Err(AgentError::InvalidRequest(format!(
                "maxSteps is {max_steps}; it must be between 1 and {MAX_STEPS_LIMIT}"
            )));
        }
        if let Some(ceiling) = request.cost_ceiling_usd
            && !(ceiling.is_finite() && ceiling > 0.0)
        {
            return Err(AgentError::InvalidRequest(format!(
                "costCeilingUsd is {ceiling}; it must be a positive number of USD"
            )));
        }
        let cost_ceiling_usd = request.cost_ceiling_usd.or(self.config.cost_ceiling_usd);
        let price = if backend_kind == BackendKind::Offline {
            Some(zero_price())
        } else {
            self.prices.lookup(&model).cloned()
        };
        if price.is_none() && cost_ceiling_usd.is_some() {
            return Err(ConfigError::Invalid(format!(
                "the model {model:?} has no price, so the cost ceiling cannot be enforced; add \
                 agent.prices.{model} (USD per million tokens: input, output, cacheWrite, \
                 cacheRead, effective) or set agent.costCeilingUsd to null"
            ))
            .into());
        }
        let tool_limit = request.tool_limit.unwrap_or(self.config.tool_limit);
        if tool_limit == 0 || tool_limit > MAX_TOOL_LIMIT {
            return Err(AgentError::InvalidRequest(format!(
                "toolLimit is {tool_limit}; it must be between 1 and {MAX_TOOL_LIMIT}"
            )));
        }
        let mut timeouts = self.config.timeouts;
        if let Some(ms) = request.timeout_ms {
            if ms == 0 || ms > MAX_RUN_TIMEOUT.as_millis() as u64 {
                return Err(AgentError::InvalidRequest(format!(
                    "timeoutMs is {ms}; it must be between 1 and {}",
                    MAX_RUN_TIMEOUT.as_millis()
                )));
            }
            timeouts = Timeouts {
                run_ms: ms,
                step_ms: timeouts.step_ms.min(ms),
            };
        }
        let answer_schema = AnswerSchema::compile(
            request
                .answer_schema
                .clone()
                .unwrap_or_else(default_answer_schema),
        )?;
        // The offline planner answers `{answer, keyFacts}` and nothing else: a schema that
        // refuses that would fail every run after doing all its work.
        if backend_kind == BackendKind::Offline && request.answer_schema.is_some() {
            let planner_answer = serde_json::json!({"answer": "…", "keyFacts": {}});
            if let Err(error) = answer_schema.check(&planner_answer.to_string()) {
                return Err(AgentError::InvalidRequest(format!(
                    "answerSchema does not accept the offline planner's answers ({{\"answer\": \
                     string, \"keyFacts\": object}}: {error}); leave answerSchema out, or use \
                     an LLM backend (\"anthropic\", \"openai\") that can follow it"
                )));
            }
        }
        let backend = self.backend(backend_kind, &model, configured, lookup_env)?;
        Ok(PreparedRun {
            settings: RunSettings {
                run_id,
                task,
                max_steps,
                cost_ceiling_usd,
                price,
                max_output_tokens: self.config.max_output_tokens,
                tool_limit,
                timeouts,
                run_limit_from_request: request.timeout_ms.is_some(),
                dry_run: request.dry_run,
                confirm_destructive: request.confirm_destructive,
                answer_schema,
                servers: request.servers,
                tools: request.tools,
            },
            backend,
        })
    }

    /// The configured backend, for answering MCP servers' `sampling/createMessage` requests:
    /// `None` when it is the offline planner (which cannot write free text). Reads the key the
    /// way a run does; the error never contains it.
    pub fn sampling_backend(
        &self,
        lookup_env: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<Arc<dyn LlmBackend>>, AgentError> {
        if self.config.backend == BackendKind::Offline {
            return Ok(None);
        }
        let model = self
            .config
            .model
            .clone()
            .unwrap_or_else(|| self.config.backend.default_model().to_owned());
        self.backend(self.config.backend, &model, true, lookup_env)
            .map(Some)
    }

    fn backend(
        &self,
        kind: BackendKind,
        model: &str,
        configured: bool,
        lookup_env: impl Fn(&str) -> Option<String>,
    ) -> Result<Arc<dyn LlmBackend>, AgentError> {
        if kind == BackendKind::Offline {
            return Ok(Arc::new(OfflinePlanner::new()));
        }
        // The key and endpoint settings belong to the configured backend; another backend
        // chosen per request uses its own defaults.
        let (key_env, key_file, base_url) = if configured {
            (
                self.config.api_key_env.as_deref(),
                self.config.api_key_file.as_deref(),
                self.config.base_url.clone(),
            )
        } else {
            (None, None, None)
        };
        let api_key = load_api_key(kind, key_env, key_file, lookup_env)?;
        let settings = HttpSettings {
            base_url: base_url.unwrap_or_else(|| kind.default_base_url().to_owned()),
            api_key,
            retry: RetryPolicy {
                max_retries: self.config.max_retries,
                ..RetryPolicy::default()
            },
        };
        Ok(match kind {
            BackendKind::Anthropic => Arc::new(AnthropicBackend::new(model, settings)?),
            BackendKind::Openai => Arc::new(OpenAiBackend::new(model, settings)?),
            BackendKind::Offline => Arc::new(OfflinePlanner::new()),
        })
    }
}

fn zero_price() -> ModelPrice {
    ModelPrice {
        input: 0.0,
        output: 0.0,
        cache_write: 0.0,
        cache_read: 0.0,
        effective: "2026-11-23".into(),
        long_prompt: None,
    }
}

impl PreparedRun {
    /// A run from explicit settings and a backend (tests, or a daemon that builds its own).
    pub fn new(settings: RunSettings, backend: Arc<dyn LlmBackend>) -> Self {
        Self { settings, backend }
    }

    /// The run's id.
    pub fn run_id(&self) -> &str {
        &self.settings.run_id
    }

    /// The backend's name.
    pub fn backend_name(&self) -> &str {
        self.backend.name()
    }

    /// The model.
    pub fn model(&self) -> &str {
        self.backend.model()
    }

    /// Runs to the end (see [`run::run`]).
    pub async fn run(
        self,
        host: Arc<dyn ToolHost>,
        events: Arc<dyn EventSink>,
        cancel: CancellationToken,
    ) -> RunAgentResult {
        run::run(self.settings, host, self.backend, events, cancel).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(task: &str) -> RunAgentParams {
        RunAgentParams {
            task: task.into(),
            ..RunAgentParams::default()
        }
    }

    #[test]
    fn the_default_run_is_offline_with_the_default_limits() {
        let agent = Agent::new(AgentConfig::default()).expect("default config");
        let run = agent
            .prepare(request("count lines of /x"), "run_1".into(), |_| None)
            .expect("ok");
        assert_eq!(run.backend_name(), "offline");
        assert_eq!(run.settings.max_steps, 8);
        assert_eq!(run.settings.tool_limit, 32);
        assert_eq!(run.settings.cost_ceiling_usd, Some(0.10));
    }

    #[test]
    fn bad_requests_name_the_member() {
        let agent = Agent::new(AgentConfig::default()).expect("default config");
        let err = |r: RunAgentParams| {
            agent
                .prepare(r, "r".into(), |_| None)
                .expect_err("bad")
                .to_string()
        };
        assert!(err(request("  ")).contains("task is empty"));
        assert!(
            err(RunAgentParams {
                max_steps: Some(51),
                ..request("t")
            })
            .contains("maxSteps")
        );
        assert!(
            err(RunAgentParams {
                tool_limit: Some(0),
                ..request("t")
            })
            .contains("toolLimit")
        );
        assert!(
            err(RunAgentParams {
                backend: Some("gpt".into()),
                ..request("t")
            })
            .contains("\"offline\"")
        );
        assert!(
            err(RunAgentParams {
                answer_schema: Some(serde_json::json!({"type": 5})),
                ..request("t")
            })
            .contains("answerSchema")
        );
        assert!(
            err(RunAgentParams {
                cost_ceiling_usd: Some(-1.0),
                ..request("t")
            })
            .contains("costCeilingUsd")
        );
    }

    #[test]
    fn bad_input_is_refused_before_anything_runs() {
        let agent = Agent::new(AgentConfig::default()).expect("default config");
        let err = |r: RunAgentParams| {
            agent
                .prepare(r, "r".into(), |_| None)
                .expect_err("refused")
                .to_string()
        };
        assert!(err(request("")).contains("task is empty"));
        let huge = "How many orders are there? ".repeat(4000);
        assert!(huge.len() > 100_000);
        let message = err(request(&huge));
        assert!(message.contains("it must be at most 65536"), "{message}");
        for steps in [0, 51] {
            let message = err(RunAgentParams {
                max_steps: Some(steps),
                ..request("t")
            });
            assert!(
                message.contains(&format!("maxSteps is {steps}")),
                "{message}"
            );
            assert!(message.contains("between 1 and 50"), "{message}");
        }
        let message = err(RunAgentParams {
            cost_ceiling_usd: Some(-0.5),
            ..request("t")
        });
        assert!(message.contains("costCeilingUsd is -0.5"), "{message}");
        assert!(message.contains("positive number of USD"), "{message}");
    }

    #[test]
    fn the_offline_planner_refuses_a_model_and_a_schema_its_answers_fail() {
        let agent = Agent::new(AgentConfig::default()).expect("default config");
        let err = |r: RunAgentParams| {
            agent
                .prepare(r, "r".into(), |_| None)
                .expect_err("refused")
                .to_string()
        };
        let message = err(RunAgentParams {
            model: Some("gpt-4o".into()),
            ..request("t")
        });
        assert!(
            message.contains("offline planner") && message.contains("no models"),
            "{message}"
        );
        let message = err(RunAgentParams {
            answer_schema: Some(serde_json::json!({
                "type": "object", "required": ["total"],
                "properties": {"total": {"type": "number"}}
            })),
            ..request("t")
        });
        assert!(
            message.contains("answerSchema does not accept the offline planner's answers"),
            "{message}"
        );
        // A schema the planner's answers pass is taken.
        let accepting = RunAgentParams {
            answer_schema: Some(serde_json::json!({
                "type": "object", "required": ["answer"],
                "properties": {"answer": {"type": "string"}}
            })),
            ..request("t")
        };
        assert!(agent.prepare(accepting, "r".into(), |_| None).is_ok());
    }

    #[test]
    fn unpriced_models_need_the_ceiling_off() {
        let agent = Agent::new(AgentConfig::default()).expect("default config");
        let unpriced = RunAgentParams {
            backend: Some("openai".into()),
            model: Some("llama3.2".into()),
            ..request("t")
        };
        let message = agent
            .prepare(unpriced.clone(), "r".into(), |_| None)
            .expect_err("no price")
            .to_string();
        assert!(
            message.contains("agent.prices.llama3.2") && message.contains("null"),
            "{message}"
        );
        let open = Agent::new(AgentConfig {
            cost_ceiling_usd: None,
            ..AgentConfig::default()
        })
        .expect("config");
        assert!(open.prepare(unpriced, "r".into(), |_| None).is_ok());
    }

    #[test]
    fn anthropic_needs_a_key_and_never_shows_it() {
        let agent = Agent::new(AgentConfig::default()).expect("default config");
        let anthropic = RunAgentParams {
            backend: Some("anthropic".into()),
            ..request("t")
        };
        let message = agent
            .prepare(anthropic.clone(), "r".into(), |_| None)
            .expect_err("no key")
            .to_string();
        assert!(message.contains("ANTHROPIC_API_KEY"), "{message}");
        let run = agent
            .prepare(anthropic, "r".into(), |name| {
                (name == "ANTHROPIC_API_KEY").then(|| "sk-ant-secret".to_owned())
            })
            .expect("key from env");
        assert!(!format!("{run:?}").contains("secret"));
        assert_eq!(run.model(), "claude-haiku-4-5");
    }
}
