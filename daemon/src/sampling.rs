//! Answering an MCP server's `sampling/createMessage` through the agent's LLM backend.
//!
//! Two halves. The pure one maps the MCP request onto the agent crate's provider-neutral
//! [`LlmRequest`] (`plan`: text messages become turns, the system prompt, temperature and stop
//! sequences pass through, `maxTokens` is lowered to the configured cap; images, audio and tool
//! use are declined with a reason) and the backend's answer back onto MCP's
//! `CreateMessageResult` (`answer`). The other half, [`Sampler`], holds the backend built from
//! the `agent` config, sends the request with the agent's step timeout, and keeps the bill
//! (requests, tokens, USD at the agent's prices) that `health` shows per server.
//!
//! Who may sample (`allowSampling`) and how often (the per-server budget) is decided before this
//! module is reached, in `pool/server_requests.rs`. The backend's errors never carry its key
//! (`tool_cli_agent::backend::LlmError`), so they may be handed to the server as the reason.

// Sampling is deprecated by rmcp for the 2026 protocol (SEP-2577); the protocol version we speak
// (2025-11-25) has it, and servers use it.
#![allow(deprecated)]

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CreateMessageRequestParams, CreateMessageResult, Role, SamplingMessage,
    SamplingMessageContentBlock,
};
use tool_cli_agent::Agent;
use tool_cli_agent::backend::{LlmBackend, LlmRequest, LlmResponse, StopReason, Turn};
use tool_cli_agent::cost::{ModelPrice, Usage, call_cost};

/// A sampling request mapped for the backend: plain owned values, so the mapping is tested
/// without a backend.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SamplingPlan {
    /// The system prompt (empty when the server sent none).
    pub(crate) system: String,
    /// The conversation, in order.
    pub(crate) turns: Vec<Turn>,
    /// `maxTokens`, bounded by the cap.
    pub(crate) max_tokens: u64,
    /// What the server asked for, when the cap lowered it.
    pub(crate) lowered_from: Option<u64>,
    /// `temperature`.
    pub(crate) temperature: Option<f64>,
    /// `stopSequences`.
    pub(crate) stop_sequences: Vec<String>,
}

/// Maps `request` for the backend, with `maxTokens` at most `max_tokens_cap`. `Err` is the
/// reason it cannot be answered, for the server: what was wrong and what would be right.
pub(crate) fn plan(
    request: &CreateMessageRequestParams,
    max_tokens_cap: u64,
) -> Result<SamplingPlan, String> {
    if request.messages.is_empty() {
        return Err("the request has no messages; send at least one user message".to_owned());
    }
    if request
        .tools
        .as_ref()
        .is_some_and(|tools| !tools.is_empty())
    {
        return Err(
            "tools in a sampling request are not supported by this daemon; ask for a \
                    text answer without tools"
                .to_owned(),
        );
    }
    if request.max_tokens == 0 {
        return Err("maxTokens is 0; ask for at least 1 token".to_owned());
    }
    let mut turns = Vec::with_capacity(request.messages.len());
    for (index, message) in request.messages.iter().enumerate() {
        let mut texts = Vec::new();
        for block in message.content.clone().into_vec() {
            let kind = match block {
                SamplingMessageContentBlock::Text(text) => {
                    texts.push(text.text);
                    continue;
                }
                SamplingMessageContentBlock::Image(_) => "image",
                SamplingMessageContentBlock::Audio(_) => "audio",
                SamplingMessageContentBlock::ToolUse(_) => "tool_use",
                SamplingMessageContentBlock::ToolResult(_) => "tool_result",
                _ => "non-text",
            };
            return Err(format!(
                "messages[{index}] has {kind} content; this daemon samples text only, so send \
                 the message as text"
            ));
        }
        let text = texts.join("\n\n");
        turns.push(match message.role {
            Role::User => Turn::User(text),
            Role::Assistant => Turn::Assistant {
                text,
                tool_calls: Vec::new(),
            },
        });
    }
    if let Some(temperature) = request.temperature
        && !(temperature.is_finite() && temperature >= 0.0)
    {
        return Err(format!(
            "temperature is {temperature}; it must be a number from 0 up (usually 0 to 1)"
        ));
    }
    let wanted = u64::from(request.max_tokens);
    let max_tokens = wanted.min(max_tokens_cap);
    Ok(SamplingPlan {
        system: request.system_prompt.clone().unwrap_or_default(),
        turns,
        max_tokens,
        lowered_from: (max_tokens < wanted).then_some(wanted),
        // Through the shortest decimal that reads back as the same f32, so the server's 0.7
        // reaches the backend as 0.7, not 0.699999988079071.
        temperature: request
            .temperature
            .map(|t| t.to_string().parse().unwrap_or(f64::from(t))),
        stop_sequences: request.stop_sequences.clone().unwrap_or_default(),
    })
}

/// The backend's answer as MCP's `CreateMessageResult`: an assistant text message, the model
/// that wrote it, and why it stopped in MCP's words (`endTurn`, `stopSequence`, `maxTokens`, or
/// the provider's own word for anything else).
pub(crate) fn answer(response: &LlmResponse, model: &str) -> CreateMessageResult {
    let stop_reason = match &response.stop {
        _ if matches!(response.raw_stop.as_str(), "stop_sequence") => {
            CreateMessageResult::STOP_REASON_END_SEQUENCE.to_owned()
        }
        StopReason::EndTurn => CreateMessageResult::STOP_REASON_END_TURN.to_owned(),
        StopReason::MaxTokens => CreateMessageResult::STOP_REASON_END_MAX_TOKEN.to_owned(),
        StopReason::ToolUse => CreateMessageResult::STOP_REASON_TOOL_USE.to_owned(),
        StopReason::Refusal => "refusal".to_owned(),
        StopReason::Pause => "pause".to_owned(),
        StopReason::Other(other) => other.clone(),
    };
    CreateMessageResult::new(
        SamplingMessage::assistant_text(response.text.clone()),
        model.to_owned(),
    )
    .with_stop_reason(stop_reason)
}

/// What sampling has cost one server so far.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct SamplingBill {
    /// Requests answered by the backend.
    pub(crate) answered: u64,
    /// Requests declined (not allowed, over budget, unmappable, or the backend failed).
    pub(crate) declined: u64,
    /// Tokens billed, as the agent counts them.
    pub(crate) usage: Usage,
    /// USD at the agent's prices; `None` while the model has no price.
    pub(crate) cost_usd: Option<f64>,
}

impl SamplingBill {
    /// Adds one answered request.
    pub(crate) fn add(&mut self, usage: &Usage, cost_usd: Option<f64>) {
        self.answered += 1;
        self.usage.add(usage);
        if let Some(cost) = cost_usd {
            *self.cost_usd.get_or_insert(0.0) += cost;
        }
    }
}

/// The agent backend as the pool uses it to answer sampling requests.
pub struct Sampler {
    backend: Arc<dyn LlmBackend>,
    price: Option<ModelPrice>,
    max_tokens_cap: u64,
    timeout: Duration,
}

impl std::fmt::Debug for Sampler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the backend itself: its settings hold the key.
        f.debug_struct("Sampler")
            .field("backend", &self.backend.name())
            .field("model", &self.backend.model())
            .field("max_tokens_cap", &self.max_tokens_cap)
            .finish()
    }
}

/// What one sampling request came to.
pub(crate) struct Sampled {
    pub(crate) result: CreateMessageResult,
    pub(crate) usage: Usage,
    pub(crate) cost_usd: Option<f64>,
}

/// Why a sampling request could not be answered, with the tokens billed before it failed.
pub(crate) struct SamplingFailure {
    pub(crate) reason: String,
    pub(crate) usage: Usage,
}

impl Sampler {
    /// The sampler of the `agent` config: `Ok(None)` when its backend is the offline planner
    /// (which cannot write free text). `Err` says why the backend cannot be built (a missing
    /// key file, say); it never contains a key.
    pub fn from_agent(
        agent: &Agent,
        lookup_env: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<Sampler>, String> {
        let Some(backend) = agent
            .sampling_backend(lookup_env)
            .map_err(|error| error.to_string())?
        else {
            return Ok(None);
        };
        let price = agent.prices().lookup(backend.model()).cloned();
        Ok(Some(Sampler {
            backend,
            price,
            max_tokens_cap: agent.config().sampling_max_tokens,
            timeout: agent.config().timeouts.step(),
        }))
    }

    /// The backend's name and model, for log lines.
    pub(crate) fn describe(&self) -> String {
        format!("{} {}", self.backend.name(), self.backend.model())
    }

    /// Maps `request`, asks the backend, and maps its answer back.
    pub(crate) async fn sample(
        &self,
        request: &CreateMessageRequestParams,
    ) -> Result<Sampled, SamplingFailure> {
        let plan = plan(request, self.max_tokens_cap).map_err(|reason| SamplingFailure {
            reason,
            usage: Usage::default(),
        })?;
        if let Some(wanted) = plan.lowered_from {
            tracing::info!(
                wanted,
                cap = plan.max_tokens,
                "sampling maxTokens lowered to agent.samplingMaxTokens"
            );
        }
        let llm_request = LlmRequest {
            system: &plan.system,
            tools: &[],
            turns: &plan.turns,
            max_output_tokens: plan.max_tokens,
            temperature: plan.temperature,
            stop_sequences: &plan.stop_sequences,
            ranked_tools: &[],
            deadline: None,
        };
        let response =
            match tokio::time::timeout(self.timeout, self.backend.complete(llm_request)).await {
                Err(_) => {
                    return Err(SamplingFailure {
                        reason: format!(
                            "the {} backend gave no answer within {} s (agent.timeouts.stepMs)",
                            self.backend.name(),
                            self.timeout.as_secs()
                        ),
                        usage: Usage::default(),
                    });
                }
                Ok(Err(error)) => {
                    return Err(SamplingFailure {
                        reason: error.to_string(),
                        usage: error.usage(),
                    });
                }
                Ok(Ok(response)) => response,
            };
        let cost_usd = self
            .price
            .as_ref()
            .map(|price| call_cost(price, &response.usage));
        Ok(Sampled {
            result: answer(&response, self.backend.model()),
            usage: response.usage,
            cost_usd,
        })
    }

    /// The cost of `usage` at this model's price, when it has one.
    pub(crate) fn cost_of(&self, usage: &Usage) -> Option<f64> {
        self.price.as_ref().map(|price| call_cost(price, usage))
    }
}

#[cfg(test)]
mod tests {
    use rmcp::model::ImageContent;
    use serde_json::json;

    use super::*;

    fn request(value: serde_json::Value) -> CreateMessageRequestParams {
        serde_json::from_value(value).expect("a CreateMessageRequestParams")
    }

    #[test]
    fn text_messages_and_settings_pass_through_and_max_tokens_is_capped() {
        let request = request(json!({
            "messages": [
                {"role": "user", "content": {"type": "text", "text": "hello"}},
                {"role": "assistant", "content": {"type": "text", "text": "hi"}},
                {"role": "user", "content": [{"type": "text", "text": "a"},
                                             {"type": "text", "text": "b"}]}
            ],
            "systemPrompt": "be brief",
            "maxTokens": 5000,
            "temperature": 0.7,
            "stopSequences": ["END"]
        }));
        let plan = plan(&request, 1024).expect("a plan");
        assert_eq!(plan.system, "be brief");
        assert_eq!(
            plan.turns,
            [
                Turn::User("hello".into()),
                Turn::Assistant {
                    text: "hi".into(),
                    tool_calls: vec![]
                },
                Turn::User("a\n\nb".into()),
            ]
        );
        assert_eq!(plan.max_tokens, 1024);
        assert_eq!(plan.lowered_from, Some(5000));
        assert_eq!(plan.temperature, Some(0.7));
        assert_eq!(plan.stop_sequences, ["END"]);

        let small = super::plan(
            &CreateMessageRequestParams::new(vec![SamplingMessage::user_text("x")], 100),
            1024,
        )
        .expect("a plan");
        assert_eq!((small.max_tokens, small.lowered_from), (100, None));
        assert_eq!(small.system, "");
        assert!(small.stop_sequences.is_empty() && small.temperature.is_none());
    }

    #[test]
    fn images_audio_tools_and_empty_requests_are_declined_with_a_reason() {
        let image = CreateMessageRequestParams::new(
            vec![
                SamplingMessage::user_text("look"),
                SamplingMessage::new(
                    Role::User,
                    SamplingMessageContentBlock::Image(ImageContent::new("aGk=", "image/png")),
                ),
            ],
            100,
        );
        let reason = plan(&image, 1024).unwrap_err();
        assert!(
            reason.contains("messages[1] has image content") && reason.contains("text only"),
            "{reason}"
        );
        let audio = request(json!({"messages": [{"role": "user", "content":
            {"type": "audio", "data": "aGk=", "mimeType": "audio/wav"}}], "maxTokens": 10}));
        assert!(plan(&audio, 1024).unwrap_err().contains("audio content"));
        let empty = CreateMessageRequestParams::new(vec![], 10);
        assert!(plan(&empty, 1024).unwrap_err().contains("no messages"));
        let zero = CreateMessageRequestParams::new(vec![SamplingMessage::user_text("x")], 0);
        assert!(plan(&zero, 1024).unwrap_err().contains("maxTokens is 0"));
        let tools = request(json!({"messages": [{"role": "user", "content":
            {"type": "text", "text": "x"}}], "maxTokens": 10,
            "tools": [{"name": "t", "inputSchema": {"type": "object"}}]}));
        assert!(plan(&tools, 1024).unwrap_err().contains("tools"));
    }

    #[test]
    fn answers_carry_the_text_model_and_mcp_stop_reason() {
        let response = |stop: StopReason, raw: &str| LlmResponse {
            text: "the answer".into(),
            tool_calls: vec![],
            usage: Usage::default(),
            stop,
            raw_stop: raw.into(),
            identity: Default::default(),
        };
        let result = answer(&response(StopReason::EndTurn, "stop"), "gpt-4.1-mini");
        let wire = serde_json::to_value(&result).unwrap();
        assert_eq!(
            wire,
            json!({"role": "assistant", "content": {"type": "text", "text": "the answer"},
                   "model": "gpt-4.1-mini", "stopReason": "endTurn"})
        );
        let stop = |stop, raw| answer(&response(stop, raw), "m").stop_reason.unwrap();
        assert_eq!(stop(StopReason::MaxTokens, "length"), "maxTokens");
        assert_eq!(stop(StopReason::EndTurn, "stop_sequence"), "stopSequence");
        assert_eq!(
            stop(StopReason::Other("content_filter".into()), "content_filter"),
            "content_filter"
        );
    }

    #[test]
    fn the_bill_adds_tokens_and_cost() {
        let mut bill = SamplingBill::default();
        let usage = Usage {
            input_tokens: 10,
            output_tokens: 5,
            ..Usage::default()
        };
        bill.add(&usage, None);
        assert_eq!(bill.cost_usd, None);
        bill.add(&usage, Some(0.25));
        bill.add(&usage, Some(0.5));
        assert_eq!(bill.answered, 3);
        assert_eq!(bill.usage.input_tokens, 30);
        assert_eq!(bill.cost_usd, Some(0.75));
    }
}
