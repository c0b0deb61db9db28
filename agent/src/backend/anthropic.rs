//! The Anthropic Messages API backend: request building, the streamed answer, and the call.
//!
//! The request marks the system prompt and the last tool of the catalog with
//! `cache_control: {type: "ephemeral"}`, so the whole prefix (tools, then system) is cached
//! once and read back at a tenth of the price on every later step; the loop keeps the tool list
//! fixed for the run so the cache holds. Tool calls are `tool_use` blocks whose `input` arrives
//! as `input_json_delta` fragments; results go back as `tool_result` blocks with the same id.
//! Usage comes in `message_start` (input, cache writes and reads) and `message_delta`
//! (cumulative output). Every `stop_reason` maps to a [`StopReason`], unknown ones included.
//! Building and folding are pure; only [`AnthropicBackend::complete`] does I/O.

use std::collections::BTreeMap;

use hyper::body::Bytes;
use hyper::header::{HeaderName, HeaderValue};
use serde_json::{Value, json};

use super::http::{HttpClient, HttpSettings, read_stream};
use super::sse::{SseEvent, SseParser};
use super::{
    LlmBackend, LlmError, LlmRequest, LlmResponse, LlmToolCall, ResponseIdentity, StopReason, Turn,
};
use crate::cost::{Usage, input_token_bound};
use crate::host::BoxFuture;

const PROVIDER: &str = "anthropic";
/// The API version header every request carries.
pub(crate) const ANTHROPIC_VERSION: &str = "2023-06-01";

/// The Messages API, streamed.
#[derive(Debug)]
pub struct AnthropicBackend {
    model: String,
    settings: HttpSettings,
    client: HttpClient,
}

impl AnthropicBackend {
    /// A backend for `model` at `settings.base_url` (the API root, e.g.
    /// `https://api.anthropic.com`). A key is required.
    pub fn new(model: &str, settings: HttpSettings) -> Result<Self, LlmError> {
        if settings.api_key.is_none() {
            return Err(LlmError::Config(
                "the anthropic backend needs an API key: set ANTHROPIC_API_KEY, or name a \
                 variable with agent.apiKeyEnv or a file with agent.apiKeyFile"
                    .into(),
            ));
        }
        Ok(Self {
            model: model.to_owned(),
            settings,
            client: HttpClient::new()?,
        })
    }

    fn endpoint(&self) -> String {
        let base = self.settings.base_url.trim_end_matches('/');
        if base.ends_with("/v1") {
            format!("{base}/messages")
        } else {
            format!("{base}/v1/messages")
        }
    }
}

/// The request body for `request`.
pub(crate) fn request_body(model: &str, request: &LlmRequest<'_>) -> Value {
    let mut tools: Vec<Value> = request
        .tools
        .iter()
        .map(|tool| {
            json!({
                "name": tool.name,
                "description": tool.description,
                "input_schema": tool.input_schema,
            })
        })
        .collect();
    if let Some(Value::Object(last)) = tools.last_mut() {
        last.insert("cache_control".into(), json!({"type": "ephemeral"}));
    }
    let mut body = json!({
        "model": model,
        "max_tokens": request.max_output_tokens,
        "stream": true,
        "system": [{"type": "text", "text": request.system,
                    "cache_control": {"type": "ephemeral"}}],
        "messages": messages(request.turns),
    });
    if !tools.is_empty() {
        body["tools"] = Value::Array(tools);
    }
    // The API refuses an empty system text block; a sampling request may have no system prompt.
    if request.system.is_empty() {
        body.as_object_mut().map(|body| body.remove("system"));
    }
    if let Some(temperature) = request.temperature {
        body["temperature"] = json!(temperature);
    }
    if !request.stop_sequences.is_empty() {
        body["stop_sequences"] = json!(request.stop_sequences);
    }
    body
}

/// The conversation as Messages API messages; consecutive user-side turns (tool results then a
/// corrective instruction) share one user message, as the API expects roles to alternate.
fn messages(turns: &[Turn]) -> Vec<Value> {
    let mut messages: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for turn in turns {
        let (role, blocks) = match turn {
            Turn::User(text) => ("user", vec![json!({"type": "text", "text": text})]),
            Turn::Assistant { text, tool_calls } => {
                let mut blocks = Vec::new();
                if !text.is_empty() {
                    blocks.push(json!({"type": "text", "text": text}));
                }
                for call in tool_calls {
                    // The API takes only an object as input; unparsable input goes back empty
                    // (the tool result beside it says what was wrong).
                    let input = if call.arguments.is_object() {
                        call.arguments.clone()
                    } else {
                        json!({})
                    };
                    blocks.push(json!({"type": "tool_use", "id": call.id, "name": call.name,
                                       "input": input}));
                }
                if blocks.is_empty() {
                    blocks.push(json!({"type": "text", "text": "(no text)"}));
                }
                ("assistant", blocks)
            }
            Turn::ToolResults(results) => (
                "user",
                results
                    .iter()
                    .map(|result| {
                        json!({"type": "tool_result", "tool_use_id": result.call_id,
                               "content": result.content, "is_error": result.is_error})
                    })
                    .collect(),
            ),
        };
        match messages.last_mut() {
            Some((last_role, content)) if *last_role == role => content.extend(blocks),
            _ => messages.push((role, blocks)),
        }
    }
    messages
        .into_iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect()
}

/// One content block being streamed.
#[derive(Debug)]
enum Block {
    Text(String),
    ToolUse {
        id: String,
        name: String,
        /// The `input` of `content_block_start` (usually `{}`), used when no delta follows.
        initial: Value,
        json: String,
    },
    /// Thinking, server tools, anything else: kept in place, not shown.
    Other,
}

/// Folds the stream's events into one [`LlmResponse`].
#[derive(Debug, Default)]
pub(crate) struct StreamFold {
    blocks: BTreeMap<u64, Block>,
    usage: Usage,
    stop_reason: Option<String>,
    stopped: bool,
    /// The answering model and the message's id, from `message_start`.
    identity: ResponseIdentity,
}

fn count(value: &Value, key: &str) -> Option<u64> {
    value.get(key).and_then(Value::as_u64)
}

impl StreamFold {
    /// Applies one event. Returns `Ok(true)` once `message_stop` arrived.
    pub(crate) fn apply(&mut self, event: &SseEvent) -> Result<bool, LlmError> {
        let data: Value =
            serde_json::from_str(&event.data).map_err(|error| LlmError::Malformed {
                provider: PROVIDER,
                message: format!("an event's data is not JSON ({error})"),
                usage: self.usage,
            })?;
        let kind = data
            .get("type")
            .and_then(Value::as_str)
            .or(event.event.as_deref())
            .unwrap_or("");
        match kind {
            "message_start" => {
                if let Some(usage) = data.pointer("/message/usage") {
                    self.merge_usage(usage);
                }
                let text = |pointer| data.pointer(pointer).and_then(Value::as_str);
                self.identity = ResponseIdentity {
                    model: text("/message/model").map(str::to_owned),
                    id: text("/message/id").map(str::to_owned),
                };
            }
            "content_block_start" => {
                let index = self.index(&data)?;
                let block = data.get("content_block").cloned().unwrap_or(Value::Null);
                let block = match block.get("type").and_then(Value::as_str) {
                    Some("text") => Block::Text(
                        block
                            .get("text")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_owned(),
                    ),
                    Some("tool_use") => Block::ToolUse {
                        id: string_field(&block, "id"),
                        name: string_field(&block, "name"),
                        initial: block.get("input").cloned().unwrap_or(json!({})),
                        json: String::new(),
                    },
                    _ => Block::Other,
                };
                self.blocks.insert(index, block);
            }
            "content_block_delta" => {
                let index = self.index(&data)?;
                let delta = data.get("delta").cloned().unwrap_or(Value::Null);
                let block = self.blocks.entry(index).or_insert(Block::Other);
                match (delta.get("type").and_then(Value::as_str), block) {
                    (Some("text_delta"), Block::Text(text)) => {
                        text.push_str(delta.get("text").and_then(Value::as_str).unwrap_or(""));
                    }
                    (Some("input_json_delta"), Block::ToolUse { json, .. }) => {
                        json.push_str(
                            delta
                                .get("partial_json")
                                .and_then(Value::as_str)
                                .unwrap_or(""),
                        );
                    }
                    // thinking_delta, signature_delta, citations: not part of the answer.
                    _ => {}
                }
            }
            "content_block_stop" | "ping" => {}
            "message_delta" => {
                if let Some(reason) = data.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.stop_reason = Some(reason.to_owned());
                }
                if let Some(usage) = data.get("usage") {
                    self.merge_usage(usage);
                }
            }
            "message_stop" => {
                self.stopped = true;
                return Ok(true);
            }
            "error" => {
                return Err(LlmError::Api {
                    provider: PROVIDER,
                    kind: data
                        .pointer("/error/type")
                        .and_then(Value::as_str)
                        .unwrap_or("error")
                        .to_owned(),
                    message: data
                        .pointer("/error/message")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned(),
                    usage: self.usage,
                });
            }
            // New event types may be added to the API; they are ignored, as its docs ask.
            _ => {}
        }
        Ok(false)
    }

    fn index(&self, data: &Value) -> Result<u64, LlmError> {
        count(data, "index").ok_or_else(|| LlmError::Malformed {
            provider: PROVIDER,
            message: "a content block event has no index".into(),
            usage: self.usage,
        })
    }

    /// Usage fields present in `usage` replace the ones seen so far (`message_delta` carries
    /// cumulative counts).
    fn merge_usage(&mut self, usage: &Value) {
        if let Some(n) = count(usage, "input_tokens") {
            self.usage.input_tokens = n;
        }
        if let Some(n) = count(usage, "output_tokens") {
            self.usage.output_tokens = n;
        }
        if let Some(n) = count(usage, "cache_creation_input_tokens") {
            self.usage.cache_write_tokens = n;
        }
        if let Some(n) = count(usage, "cache_read_input_tokens") {
            self.usage.cache_read_tokens = n;
        }
    }

    /// Usage seen so far.
    pub(crate) fn usage(&self) -> Usage {
        self.usage
    }

    /// The finished turn; an error when the stream never reached `message_stop`.
    pub(crate) fn finish(self) -> Result<LlmResponse, LlmError> {
        if !self.stopped {
            return Err(LlmError::StreamCut {
                provider: PROVIDER,
                message: "no message_stop event arrived".into(),
                usage: self.usage,
            });
        }
        let mut text = String::new();
        let mut tool_calls = Vec::new();
        for block in self.blocks.into_values() {
            match block {
                Block::Text(part) => text.push_str(&part),
                Block::ToolUse {
                    id,
                    name,
                    initial,
                    json,
                } => {
                    let raw = if json.trim().is_empty() {
                        initial
                    } else {
                        Value::String(json)
                    };
                    // Input that is not a JSON object stays as the model wrote it: the loop
                    // answers the call with a tool error, and the model can correct itself.
                    let arguments = super::arguments_object(&raw).unwrap_or(raw);
                    tool_calls.push(LlmToolCall {
                        id,
                        name,
                        arguments,
                    });
                }
                Block::Other => {}
            }
        }
        let raw_stop = self.stop_reason.unwrap_or_else(|| "none".to_owned());
        Ok(LlmResponse {
            text,
            tool_calls,
            usage: self.usage,
            stop: stop_reason(&raw_stop),
            raw_stop,
            identity: self.identity,
        })
    }
}

fn string_field(value: &Value, key: &str) -> String {
    value
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned()
}

/// Maps Anthropic's `stop_reason`; unknown values are kept for the loop to judge by content.
pub(crate) fn stop_reason(raw: &str) -> StopReason {
    match raw {
        "end_turn" | "stop_sequence" => StopReason::EndTurn,
        "tool_use" => StopReason::ToolUse,
        "max_tokens" => StopReason::MaxTokens,
        "pause_turn" => StopReason::Pause,
        "refusal" => StopReason::Refusal,
        other => StopReason::Other(other.to_owned()),
    }
}

/// Folds a non-streamed Message (a server that ignored `stream: true`) the same way.
fn fold_message(message: &Value) -> Result<LlmResponse, LlmError> {
    let mut fold = StreamFold::default();
    let mut events = vec![json!({"type": "message_start", "message": {
        "usage": message.get("usage").cloned().unwrap_or(json!({})),
        "model": message.get("model"),
        "id": message.get("id"),
    }})];
    for (index, block) in message
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        events.push(json!({"type": "content_block_start", "index": index, "content_block": block}));
    }
    events.push(
        json!({"type": "message_delta", "delta": {"stop_reason": message.get("stop_reason")}}),
    );
    events.push(json!({"type": "message_stop"}));
    for data in events {
        fold.apply(&SseEvent {
            event: None,
            data: data.to_string(),
        })?;
    }
    fold.finish()
}

impl AnthropicBackend {
    /// One call, with errors as the provider wrote them (the trait's `complete` redacts).
    async fn complete_unredacted(&self, request: LlmRequest<'_>) -> Result<LlmResponse, LlmError> {
        let body = Bytes::from(request_body(&self.model, &request).to_string());
        let mut key = HeaderValue::from_str(
            self.settings
                .api_key
                .as_ref()
                .map(|key| key.expose())
                .unwrap_or_default(),
        )
        .map_err(|_| {
            LlmError::Config("the API key contains characters not allowed in a header".into())
        })?;
        key.set_sensitive(true);
        let headers = [
            (HeaderName::from_static("x-api-key"), key),
            (
                HeaderName::from_static("anthropic-version"),
                HeaderValue::from_static(ANTHROPIC_VERSION),
            ),
            (
                hyper::header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            ),
            (
                hyper::header::ACCEPT,
                HeaderValue::from_static("text/event-stream"),
            ),
        ];
        let endpoint = self.endpoint();
        let response = self
            .client
            .post(
                PROVIDER,
                &endpoint,
                &headers,
                body,
                &self.settings.retry,
                request.deadline,
            )
            .await?;
        let is_stream = super::http::is_event_stream(&response);
        if !is_stream {
            let bytes = super::http::collect_body(PROVIDER, response.into_body()).await?;
            let message: Value =
                serde_json::from_slice(&bytes).map_err(|error| LlmError::Malformed {
                    provider: PROVIDER,
                    message: format!("the answer is neither an event stream nor JSON ({error})"),
                    usage: Usage::default(),
                })?;
            return fold_message(&message);
        }
        let mut parser = SseParser::new();
        let mut fold = StreamFold::default();
        let mut failure: Option<LlmError> = None;
        let read = read_stream(response.into_body(), |chunk| {
            let events = parser.feed(chunk).map_err(|error| error.to_string())?;
            for event in &events {
                match fold.apply(event) {
                    Ok(true) => return Ok(false),
                    Ok(false) => {}
                    Err(error) => {
                        failure = Some(error);
                        return Ok(false);
                    }
                }
            }
            Ok(true)
        })
        .await;
        if let Some(error) = failure {
            return Err(error);
        }
        if let Err(message) = read {
            return Err(LlmError::StreamCut {
                provider: PROVIDER,
                message,
                usage: fold.usage(),
            });
        }
        fold.finish()
    }
}

impl LlmBackend for AnthropicBackend {
    fn name(&self) -> &str {
        PROVIDER
    }

    fn model(&self) -> &str {
        &self.model
    }

    fn input_token_bound(&self, request: &LlmRequest<'_>) -> u64 {
        input_token_bound(request_body(&self.model, request).to_string().len())
    }

    fn complete<'a>(
        &'a self,
        request: LlmRequest<'a>,
    ) -> BoxFuture<'a, Result<LlmResponse, LlmError>> {
        // Whatever the provider sent back (an error body, a stream's error event) may echo the
        // key: it is taken out here, before any error is stored, shown or logged.
        Box::pin(async move {
            self.complete_unredacted(request)
                .await
                .map_err(|error| error.redacted(self.settings.api_key.as_ref()))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::{ExposedTool, ToolResultTurn};

    fn tool(name: &str) -> ExposedTool {
        ExposedTool {
            name: name.into(),
            server: Some("demo".into()),
            servers: vec!["demo".into()],
            tool: name.into(),
            description: format!("{name} things"),
            input_schema: json!({"type": "object"}),
            read_only: true,
            destructive: false,
        }
    }

    #[test]
    fn cache_control_marks_the_system_prompt_and_the_last_tool_only() {
        let tools = [tool("a"), tool("b"), tool("c")];
        let turns = [Turn::User("task".into())];
        let request = LlmRequest {
            system: "be brief",
            tools: &tools,
            turns: &turns,
            max_output_tokens: 100,
            temperature: None,
            stop_sequences: &[],
            ranked_tools: &[],
            deadline: None,
        };
        let body = request_body("claude-haiku-4-5", &request);
        let stops = ["END".to_owned()];
        let sampled = request_body(
            "claude-haiku-4-5",
            &LlmRequest {
                system: "",
                temperature: Some(0.7),
                stop_sequences: &stops,
                ranked_tools: &[],
                deadline: None,
                ..request
            },
        );
        assert!(
            sampled.get("system").is_none(),
            "an empty system prompt is left out"
        );
        assert_eq!(sampled["temperature"], json!(0.7));
        assert_eq!(sampled["stop_sequences"], json!(["END"]));
        assert_eq!(
            body["system"][0]["cache_control"],
            json!({"type": "ephemeral"})
        );
        let marked: Vec<bool> = body["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .map(|t| t.get("cache_control").is_some())
            .collect();
        assert_eq!(marked, [false, false, true]);
        assert_eq!(body["stream"], json!(true));
        assert_eq!(body["max_tokens"], json!(100));
    }

    #[test]
    fn tool_results_answer_tool_uses_by_id_and_user_turns_merge() {
        let turns = [
            Turn::User("task".into()),
            Turn::Assistant {
                text: "looking".into(),
                tool_calls: vec![LlmToolCall {
                    id: "toolu_1".into(),
                    name: "a".into(),
                    arguments: json!({"x": 1}),
                }],
            },
            Turn::ToolResults(vec![ToolResultTurn {
                call_id: "toolu_1".into(),
                name: "a".into(),
                content: "42".into(),
                result: None,
                is_error: false,
            }]),
            Turn::User("answer as JSON".into()),
        ];
        let messages = messages(&turns);
        assert_eq!(messages.len(), 3);
        assert_eq!(messages[1]["content"][1]["type"], "tool_use");
        assert_eq!(messages[2]["role"], "user");
        assert_eq!(messages[2]["content"][0]["tool_use_id"], "toolu_1");
        assert_eq!(messages[2]["content"][1]["type"], "text");
    }

    fn fold(events: &[Value]) -> Result<LlmResponse, LlmError> {
        let mut fold = StreamFold::default();
        for data in events {
            if fold.apply(&SseEvent {
                event: data["type"].as_str().map(str::to_owned),
                data: data.to_string(),
            })? {
                break;
            }
        }
        fold.finish()
    }

    #[test]
    fn a_streamed_tool_use_turn_with_usage() {
        let response = fold(&[
            json!({"type": "message_start", "message": {
                "id": "msg_01XF", "model": "claude-sonnet-4-5-20250929",
                "usage": {"input_tokens": 10,
                "cache_creation_input_tokens": 500, "cache_read_input_tokens": 0,
                "output_tokens": 1}}}),
            json!({"type": "content_block_start", "index": 0,
                   "content_block": {"type": "text", "text": ""}}),
            json!({"type": "content_block_delta", "index": 0,
                   "delta": {"type": "text_delta", "text": "Let me "}}),
            json!({"type": "ping"}),
            json!({"type": "content_block_delta", "index": 0,
                   "delta": {"type": "text_delta", "text": "look."}}),
            json!({"type": "content_block_stop", "index": 0}),
            json!({"type": "content_block_start", "index": 1, "content_block":
                   {"type": "tool_use", "id": "toolu_9", "name": "sql_query", "input": {}}}),
            json!({"type": "content_block_delta", "index": 1,
                   "delta": {"type": "input_json_delta", "partial_json": "{\"sql\": \"SEL"}}),
            json!({"type": "content_block_delta", "index": 1,
                   "delta": {"type": "input_json_delta", "partial_json": "ECT 1\"}"}}),
            json!({"type": "content_block_stop", "index": 1}),
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"},
                   "usage": {"output_tokens": 42}}),
            json!({"type": "message_stop"}),
        ])
        .expect("complete turn");
        assert_eq!(response.text, "Let me look.");
        // Which model answered and the message's id, from `message_start`.
        assert_eq!(
            response.identity,
            super::super::ResponseIdentity {
                model: Some("claude-sonnet-4-5-20250929".into()),
                id: Some("msg_01XF".into()),
            }
        );
        assert_eq!(response.tool_calls[0].id, "toolu_9");
        assert_eq!(response.tool_calls[0].arguments, json!({"sql": "SELECT 1"}));
        assert_eq!(response.stop, StopReason::ToolUse);
        assert_eq!(
            response.usage,
            Usage {
                input_tokens: 10,
                output_tokens: 42,
                cache_read_tokens: 0,
                cache_write_tokens: 500
            }
        );
    }

    #[test]
    fn every_stop_reason_maps_and_unknown_ones_are_kept() {
        assert_eq!(stop_reason("end_turn"), StopReason::EndTurn);
        assert_eq!(stop_reason("stop_sequence"), StopReason::EndTurn);
        assert_eq!(stop_reason("max_tokens"), StopReason::MaxTokens);
        assert_eq!(stop_reason("pause_turn"), StopReason::Pause);
        assert_eq!(stop_reason("refusal"), StopReason::Refusal);
        assert_eq!(
            stop_reason("model_context_window_exceeded"),
            StopReason::Other("model_context_window_exceeded".into())
        );
    }

    #[test]
    fn stream_errors_and_cuts_keep_the_usage_seen() {
        let start = json!({"type": "message_start", "message": {"usage": {"input_tokens": 7}}});
        let error = fold(&[
            start.clone(),
            json!({"type": "error", "error": {"type": "overloaded_error",
                                               "message": "Overloaded"}}),
        ])
        .expect_err("error event");
        assert!(matches!(&error, LlmError::Api { kind, .. } if kind == "overloaded_error"));
        assert_eq!(error.usage().input_tokens, 7);
        let cut = fold(&[start]).expect_err("no message_stop");
        assert!(matches!(cut, LlmError::StreamCut { .. }));
        let mut fold = StreamFold::default();
        let malformed = fold.apply(&SseEvent {
            event: None,
            data: "{not json".into(),
        });
        assert!(matches!(malformed, Err(LlmError::Malformed { .. })));
    }

    #[test]
    fn a_non_streamed_message_folds_the_same_way() {
        let response = fold_message(&json!({
            "content": [{"type": "text", "text": "hi"},
                        {"type": "tool_use", "id": "t1", "name": "a", "input": {"k": "v"}}],
            "stop_reason": "tool_use",
            "id": "msg_2", "model": "claude-haiku-4-5",
            "usage": {"input_tokens": 3, "output_tokens": 4}
        }))
        .expect("message");
        assert_eq!(response.text, "hi");
        assert_eq!(response.identity.id.as_deref(), Some("msg_2"));
        assert_eq!(response.identity.model.as_deref(), Some("claude-haiku-4-5"));
        assert_eq!(response.tool_calls[0].arguments, json!({"k": "v"}));
        assert_eq!(response.usage.output_tokens, 4);
    }
}
