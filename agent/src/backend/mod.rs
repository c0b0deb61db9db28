//! LLM backends behind one trait, and the provider-neutral conversation they are given.
//!
//! The loop keeps the conversation as [`Turn`]s (the task, the model's turns with their tool
//! calls, the tool results) and asks an [`LlmBackend`] for the next turn. Each backend turns that
//! into its own wire format and back: `anthropic` (Messages API), `openai` (chat completions),
//! and the offline planner in `crate::planner`. Adding a backend means implementing
//! [`LlmBackend`]; see `docs/agent.md`.

pub(crate) mod anthropic;
pub(crate) mod http;
pub(crate) mod openai;
pub(crate) mod sse;

use serde_json::Value;

use crate::cost::Usage;
use crate::host::BoxFuture;

pub use anthropic::AnthropicBackend;
pub use http::{HttpSettings, RetryPolicy};
pub use openai::OpenAiBackend;

/// A tool as the model sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct ExposedTool {
    /// The name given to the model (`^[a-zA-Z0-9_-]{1,64}$`, unique in the run).
    pub name: String,
    /// The server the call goes to; `None` when several servers offer this tool with the same
    /// schema and the daemon's routing picks one.
    pub server: Option<String>,
    /// Every server offering it.
    pub servers: Vec<String>,
    /// The tool's own name on its server(s).
    pub tool: String,
    /// Its description.
    pub description: String,
    /// Its input schema.
    pub input_schema: Value,
    /// `readOnlyHint`.
    pub read_only: bool,
    /// `destructiveHint`.
    pub destructive: bool,
}

/// One tool call the model asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct LlmToolCall {
    /// The provider's id for it (synthesised when the provider gave none), echoed in the result.
    pub id: String,
    /// The exposed name.
    pub name: String,
    /// The arguments (an object; `{}` when the model sent none).
    pub arguments: Value,
}

/// The answer to one tool call, as it goes back to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResultTurn {
    /// The id of the call it answers.
    pub call_id: String,
    /// The exposed name of the tool.
    pub name: String,
    /// The text shown to an LLM (truncated to a bounded size).
    pub content: String,
    /// The full result value (the MCP `CallToolResult`), for backends that read structure.
    pub result: Option<Value>,
    /// Whether it failed.
    pub is_error: bool,
}

/// One turn of the conversation.
#[derive(Debug, Clone, PartialEq)]
pub enum Turn {
    /// Text from the user side: the task, or a corrective instruction.
    User(String),
    /// The model's turn.
    Assistant {
        /// Its text.
        text: String,
        /// The tool calls it asked for.
        tool_calls: Vec<LlmToolCall>,
    },
    /// The answers to the previous assistant turn's tool calls, in the same order.
    ToolResults(Vec<ToolResultTurn>),
}

/// What the loop asks of a backend.
#[derive(Debug, Clone, Copy)]
pub struct LlmRequest<'a> {
    /// The system prompt.
    pub system: &'a str,
    /// The tools, fixed for the run so a prompt cache holds.
    pub tools: &'a [ExposedTool],
    /// The conversation so far.
    pub turns: &'a [Turn],
    /// `max_tokens` for this call.
    pub max_output_tokens: u64,
    /// The sampling temperature; `None` leaves the provider's default (the agent loop sends
    /// none; an MCP server's `sampling/createMessage` may ask for one).
    pub temperature: Option<f64>,
    /// Sequences that end the answer (MCP `stopSequences`); empty for none.
    pub stop_sequences: &'a [String],
    /// The exposed names of the tools the host's search ranked for the task, best first (empty
    /// when there was no search). LLM backends ignore it; the offline planner names the nearest
    /// tools from it when it cannot do a task.
    pub ranked_tools: &'a [String],
    /// When the caller stops waiting for this call (the loop's step timeout or the run's end);
    /// `None` for no limit. A backend does not sleep past it to retry: a 429 or 529 whose
    /// requested wait would pass it fails at once, with the provider's reason.
    pub deadline: Option<tokio::time::Instant>,
}

impl LlmRequest<'_> {
    /// The first user turn: the task.
    pub fn task(&self) -> &str {
        self.turns
            .iter()
            .find_map(|turn| match turn {
                Turn::User(text) => Some(text.as_str()),
                _ => None,
            })
            .unwrap_or("")
    }
}

/// Why the model stopped, normalised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopReason {
    /// It finished its turn (Anthropic `end_turn`/`stop_sequence`, OpenAI `stop`).
    EndTurn,
    /// It asked for tools.
    ToolUse,
    /// It hit `max_tokens`.
    MaxTokens,
    /// It paused a long turn and wants to be called again with its content (Anthropic
    /// `pause_turn`).
    Pause,
    /// It declined the task; the text says why.
    Refusal,
    /// Anything else the provider said; the loop decides from the content.
    Other(String),
}

/// One turn from the model.
#[derive(Debug, Clone, PartialEq)]
pub struct LlmResponse {
    /// Its text.
    pub text: String,
    /// Its tool calls.
    pub tool_calls: Vec<LlmToolCall>,
    /// Tokens billed.
    pub usage: Usage,
    /// Why it stopped.
    pub stop: StopReason,
    /// The provider's own word for it, for events.
    pub raw_stop: String,
    /// The model that answered and the provider's id of the answer, when it said
    /// (`gen_ai.response.model`, `gen_ai.response.id`).
    pub identity: ResponseIdentity,
}

/// Which model answered and the provider's id of the answer, as the provider sent them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ResponseIdentity {
    /// The model that answered (may differ from the one asked: an alias resolved).
    pub model: Option<String>,
    /// The provider's id of the completion (`chatcmpl-…`, `msg_…`).
    pub id: Option<String>,
}

/// Why a backend could not produce a turn. Messages never contain a key.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum LlmError {
    /// The provider answered with an error status (after any retries).
    #[error("the {provider} API answered HTTP {status}: {message}")]
    Status {
        /// `anthropic` or `openai`.
        provider: &'static str,
        /// The status.
        status: u16,
        /// The provider's error message, when it sent one.
        message: String,
    },
    /// The request could not be sent or the answer not read.
    #[error("cannot reach the {provider} API at {endpoint}: {message}")]
    Transport {
        /// `anthropic` or `openai`.
        provider: &'static str,
        /// The URL (no credentials ever appear in it).
        endpoint: String,
        /// What failed.
        message: String,
    },
    /// The stream ended or broke before the turn was complete. Tokens may have been billed.
    #[error("the {provider} stream ended before the answer was complete: {message}")]
    StreamCut {
        /// `anthropic` or `openai`.
        provider: &'static str,
        /// What happened.
        message: String,
        /// Usage reported before the cut.
        usage: Usage,
    },
    /// The answer was not the JSON the provider documents.
    #[error("the {provider} API sent a malformed answer: {message}")]
    Malformed {
        /// `anthropic` or `openai`.
        provider: &'static str,
        /// What was wrong.
        message: String,
        /// Usage reported before it.
        usage: Usage,
    },
    /// The provider reported an error inside the stream (for example `overloaded_error`).
    #[error("the {provider} API reported {kind}: {message}")]
    Api {
        /// `anthropic` or `openai`.
        provider: &'static str,
        /// The error type.
        kind: String,
        /// Its message.
        message: String,
        /// Usage reported before it.
        usage: Usage,
    },
    /// The backend is not usable as configured.
    #[error("{0}")]
    Config(String),
    /// The offline planner has no rule for this task or this state.
    #[error("{0}")]
    NoPlan(String),
}

/// The text with the secret, or any [`SECRET_WINDOW`] characters of it in a row, replaced by
/// `[redacted]`: a provider (or a proxy before it) may echo a key whole or in part.
pub fn redact_secret(text: &str, secret: &str) -> String {
    if secret.is_empty() {
        return text.to_owned();
    }
    let mut text = text.replace(secret, "[redacted]");
    let chars: Vec<char> = secret.chars().collect();
    if chars.len() >= SECRET_WINDOW {
        for start in 0..=chars.len() - SECRET_WINDOW {
            let window: String = chars[start..start + SECRET_WINDOW].iter().collect();
            if text.contains(&window) {
                text = text.replace(&window, "[redacted]");
            }
        }
    }
    text
}

/// Runs of a key's characters this long are taken for the key when found in provider text.
pub const SECRET_WINDOW: usize = 12;

impl LlmError {
    /// The error with the API key taken out of every text the provider sent back.
    pub fn redacted(self, key: Option<&crate::config::ApiKey>) -> Self {
        let Some(key) = key else {
            return self;
        };
        let clean = |text: String| redact_secret(&text, key.expose());
        match self {
            Self::Status {
                provider,
                status,
                message,
            } => Self::Status {
                provider,
                status,
                message: clean(message),
            },
            Self::Transport {
                provider,
                endpoint,
                message,
            } => Self::Transport {
                provider,
                endpoint: clean(endpoint),
                message: clean(message),
            },
            Self::StreamCut {
                provider,
                message,
                usage,
            } => Self::StreamCut {
                provider,
                message: clean(message),
                usage,
            },
            Self::Malformed {
                provider,
                message,
                usage,
            } => Self::Malformed {
                provider,
                message: clean(message),
                usage,
            },
            Self::Api {
                provider,
                kind,
                message,
                usage,
            } => Self::Api {
                provider,
                kind: clean(kind),
                message: clean(message),
                usage,
            },
            Self::Config(message) => Self::Config(clean(message)),
            Self::NoPlan(message) => Self::NoPlan(clean(message)),
        }
    }

    /// Tokens billed before the failure (to be added to the run's bill).
    pub fn usage(&self) -> Usage {
        match self {
            Self::StreamCut { usage, .. }
            | Self::Malformed { usage, .. }
            | Self::Api { usage, .. } => *usage,
            _ => Usage::default(),
        }
    }
}

/// An LLM behind the loop. Object-safe: the loop holds an `Arc<dyn LlmBackend>`.
pub trait LlmBackend: Send + Sync {
    /// `offline`, `anthropic`, `openai`, or a test's name.
    fn name(&self) -> &str;

    /// The model id (used for pricing).
    fn model(&self) -> &str;

    /// An upper bound on the input tokens `request` will be billed for (see
    /// [`crate::cost::input_token_bound`]). The offline planner bills nothing.
    fn input_token_bound(&self, request: &LlmRequest<'_>) -> u64;

    /// The model's next turn.
    fn complete<'a>(
        &'a self,
        request: LlmRequest<'a>,
    ) -> BoxFuture<'a, Result<LlmResponse, LlmError>>;
}

/// Parses tool-call arguments that arrive as a JSON string, an object, or nothing, into an
/// object. Some OpenAI-compatible servers send an object where OpenAI sends a string; an empty
/// string means no arguments.
pub(crate) fn arguments_object(raw: &Value) -> Result<Value, String> {
    let value = match raw {
        Value::Null => return Ok(Value::Object(Default::default())),
        Value::String(text) if text.trim().is_empty() => {
            return Ok(Value::Object(Default::default()));
        }
        Value::String(text) => serde_json::from_str::<Value>(text)
            .map_err(|error| format!("tool arguments are not valid JSON ({error})"))?,
        other => other.clone(),
    };
    match value {
        Value::Object(_) => Ok(value),
        other => Err(format!(
            "tool arguments must be a JSON object, got {}",
            crate::summary::kind_of(&other)
        )),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn keys_are_taken_out_of_provider_text_whole_or_in_part() {
        let key = "sk-test-0123456789abcdefghij";
        assert_eq!(
            redact_secret(&format!("bad key {key} given"), key),
            "bad key [redacted] given"
        );
        let partial = redact_secret("key sk-test-0123456789ab… is revoked", key);
        assert!(!partial.contains("0123456789"), "{partial}");
        assert_eq!(redact_secret("nothing here", key), "nothing here");
        let error = LlmError::Status {
            provider: "openai",
            status: 401,
            message: format!("Incorrect API key provided: {key}"),
        }
        .redacted(Some(&crate::config::ApiKey::new(key)));
        assert!(!error.to_string().contains(key), "{error}");
        assert!(error.to_string().contains("[redacted]"));
    }

    #[test]
    fn arguments_come_as_strings_objects_or_nothing() {
        assert_eq!(arguments_object(&json!("{\"a\":1}")), Ok(json!({"a": 1})));
        assert_eq!(arguments_object(&json!({"a": 1})), Ok(json!({"a": 1})));
        assert_eq!(arguments_object(&json!("")), Ok(json!({})));
        assert_eq!(arguments_object(&Value::Null), Ok(json!({})));
        assert!(arguments_object(&json!("{\"a\":")).is_err());
        assert!(arguments_object(&json!("[1]")).is_err());
    }
}
